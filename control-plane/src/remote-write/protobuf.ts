// Hand-written protobuf encoding of remote-write 1.0 `prometheus.WriteRequest` and 2.0
// `io.prometheus.write.v2.Request`, plus the 1.0 decoder the queue and tests need. Writing straight
// into one growing buffer (no message objects) is what makes 100k series cheap to encode.
import type { Labels } from "../scrape/sample.js";
import type { WriteSeries, WriteSample } from "./series.js";

// Field keys: (field number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited).
const V1_TIMESERIES = (1 << 3) | 2;
const V1_LABELS = (1 << 3) | 2;
const V1_SAMPLES = (2 << 3) | 2;
const LABEL_NAME = (1 << 3) | 2;
const LABEL_VALUE = (2 << 3) | 2;
const SAMPLE_VALUE = (1 << 3) | 1;
const SAMPLE_TIMESTAMP = (2 << 3) | 0;
const V2_SYMBOLS = (4 << 3) | 2;
const V2_TIMESERIES = (5 << 3) | 2;
const V2_LABELS_REFS = (1 << 3) | 2;
const V2_SAMPLES = (2 << 3) | 2;

/** The staleness marker's exact bits, 0x7ff0000000000002, little-endian as protobuf stores doubles. */
export const STALE_NAN_BYTES = Uint8Array.of(0x02, 0, 0, 0, 0, 0, 0xf0, 0x7f);

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const utf8 = new TextEncoder();

/** An append-only protobuf writer over one buffer that doubles when full. */
export class ProtoWriter {
  buf: Uint8Array;
  pos = 0;

  constructor(initialBytes = 64 * 1024) {
    this.buf = new Uint8Array(initialBytes);
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  /** Unsigned varint of a non-negative integer up to 2^53. */
  varint(v: number): void {
    this.ensure(10);
    const b = this.buf;
    let p = this.pos;
    while (v >= 0x80) {
      b[p++] = (v & 0x7f) | 0x80;
      v = v >= 0x100000000 ? Math.floor(v / 128) : v >>> 7;
    }
    b[p++] = v;
    this.pos = p;
  }

  /** int64 as protobuf writes it: negative values take ten bytes of two's complement. */
  int64(v: number): void {
    if (v >= 0) {
      this.varint(v);
      return;
    }
    let big = BigInt.asUintN(64, BigInt(v));
    this.ensure(10);
    while (big >= 0x80n) {
      this.buf[this.pos++] = Number(big & 0x7fn) | 0x80;
      big >>= 7n;
    }
    this.buf[this.pos++] = Number(big);
  }

  double(v: number): void {
    this.ensure(8);
    f64[0] = v;
    this.buf.set(f64Bytes, this.pos);
    this.pos += 8;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** A length-delimited UTF-8 string (ASCII written inline; anything else through TextEncoder). */
  string(s: string): void {
    const len = s.length;
    this.ensure(len * 3 + 5);
    const b = this.buf;
    // Reserve one length byte, write, then fix up (and shift when the length needs more bytes).
    const start = this.pos;
    let p = start + 1;
    let ascii = true;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        ascii = false;
        break;
      }
      b[p++] = c;
    }
    if (!ascii) p = start + 1 + utf8.encodeInto(s, b.subarray(start + 1)).written;
    this.pos = p;
    this.endLength(start);
  }

  /** Reserves one byte for a length prefix; pass the returned position to `endLength`. */
  beginLength(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Writes the length of everything since `start`, moving the body when the varint needs more bytes. */
  endLength(start: number): void {
    const len = this.pos - start - 1;
    if (len < 0x80) {
      this.buf[start] = len;
      return;
    }
    const extra = len < 0x4000 ? 1 : len < 0x200000 ? 2 : len < 0x10000000 ? 3 : 4;
    this.ensure(extra);
    this.buf.copyWithin(start + 1 + extra, start + 1, this.pos);
    const end = this.pos + extra;
    this.pos = start;
    this.varint(len);
    this.pos = end;
  }

  /** The encoded bytes (a view, valid until the next write). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

function writeSample(w: ProtoWriter, s: WriteSample): void {
  const start = w.beginLength();
  w.varint(SAMPLE_VALUE);
  if (s.stale) w.bytes(STALE_NAN_BYTES);
  else w.double(s.value);
  // proto3 leaves zero fields out, the way the reference encoder does.
  if (s.timestampMs !== 0) {
    w.varint(SAMPLE_TIMESTAMP);
    w.int64(s.timestampMs);
  }
  w.endLength(start);
}

/**
 * The common case inline: an ASCII label whose whole message is under 128 bytes has one-byte
 * lengths known up front, so it is written with no length fix-up and no calls per field. Returns
 * false (having written nothing) when the general path is needed.
 */
function writeLabelAscii(w: ProtoWriter, name: string, value: string): boolean {
  const nl = name.length;
  const vl = value.length;
  const total = 4 + nl + vl;
  if (total >= 0x80) return false;
  w.ensure(total + 2);
  const b = w.buf;
  let p = w.pos;
  b[p++] = V1_LABELS;
  b[p++] = total;
  b[p++] = LABEL_NAME;
  b[p++] = nl;
  p = copyAscii(b, p, name);
  if (p < 0) return false;
  b[p++] = LABEL_VALUE;
  b[p++] = vl;
  p = copyAscii(b, p, value);
  if (p < 0) return false;
  w.pos = p;
  return true;
}

/** Copies an ASCII string into `b` at `p`; returns the position after it, or -1 at the first non-ASCII unit. */
function copyAscii(b: Uint8Array, p: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return -1;
    b[p++] = c;
  }
  return p;
}

/** Appends one 1.0 TimeSeries (as field 1 of WriteRequest) to `w`. */
export function writeSeriesV1(w: ProtoWriter, labels: Labels, samples: WriteSample[]): void {
  const start = w.pos;
  if (writeSeriesV1Ascii(w, labels, samples)) return;
  w.pos = start;
  w.varint(V1_TIMESERIES);
  const ts = w.beginLength();
  writeLabelsV1(w, labels);
  for (const s of samples) {
    w.varint(V1_SAMPLES);
    writeSample(w, s);
  }
  w.endLength(ts);
}

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/**
 * The common case without any length fix-up: when every label is ASCII (byte length = string
 * length) and short, and every timestamp non-negative, the series' length is known before writing,
 * so no byte is moved afterwards. Returns false as soon as an assumption fails; the caller then
 * rewrites the series from its start on the general path.
 */
function writeSeriesV1Ascii(w: ProtoWriter, labels: Labels, samples: WriteSample[]): boolean {
  let len = 0;
  for (let i = 0; i < labels.length; i += 2) {
    const body = 4 + labels[i]!.length + labels[i + 1]!.length;
    if (body >= 0x80) return false;
    len += 2 + body;
  }
  for (const s of samples) {
    if (s.timestampMs < 0) return false;
    const body = 9 + (s.timestampMs === 0 ? 0 : 1 + varintSize(s.timestampMs));
    len += 2 + body;
  }
  w.varint(V1_TIMESERIES);
  w.varint(len);
  w.ensure(len);
  const end = w.pos + len;
  for (let i = 0; i < labels.length; i += 2) if (!writeLabelAscii(w, labels[i]!, labels[i + 1]!)) return false;
  for (const s of samples) {
    const b = w.buf;
    b[w.pos++] = V1_SAMPLES;
    b[w.pos++] = 9 + (s.timestampMs === 0 ? 0 : 1 + varintSize(s.timestampMs));
    b[w.pos++] = SAMPLE_VALUE;
    if (s.stale) w.bytes(STALE_NAN_BYTES);
    else w.double(s.value);
    if (s.timestampMs !== 0) {
      w.buf[w.pos++] = SAMPLE_TIMESTAMP;
      w.varint(s.timestampMs);
    }
  }
  return w.pos === end;
}

/**
 * Encodes a 1.0 WriteRequest. Labels must already be sorted and unique (see normalizeLabels).
 * Two encoded WriteRequests concatenated are again one valid WriteRequest (repeated field), which
 * is how the queue joins records into a batch without re-encoding.
 */
export function encodeWriteRequestV1(series: WriteSeries[], w = new ProtoWriter()): Uint8Array {
  for (const s of series) writeSeriesV1(w, s.labels, s.samples);
  return w.finish();
}

/** Encodes a 2.0 Request: symbols table (first symbol ""), label references, samples. */
export function encodeRequestV2(series: WriteSeries[]): Uint8Array {
  const symbols = new Map<string, number>([["", 0]]);
  const refs: number[][] = [];
  for (const s of series) {
    const r: number[] = [];
    for (const str of s.labels) {
      let id = symbols.get(str);
      if (id === undefined) {
        id = symbols.size;
        symbols.set(str, id);
      }
      r.push(id);
    }
    refs.push(r);
  }
  const w = new ProtoWriter();
  for (const sym of symbols.keys()) {
    w.varint(V2_SYMBOLS);
    w.string(sym);
  }
  for (let i = 0; i < series.length; i++) {
    w.varint(V2_TIMESERIES);
    const ts = w.beginLength();
    w.varint(V2_LABELS_REFS);
    const packed = w.beginLength();
    for (const id of refs[i]!) w.varint(id);
    w.endLength(packed);
    for (const smp of series[i]!.samples) {
      w.varint(V2_SAMPLES);
      writeSample(w, smp);
    }
    w.endLength(ts);
  }
  return w.finish().slice();
}

/** A decoded 1.0 sample keeps the raw bits so staleness markers survive a round trip. */
export interface DecodedSample extends WriteSample {
  valueBits: bigint;
}

/** A decoded 1.0 series. */
export interface DecodedSeries {
  labels: Labels;
  samples: DecodedSample[];
}

class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array, readonly end = buf.length) {}
  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.end) throw new Error("protobuf: truncated varint");
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
  }
  int64(): number {
    const start = this.pos;
    const v = this.varint();
    if (this.pos - start === 10) {
      // Negative int64: re-read the bytes as a 64-bit two's complement value.
      let big = 0n;
      for (let i = this.pos - 1; i >= start; i--) big = (big << 7n) | BigInt(this.buf[i]! & 0x7f);
      return Number(BigInt.asIntN(64, big));
    }
    return v;
  }
  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) {
      const len = this.varint(); // read first: `pos += varint()` would add to the old pos
      this.pos += len;
    }
    else if (wireType === 5) this.pos += 4;
    else throw new Error(`protobuf: unsupported wire type ${wireType}`);
  }
}

const td = new TextDecoder();

function decodeSample(buf: Uint8Array, start: number, end: number): DecodedSample {
  const r = new Reader(buf, end);
  r.pos = start;
  let value = 0;
  let valueBits = 0n;
  let timestampMs = 0;
  while (r.pos < end) {
    const key = r.varint();
    if (key === SAMPLE_VALUE) {
      const dv = new DataView(buf.buffer, buf.byteOffset + r.pos, 8);
      valueBits = dv.getBigUint64(0, true);
      value = dv.getFloat64(0, true);
      r.pos += 8;
    } else if (key === SAMPLE_TIMESTAMP) timestampMs = r.int64();
    else r.skip(key & 7);
  }
  const s: DecodedSample = { value, timestampMs, valueBits };
  if (valueBits === 0x7ff0000000000002n) s.stale = true;
  return s;
}

/** Decodes a 1.0 WriteRequest (used to re-encode queued data as 2.0, and by tests). */
export function decodeWriteRequestV1(buf: Uint8Array): DecodedSeries[] {
  const r = new Reader(buf);
  const out: DecodedSeries[] = [];
  while (r.pos < buf.length) {
    const key = r.varint();
    if (key !== V1_TIMESERIES) {
      r.skip(key & 7);
      continue;
    }
    const tsEnd = r.varint() + r.pos;
    const series: DecodedSeries = { labels: [], samples: [] };
    while (r.pos < tsEnd) {
      const k = r.varint();
      const len = r.varint();
      const end = r.pos + len;
      if (k === V1_LABELS) {
        let name = "";
        let value = "";
        while (r.pos < end) {
          const lk = r.varint();
          const l = r.varint();
          const str = td.decode(buf.subarray(r.pos, r.pos + l));
          if (lk === LABEL_NAME) name = str;
          else if (lk === LABEL_VALUE) value = str;
          r.pos += l;
        }
        series.labels.push(name, value);
      } else if (k === V1_SAMPLES) {
        series.samples.push(decodeSample(buf, r.pos, end));
      }
      r.pos = end;
    }
    out.push(series);
  }
  return out;
}

/** Appends the `Label` fields of a 1.0 TimeSeries. */
function writeLabelsV1(w: ProtoWriter, labels: Labels): void {
  for (let i = 0; i < labels.length; i += 2) {
    if (writeLabelAscii(w, labels[i]!, labels[i + 1]!)) continue;
    w.varint(V1_LABELS);
    const l = w.beginLength();
    w.varint(LABEL_NAME);
    w.string(labels[i]!);
    w.varint(LABEL_VALUE);
    w.string(labels[i + 1]!);
    w.endLength(l);
  }
}

/** The encoded `Label` fields of a 1.0 TimeSeries for a sorted label set: what a series record stores once. */
export function encodeLabelsV1(labels: Labels, w = new ProtoWriter(256)): Uint8Array {
  w.pos = 0;
  writeLabelsV1(w, labels);
  return w.finish().slice();
}

/** Appends one 1.0 TimeSeries of one sample from already encoded labels (see encodeLabelsV1). */
export function writeSampleV1(w: ProtoWriter, labels: Uint8Array, timestampMs: number, value: number, stale: boolean): void {
  const sampleBody = 9 + (timestampMs === 0 ? 0 : 1 + (timestampMs < 0 ? 10 : varintSize(timestampMs)));
  const len = labels.length + 1 + varintSize(sampleBody) + sampleBody;
  w.varint(V1_TIMESERIES);
  w.varint(len);
  w.bytes(labels);
  w.varint(V1_SAMPLES);
  w.varint(sampleBody);
  w.varint(SAMPLE_VALUE);
  if (stale) w.bytes(STALE_NAN_BYTES);
  else w.double(value);
  if (timestampMs !== 0) {
    w.varint(SAMPLE_TIMESTAMP);
    w.int64(timestampMs);
  }
}

/** One 1.0 TimeSeries in a WriteRequest body: its byte range and its sample count. */
export interface SeriesPart {
  start: number;
  end: number;
  samples: number;
}

/** The TimeSeries fields of a 1.0 WriteRequest, in order, without decoding them (split.ts sends byte ranges of them). */
export function seriesParts(v1: Uint8Array): SeriesPart[] {
  const parts: SeriesPart[] = [];
  const r = new Reader(v1);
  while (r.pos < v1.length) {
    const start = r.pos;
    const key = r.varint();
    if ((key & 7) !== 2) throw new Error(`protobuf: WriteRequest field ${key >> 3} is not length-delimited`);
    const end = r.varint() + r.pos;
    if (end > v1.length) throw new Error("protobuf: truncated WriteRequest");
    if (key !== V1_TIMESERIES) {
      r.pos = end;
      continue;
    }
    let samples = 0;
    while (r.pos < end) {
      const k = r.varint();
      if ((k & 7) !== 2) throw new Error(`protobuf: TimeSeries field ${k >> 3} is not length-delimited`);
      const len = r.varint();
      if (k === V1_SAMPLES) samples++;
      r.pos += len;
    }
    if (r.pos !== end) throw new Error("protobuf: TimeSeries overruns its length");
    parts.push({ start, end, samples });
  }
  return parts;
}
