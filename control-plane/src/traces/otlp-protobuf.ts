// Binary protobuf OTLP (what an OpenTelemetry Collector's otlphttp exporter sends by default),
// read into the same shape as OTLP/JSON so one decoder (otlp-json.ts) applies every rule. Field
// numbers from opentelemetry-proto ac2c4b5: collector/trace/v1/trace_service.proto
// (ExportTraceServiceRequest, ExportTraceServiceResponse, ExportTracePartialSuccess),
// trace/v1/trace.proto (ResourceSpans, ScopeSpans, Span, Span.Event, Status), common/v1/common.proto
// (KeyValue, AnyValue, ArrayValue), resource/v1/resource.proto (Resource). Unknown fields are
// skipped, as protobuf requires; a malformed wire encoding throws, and so does nesting deeper
// than the receiver's limit (checked as each message is entered, before its fields are read).
// Strings are decoded from at most the bytes the store can keep (MAX_STRING characters of UTF-8),
// so a 1 MiB attribute never becomes a 1 MiB string.
import { MAX_STRING } from "./otlp-json.js";

type Field = { no: number; wire: 0; value: bigint } | { no: number; wire: 1; value: Buffer } | { no: number; wire: 2; value: Buffer } | { no: number; wire: 5; value: Buffer };

/** A varint as a number: keys, lengths and enums (at most 2^53 - 1, more than any Buffer's length). */
function readVarint(buf: Buffer, pos: { at: number }): number {
  let result = 0;
  let scale = 1;
  for (let i = 0; i < 8; i++) {
    if (pos.at >= buf.length) throw new Error("truncated varint");
    const byte = buf[pos.at++]!;
    result += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return result;
    scale *= 128;
  }
  throw new Error("varint too large for a length or key");
}

/** A varint value field as the 64-bit integer it encodes (ints, bools): up to 10 bytes. */
function readVarint64(buf: Buffer, pos: { at: number }): bigint {
  let result = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    if (pos.at >= buf.length) throw new Error("truncated varint");
    const byte = buf[pos.at++]!;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return result;
  }
  throw new Error("varint longer than 10 bytes");
}

function* fields(buf: Buffer): Generator<Field> {
  const pos = { at: 0 };
  while (pos.at < buf.length) {
    const key = readVarint(buf, pos);
    const no = Math.floor(key / 8);
    const wire = key % 8;
    if (no === 0) throw new Error("field number 0");
    if (wire === 0) yield { no, wire, value: readVarint64(buf, pos) };
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (pos.at + size > buf.length) throw new Error("truncated fixed field");
      yield { no, wire, value: buf.subarray(pos.at, (pos.at += size)) };
    } else if (wire === 2) {
      const length = readVarint(buf, pos);
      if (pos.at + length > buf.length) throw new Error("truncated length-delimited field");
      yield { no, wire, value: buf.subarray(pos.at, (pos.at += length)) };
    } else throw new Error(`wire type ${wire} is not used by OTLP`);
  }
}

const bytesOf = (f: Field): Buffer | undefined => (f.wire === 2 ? f.value : undefined);
/** UTF-8 of at most MAX_STRING characters' worth of bytes (4 each); the decoder keeps MAX_STRING of them. */
const boundedText = (b: Buffer): string => b.toString("utf8", 0, Math.min(b.length, MAX_STRING * 4));
const text = (f: Field): string | undefined => (f.wire === 2 ? boundedText(f.value) : undefined);

/** Nesting of one request's messages, checked on entry to each (ExportTraceServiceRequest is level 1). */
class Depth {
  constructor(readonly max: number) {}
  enter(level: number): void {
    if (level > this.max) throw new Error(`nested deeper than ${this.max} messages`);
  }
}

function anyValue(buf: Buffer, depth: Depth, level: number): Record<string, unknown> {
  depth.enter(level);
  for (const f of fields(buf)) {
    if (f.no === 1 && f.wire === 2) return { stringValue: boundedText(f.value) };
    if (f.no === 2 && f.wire === 0) return { boolValue: f.value !== 0n };
    if (f.no === 3 && f.wire === 0) return { intValue: BigInt.asIntN(64, f.value).toString() };
    if (f.no === 4 && f.wire === 1) return { doubleValue: f.value.readDoubleLE(0) };
    if (f.no === 5 && f.wire === 2) {
      depth.enter(level + 1);
      return { arrayValue: { values: [...fields(f.value)].filter((v) => v.no === 1 && v.wire === 2).map((v) => anyValue(v.value as Buffer, depth, level + 2)) } };
    }
  }
  return {};
}

function keyValue(buf: Buffer, depth: Depth, level: number): Record<string, unknown> {
  depth.enter(level);
  const out: Record<string, unknown> = {};
  for (const f of fields(buf)) {
    if (f.no === 1) out.key = text(f);
    else if (f.no === 2 && f.wire === 2) out.value = anyValue(f.value, depth, level + 1);
  }
  return out;
}

const fixed64 = (f: Field): string | undefined => (f.wire === 1 ? f.value.readBigUInt64LE(0).toString() : undefined);

function span(buf: Buffer, depth: Depth, level: number): Record<string, unknown> {
  depth.enter(level);
  const out: Record<string, unknown> = { attributes: [], events: [] };
  for (const f of fields(buf)) {
    if (f.no === 1) out.traceId = bytesOf(f)?.toString("hex");
    else if (f.no === 2) out.spanId = bytesOf(f)?.toString("hex");
    else if (f.no === 4) out.parentSpanId = bytesOf(f)?.toString("hex");
    else if (f.no === 5) out.name = text(f);
    else if (f.no === 6 && f.wire === 0) out.kind = Number(f.value);
    else if (f.no === 7) out.startTimeUnixNano = fixed64(f);
    else if (f.no === 8) out.endTimeUnixNano = fixed64(f);
    else if (f.no === 9 && f.wire === 2) (out.attributes as unknown[]).push(keyValue(f.value, depth, level + 1));
    else if (f.no === 11 && f.wire === 2) {
      const event: Record<string, unknown> = {};
      for (const e of fields(f.value)) {
        if (e.no === 1) event.timeUnixNano = fixed64(e);
        else if (e.no === 2) event.name = text(e);
      }
      (out.events as unknown[]).push(event);
    } else if (f.no === 15 && f.wire === 2) {
      const status: Record<string, unknown> = {};
      for (const s of fields(f.value)) if (s.no === 3 && s.wire === 0) status.code = Number(s.value);
      out.status = status;
    }
  }
  return out;
}

/** An ExportTraceServiceRequest in binary protobuf, as the OTLP/JSON object it encodes; throws on a bad wire encoding or nesting deeper than `maxDepth` messages. */
export function protobufExportRequest(buf: Buffer, maxDepth = 32): unknown {
  const depth = new Depth(maxDepth);
  const resourceSpans: unknown[] = [];
  for (const rs of fields(buf)) {
    if (rs.no !== 1 || rs.wire !== 2) continue;
    const resource = { attributes: [] as unknown[] };
    const scopeSpans: unknown[] = [];
    for (const f of fields(rs.value)) {
      if (f.no === 1 && f.wire === 2) for (const a of fields(f.value)) if (a.no === 1 && a.wire === 2) resource.attributes.push(keyValue(a.value, depth, 4));
      if (f.no === 2 && f.wire === 2) scopeSpans.push({ spans: [...fields(f.value)].filter((s) => s.no === 2 && s.wire === 2).map((s) => span(s.value as Buffer, depth, 4)) });
    }
    resourceSpans.push({ resource, scopeSpans });
  }
  return { resourceSpans };
}

function varint(n: bigint): Buffer {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v === 0n ? byte : byte | 0x80);
  } while (v !== 0n);
  return Buffer.from(out);
}

function lengthDelimited(no: number, body: Buffer): Buffer {
  return Buffer.concat([varint(BigInt((no << 3) | 2)), varint(BigInt(body.length)), body]);
}

/** ExportTraceServiceResponse: empty, or partial_success {rejected_spans, error_message}. */
export function protobufExportResponse(rejected: number, errorMessage: string): Buffer {
  if (rejected === 0) return Buffer.alloc(0);
  const partial = Buffer.concat([varint(BigInt((1 << 3) | 0)), varint(BigInt(rejected)), lengthDelimited(2, Buffer.from(errorMessage, "utf8"))]);
  return lengthDelimited(1, partial);
}

/** google.rpc.Status {code = 1, message = 2} for an error answer. */
export function protobufStatus(code: number, message: string): Buffer {
  return Buffer.concat([varint(BigInt((1 << 3) | 0)), varint(BigInt(code)), lengthDelimited(2, Buffer.from(message, "utf8"))]);
}
