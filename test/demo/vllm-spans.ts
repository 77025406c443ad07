// The simulated vLLM's request spans, as vLLM exports them when started with
// --otlp-traces-endpoint: one SERVER span `llm_request` per finished request, a child of the
// traceparent the request arrived with, from its arrival to its end, with the engine's latencies in
// seconds (vllm-project/vllm@d078226 vllm/v1/engine/output_processor.py do_tracing; the names are
// vllm/tracing.py SpanAttributes). vLLM's tracer uses the OpenTelemetry SDK's default sampler,
// ParentBased(ALWAYS_ON) (opentelemetry-python opentelemetry-sdk .../trace/sampling.py DEFAULT_ON):
// a request whose traceparent is not sampled exports nothing, one without a traceparent starts a
// trace of its own. Spans leave in batches over OTLP/HTTP JSON, as the SDK's BatchSpanProcessor
// sends them (at a size or an interval, whichever comes first).
import { randomBytes } from "node:crypto";
import { realClock, type EngineClock, type RequestTimings } from "./engine.js";

/** What one finished request contributes to its span. */
export interface VllmRequestSpanInput {
  /** The request's `traceparent` header, if any. */
  traceparent: string | undefined;
  /** Wall-clock ms when the server received the request (the engine's arrival). */
  arrivalWallMs: number;
  timings: RequestTimings;
  requestId: string;
  model: string;
  finishReason: string;
  maxTokens?: number;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue: string } | { doubleValue: number } | { intValue: string };
}

/** One OTLP/JSON span (opentelemetry-proto trace.proto Span), ready to send. */
export interface OtlpJsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// opentelemetry-proto trace.proto: SPAN_KIND_SERVER = 2.
const SPAN_KIND_SERVER = 2;

const nanos = (ms: number): string => (BigInt(Math.round(ms * 1000)) * 1000n).toString();
const seconds = (ms: number): number => Math.max(0, ms) / 1000;

/**
 * The span vLLM writes for a finished request, or undefined when its sampler drops it (a
 * traceparent whose sampled flag is 0). An unreadable traceparent is ignored, as the SDK's
 * propagator ignores it, and the span starts a trace of its own.
 */
export function vllmRequestSpan(input: VllmRequestSpanInput): OtlpJsonSpan | undefined {
  const parent = TRACEPARENT.exec(input.traceparent?.trim().toLowerCase() ?? "");
  const valid = parent !== null && parent[1] !== "ff" && !/^0+$/.test(parent[2]!) && !/^0+$/.test(parent[3]!);
  if (valid && (parseInt(parent[4]!, 16) & 1) === 0) return undefined;
  const t = input.timings;
  // Engine-clock ms mapped onto the wall clock at the arrival.
  const wall = (engineMs: number): number => input.arrivalWallMs + (engineMs - t.arrivalMs);
  const attributes: OtlpAttribute[] = [
    { key: "gen_ai.latency.time_to_first_token", value: { doubleValue: seconds(t.firstTokenMs - t.arrivalMs) } },
    { key: "gen_ai.latency.e2e", value: { doubleValue: seconds(t.finishedMs - t.arrivalMs) } },
    { key: "gen_ai.latency.time_in_queue", value: { doubleValue: seconds(t.scheduledMs - t.arrivalMs) } },
    { key: "gen_ai.usage.prompt_tokens", value: { intValue: String(t.promptTokens) } },
    { key: "gen_ai.usage.completion_tokens", value: { intValue: String(t.outputTokens) } },
    { key: "gen_ai.latency.time_in_model_prefill", value: { doubleValue: seconds(t.firstTokenMs - t.scheduledMs) } },
    { key: "gen_ai.latency.time_in_model_decode", value: { doubleValue: seconds(t.finishedMs - t.firstTokenMs) } },
    { key: "gen_ai.latency.time_in_model_inference", value: { doubleValue: seconds(t.finishedMs - t.scheduledMs) } },
    { key: "gen_ai.request.id", value: { stringValue: input.requestId } },
    // vLLM writes the finish reasons as one JSON-encoded list.
    { key: "gen_ai.response.finish_reasons", value: { stringValue: JSON.stringify([input.finishReason]) } },
    { key: "gen_ai.response.model", value: { stringValue: input.model } },
  ];
  if (input.maxTokens !== undefined) attributes.push({ key: "gen_ai.request.max_tokens", value: { intValue: String(input.maxTokens) } });
  return {
    traceId: valid ? parent[2]! : randomBytes(16).toString("hex"),
    spanId: randomBytes(8).toString("hex"),
    ...(valid ? { parentSpanId: parent[3]! } : {}),
    name: "llm_request",
    kind: SPAN_KIND_SERVER,
    startTimeUnixNano: nanos(input.arrivalWallMs),
    endTimeUnixNano: nanos(wall(t.finishedMs)),
    attributes,
  };
}

/** Options of the batch exporter. */
export interface VllmSpanExporterOptions {
  /** The OTLP/HTTP traces endpoint (…/v1/traces). */
  url: string;
  /** `service.name` of the resource (vLLM's is the process's, "vllm" unless OTEL_SERVICE_NAME says otherwise). */
  serviceName?: string;
  /** Spans per request (BatchSpanProcessor's max_export_batch_size is 512; small here to show spans soon). */
  batchSize?: number;
  /** Longest a span waits, ms (the SDK's schedule_delay_millis is 5,000). */
  flushIntervalMs?: number;
  /** Spans held at most; past it new spans are dropped and counted, as the SDK's max_queue_size does. */
  maxQueued?: number;
  /** The flush timer, default the global one (a simulated stack passes its clock). */
  timers?: EngineClock;
}

/** Batches spans and posts them; a failed export is dropped (the SDK does not retry a batch). */
export class VllmSpanExporter {
  private queue: OtlpJsonSpan[] = [];
  private timer: unknown;
  private inflight: Promise<void> = Promise.resolve();
  private closed = false;
  /** Spans sent, and spans lost (queue full or a failed export). */
  readonly counts = { exported: 0, dropped: 0 };

  constructor(private readonly opts: VllmSpanExporterOptions) {}

  add(span: OtlpJsonSpan): void {
    if (this.closed) return;
    if (this.queue.length >= (this.opts.maxQueued ?? 2048)) {
      this.counts.dropped += 1;
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= (this.opts.batchSize ?? 32)) this.flush();
    else this.timer ??= (this.opts.timers ?? realClock).setTimeout(() => void this.flush(), this.opts.flushIntervalMs ?? 500);
  }

  /** Sends what is queued; resolves when every send so far is done. */
  flush(): Promise<void> {
    if (this.timer !== undefined) (this.opts.timers ?? realClock).clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length > 0) this.inflight = this.inflight.then(() => this.send(batch));
    return this.inflight;
  }

  private async send(spans: OtlpJsonSpan[]): Promise<void> {
    const body = {
      resourceSpans: [
        {
          resource: { attributes: [{ key: "service.name", value: { stringValue: this.opts.serviceName ?? "vllm" } }] },
          scopeSpans: [{ scope: { name: "vllm.llm_engine" }, spans }],
        },
      ],
    };
    try {
      const res = await fetch(this.opts.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      if (res.ok) this.counts.exported += spans.length;
      else this.counts.dropped += spans.length;
    } catch {
      this.counts.dropped += spans.length;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }
}
