// The dashboard's engine signals per model: from each model-server scrape's joined batch, the join's
// tokentrace_model_* series per pod (the series remote write ships and the Grafana panels "Engine
// SLO signals: $model" and vLLM's own board query), kept for the last hour within a byte budget:
// the SLO signals (GPU utilisation as a ratio, prefix-cache hit ratio, speculative acceptance) and
// the causes of slowness (waiting and running requests, KV-cache usage, preemptions per second,
// time per output token and the engine's queue, prefill and decode P99; the external prefix cache,
// prompt tokens computed and preemptions per request; waiting requests by reason and prefix-cache
// hits per tier, one column per label value). At each step of a range a model's value adds up each
// pod's newest point within the lookback the way the column says (`sum by (model)`,
// `avg by (model)` or `max by (model)` evaluated at that step; `sum by (model, reason)` and
// `avg by (model, cache_source)` for the labelled ones).
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import { ownCopy } from "../scrape/name-pool.js";
import {
  MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO,
  MODEL_GPU_UTILIZATION,
  MODEL_KV_CACHE_USAGE,
  MODEL_LATENCY_QUANTILE,
  MODEL_PREEMPTIONS_PER_SECOND,
  MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN,
  MODEL_PREFIX_CACHE_HIT_RATIO,
  MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE,
  MODEL_REQUEST_PREEMPTIONS_MEAN,
  MODEL_REQUEST_TPOT_QUANTILE,
  MODEL_REQUESTS_RUNNING,
  MODEL_REQUESTS_WAITING,
  MODEL_REQUESTS_WAITING_BY_REASON,
  MODEL_SPEC_DECODE_ACCEPTANCE,
} from "../join/catalogue.js";

/** The thresholds of the SLO alerts (tokentrace:slo_threshold:parameter in istio/observability/prometheus-rules.yaml), as ratios. */
export const SLO_THRESHOLDS = { gpuUtilization: 0.85, prefixCacheHitRatio: 0.92, specDecodeAcceptance: 0.8 } as const;

/** The three signals, by column name. */
export type EngineSignal = keyof typeof SLO_THRESHOLDS;
export const ENGINE_SIGNALS = Object.keys(SLO_THRESHOLDS) as EngineSignal[];

/** How a column is added up over a model's pods at one step: counts and rates summed, ratios averaged, percentiles the worst pod's (an upper bound of the model's own percentile). */
export type PodAggregation = "sum" | "mean" | "max";

/**
 * Every column the store keeps per point, with the joined series (and label) it comes from, the
 * scale to the page's unit (ratios 0-1, latencies ms) and how pods add up. The SLO panel reads
 * the first three; the cause panels (engine-causes route) the rest.
 */
export const ENGINE_COLUMNS = [
  { column: "gpuUtilization", series: MODEL_GPU_UTILIZATION, scale: 1 / 100, over: "mean" },
  { column: "prefixCacheHitRatio", series: MODEL_PREFIX_CACHE_HIT_RATIO, scale: 1, over: "mean" },
  { column: "specDecodeAcceptance", series: MODEL_SPEC_DECODE_ACCEPTANCE, scale: 1, over: "mean" },
  { column: "requestsWaiting", series: MODEL_REQUESTS_WAITING, scale: 1, over: "sum" },
  { column: "requestsRunning", series: MODEL_REQUESTS_RUNNING, scale: 1, over: "sum" },
  { column: "kvCacheUsage", series: MODEL_KV_CACHE_USAGE, scale: 1, over: "mean" },
  { column: "preemptionsPerSecond", series: MODEL_PREEMPTIONS_PER_SECOND, scale: 1, over: "sum" },
  ...(["P50", "P95", "P99"] as const).map((p) => ({ column: `requestTpot${p}Ms`, series: MODEL_REQUEST_TPOT_QUANTILE, quantile: quantileOf(p), scale: 1000, over: "max" }) as const),
  ...(["P50", "P95", "P99"] as const).map((p) => ({ column: `interToken${p}Ms`, series: MODEL_LATENCY_QUANTILE, phase: "inter_token", quantile: quantileOf(p), scale: 1000, over: "max" }) as const),
  ...(["queue", "prefill", "decode"] as const).map((phase) => ({ column: `${phase}P99Ms`, series: MODEL_LATENCY_QUANTILE, phase, quantile: "0.99", scale: 1000, over: "max" }) as const),
  // Per finished request, means over the rate window: averaged over pods as the Grafana panels do.
  { column: "externalPrefixCacheHitRatio", series: MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO, scale: 1, over: "mean" },
  { column: "promptTokensComputedPerRequest", series: MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN, scale: 1, over: "mean" },
  { column: "preemptionsPerRequest", series: MODEL_REQUEST_PREEMPTIONS_MEAN, scale: 1, over: "mean" },
] as const satisfies readonly { column: string; series: string; phase?: string; quantile?: string; scale: number; over: PodAggregation }[];

function quantileOf(p: "P50" | "P95" | "P99"): string {
  return String(Number(p.slice(1)) / 100);
}

/** A column of the store, by name. */
export type EngineColumn = (typeof ENGINE_COLUMNS)[number]["column"];

/**
 * Series split by a label whose values come from the model servers (vLLM's waiting reasons,
 * SGLang's cache tiers): one column per value, each kept per model in the order first seen.
 */
export const LABELLED_COLUMNS = [
  { column: "waitingByReason", series: MODEL_REQUESTS_WAITING_BY_REASON, label: "reason", over: "sum" },
  { column: "prefixCacheHitRatioByTier", series: MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, label: "cache_source", over: "mean" },
] as const satisfies readonly { column: string; series: string; label: string; over: PodAggregation }[];

/** A labelled column of the store, by name. */
export type LabelledColumn = (typeof LABELLED_COLUMNS)[number]["column"];

/** Values kept per labelled column and model (vLLM has 2 reasons; SGLang device, host and one storage backend). */
export const MAX_LABEL_VALUES = 4;
/** What a kept label value may be: a value outside it (or past MAX_LABEL_VALUES) is not kept. */
export const LABEL_VALUE = /^[A-Za-z0-9_.-]{1,32}$/;

const INDEX = new Map<string, number>(ENGINE_COLUMNS.map((c, i) => [c.column, i]));
/** Column index by series name, then by `phase` and `quantile` label ("" where the series has none). */
const BY_SERIES = new Map<string, number>(ENGINE_COLUMNS.map((c, i) => [`${c.series}\u0000${"phase" in c ? c.phase : ""}\u0000${"quantile" in c ? c.quantile : ""}`, i]));
const LABELLED_BY_SERIES = new Map<string, number>(LABELLED_COLUMNS.map((c, i) => [c.series, i]));

/** A (namespace, model) the model servers report. */
export interface ModelKey {
  namespace: string;
  model: string;
}

/**
 * One pod's signals of one model at one scrape: one value per ENGINE_COLUMNS entry, NaN where its
 * servers export none (no speculative decoding), then, only as far as the point has any, one per
 * label value of the model (its `slots`).
 */
export interface ModelPoint {
  tMs: number;
  pod: string;
  values: number[];
}

/** A label value of a labelled column, kept for one model: values[ENGINE_COLUMNS.length + its index]. */
interface LabelSlot {
  /** Index into LABELLED_COLUMNS. */
  family: number;
  value: string;
  /** The newest point that had a value here: once older than every point kept, the slot may take another value. */
  lastMs: number;
}

/** The scrape a batch came from (a subset of the pipeline's ScrapeResult). */
export interface EngineBatchSource {
  target: { kind: string; namespace?: string; pod?: string; id: string };
  timestampMs: number;
}

export interface EngineSignalLimits {
  retentionMs: number;
  maxModels: number;
  maxPointsPerModel: number;
  /** What all models' points may hold together, estimated by POINT_BYTES; the oldest go first. */
  maxBytes: number;
}

// What V8 (Node 20, x64, pointer compression) takes for one point, rounded up: the object with its
// boxed time (about 40 bytes), the array of doubles (header and backing store, 32 bytes plus 8 a
// value), and 72 for what a measurement shows beyond these (the points array's spare capacity,
// alignment): 240 to 264 bytes measured for 16 columns (engine-signals-memory-child.ts). The pod
// name is one string per model and pod, and a label value one per model (at most
// MAX_LABEL_VALUES of 32 characters per labelled column), not one per point.
/** The estimated heap bytes of a point of `values` doubles. */
export const pointBytes = (values: number): number => 40 + 32 + 8 * values + 72;
/** The estimated heap bytes of a point without labelled values. */
export const POINT_BYTES = pointBytes(ENGINE_COLUMNS.length);

/** Pod names kept per model before the intern table starts again (pods come and go). */
const MAX_POD_NAMES = 256;

// An hour of 2 s scrapes of a model on one pod is 1,800 points of 296 bytes (312 with vLLM's two
// waiting reasons, 320 with three SGLang tiers), 0.53 to 0.58 MB: 16 MiB holds an hour of 29 to 31
// such models, or fewer models on more pods (the oldest points go first).
export const DEFAULT_ENGINE_LIMITS: EngineSignalLimits = { retentionMs: 3_600_000, maxModels: 32, maxPointsPerModel: 8_000, maxBytes: 16 * 1024 * 1024 };

/** Where and how densely to evaluate one model's signals. */
export interface EngineColumnsQuery {
  nowMs: number;
  rangeMs: number;
  stepMs: number;
  /** How far back a pod's newest point still counts at a step (Prometheus's lookback for an instant selector). */
  lookbackMs: number;
}

const keyOf = (k: ModelKey): string => `${k.namespace}\u0000${k.model}`;

/** One value of a labelled column, as `labelled` gives it. */
export interface LabelledValues {
  value: string;
  values: (number | null)[];
}

interface ModelEntry {
  key: ModelKey;
  points: ModelPoint[];
  pods: Map<string, string>;
  slots: LabelSlot[];
}

/** A point being built from a batch: its labelled values wait for the model's slots. */
interface PendingPoint extends ModelPoint {
  labelled: { family: number; value: string; v: number }[];
}

/** Collects the engine signals of every model from joined batches, bounded by `limits`. */
export class EngineSignals {
  private readonly byModel = new Map<string, ModelEntry>();
  private heldBytes = 0;

  constructor(private readonly limits: EngineSignalLimits = DEFAULT_ENGINE_LIMITS) {}

  /** Takes one joined batch; only model-server scrapes carry the signals. */
  observe(series: readonly WriteSeries[], source: EngineBatchSource): void {
    const t = source.target;
    if (t.kind !== "vllm") return;
    const byModel = new Map<string, PendingPoint>();
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      if (name === undefined || !name.startsWith("tokentrace_model_")) continue;
      const index = BY_SERIES.get(`${name}\u0000${labelValue(s.labels, "phase") ?? ""}\u0000${labelValue(s.labels, "quantile") ?? ""}`);
      const family = LABELLED_BY_SERIES.get(name);
      const sample = s.samples[s.samples.length - 1];
      if ((index === undefined && family === undefined) || !sample || sample.stale || !Number.isFinite(sample.value)) continue;
      const model = labelValue(s.labels, "model") ?? "";
      let point = byModel.get(model);
      if (!point) byModel.set(model, (point = { tMs: sample.timestampMs, pod: labelValue(s.labels, "pod") ?? t.pod ?? t.id, values: new Array<number>(ENGINE_COLUMNS.length).fill(NaN), labelled: [] }));
      if (index !== undefined) point.values[index] = sample.value * ENGINE_COLUMNS[index]!.scale;
      else {
        const value = labelValue(s.labels, LABELLED_COLUMNS[family!]!.label);
        if (value !== undefined && LABEL_VALUE.test(value)) point.labelled.push({ family: family!, value, v: sample.value });
      }
    }
    for (const [model, pending] of byModel) {
      const key = { namespace: t.namespace ?? "", model };
      let entry = this.byModel.get(keyOf(key));
      if (!entry) {
        if (this.byModel.size >= this.limits.maxModels) continue;
        this.byModel.set(keyOf(key), (entry = { key: { namespace: ownCopy(key.namespace), model: ownCopy(model) }, points: [], pods: new Map(), slots: [] }));
      }
      let pod = entry.pods.get(pending.pod);
      if (pod === undefined) {
        if (entry.pods.size >= MAX_POD_NAMES) entry.pods.clear();
        entry.pods.set((pod = ownCopy(pending.pod)), pod);
      }
      const point: ModelPoint = { tMs: pending.tMs, pod, values: withLabelled(entry, pending) };
      entry.points.push(point);
      this.heldBytes += pointBytes(point.values.length);
      this.dropOldest(entry.points, Math.max(0, entry.points.length - this.limits.maxPointsPerModel));
    }
    // Every model's points past the retention go, a model whose servers stopped reporting too (it
    // would otherwise keep its points and its place among maxModels for good).
    for (const [k, e] of this.byModel) {
      let drop = 0;
      while (drop < e.points.length && e.points[drop]!.tMs <= source.timestampMs - this.limits.retentionMs) drop++;
      this.dropOldest(e.points, drop);
      if (e.points.length === 0) this.byModel.delete(k);
    }
    this.trimToBudget();
  }

  /** The estimated bytes the points hold (at most limits.maxBytes once a batch is taken). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** What the points may hold together (limits.maxBytes). */
  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  private dropOldest(points: ModelPoint[], count: number): void {
    if (count <= 0) return;
    for (const p of points.splice(0, count)) this.heldBytes -= pointBytes(p.values.length);
  }

  /** Over the byte budget: the oldest points of any model go first. */
  private trimToBudget(): void {
    while (this.heldBytes > this.limits.maxBytes) {
      let oldest: ModelPoint[] | undefined;
      for (const e of this.byModel.values()) if (e.points.length > 0 && (!oldest || e.points[0]!.tMs < oldest[0]!.tMs)) oldest = e.points;
      if (!oldest) break;
      // Up to the next model's oldest point (at least one), so many models cost one pass per slice.
      let next = Infinity;
      for (const e of this.byModel.values()) if (e.points !== oldest && e.points.length > 0) next = Math.min(next, e.points[0]!.tMs);
      let over = this.heldBytes - this.limits.maxBytes;
      let count = 0;
      while (count < oldest.length && over > 0 && (count === 0 || oldest[count]!.tMs <= next)) over -= pointBytes(oldest[count++]!.values.length);
      this.dropOldest(oldest, count);
    }
    for (const [k, e] of this.byModel) if (e.points.length === 0) this.byModel.delete(k);
  }

  /** Models with data, sorted by namespace then model. */
  models(namespace?: string): ModelKey[] {
    return [...this.byModel.values()]
      .map((e) => e.key)
      .filter((k) => namespace === undefined || k.namespace === namespace)
      .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  }

  points(key: ModelKey): readonly ModelPoint[] {
    return this.byModel.get(keyOf(key))?.points ?? [];
  }

  /**
   * The interval between the model's scrapes (the median of each pod's recent gaps, to 100 ms),
   * default 2 s. Per pod: two pods scraped 100 ms apart are not a 100 ms scrape.
   */
  scrapeIntervalMs(key: ModelKey): number {
    const byPod = new Map<string, number[]>();
    for (const p of this.points(key).slice(-200)) {
      const times = byPod.get(p.pod) ?? [];
      times.push(p.tMs);
      byPod.set(p.pod, times);
    }
    const gaps: number[] = [];
    for (const times of byPod.values()) {
      times.sort((a, b) => a - b);
      for (let i = 1; i < times.length; i++) if (times[i]! > times[i - 1]!) gaps.push(times[i]! - times[i - 1]!);
    }
    gaps.sort((a, b) => a - b);
    return gaps.length > 0 ? Math.max(100, Math.round(gaps[Math.floor(gaps.length / 2)]! / 100) * 100) : 2000;
  }

  /** Whether any point of the model has a value in `column`. */
  has(key: ModelKey, column: EngineColumn): boolean {
    const index = INDEX.get(column)!;
    return this.points(key).some((p) => !Number.isNaN(p.values[index]!));
  }

  /** Columns for uPlot: `t` in seconds and one array per column asked (the SLO signals by default), null where no pod had a value within the lookback. */
  columns<C extends EngineColumn = EngineSignal>(key: ModelKey, q: EngineColumnsQuery, names: readonly C[] = ENGINE_SIGNALS as readonly EngineColumn[] as readonly C[]): Record<"t" | C, (number | null)[]> {
    const { t, columns } = evaluate(this.points(key), q, names.map((name) => ({ index: INDEX.get(name)!, over: ENGINE_COLUMNS[INDEX.get(name)!]!.over })));
    const out = { t } as unknown as Record<"t" | C, (number | null)[]>;
    names.forEach((name, i) => (out[name] = columns[i]!));
    return out;
  }

  /**
   * One labelled column on the steps `columns` gives: per label value the model has (sorted by
   * value), the pods' newest values added up as the column says; values without any in the range are left out.
   */
  labelled(key: ModelKey, q: EngineColumnsQuery, column: LabelledColumn): LabelledValues[] {
    const family = LABELLED_COLUMNS.findIndex((c) => c.column === column);
    const slots = (this.byModel.get(keyOf(key))?.slots ?? []).map((s, i) => ({ ...s, index: ENGINE_COLUMNS.length + i })).filter((s) => s.family === family);
    slots.sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
    const { columns } = evaluate(this.points(key), q, slots.map((s) => ({ index: s.index, over: LABELLED_COLUMNS[family]!.over })));
    return slots.map((s, i) => ({ value: s.value, values: columns[i]! })).filter((x) => x.values.some((v) => v !== null));
  }
}

/**
 * The point's values with its labelled ones in the model's slots (a new value takes a free slot
 * of its column: one never used, or one no point kept has a value in), as long as its last used slot.
 */
function withLabelled(entry: ModelEntry, pending: PendingPoint): number[] {
  if (pending.labelled.length === 0) return pending.values;
  const placed: { index: number; v: number }[] = [];
  for (const { family, value, v } of pending.labelled) {
    let slot = entry.slots.findIndex((s) => s.family === family && s.value === value);
    if (slot < 0) {
      if (entry.slots.filter((s) => s.family === family).length < MAX_LABEL_VALUES) {
        entry.slots.push({ family, value: ownCopy(value), lastMs: pending.tMs });
        slot = entry.slots.length - 1;
      } else {
        // Points of several pods arrive a little out of order: the oldest kept, not the first; and
        // not a slot this point has just taken.
        const oldestMs = entry.points.reduce((min, p) => Math.min(min, p.tMs), pending.tMs);
        slot = entry.slots.findIndex((s) => s.family === family && s.lastMs < oldestMs);
        if (slot < 0) continue;
        entry.slots[slot] = { family, value: ownCopy(value), lastMs: pending.tMs };
      }
    }
    entry.slots[slot]!.lastMs = Math.max(entry.slots[slot]!.lastMs, pending.tMs);
    placed.push({ index: ENGINE_COLUMNS.length + slot, v });
  }
  if (placed.length === 0) return pending.values;
  // One allocation of the final length: growing the array would leave spare capacity behind.
  const values = new Array<number>(Math.max(...placed.map((p) => p.index)) + 1).fill(NaN);
  pending.values.forEach((v, i) => (values[i] = v));
  for (const { index, v } of placed) values[index] = v;
  return values;
}

/** Per step of the range, each asked column's pods' newest values within the lookback added up as it says. */
function evaluate(unsorted: readonly ModelPoint[], q: EngineColumnsQuery, asked: readonly { index: number; over: PodAggregation }[]): { t: number[]; columns: (number | null)[][] } {
  const points = [...unsorted].sort((a, b) => a.tMs - b.tMs);
  const last = Math.floor(q.nowMs / q.stepMs) * q.stepMs;
  const t: number[] = [];
  const columns = asked.map(() => [] as (number | null)[]);
  let lo = 0;
  for (let at = last - q.rangeMs + q.stepMs; at <= last; at += q.stepMs) {
    t.push(at / 1000);
    while (lo < points.length && points[lo]!.tMs <= at - q.lookbackMs) lo++;
    asked.forEach(({ index, over }, c) => {
      // Each pod's newest value of this column in (at - lookback, at]; a point shorter than the index has none.
      const newest = new Map<string, number>();
      for (let j = lo; j < points.length && points[j]!.tMs <= at; j++) {
        const v = points[j]!.values[index];
        if (v !== undefined && !Number.isNaN(v)) newest.set(points[j]!.pod, v);
      }
      columns[c]!.push(newest.size === 0 ? null : aggregate([...newest.values()], over));
    });
  }
  return { t, columns };
}

function aggregate(values: number[], over: PodAggregation): number {
  if (over === "max") return Math.max(...values);
  const sum = values.reduce((a, b) => a + b, 0);
  return over === "sum" ? sum : sum / values.length;
}
