// The compact record the disk queue stores, after Prometheus's WAL (tsdb/record: series records
// carry a ref and the labels once, sample records only ref, timestamp and value). One record:
//
//   0x01 | snappy( varint defs | defs x (varint ref, varint len, labels) |
//                  varint baseTs | varint count | count x (zigzag ref delta, zigzag ts delta, value) )
//
// `labels` are the encoded 1.0 `Label` fields of the series (what a TimeSeries message starts
// with), so a sender copies them into a request as they are. A value is one varint `h`: h % 4 = 0
// an integer (zigzag, h / 4), 1 a float64 that follows (little-endian), 2 the staleness marker.
// Every segment defines each ref it uses before using it, so a segment can be read (or dropped)
// on its own. A payload starting with 0x0a is a raw 1.0 WriteRequest of an older queue.
import { ProtoWriter } from "./protobuf.js";
import { snappyCompress, snappyUncompress } from "./snappy.js";

/** First byte of a compact record. */
export const COMPACT_RECORD = 0x01;
/** First byte of a raw 1.0 WriteRequest (field 1, length-delimited): records of older queues. */
export const LEGACY_V1_RECORD = 0x0a;

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);

/** Signed integer in (-2^52, 2^52) as a zigzag varint. */
function zigzag(w: ProtoWriter, v: number): void {
  w.varint(v >= 0 ? v * 2 : -v * 2 - 1);
}

/** Reads a record's varints, doubles and bytes. */
export class ByteReader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}
  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error("record: truncated varint");
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
  }
  zigzag(): number {
    const z = this.varint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }
  double(): number {
    if (this.pos + 8 > this.buf.length) throw new Error("record: truncated double");
    f64Bytes.set(this.buf.subarray(this.pos, this.pos + 8));
    this.pos += 8;
    return f64[0]!;
  }
  bytes(n: number): Uint8Array {
    if (this.pos + n > this.buf.length) throw new Error("record: truncated bytes");
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

const MAX_EXACT_INT = 2 ** 48;

/** The samples part of a record, encoded once and shared by every queue. */
export class SamplesPart {
  readonly w = new ProtoWriter(32 * 1024);
  count = 0;
  newestMs = -Infinity;
  private baseTs = -1;
  private prevRef = 0;

  /** Appends one sample of series `ref`; `stale` writes the staleness marker. */
  add(ref: number, timestampMs: number, value: number, stale: boolean): void {
    if (this.baseTs < 0) this.baseTs = timestampMs;
    const w = this.w;
    zigzag(w, ref - this.prevRef);
    this.prevRef = ref;
    zigzag(w, timestampMs - this.baseTs);
    if (stale) w.varint(2);
    else if (Number.isInteger(value) && Math.abs(value) < MAX_EXACT_INT && !Object.is(value, -0)) w.varint((value >= 0 ? value * 2 : -value * 2 - 1) * 4);
    else {
      w.varint(1);
      w.double(value);
    }
    this.count++;
    if (timestampMs > this.newestMs) this.newestMs = timestampMs;
  }

  /** The base timestamp the deltas are relative to. */
  get base(): number {
    return Math.max(0, this.baseTs);
  }

  reset(): void {
    this.w.pos = 0;
    this.count = 0;
    this.newestMs = -Infinity;
    this.baseTs = -1;
    this.prevRef = 0;
  }
}

/** Builds one compressed record from series definitions and a samples part. */
export function encodeRecord(defs: readonly { id: number; labels: Uint8Array }[], samples: SamplesPart, scratch: ProtoWriter): Uint8Array {
  scratch.pos = 0;
  scratch.varint(defs.length);
  for (const d of defs) {
    scratch.varint(d.id);
    scratch.varint(d.labels.length);
    scratch.bytes(d.labels);
  }
  scratch.varint(samples.base);
  scratch.varint(samples.count);
  scratch.bytes(samples.w.finish());
  const compressed = snappyCompress(scratch.finish());
  const out = new Uint8Array(compressed.length + 1);
  out[0] = COMPACT_RECORD;
  out.set(compressed, 1);
  return out;
}

/** Receives a decoded record: definitions first, then samples in order. */
export interface RecordVisitor {
  define(id: number, labels: Uint8Array): void;
  /** `value` is NaN and `stale` true for a staleness marker. */
  sample(id: number, timestampMs: number, value: number, stale: boolean): void;
}

/** Decodes a compact record (payload including its first byte). */
export function decodeRecord(payload: Uint8Array, visitor: RecordVisitor): void {
  if (payload[0] !== COMPACT_RECORD) throw new Error(`record: unknown format byte ${payload[0]}`);
  const r = new ByteReader(snappyUncompress(payload.subarray(1)));
  const defs = r.varint();
  for (let i = 0; i < defs; i++) {
    const id = r.varint();
    const len = r.varint();
    visitor.define(id, r.bytes(len));
  }
  const base = r.varint();
  const count = r.varint();
  let ref = 0;
  for (let i = 0; i < count; i++) {
    ref += r.zigzag();
    const ts = base + r.zigzag();
    const h = r.varint();
    const kind = h % 4;
    if (kind === 0) {
      const z = h / 4;
      visitor.sample(ref, ts, z % 2 === 0 ? z / 2 : -(z + 1) / 2, false);
    } else if (kind === 1) visitor.sample(ref, ts, r.double(), false);
    else if (kind === 2) visitor.sample(ref, ts, NaN, true);
    else throw new Error(`record: unknown value kind ${kind}`);
  }
}
