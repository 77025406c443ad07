// OTLP export bodies as the filter sends them (filter/telemetry/spans.ts) and as a Collector's
// otlphttp exporter sends them (binary protobuf via the OpenTelemetry JS generated messages).
import { createRequire } from "node:module";

const NS = 1_796_000_000_000_000_000n;

/** One LLM span; `n` makes its ids; `extra` adds attributes (e.g. a huge one). */
export function llmSpan(n: number, opts: { tokenTraceId?: string; traceId?: string; extra?: { key: string; value: string }[] } = {}): Record<string, unknown> {
  const start = NS + BigInt(n) * 1_000_000_000n;
  return {
    traceId: opts.traceId ?? n.toString(16).padStart(32, "a"),
    spanId: (n + 1).toString(16).padStart(16, "c"),
    name: "chat tokentrace-sim-1",
    kind: 3,
    startTimeUnixNano: start.toString(),
    endTimeUnixNano: (start + 400_000_000n).toString(),
    attributes: [
      { key: "gen_ai.operation.name", value: { stringValue: "chat" } },
      { key: "gen_ai.request.model", value: { stringValue: "tokentrace-sim-1" } },
      { key: "gen_ai.usage.input_tokens", value: { intValue: "16" } },
      { key: "gen_ai.usage.output_tokens", value: { intValue: "12" } },
      { key: "tokentrace.token_trace_id", value: { stringValue: opts.tokenTraceId ?? `ttid-${n}` } },
      { key: "http.route", value: { stringValue: "chat" } },
      { key: "http.response.status_code", value: { intValue: "200" } },
      ...(opts.extra ?? []).map((a) => ({ key: a.key, value: { stringValue: a.value } })),
    ],
    events: [{ timeUnixNano: (start + 125_000_000n).toString(), name: "gen_ai.first_token" }],
  };
}

/** An ExportTraceServiceRequest (OTLP/JSON) holding `spans`. */
export const exportJson = (spans: unknown[]): string =>
  JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "sidecar" } }] }, scopeSpans: [{ scope: { name: "tokentrace" }, spans }] }] });

interface ProtoType {
  fromObject(object: object): unknown;
  encode(message: unknown): { finish(): Uint8Array };
}
const generated = createRequire(import.meta.url)("@opentelemetry/otlp-transformer/build/src/generated/root.js") as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoType } } } } };
};
const { ExportTraceServiceRequest } = generated.opentelemetry.proto.collector.trace.v1;

/** The same body as binary protobuf (hex ids become bytes). */
export function exportProtobuf(json: string): Buffer {
  const withBytes = JSON.parse(json, (key, value: unknown) => (["traceId", "spanId", "parentSpanId"].includes(key) && typeof value === "string" ? Buffer.from(value, "hex") : value)) as object;
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(withBytes)).finish());
}
