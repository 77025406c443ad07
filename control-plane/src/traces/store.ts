// The spans the receiver accepted, newest kept: a ring of at most `maxSpans` records (the oldest
// goes first), indexed by trace id and by token trace id, so memory stays bounded whatever clients
// send. The dashboard reads recent LLM calls per route and looks a request up by either id.
import type { SpanRecord } from "./otlp-json.js";

/** One LLM call as the dashboard lists it (from the filter's span attributes). */
export interface LlmCall {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  service: string;
  route: string;
  model: string;
  operation: string;
  startMs: number;
  durationMs: number;
  /** Time to first chunk (streaming), ms; null when the span does not say. */
  ttftMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  httpStatus: number | null;
  /** OTLP status code: 2 = error. */
  statusCode: number;
  finishReasons: string[];
  tokenTraceId: string;
  attributes: Record<string, string | number | boolean | string[]>;
  events: { name: string; timeMs: number }[];
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The dashboard's view of a span. */
export function llmCallOf(s: SpanRecord): LlmCall {
  const a = s.attributes;
  // GenAI conventions: gen_ai.response.time_to_first_chunk (s); the filter before it: a gen_ai.first_token event.
  const ttftSeconds = num(a.get("gen_ai.response.time_to_first_chunk"));
  const firstTokenEvent = s.events.find((e) => e.name === "gen_ai.first_token");
  const ttftMs = ttftSeconds !== null ? ttftSeconds * 1000 : firstTokenEvent ? firstTokenEvent.timeMs - s.startMs : null;
  const finish = a.get("gen_ai.response.finish_reasons");
  const attributes: Record<string, string | number | boolean | string[]> = Object.create(null) as Record<string, string | number | boolean | string[]>;
  for (const [k, v] of a) attributes[k] = v;
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    parentSpanId: s.parentSpanId,
    name: s.name,
    service: s.service,
    route: str(a.get("tokentrace.route")) || str(a.get("http.route")),
    model: str(a.get("gen_ai.request.model")) || str(a.get("gen_ai.response.model")),
    operation: str(a.get("gen_ai.operation.name")),
    startMs: s.startMs,
    durationMs: Math.round((s.endMs - s.startMs) * 1000) / 1000,
    ttftMs: ttftMs === null ? null : Math.round(ttftMs * 1000) / 1000,
    inputTokens: num(a.get("gen_ai.usage.input_tokens")),
    outputTokens: num(a.get("gen_ai.usage.output_tokens")),
    httpStatus: num(a.get("http.response.status_code")),
    statusCode: s.statusCode,
    finishReasons: Array.isArray(finish) ? finish : typeof finish === "string" ? [finish] : [],
    tokenTraceId: str(a.get("tokentrace.token_trace_id")),
    attributes,
    events: s.events,
  };
}

/** Bounded store of recent spans. */
export class TraceStore {
  private readonly ring: (LlmCall | undefined)[];
  private next = 0;
  private readonly byTraceId = new Map<string, Set<LlmCall>>();
  private readonly byTokenTraceId = new Map<string, Set<LlmCall>>();
  /** Spans accepted since start (also those already evicted). */
  accepted = 0;

  constructor(readonly maxSpans: number) {
    if (!Number.isInteger(maxSpans) || maxSpans < 1) throw new Error(`maxSpans must be a positive integer, got ${maxSpans}`);
    this.ring = new Array<LlmCall | undefined>(maxSpans);
  }

  /** Adds spans, evicting the oldest beyond maxSpans. */
  add(spans: readonly SpanRecord[]): void {
    for (const s of spans) {
      const call = llmCallOf(s);
      const old = this.ring[this.next];
      if (old) {
        this.unindex(this.byTraceId, old.traceId, old);
        if (old.tokenTraceId) this.unindex(this.byTokenTraceId, old.tokenTraceId, old);
      }
      this.ring[this.next] = call;
      this.next = (this.next + 1) % this.maxSpans;
      this.index(this.byTraceId, call.traceId, call);
      if (call.tokenTraceId) this.index(this.byTokenTraceId, call.tokenTraceId, call);
      this.accepted++;
    }
  }

  private index(map: Map<string, Set<LlmCall>>, key: string, call: LlmCall): void {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(call);
  }

  private unindex(map: Map<string, Set<LlmCall>>, key: string, call: LlmCall): void {
    const set = map.get(key);
    set?.delete(call);
    if (set?.size === 0) map.delete(key);
  }

  /** Spans held now. */
  get size(): number {
    return this.ring.reduce((n, c) => n + (c ? 1 : 0), 0);
  }

  /** The newest LLM calls (spans with gen_ai.operation.name), newest first, optionally of one route. */
  recent(opts: { route?: string | undefined; limit: number; errorsOnly?: boolean; minDurationMs?: number }): LlmCall[] {
    const out: LlmCall[] = [];
    for (let k = 1; k <= this.maxSpans && out.length < opts.limit; k++) {
      const c = this.ring[(this.next - k + this.maxSpans) % this.maxSpans];
      if (!c) break;
      if (c.operation === "") continue;
      if (opts.route !== undefined && c.route !== opts.route) continue;
      if (opts.errorsOnly && c.statusCode !== 2 && (c.httpStatus ?? 0) < 400) continue;
      if (opts.minDurationMs !== undefined && c.durationMs < opts.minDurationMs) continue;
      out.push(c);
    }
    return out;
  }

  /** Every span of a trace id, or carrying a token trace id, oldest first. */
  lookup(id: string): LlmCall[] {
    const found = new Set<LlmCall>([...(this.byTraceId.get(id.toLowerCase()) ?? []), ...(this.byTokenTraceId.get(id) ?? [])]);
    return [...found].sort((a, b) => a.startMs - b.startMs);
  }
}
