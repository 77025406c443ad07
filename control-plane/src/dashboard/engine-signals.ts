// The dashboard's engine SLO signals per model: from each model-server scrape's joined batch, the
// join's tokentrace_model_gpu_utilization_percent, tokentrace_model_prefix_cache_hit_ratio and
// tokentrace_model_spec_decode_acceptance_ratio per pod (the series remote write ships and the
// Grafana panel "Engine SLO signals: $model" queries), kept for the last hour. At each step of a range
// a model's value is the mean over its pods of each pod's newest point within the lookback (Grafana's
// `avg by (model)` evaluated at that step), GPU utilisation as a ratio like the other two.
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import { MODEL_GPU_UTILIZATION, MODEL_PREFIX_CACHE_HIT_RATIO, MODEL_SPEC_DECODE_ACCEPTANCE } from "../join/catalogue.js";

/** The thresholds of the SLO alerts (tokentrace:slo_threshold:parameter in istio/observability/prometheus-rules.yaml), as ratios. */
export const SLO_THRESHOLDS = { gpuUtilization: 0.85, prefixCacheHitRatio: 0.92, specDecodeAcceptance: 0.8 } as const;

/** The three signals, by column name. */
export type EngineSignal = keyof typeof SLO_THRESHOLDS;
export const ENGINE_SIGNALS = Object.keys(SLO_THRESHOLDS) as EngineSignal[];

const BY_SERIES = new Map<string, { signal: EngineSignal; scale: number }>([
  [MODEL_GPU_UTILIZATION, { signal: "gpuUtilization", scale: 1 / 100 }],
  [MODEL_PREFIX_CACHE_HIT_RATIO, { signal: "prefixCacheHitRatio", scale: 1 }],
  [MODEL_SPEC_DECODE_ACCEPTANCE, { signal: "specDecodeAcceptance", scale: 1 }],
]);

/** A (namespace, model) the model servers report. */
export interface ModelKey {
  namespace: string;
  model: string;
}

/** One pod's signals of one model at one scrape; absent where its servers export none (no speculative decoding). */
export interface ModelPoint {
  tMs: number;
  pod: string;
  values: Partial<Record<EngineSignal, number>>;
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
}

export const DEFAULT_ENGINE_LIMITS: EngineSignalLimits = { retentionMs: 3_600_000, maxModels: 32, maxPointsPerModel: 8_000 };

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
  private readonly byModel = new Map<string, { key: ModelKey; points: ModelPoint[] }>();

  constructor(private readonly limits: EngineSignalLimits = DEFAULT_ENGINE_LIMITS) {}

  /** Takes one joined batch; only model-server scrapes carry the signals. */
  observe(series: readonly WriteSeries[], source: EngineBatchSource): void {
    const t = source.target;
    if (t.kind !== "vllm") return;
    const byModel = new Map<string, ModelPoint>();
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      const signal = name === undefined ? undefined : BY_SERIES.get(name);
      const sample = s.samples[s.samples.length - 1];
      if (!signal || !sample || sample.stale || !Number.isFinite(sample.value)) continue;
      const model = labelValue(s.labels, "model") ?? "";
      let point = byModel.get(model);
      if (!point) byModel.set(model, (point = { tMs: sample.timestampMs, pod: labelValue(s.labels, "pod") ?? t.pod ?? t.id, values: {} }));
      point.values[signal.signal] = sample.value * signal.scale;
    }
    for (const [model, point] of byModel) {
      const key = { namespace: t.namespace ?? "", model };
      let entry = this.byModel.get(keyOf(key));
      if (!entry) {
        if (this.byModel.size >= this.limits.maxModels) continue;
        this.byModel.set(keyOf(key), (entry = { key, points: [] }));
      }
      entry.points.push(point);
      let drop = Math.max(0, entry.points.length - this.limits.maxPointsPerModel);
      while (drop < entry.points.length && entry.points[drop]!.tMs <= source.timestampMs - this.limits.retentionMs) drop++;
      if (drop > 0) entry.points.splice(0, drop);
    }
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

  /** Columns for uPlot: `t` in seconds and one array per signal, null where no pod had a point within the lookback. */
  columns(key: ModelKey, q: EngineColumnsQuery): Record<"t" | EngineSignal, (number | null)[]> {
    const points = [...this.points(key)].sort((a, b) => a.tMs - b.tMs);
    const last = Math.floor(q.nowMs / q.stepMs) * q.stepMs;
    const out: Record<"t" | EngineSignal, (number | null)[]> = { t: [], gpuUtilization: [], prefixCacheHitRatio: [], specDecodeAcceptance: [] };
    for (let at = last - q.rangeMs + q.stepMs; at <= last; at += q.stepMs) {
      out.t.push(at / 1000);
      for (const signal of ENGINE_SIGNALS) {
        // Each pod's newest value of this signal in (at - lookback, at].
        const newest = new Map<string, number>();
        for (const p of points) {
          if (p.tMs > at) break;
          const v = p.values[signal];
          if (p.tMs > at - q.lookbackMs && v !== undefined) newest.set(p.pod, v);
        }
        out[signal].push(newest.size === 0 ? null : [...newest.values()].reduce((a, b) => a + b, 0) / newest.size);
      }
    }
    return out;
  }
}
