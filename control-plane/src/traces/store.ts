// The spans the receiver accepted, newest kept, indexed by trace id and by token trace id, within
// a byte budget and a span count. Every byte a held span keeps is counted (its strings, its
// attribute map, its index entries: `retainedBytes`), and the strings are owned copies
// (bounded-input.ts), so the count bounds the heap. The budget is shared fairly between sources
// (the authenticated caller that sent the spans): room is made by evicting the oldest span of the
// source holding the most bytes, so a caller that floods evicts its own spans and nobody else's
// while it holds more than they do (max-min fairness).
//
// A span cannot be planted under someone else's x-token-trace-id: a span whose token trace id is
// already held is accepted only from a source already holding spans of it (a retry of the same
// caller) or with a trace id already held under it (the next hop of the same trace, which must
// know the trace's 128-bit random id); anything else is refused and counted. Every read names each
// span's source.
//
// The dashboard reads recent LLM calls per route and looks a request up by either id.
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
  /** The authenticated caller that sent the span (a SPIFFE id, `token:<namespace>` or `local`). */
  source: string;
  attributes: Record<string, string | number | boolean | string[]>;
  events: { name: string; timeMs: number }[];
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The dashboard's view of a span. */
export function llmCallOf(s: SpanRecord, source = "local"): LlmCall {
  const a = s.attributes;
  // GenAI conventions: gen_ai.response.time_to_first_chunk (s), to the first chunk received (vLLM and TGI send their first
  // chunk with the first token); the filter before it: a gen_ai.first_token event.
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
    source,
    attributes,
    events: s.events,
  };
}

/** Why spans were not kept (bounded: these values only). */
export type DropReason = "evicted" | "over_budget" | "token_trace_id_conflict";

/** What `add` did with one request's spans. */
export interface AddResult {
  kept: number;
  /** Spans of this request refused, by reason. */
  refused: Partial<Record<Exclude<DropReason, "evicted">, number>>;
  /** Held spans (of any source) evicted to make room. */
  evicted: number;
}

// V8's sizes on a 64-bit build with pointer compression off (the upper bound): a string is a
// 16-byte header and 1 or 2 bytes a character (2 assumed); an object ~ 24 bytes and 8 a field; a
// Map or Set entry ~ 40 bytes with its share of the table. Measured against the heap by
// test/control-plane/traces/receiver-memory.test.ts, which fails if the count falls below it.
const STRING_BYTES = 24;
const CALL_BYTES = 1024;
const ENTRY_BYTES = 160;
const ATTRIBUTE_BYTES = 96;
const EVENT_BYTES = 96;
const SOURCE_BYTES = 512;

const stringBytes = (s: string): number => STRING_BYTES + 2 * s.length;

/** Bytes a held call keeps alive (an upper bound: strings counted at two bytes a character). */
export function retainedBytes(call: LlmCall): number {
  let bytes = CALL_BYTES + ENTRY_BYTES + stringBytes(call.traceId) + stringBytes(call.spanId) + stringBytes(call.parentSpanId) + stringBytes(call.name) + stringBytes(call.service);
  for (const key in call.attributes) {
    bytes += ATTRIBUTE_BYTES + stringBytes(key);
    const value = call.attributes[key];
    if (typeof value === "string") bytes += stringBytes(value);
    else if (Array.isArray(value)) for (const item of value) bytes += 16 + stringBytes(item);
  }
  for (const event of call.events) bytes += EVENT_BYTES + stringBytes(event.name);
  return bytes;
}

interface Entry {
  call: LlmCall;
  bytes: number;
  source: Source;
  /** Its index in the arrival order (so eviction can empty that slot). */
  slot: number;
}

interface Source {
  name: string;
  queue: Entry[];
  head: number;
  bytes: number;
}

interface TokenHolders {
  sources: Map<string, number>;
  traces: Map<string, number>;
  entries: Set<Entry>;
}

const increment = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);
const decrement = (map: Map<string, number>, key: string): void => {
  const n = (map.get(key) ?? 0) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
};

/** Bounded store of recent spans (bytes and count), shared fairly between sources. */
export class TraceStore {
  /**
   * Every held entry in arrival order. An evicted entry's slot is emptied at once (a slot kept until
   * the next compaction would keep its span, past maxBytes), and empty slots are compacted away.
   */
  private order: (Entry | undefined)[] = [];
  private evictedInOrder = 0;
  private readonly sources = new Map<string, Source>();
  private readonly byTraceId = new Map<string, Set<Entry>>();
  private readonly byTokenTraceId = new Map<string, TokenHolders>();
  private heldBytes = 0;
  private held = 0;
  /** Spans accepted since start (also those already evicted). */
  accepted = 0;
  /** Spans not kept since start, by reason (evicted ones were kept first). */
  readonly dropped: Record<DropReason, number> = { evicted: 0, over_budget: 0, token_trace_id_conflict: 0 };
  readonly maxBytes: number;

  constructor(
    readonly maxSpans: number,
    options: { maxBytes?: number } = {},
  ) {
    if (!Number.isInteger(maxSpans) || maxSpans < 1) throw new Error(`maxSpans must be a positive integer, got ${maxSpans}`);
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    if (!Number.isInteger(this.maxBytes) || this.maxBytes < 1) throw new Error(`maxBytes must be a positive integer, got ${this.maxBytes}`);
  }

  /** Spans held now. */
  get size(): number {
    return this.held;
  }

  /** Bytes the held spans keep (as counted by `retainedBytes`, sources included). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Bytes held per source, largest first (for tests and the status page). */
  bytesBySource(): [string, number][] {
    return [...this.sources.values()].map((s): [string, number] => [s.name, s.bytes]).sort((a, b) => b[1] - a[1]);
  }

  /** Adds one request's spans from `source`, evicting to stay within both bounds. */
  add(spans: readonly SpanRecord[], source = "local"): AddResult {
    const result: AddResult = { kept: 0, refused: {}, evicted: 0 };
    const refuse = (reason: Exclude<DropReason, "evicted">): void => {
      result.refused[reason] = (result.refused[reason] ?? 0) + 1;
      this.dropped[reason] += 1;
    };
    for (const span of spans) {
      const call = llmCallOf(span, source);
      const holders = call.tokenTraceId === "" ? undefined : this.byTokenTraceId.get(call.tokenTraceId);
      if (holders !== undefined && !holders.sources.has(source) && !holders.traces.has(call.traceId)) {
        refuse("token_trace_id_conflict");
        continue;
      }
      const callBytes = retainedBytes(call);
      const sourceBytes = SOURCE_BYTES + stringBytes(source);
      const needed = callBytes + (this.sources.has(source) ? 0 : sourceBytes);
      if (needed > this.maxBytes) {
        refuse("over_budget");
        continue;
      }
      result.evicted += this.makeRoom(needed);
      let owner = this.sources.get(source);
      if (owner === undefined) {
        // A source's own overhead is held while it holds spans.
        owner = { name: source, queue: [], head: 0, bytes: sourceBytes };
        this.sources.set(source, owner);
        this.heldBytes += sourceBytes;
      }
      const entry: Entry = { call, bytes: callBytes, source: owner, slot: this.order.length };
      owner.queue.push(entry);
      owner.bytes += entry.bytes;
      this.heldBytes += entry.bytes;
      this.held += 1;
      this.order.push(entry);
      this.index(entry);
      this.accepted += 1;
      result.kept += 1;
    }
    return result;
  }

  /** Evicts (largest source first) until `bytes` more and one more span fit; returns how many went. */
  private makeRoom(bytes: number): number {
    let evicted = 0;
    while ((this.heldBytes + bytes > this.maxBytes || this.held + 1 > this.maxSpans) && this.held > 0) {
      let largest: Source | undefined;
      let second = 0;
      for (const s of this.sources.values()) {
        if (largest === undefined || s.bytes > largest.bytes) {
          if (largest !== undefined) second = Math.max(second, largest.bytes);
          largest = s;
        } else second = Math.max(second, s.bytes);
      }
      if (largest === undefined) break;
      // Evict from the largest until it is no longer larger than the next, or everything fits.
      do {
        this.evictOldest(largest);
        evicted += 1;
      } while ((this.heldBytes + bytes > this.maxBytes || this.held + 1 > this.maxSpans) && largest.head < largest.queue.length && largest.bytes >= second);
    }
    return evicted;
  }

  private evictOldest(source: Source): void {
    const entry = source.queue[source.head];
    if (entry === undefined) return;
    source.queue[source.head] = undefined as unknown as Entry;
    source.head += 1;
    this.order[entry.slot] = undefined;
    source.bytes -= entry.bytes;
    this.heldBytes -= entry.bytes;
    this.held -= 1;
    this.dropped.evicted += 1;
    this.unindex(entry);
    if (source.head === source.queue.length) {
      this.sources.delete(source.name);
      this.heldBytes -= source.bytes;
    } else if (source.head > 1024 && source.head * 2 > source.queue.length) {
      source.queue = source.queue.slice(source.head);
      source.head = 0;
    }
    this.evictedInOrder += 1;
    if (this.evictedInOrder > 1024 && this.evictedInOrder * 2 > this.order.length) {
      const held = this.order.filter((e): e is Entry => e !== undefined);
      for (let i = 0; i < held.length; i++) held[i]!.slot = i;
      this.order = held;
      this.evictedInOrder = 0;
    }
  }

  private index(entry: Entry): void {
    const { traceId, tokenTraceId } = entry.call;
    let set = this.byTraceId.get(traceId);
    if (set === undefined) this.byTraceId.set(traceId, (set = new Set()));
    set.add(entry);
    if (tokenTraceId === "") return;
    let holders = this.byTokenTraceId.get(tokenTraceId);
    if (holders === undefined) this.byTokenTraceId.set(tokenTraceId, (holders = { sources: new Map(), traces: new Map(), entries: new Set() }));
    holders.entries.add(entry);
    increment(holders.sources, entry.source.name);
    increment(holders.traces, traceId);
  }

  private unindex(entry: Entry): void {
    const { traceId, tokenTraceId } = entry.call;
    const set = this.byTraceId.get(traceId);
    set?.delete(entry);
    if (set?.size === 0) this.byTraceId.delete(traceId);
    if (tokenTraceId === "") return;
    const holders = this.byTokenTraceId.get(tokenTraceId);
    if (holders === undefined) return;
    holders.entries.delete(entry);
    decrement(holders.sources, entry.source.name);
    decrement(holders.traces, traceId);
    if (holders.entries.size === 0) this.byTokenTraceId.delete(tokenTraceId);
  }

  /**
   * The newest LLM calls (spans with gen_ai.operation.name), newest first, optionally of one route,
   * started within [fromMs, toMs], at least as long (or as slow to the first chunk) as asked.
   */
  recent(opts: { route?: string | undefined; limit: number; errorsOnly?: boolean; minDurationMs?: number; minTtftMs?: number; fromMs?: number; toMs?: number }): LlmCall[] {
    const out: LlmCall[] = [];
    for (let k = this.order.length - 1; k >= 0 && out.length < opts.limit; k--) {
      const entry = this.order[k];
      if (entry === undefined) continue;
      const c = entry.call;
      if (c.operation === "") continue;
      if (opts.route !== undefined && c.route !== opts.route) continue;
      if (opts.errorsOnly && c.statusCode !== 2 && (c.httpStatus ?? 0) < 400) continue;
      if (opts.minDurationMs !== undefined && c.durationMs < opts.minDurationMs) continue;
      if (opts.minTtftMs !== undefined && (c.ttftMs === null || c.ttftMs < opts.minTtftMs)) continue;
      if (opts.fromMs !== undefined && c.startMs < opts.fromMs) continue;
      if (opts.toMs !== undefined && c.startMs > opts.toMs) continue;
      out.push(c);
    }
    return out;
  }

  /**
   * Every span of a trace id, or of the traces that carry a token trace id (so the model server's
   * own spans, which know no token trace id, come with the proxy's), oldest first.
   */
  lookup(id: string): LlmCall[] {
    const found = new Set<LlmCall>();
    const traceIds = new Set<string>([id.toLowerCase()]);
    for (const e of this.byTokenTraceId.get(id)?.entries ?? []) {
      found.add(e.call);
      traceIds.add(e.call.traceId);
    }
    for (const traceId of traceIds) for (const e of this.byTraceId.get(traceId) ?? []) found.add(e.call);
    return [...found].sort((a, b) => a.startMs - b.startMs);
  }
}
