// The dashboard's data: what each Envoy scrape of a pod added to the filter's counters and histogram
// buckets since the previous scrape of that pod (per route and model), kept for the last hour, from
// the metrics pipeline's joined batches (the same series remote write ships), so the page needs no
// Prometheus. Queries (window.ts) sum these increases over a window, as
// `sum(increase(x[w]))` and `histogram_quantile(q, sum by (le) (increase(x_bucket[w])))` would.
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import { NamePool, ownCopy } from "../scrape/name-pool.js";
import { POD_GPU_POWER, POD_GPU_UTILIZATION } from "../join/catalogue.js";
import { counterDelta } from "../join/joiner.js";
import { LoraAdapterStates } from "./lora-adapters.js";
import { EngineSignals } from "./engine-signals.js";
import { GpuHealthPanels } from "./gpu-health.js";
import { compareLengthClasses, isLengthClass, LENGTH_CLASS_LABELS, MAX_LENGTH_CLASSES } from "./length-classes.js";
import { DeltaPacker, NO_CELLS, type BucketDeltas, type Buckets, type Cells } from "./bucket-deltas.js";

export type { BucketDeltas, Buckets } from "./bucket-deltas.js";

/**
 * One model's failed LLM calls by error_type over one interval: `types` shared by every interval
 * with the same types (ErrorTypesPool), `counts` in their order: about 100 bytes plus 8 per type
 * (series-memory.test.ts measures it), and nothing on the many intervals without a failure.
 */
export interface ErrorDeltas {
  types: readonly string[];
  counts: number[];
}

/** Failures by error_type: cumulative as scraped (a Map) or, over an interval, ErrorDeltas (null without a failure). */
export type ErrorsOf<B> = B extends Buckets ? Map<string, number> : ErrorDeltas | null;

/**
 * One histogram's increase over one interval by the filter's length class: only the classes that
 * grew, `classes` shared by every interval with the same list (NamesPool), `deltas` in their order.
 * When one class alone grew, its deltas are the histogram's own (the same object): the usual
 * interval, every call of a scrape in one class, costs a small object and no second set of counts.
 */
export interface ClassDeltas {
  classes: readonly string[];
  deltas: BucketDeltas[];
}

/** A histogram by length class: cumulative per class as scraped, or over an interval ClassDeltas (null when no class grew). */
export type ByClassOf<B> = B extends Buckets ? Map<string, Buckets> : ClassDeltas | null;

/** One model's share of a route, cumulative as scraped (`B` = Buckets) or increased over an interval (`B` = BucketDeltas). */
export interface ModelCounts<B = BucketDeltas> {
  llmRequests: number;
  /** tokentrace_llm_requests_total with an error_type (failed calls), by error_type; at most MAX_ERROR_TYPES + _OTHER. */
  errors: ErrorsOf<B>;
  inputTokens: number;
  outputTokens: number;
  /** tokentrace_llm_ttft_ms: streaming responses, request start to first content chunk. */
  ttft: B;
  /** tokentrace_llm_decode_ms: streaming responses, first content chunk to last byte. */
  decode: B;
  /** tokentrace_llm_duration_ms: every LLM call, start to end. */
  duration: B;
  /** ttft by input_length (series without the label are in `ttft` only). */
  ttftByClass: ByClassOf<B>;
  /** decode by output_length. */
  decodeByClass: ByClassOf<B>;
  /** duration by output_length. */
  durationByClass: ByClassOf<B>;
}

/** One route's counts, cumulative as scraped (`B` = Buckets) or increased over one scrape interval of one pod. */
export interface RouteCounts<B = BucketDeltas> {
  /** tokentrace_requests_total by status_class (every request of the route, LLM or not). */
  byStatusClass: Map<string, number>;
  sampled: number;
  /**
   * tokentrace_spans_kept_total by keep_reason, then tokentrace_spans_budget_dropped_total (spans
   * tail keep chose that the budget dropped) by keep_reason, each in KEEP_REASONS order: 8 numbers,
   * not two maps, since every interval of every route holds one (an eighth of the bytes); null
   * when the scrape had neither.
   */
  keeps: number[] | null;
  models: Map<string, ModelCounts<B>>;
}

/** The increase of one route's counters over one scrape interval of one pod, with that pod's GPU state. */
export interface RouteInterval {
  endMs: number;
  seconds: number;
  pod: string;
  counts: RouteCounts;
  /** Mean utilisation (%) and summed power (W) of the pod's GPUs at the end; null without a GPU. */
  gpuUtilizationPercent: number | null;
  gpuPowerWatts: number | null;
}

/** A (namespace, route) with data, and the models seen on it. */
export interface RouteKey {
  namespace: string;
  route: string;
}

/** The scrape a batch came from (a subset of the pipeline's ScrapeResult). */
export interface BatchSource {
  target: { id: string; kind: string; namespace?: string; pod?: string };
  timestampMs: number;
}

/** What the dashboard routes read. */
export interface DashboardSource {
  /** Routes with data, sorted by namespace then route. */
  routes(): RouteKey[];
  /** Intervals of one route, oldest first. */
  intervals(key: RouteKey): readonly RouteInterval[];
  /** The model servers' SLO signals per model (absent: the page shows no engine panels). */
  readonly engine?: EngineSignals;
  /** The GPU health panels per pod (absent: the page shows none). */
  readonly gpu?: GpuHealthPanels;
  /** The LoRA adapters per base model (absent: the engine panels list none). */
  readonly lora?: LoraAdapterStates;
}

/** Bounds of the in-memory window. */
export interface SeriesLimits {
  /** Intervals older than this are dropped (the page's longest range). */
  retentionMs: number;
  /** Intervals kept per route, whatever their age (a fast scrape across many pods). */
  maxIntervalsPerRoute: number;
  maxRoutes: number;
  /** Models per route; more are summed as "other", as the filter does past stats.maxModels. */
  maxModelsPerRoute: number;
  /** What all routes' intervals may hold together, estimated from their sizes (intervalBytes); the oldest go first. */
  maxBytes: number;
}

export const DEFAULT_LIMITS: SeriesLimits = { retentionMs: 3_600_000, maxIntervalsPerRoute: 8_000, maxRoutes: 64, maxModelsPerRoute: 32, maxBytes: 64 * 1024 * 1024 };

// What V8 (Node 20, x64, pointer compression) takes for each part of an interval, rounded up from a
// heap measurement (test/control-plane/dashboard/series-memory.test.ts checks the estimate stays
// above what the heap grows by): the interval, its counts and their maps; a status class entry; the
// keep counters; a model's object and map entry with its three BucketDeltas; the interval's one
// typed array of packed counts (header and backing store, plus its bytes).
const INTERVAL_BYTES = 440;
const STATUS_CLASS_BYTES = 80;
const KEEPS_BYTES = 120;
const MODEL_BYTES = 300;
const TYPED_ARRAY_BYTES = 240;
// An interval's failures of one model: the ErrorDeltas object and its counts array (the types are shared).
const ERRORS_BYTES = 100;
// One histogram's ClassDeltas: the object and its deltas array (the class names are shared); each
// delta not shared with the histogram's own adds a BucketDeltas (its counts are in the interval's cells).
const CLASS_DELTAS_BYTES = 120;
const CLASS_DELTA_BYTES = 80;

/** Error types kept per (route, model), as the filter labels them (8, then _OTHER). */
export const MAX_ERROR_TYPES = 8;
/** The error_type every type past MAX_ERROR_TYPES (or longer than MAX_ERROR_TYPE_CHARS) counts as. */
export const OTHER_ERROR_TYPE = "_OTHER";
/** Longest error_type kept (the filter's longest is reset_before_response, 21). */
export const MAX_ERROR_TYPE_CHARS = 32;

/** The cells an interval's histograms are packed in (every BucketDeltas of the interval shares them). */
function cellsOf(i: RouteInterval): Cells {
  for (const m of i.counts.models.values()) return m.ttft.cells;
  return NO_CELLS;
}

/** The estimated heap bytes of one interval (bounds are shared and not counted). */
export function intervalBytes(i: RouteInterval): number {
  let bytes = INTERVAL_BYTES + STATUS_CLASS_BYTES * i.counts.byStatusClass.size + (i.counts.keeps === null ? 0 : KEEPS_BYTES);
  const cells = cellsOf(i);
  if (cells !== NO_CELLS) bytes += TYPED_ARRAY_BYTES + cells.byteLength;
  for (const m of i.counts.models.values()) {
    bytes += MODEL_BYTES;
    if (m.errors !== null) bytes += ERRORS_BYTES + 8 * m.errors.counts.length;
    for (const [own, byClass] of [[m.ttft, m.ttftByClass], [m.decode, m.decodeByClass], [m.duration, m.durationByClass]] as const) {
      if (byClass === null) continue;
      bytes += CLASS_DELTAS_BYTES + 8 * byClass.deltas.length;
      for (const d of byClass.deltas) if (d !== own) bytes += CLASS_DELTA_BYTES;
    }
  }
  return bytes;
}

const HISTOGRAMS = new Map<string, "ttft" | "decode" | "duration">([
  ["tokentrace_llm_ttft_ms_bucket", "ttft"],
  ["tokentrace_llm_decode_ms_bucket", "decode"],
  ["tokentrace_llm_duration_ms_bucket", "duration"],
]);
const MODEL_COUNTERS = new Map<string, "llmRequests" | "inputTokens" | "outputTokens">([
  ["tokentrace_llm_requests_total", "llmRequests"],
  ["tokentrace_llm_input_tokens_total", "inputTokens"],
  ["tokentrace_llm_output_tokens_total", "outputTokens"],
]);
const REQUESTS = "tokentrace_requests_total";
const SAMPLED = "tokentrace_traces_sampled_total";
// filter/telemetry/metrics.ts SPANS_KEPT_TOTAL and SPANS_BUDGET_DROPPED_TOTAL, both by keep_reason.
const KEPT = "tokentrace_spans_kept_total";
const BUDGET_DROPPED = "tokentrace_spans_budget_dropped_total";
/** The filter's keep reasons (filter/telemetry/metrics.ts keepReasonName); other values are ignored, so a sidecar cannot grow what an interval holds. */
export const KEEP_REASONS = ["head", "forced", "slow", "error"] as const;
/** Where a reason's budget drops start in RouteCounts.keeps. */
export const DROPPED_OFFSET = KEEP_REASONS.length;
const keepIndex = (reason: string | undefined): number => (KEEP_REASONS as readonly (string | undefined)[]).indexOf(reason);

const newModel = (): ModelCounts<Buckets> => ({ llmRequests: 0, errors: new Map(), inputTokens: 0, outputTokens: 0, ttft: new Map(), decode: new Map(), duration: new Map(), ttftByClass: new Map(), decodeByClass: new Map(), durationByClass: new Map() });
const newRoute = (): RouteCounts<Buckets> => ({ byStatusClass: new Map(), sampled: 0, keeps: null, models: new Map() });
const NO_BOUNDS = new Float64Array(0);
const add = <K>(m: Map<K, number>, k: K, v: number): void => {
  m.set(k, (m.get(k) ?? 0) + v);
};

/** Bounds arrays by their text, so intervals with the same bounds share one (the bounds of a sidecar's histograms rarely change). */
class BoundsPool {
  private readonly pool = new Map<string, Float64Array>();

  constructor(private readonly max = 256) {}

  of(cur: Buckets): Float64Array {
    if (cur.size === 0) return NO_BOUNDS;
    const bounds = Float64Array.from(cur.keys()).sort();
    const key = bounds.join(",");
    const known = this.pool.get(key);
    if (known) return known;
    // Past `max` distinct layouts (a sidecar changing its buckets every scrape) arrays are not shared.
    if (this.pool.size < this.max) this.pool.set(key, bounds);
    return bounds;
  }
}

/** Name lists (failing error types, grown length classes) by their text, so intervals with the same list share one; each name a copy, not a slice of the scrape. */
class NamesPool {
  private readonly pool = new Map<string, readonly string[]>();

  constructor(private readonly max = 256) {}

  of(names: string[]): readonly string[] {
    const key = names.join("\u0000");
    const known = this.pool.get(key);
    if (known) return known;
    // Label values are slices of the scraped text: a kept one would hold the whole text.
    const copied = names.map(ownCopy);
    // Past `max` distinct lists (names changing every scrape) lists are not shared.
    if (this.pool.size < this.max) this.pool.set(key, copied);
    return copied;
  }
}

/** The error_type a failed call counts under in `errors` (the filter's cap, again: a sidecar cannot grow what an interval holds). */
function errorTypeOf(errors: Map<string, number>, errorType: string): string {
  if (errors.has(errorType)) return errorType;
  if (errorType === OTHER_ERROR_TYPE || errorType.length > MAX_ERROR_TYPE_CHARS) return OTHER_ERROR_TYPE;
  const named = errors.has(OTHER_ERROR_TYPE) ? errors.size - 1 : errors.size;
  return named < MAX_ERROR_TYPES ? errorType : OTHER_ERROR_TYPE;
}

/** One histogram's increase per bound, before it is packed. */
interface Increase {
  bounds: Float64Array;
  counts: number[];
}

/** The increase of every leaf counter from `before` to `now` (a reset counts as a restart from zero), its histograms packed in one typed array. */
function routeDelta(now: RouteCounts<Buckets>, before: RouteCounts<Buckets> | undefined, pool: BoundsPool, namesPool: NamesPool, keptNames: NamePool): RouteCounts {
  const packer = new DeltaPacker();
  const increase = (cur: Buckets, prev: Buckets | undefined): Increase => {
    const bounds = pool.of(cur);
    const counts = new Array<number>(bounds.length);
    for (let i = 0; i < bounds.length; i++) counts[i] = counterDelta(prev?.get(bounds[i]!) ?? 0, cur.get(bounds[i]!)!);
    return { bounds, counts };
  };
  const errors = (cur: Map<string, number>, prev: Map<string, number> | undefined): ErrorDeltas | null => {
    const failed = [...cur.keys()].sort().map((t) => ({ t, v: counterDelta(prev?.get(t) ?? 0, cur.get(t)!) })).filter((f) => f.v > 0);
    // map() allocates exactly its length; push() would leave room for 17 numbers.
    return failed.length === 0 ? null : { types: namesPool.of(failed.map((f) => f.t)), counts: failed.map((f) => f.v) };
  };
  const byClass = (cur: Map<string, Buckets>, prev: Map<string, Buckets> | undefined, own: Increase, ownDeltas: BucketDeltas): ClassDeltas | null => {
    const grown = [...cur.keys()].sort(compareLengthClasses).map((c) => ({ c, d: increase(cur.get(c)!, prev?.get(c)) })).filter((g) => g.d.counts.some((v) => v > 0));
    if (grown.length === 0) return null;
    const only = grown.length === 1 ? grown[0]! : undefined;
    const sharesOwn = only !== undefined && only.d.bounds === own.bounds && only.d.counts.every((v, i) => v === own.counts[i]);
    return { classes: namesPool.of(grown.map((g) => g.c)), deltas: sharesOwn ? [ownDeltas] : grown.map((g) => packer.add(g.d.bounds, g.d.counts)) };
  };
  const out: RouteCounts = { byStatusClass: new Map(), sampled: 0, keeps: null, models: new Map() };
  for (const [cls, v] of now.byStatusClass) out.byStatusClass.set(cls, counterDelta(before?.byStatusClass.get(cls) ?? 0, v));
  out.sampled = counterDelta(before?.sampled ?? 0, now.sampled);
  if (now.keeps !== null) out.keeps = now.keeps.map((v, i) => counterDelta(before?.keeps?.[i] ?? 0, v));
  for (const [model, m] of now.models) {
    const p = before?.models.get(model);
    const ttft = increase(m.ttft, p?.ttft);
    const decode = increase(m.decode, p?.decode);
    const duration = increase(m.duration, p?.duration);
    const ttftDeltas = packer.add(ttft.bounds, ttft.counts);
    const decodeDeltas = packer.add(decode.bounds, decode.counts);
    const durationDeltas = packer.add(duration.bounds, duration.counts);
    // The name is a slice of the scrape: an interval keeps a copy (pooled), not the scrape.
    out.models.set(keptNames.of(model), {
      llmRequests: counterDelta(p?.llmRequests ?? 0, m.llmRequests),
      errors: errors(m.errors, p?.errors),
      inputTokens: counterDelta(p?.inputTokens ?? 0, m.inputTokens),
      outputTokens: counterDelta(p?.outputTokens ?? 0, m.outputTokens),
      ttft: ttftDeltas,
      decode: decodeDeltas,
      duration: durationDeltas,
      ttftByClass: byClass(m.ttftByClass, p?.ttftByClass, ttft, ttftDeltas),
      decodeByClass: byClass(m.decodeByClass, p?.decodeByClass, decode, decodeDeltas),
      durationByClass: byClass(m.durationByClass, p?.durationByClass, duration, durationDeltas),
    });
  }
  packer.pack();
  return out;
}

const keyOf = (k: RouteKey): string => `${k.namespace}\u0000${k.route}`;

/** Collects per-route intervals from joined batches, bounded by `limits`. */
export class DashboardSeries implements DashboardSource {
  private readonly previous = new Map<string, { timestampMs: number; routes: Map<string, RouteCounts<Buckets>> }>();
  private readonly byRoute = new Map<string, { key: RouteKey; intervals: RouteInterval[] }>();
  private readonly bounds = new BoundsPool();
  private readonly names = new NamesPool();
  /** Model and route names the intervals keep. */
  private readonly keptNames = new NamePool();
  /** When `previous` was last swept of targets not scraped within the retention. */
  private sweptAtMs = -Infinity;
  /** intervalBytes of every interval held. */
  private heldBytes = 0;
  readonly engine = new EngineSignals();
  readonly gpu = new GpuHealthPanels();
  readonly lora = new LoraAdapterStates();

  constructor(private readonly limits: SeriesLimits = DEFAULT_LIMITS) {}

  /** Takes one joined batch (the pipeline's onBatch): Envoy sidecars' for the routes, model servers' for the engine signals. */
  observe(series: WriteSeries[], source: BatchSource): void {
    const t = source.target;
    this.engine.observe(series, source);
    this.gpu.observe(series, source);
    this.lora.observe(series, source);
    if (t.kind !== "envoy" && t.kind !== "static") return;
    const routes = new Map<string, RouteCounts<Buckets>>();
    const route = (name: string): RouteCounts<Buckets> => {
      let c = routes.get(name);
      if (!c) routes.set(name, (c = newRoute()));
      return c;
    };
    const util: number[] = [];
    let power: number | null = null;
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      const value = s.samples[s.samples.length - 1]?.value;
      if (name === undefined || value === undefined || !Number.isFinite(value) || s.samples[s.samples.length - 1]?.stale) continue;
      if (name === POD_GPU_UTILIZATION) util.push(value);
      else if (name === POD_GPU_POWER) power = (power ?? 0) + value;
      if (!name.startsWith("tokentrace_")) continue;
      const routeName = labelValue(s.labels, "route");
      if (routeName === undefined) continue;
      if (name === REQUESTS) add(route(routeName).byStatusClass, labelValue(s.labels, "status_class") ?? "none", value);
      else if (name === SAMPLED) route(routeName).sampled += value;
      // Summed over any other label (a waypoint's pod_ip): the page shows the route's reasons.
      else if (name === KEPT || name === BUDGET_DROPPED) {
        const index = keepIndex(labelValue(s.labels, "keep_reason"));
        if (index < 0) continue;
        const r = route(routeName);
        r.keeps ??= new Array<number>(2 * DROPPED_OFFSET).fill(0);
        r.keeps[index + (name === KEPT ? 0 : DROPPED_OFFSET)]! += value;
      }
      else {
        const histogram = HISTOGRAMS.get(name);
        const counter = MODEL_COUNTERS.get(name);
        if (histogram === undefined && counter === undefined) continue;
        const r = route(routeName);
        let modelName = labelValue(s.labels, "model") ?? "";
        if (!r.models.has(modelName) && r.models.size >= this.limits.maxModelsPerRoute) modelName = "other";
        let m = r.models.get(modelName);
        if (!m) r.models.set(modelName, (m = newModel()));
        if (counter !== undefined) {
          m[counter] += value;
          const errorType = counter === "llmRequests" ? labelValue(s.labels, "error_type") : undefined;
          if (errorType !== undefined && errorType !== "") add(m.errors, errorTypeOf(m.errors, errorType), value);
        }
        else if (histogram !== undefined) {
          const le = labelValue(s.labels, "le");
          const bound = le === "+Inf" ? Infinity : Number(le);
          if (le === undefined || Number.isNaN(bound)) continue;
          add(m[histogram], bound, value);
          const cls = labelValue(s.labels, LENGTH_CLASS_LABELS[histogram]);
          if (cls === undefined || !isLengthClass(cls)) continue;
          const classes = m[`${histogram}ByClass`];
          let perClass = classes.get(cls);
          if (!perClass) {
            if (classes.size >= MAX_LENGTH_CLASSES) continue;
            classes.set(cls, (perClass = new Map()));
          }
          add(perClass, bound, value);
        }
      }
    }
    if (routes.size === 0) return;
    this.sweepPrevious(source.timestampMs);
    const prev = this.previous.get(t.id);
    this.previous.set(t.id, { timestampMs: source.timestampMs, routes });
    if (!prev || source.timestampMs <= prev.timestampMs) return;
    const seconds = (source.timestampMs - prev.timestampMs) / 1000;
    const gpuUtil = util.length > 0 ? util.reduce((a, b) => a + b, 0) / util.length : null;
    for (const [name, now] of routes) {
      const key = { namespace: t.namespace ?? "", route: name };
      let entry = this.byRoute.get(keyOf(key));
      if (!entry) {
        if (this.byRoute.size >= this.limits.maxRoutes) continue;
        this.byRoute.set(keyOf(key), (entry = { key: { namespace: key.namespace, route: this.keptNames.of(name) }, intervals: [] }));
      }
      const interval: RouteInterval = { endMs: source.timestampMs, seconds, pod: t.pod ?? t.id, counts: routeDelta(now, prev.routes.get(name), this.bounds, this.names, this.keptNames), gpuUtilizationPercent: gpuUtil, gpuPowerWatts: power };
      entry.intervals.push(interval);
      this.heldBytes += intervalBytes(interval);
      this.trim(entry.intervals, source.timestampMs);
    }
    this.trimToBudget();
  }

  /** What the intervals may hold together (limits.maxBytes). */
  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  /** The estimated bytes the intervals hold (at most limits.maxBytes once a batch is taken). */
  get bytes(): number {
    return this.heldBytes;
  }

  private trim(list: RouteInterval[], nowMs: number): void {
    let drop = Math.max(0, list.length - this.limits.maxIntervalsPerRoute);
    while (drop < list.length && list[drop]!.endMs <= nowMs - this.limits.retentionMs) drop++;
    this.dropOldest(list, drop);
  }

  private dropOldest(list: RouteInterval[], count: number): void {
    if (count <= 0) return;
    for (let i = 0; i < count; i++) this.heldBytes -= intervalBytes(list[i]!);
    list.splice(0, count);
  }

  /** Over the byte budget: the oldest intervals of any route go first, a slice of each route at a time. */
  private trimToBudget(): void {
    while (this.heldBytes > this.limits.maxBytes) {
      let oldest: RouteInterval[] | undefined;
      for (const e of this.byRoute.values()) if (e.intervals.length > 0 && (!oldest || e.intervals[0]!.endMs < oldest[0]!.endMs)) oldest = e.intervals;
      if (!oldest) break;
      // Up to the next route's oldest end (at least one), so many routes cost one pass per slice.
      let next = Infinity;
      for (const e of this.byRoute.values()) if (e.intervals !== oldest && e.intervals.length > 0) next = Math.min(next, e.intervals[0]!.endMs);
      let count = 0;
      let freed = 0;
      while (count < oldest.length && (count === 0 || oldest[count]!.endMs <= next) && this.heldBytes - freed > this.limits.maxBytes) freed += intervalBytes(oldest[count++]!);
      this.dropOldest(oldest, count);
    }
  }

  /** Forgets a target that went away (the pipeline removed it). */
  removeTarget(id: string): void {
    this.previous.delete(id);
  }

  /** Targets whose last scrape is remembered (to take the next one's increase from it). */
  get targets(): number {
    return this.previous.size;
  }

  /**
   * Forgets targets not scraped within the retention (a pod gone in a rollout): an interval from
   * their last scrape would fall outside the history anyway. At most once a minute of batch time.
   */
  private sweepPrevious(nowMs: number): void {
    if (nowMs - this.sweptAtMs < 60_000) return;
    this.sweptAtMs = nowMs;
    for (const [id, p] of this.previous) if (p.timestampMs <= nowMs - this.limits.retentionMs) this.previous.delete(id);
  }

  routes(): RouteKey[] {
    return [...this.byRoute.values()].map((e) => e.key).sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  }

  intervals(key: RouteKey): readonly RouteInterval[] {
    return this.byRoute.get(keyOf(key))?.intervals ?? [];
  }
}
