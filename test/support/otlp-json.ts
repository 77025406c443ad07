// A strict reader of OTLP/JSON trace exports, for the tests: the body is decoded with the
// opentelemetry-proto definitions as the OpenTelemetry JS project generates them (protobufjs static
// code in @opentelemetry/otlp-transformer 0.215.0, the last release that ships the trace messages
// generated, Node 20 compatible), encoded to protobuf, decoded and written back as JSON. Anything
// the definitions do not hold (an unknown field, a value of the wrong type, a misspelt key) comes
// back different and is reported with its path. OTLP/JSON's own rules (opentelemetry-proto
// docs/specification.md, "JSON Protobuf Encoding") are applied on top: trace and span ids as hex,
// enums as integers.
import { createRequire } from "node:module";
import { isDeepStrictEqual } from "node:util";

interface MessageType {
  fromObject(object: object): unknown;
  encode(message: unknown): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: object): Record<string, unknown>;
}

interface GeneratedRoot {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: MessageType } } } } };
}

const require = createRequire(import.meta.url);
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js") as GeneratedRoot;
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

/** OTLP/JSON writes these bytes fields as hex ("traceId and spanId ... in all OTLP Protobuf messages"). */
const HEX_ID_FIELDS = new Set(["traceId", "spanId", "parentSpanId"]);

function mapIds(value: unknown, path: string, problems: string[], toBytes: boolean): unknown {
  if (Array.isArray(value)) return value.map((v, i) => mapIds(v, `${path}[${i}]`, problems, toBytes));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (!HEX_ID_FIELDS.has(k)) {
      out[k] = mapIds(v, `${path}.${k}`, problems, toBytes);
    } else if (!toBytes) {
      out[k] = Buffer.from(String(v), "base64").toString("hex");
    } else if (typeof v !== "string" || !/^(?:[0-9a-fA-F]{2})*$/.test(v)) {
      problems.push(`${path}.${k}: ${JSON.stringify(v)} is not a hex id`);
    } else {
      out[k] = Buffer.from(v, "hex");
    }
  }
  return out;
}

function differences(a: unknown, b: unknown, path: string, out: string[]): void {
  if (isDeepStrictEqual(a, b)) return;
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`, out);
    return;
  }
  out.push(`${path}: sent ${JSON.stringify(a)}, the definitions read ${JSON.stringify(b)}`);
}

/** What in an OTLP/JSON ExportTraceServiceRequest body the opentelemetry-proto definitions do not read back unchanged ([] when nothing). */
export function otlpJsonProblems(body: unknown): string[] {
  const problems: string[] = [];
  if (body === null || typeof body !== "object" || Array.isArray(body)) return ["the body is not a JSON object"];
  const withBytes = mapIds(body, "$", problems, true) as object;
  if (problems.length > 0) return problems;
  let back: unknown;
  try {
    const bytes = ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(withBytes)).finish();
    const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(bytes), { longs: String, enums: Number, bytes: String, json: true });
    back = mapIds(decoded, "$", problems, false);
  } catch (e) {
    return [`the definitions refuse the body: ${(e as Error).message}`];
  }
  differences(body, back, "$", problems);
  return problems;
}
