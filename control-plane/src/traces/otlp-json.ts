// Decoding of an OTLP/JSON ExportTraceServiceRequest into flat span records, following the OTLP
// specification's JSON rules (opentelemetry-proto ac2c4b5, docs/specification.md "JSON Protobuf
// Encoding"): lowerCamelCase keys only, trace and span ids as case-insensitive hex, integer enums,
// 64-bit integers as decimal strings or numbers, unknown fields ignored. A span that breaks a rule
// is rejected alone (partial success); a body that is not an export request at all is a 400.
// Every string a record keeps is an owned copy of at most MAX_STRING characters (bounded-input.ts).
import { ownedPrefix } from "./bounded-input.js";

/** A span as the store keeps it: ids lower-case, times in ms, attributes flattened to scalars. */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** SpanKind integer (3 = CLIENT). */
  kind: number;
  startMs: number;
  endMs: number;
  /** Status code integer (0 unset, 1 ok, 2 error). */
  statusCode: number;
  service: string;
  attributes: Map<string, string | number | boolean | string[]>;
  events: { name: string; timeMs: number }[];
}

/** The outcome of decoding one request. */
export interface Decoded {
  spans: SpanRecord[];
  rejected: number;
  /** Why spans were rejected (the first few reasons), for partialSuccess.errorMessage. */
  problems: string[];
}

/** Caps per span, so one odd client cannot make a span large. */
export const MAX_ATTRIBUTES = 64;
export const MAX_STRING = 256;
const MAX_EVENTS = 16;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const arrayOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Parses a fixed64 nanosecond time (decimal string or number) into ms; undefined when invalid. */
function nanosToMs(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v / 1e6;
  if (typeof v === "string" && /^[0-9]{1,20}$/.test(v)) {
    const n = BigInt(v);
    return Number(n / 1000n) / 1000;
  }
  return undefined;
}

function hexId(v: unknown, bytes: number): string | undefined {
  if (typeof v !== "string" || v.length !== bytes * 2 || !/^[0-9a-fA-F]+$/.test(v)) return undefined;
  const lower = v.toLowerCase();
  // All-zero ids are invalid (trace.proto: "an all-zeroes ... is considered invalid").
  return /^0+$/.test(lower) ? undefined : lower;
}

/** One AnyValue as a scalar (arrays of strings kept, other composites dropped). */
function anyValue(v: unknown): string | number | boolean | string[] | undefined {
  if (!isObject(v)) return undefined;
  if (typeof v.stringValue === "string") return ownedPrefix(v.stringValue, MAX_STRING);
  if (typeof v.boolValue === "boolean") return v.boolValue;
  if (typeof v.intValue === "string" && /^-?[0-9]{1,20}$/.test(v.intValue)) return Number(v.intValue);
  if (typeof v.intValue === "number" && Number.isInteger(v.intValue)) return v.intValue;
  if (typeof v.doubleValue === "number") return v.doubleValue;
  if (isObject(v.arrayValue)) {
    return arrayOf(v.arrayValue.values)
      .slice(0, 64)
      .map(anyValue)
      .filter((x): x is string => typeof x === "string")
      .slice(0, 16);
  }
  return undefined;
}

function attributes(list: unknown): Map<string, string | number | boolean | string[]> {
  const out = new Map<string, string | number | boolean | string[]>();
  for (const kv of arrayOf(list)) {
    if (out.size >= MAX_ATTRIBUTES) break;
    if (!isObject(kv) || typeof kv.key !== "string" || kv.key === "") continue;
    const value = anyValue(kv.value);
    if (value !== undefined) out.set(ownedPrefix(kv.key, MAX_STRING), value);
  }
  return out;
}

function span(raw: unknown, service: string): SpanRecord | string {
  if (!isObject(raw)) return "a span is not an object";
  const traceId = hexId(raw.traceId, 16);
  if (traceId === undefined) return "traceId must be 32 hex characters, not all zero";
  const spanId = hexId(raw.spanId, 8);
  if (spanId === undefined) return "spanId must be 16 hex characters, not all zero";
  let parentSpanId = "";
  if (raw.parentSpanId !== undefined && raw.parentSpanId !== "") {
    const p = hexId(raw.parentSpanId, 8);
    if (p === undefined) return "parentSpanId must be empty or 16 hex characters";
    parentSpanId = p;
  }
  const startMs = nanosToMs(raw.startTimeUnixNano);
  const endMs = nanosToMs(raw.endTimeUnixNano);
  if (startMs === undefined || endMs === undefined || endMs < startMs) return "startTimeUnixNano and endTimeUnixNano must be fixed64 nanoseconds, end not before start";
  if (raw.kind !== undefined && !(Number.isInteger(raw.kind) && (raw.kind as number) >= 0 && (raw.kind as number) <= 5)) return "kind must be an integer enum value (0..5)";
  const status = isObject(raw.status) ? raw.status : {};
  if (status.code !== undefined && !(Number.isInteger(status.code) && (status.code as number) >= 0 && (status.code as number) <= 2)) return "status.code must be an integer enum value (0..2)";
  const events: { name: string; timeMs: number }[] = [];
  for (const e of arrayOf(raw.events).slice(0, MAX_EVENTS)) {
    if (!isObject(e) || typeof e.name !== "string") continue;
    const timeMs = nanosToMs(e.timeUnixNano);
    if (timeMs !== undefined) events.push({ name: ownedPrefix(e.name, MAX_STRING), timeMs });
  }
  return {
    traceId,
    spanId,
    parentSpanId,
    name: typeof raw.name === "string" ? ownedPrefix(raw.name, MAX_STRING) : "",
    kind: (raw.kind as number | undefined) ?? 0,
    startMs,
    endMs,
    statusCode: (status.code as number | undefined) ?? 0,
    service,
    attributes: attributes(raw.attributes),
    events,
  };
}

/** Decodes a parsed JSON body; throws a message for a body that is not an ExportTraceServiceRequest. */
export function decodeExportRequest(body: unknown): Decoded {
  if (!isObject(body)) throw new Error("the body must be a JSON object (ExportTraceServiceRequest)");
  if (body.resourceSpans !== undefined && !Array.isArray(body.resourceSpans)) throw new Error("resourceSpans must be an array");
  const out: Decoded = { spans: [], rejected: 0, problems: [] };
  for (const rs of arrayOf(body.resourceSpans)) {
    if (!isObject(rs)) continue;
    const resource = attributes(isObject(rs.resource) ? rs.resource.attributes : undefined);
    const service = typeof resource.get("service.name") === "string" ? (resource.get("service.name") as string) : "";
    for (const ss of arrayOf(rs.scopeSpans)) {
      if (!isObject(ss)) continue;
      for (const raw of arrayOf(ss.spans)) {
        const s = span(raw, service);
        if (typeof s === "string") {
          out.rejected++;
          if (out.problems.length < 3 && !out.problems.includes(s)) out.problems.push(s);
        } else out.spans.push(s);
      }
    }
  }
  return out;
}
