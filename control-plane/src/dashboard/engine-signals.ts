// The dashboard's engine signals per model: from each model-server scrape's joined batch, the join's
// tokentrace_model_* series per pod (the series remote write ships and the Grafana panels "Engine
// SLO signals: $model" and vLLM's own board query), kept for the last hour within a byte budget:
// the SLO signals (GPU utilisation as a ratio, prefix-cache hit ratio, speculative acceptance) and
// the causes of slowness (waiting and running requests, KV-cache usage, preemptions per second,
// time per output token and the engine's queue, prefill and decode P99). At each step of a range a
// model's value adds up each pod's newest point within the lookback the way the column says
// (`sum by (model)`, `avg by (model)` or `max by (model)` evaluated at that step).
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import {
  MODEL_GPU_UTILIZATION,
  MODEL_KV_CACHE_USAGE,
  MODEL_LATENCY_QUANTILE,
  MODEL_PREEMPTIONS_PER_SECOND,
  MODEL_PREFIX_CACHE_HIT_RATIO,
  MODEL_REQUEST_TPOT_QUANTILE,
  MODEL_REQUESTS_RUNNING,
  MODEL_REQUESTS_WAITING,
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
] as const satisfies readonly { column: string; series: string; phase?: string; quantile?: string; scale: number; over: PodAggregation }[];

function quantileOf(p: "P50" | "P95" | "P99"): string {
  return String(Number(p.slice(1)) / 100);
}

/** A column of the store, by name. */
export type EngineColumn = (typeof ENGINE_COLUMNS)[number]["column"];

const INDEX = new Map<string, number>(ENGINE_COLUMNS.map((c, i) => [c.column, i]));
/** Column index by series name, then by `phase` and `quantile` label ("" where the series has none). */
const BY_SERIES = new Map<string, number>(ENGINE_COLUMNS.map((c, i) => [`${c.series}\u0000${"phase" in c ? c.phase : ""}\u0000${"quantile" in c ? c.quantile : ""}`, i]));

/** A (namespace, model) the model servers report. */
export interface ModelKey {
  namespace: string;
  model: string;
}

/** One pod's signals of one model at one scrape: one value per ENGINE_COLUMNS entry, NaN where its servers export none (no speculative decoding). */
export interface ModelPoint {
  tMs: number;
  pod: string;
  values: number[];
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
// name is one string per model and pod, not one per point.
/** The estimated heap bytes of one point. */
export const POINT_BYTES = 40 + 32 + 8 * ENGINE_COLUMNS.length + 72;

// A label value is a slice of the scrape's text: kept as is, it would keep that whole text alive.
const ownCopy = (s: string): string => Buffer.from(s, "utf8").toString("utf8");

/** Pod names kept per model before the intern table starts again (pods come and go). */
const MAX_POD_NAMES = 256;

// An hour of 2 s scrapes of a model on one pod is 1,800 points of 272 bytes, 0.5 MB: 16 MiB holds
// an hour of 32 such models, or fewer models on more pods (the oldest points go first).
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

/** Collects the engine signals of every model from joined batches, bounded by `limits`. */
export class EngineSignals {
  private readonly byModel = new Map<string, { key: ModelKey; points: ModelPoint[]; pods: Map<string, string> }>();
  private heldBytes = 0;

  constructor(private readonly limits: EngineSignalLimits = DEFAULT_ENGINE_LIMITS) {}

  /** Takes one joined batch; only model-server scrapes carry the signals. */
  observe(series: readonly WriteSeries[], source: EngineBatchSource): void {
    const t = source.target;
    if (t.kind !== "vllm") return;
    const byModel = new Map<string, ModelPoint>();
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      if (name === undefined || !name.startsWith("tokentrace_model_")) continue;
      const index = BY_SERIES.get(`${name}\u0000${labelValue(s.labels, "phase") ?? ""}\u0000${labelValue(s.labels, "quantile") ?? ""}`);
      const sample = s.samples[s.samples.length - 1];
      if (index === undefined || !sample || sample.stale || !Number.isFinite(sample.value)) continue;
      const model = labelValue(s.labels, "model") ?? "";
      let point = byModel.get(model);
      if (!point) byModel.set(model, (point = { tMs: sample.timestampMs, pod: labelValue(s.labels, "pod") ?? t.pod ?? t.id, values: new Array<number>(ENGINE_COLUMNS.length).fill(NaN) }));
      point.values[index] = sample.value * ENGINE_COLUMNS[index]!.scale;
    }
    for (const [model, point] of byModel) {
      const key = { namespace: t.namespace ?? "", model };
      let entry = this.byModel.get(keyOf(key));
      if (!entry) {
        if (this.byModel.size >= this.limits.maxModels) continue;
        this.byModel.set(keyOf(key), (entry = { key: { namespace: ownCopy(key.namespace), model: ownCopy(model) }, points: [], pods: new Map() }));
      }
      let pod = entry.pods.get(point.pod);
      if (pod === undefined) {
        if (entry.pods.size >= MAX_POD_NAMES) entry.pods.clear();
        entry.pods.set((pod = ownCopy(point.pod)), pod);
      }
      point.pod = pod;
      entry.points.push(point);
      this.heldBytes += POINT_BYTES;
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

  private dropOldest(points: ModelPoint[], count: number): void {
    if (count <= 0) return;
    points.splice(0, count);
    this.heldBytes -= count * POINT_BYTES;
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
      const over = Math.ceil((this.heldBytes - this.limits.maxBytes) / POINT_BYTES);
      let count = 0;
      while (count < oldest.length && count < over && (count === 0 || oldest[count]!.tMs <= next)) count++;
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
    const points = [...this.points(key)].sort((a, b) => a.tMs - b.tMs);
    const last = Math.floor(q.nowMs / q.stepMs) * q.stepMs;
    const out = { t: [] } as unknown as Record<"t" | C, (number | null)[]>;
    const asked = names.map((name) => ({ name, index: INDEX.get(name)!, over: ENGINE_COLUMNS[INDEX.get(name)!]!.over as PodAggregation }));
    for (const { name } of asked) out[name] = [];
    let lo = 0;
    for (let at = last - q.rangeMs + q.stepMs; at <= last; at += q.stepMs) {
      out.t.push(at / 1000);
      while (lo < points.length && points[lo]!.tMs <= at - q.lookbackMs) lo++;
      for (const { name, index, over } of asked) {
        // Each pod's newest value of this column in (at - lookback, at].
        const newest = new Map<string, number>();
        for (let j = lo; j < points.length && points[j]!.tMs <= at; j++) {
          const v = points[j]!.values[index]!;
          if (!Number.isNaN(v)) newest.set(points[j]!.pod, v);
        }
        out[name].push(newest.size === 0 ? null : aggregate([...newest.values()], over));
      }
    }
    return out;
  }
}

function aggregate(values: number[], over: PodAggregation): number {
  if (over === "max") return Math.max(...values);
  const sum = values.reduce((a, b) => a + b, 0);
  return over === "sum" ? sum : sum / values.length;
}
