// What a pod's model servers say about each model they serve, evaluated at one instant over the
// rate window, the way the recording rules in istio/observability/recording-rules.yaml compute it
// (so both give the same doubles): queue, prefill, decode and inter-token percentiles from the
// engine's histograms (`histogram_quantile(q, sum by (le) (rate(x_bucket[w])))`), KV-cache usage
// (mean over engines, as vLLM's own aggregated logger averages it), waiting and running requests
// (summed), prefix-cache hit ratio and speculative-decoding acceptance (ratios of summed counter
// rates), preemptions per second. Engines of one pod (vLLM's `engine`, SGLang's `dp_rank`, several
// servers on several ports) are added up per model; models are kept apart by `model_name`.
import { avgOf, sumOf } from "../promql/aggregate.js";
import { bucketQuantile, bucketsOf } from "../promql/quantile.js";
import { avgOverTime, extrapolatedRate, maxOverTime } from "../promql/rate.js";
import { instantValue, type WindowSeries } from "../promql/series-window.js";
import type { NamePool } from "../scrape/name-pool.js";
import type { Labels, ParsedSample } from "../scrape/sample.js";
import { ENGINE_SERIES, type EngineCounter, type EngineGauge, type EngineMetric, type EnginePhase } from "./catalogue.js";

/** Percentiles the join reports, as `quantile` label values. */
export const QUANTILES = [0.5, 0.95, 0.99] as const;

/** What the window keeps of one engine series. */
export interface EngineInfo {
  metric: EngineMetric;
  /** `model_name` ("" for servers without one: TGI serves one model and does not name it). */
  model: string;
  /** Target and labels other than the name and `le`: the series an `or` of two generations matches on. */
  identity: string;
  le?: string;
  /** The value of the metric's `groupBy` label ("" where absent). */
  group?: string;
}

/** One model's signals at one instant; absent where the servers export nothing for it. */
export interface ModelSignals {
  waiting?: number;
  running?: number;
  kvCacheUsage?: number;
  prefixCacheHitRatio?: number;
  preemptionsPerSecond?: number;
  specDecodeAcceptance?: number;
  /** Waiting requests by vLLM's reason (capacity, deferred). */
  waitingByReason: Map<string, number>;
  /** Hits over queries of the KV connector's external prefix cache (tokens). */
  externalPrefixCacheHitRatio?: number;
  /** SGLang's cached prompt tokens by cache_source over all prompt tokens. */
  prefixCacheHitRatioBySource: Map<string, number>;
  /** Prompt tokens computed per request (cache hits excluded), mean over the window. */
  prefillKvComputedTokensMean?: number;
  /** Preemptions per finished request (recomputed prefills), mean over the window. */
  requestPreemptionsMean?: number;
  /** Per-request time per output token: quantile -> seconds. */
  requestTpot: Map<number, number>;
  /** Engine phase -> quantile -> seconds. */
  phases: Map<EnginePhase, Map<number, number>>;
}

const label = (labels: Labels, name: string): string | undefined => {
  for (let i = 0; i < labels.length; i += 2) if (labels[i] === name) return labels[i + 1];
  return undefined;
};

/** A series' labels other than `tp_rank`: what the ranks of one attention group share. */
function withoutTpRank(name: string, labels: Labels): string {
  const rest: string[] = [name];
  for (let i = 0; i < labels.length; i += 2) if (labels[i] !== "tp_rank") rest.push(`${labels[i]}=${labels[i + 1]}`);
  return rest.join("\xfe");
}

/**
 * SGLang's schedulers of one attention group hold the same state, and only the group's
 * attention-TP rank 0 writes metrics unless --enable-metrics-for-all-schedulers is set
 * (sglang@016d860 observability/metrics_collector.py SchedulerMetricsCollector.init_new:
 * is_stats_logging_rank = attn_tp_rank == 0). `tp_rank` is the global rank: under
 * --enable-dp-attention group d's rank 0 has tp_rank d * attn_tp_size and its `dp_rank` label is
 * the group (data_parallel_controller.py launch_tensor_parallel_group: dp_rank from
 * compute_dp_attention_world_info). So a series counts on pipeline rank 0 when its tp_rank is 0, or
 * when it names a dp_rank whose series has no tp_rank 0 (a DP-attention group after the first);
 * with plain data parallelism tp_rank is local and every group has its rank 0. Without the flag
 * this keeps every group's one writer; with it, the first group's duplicates are dropped, the
 * later groups' are not (which rank is the group's first is not in the labels).
 */
function countedRanks(samples: readonly ParsedSample[]): (s: ParsedSample) => boolean {
  const rankZero = new Set<string>();
  for (const s of samples) if (ENGINE_SERIES.get(s.name)?.server === "sglang" && label(s.labels, "tp_rank") === "0") rankZero.add(withoutTpRank(s.name, s.labels));
  return (s) => {
    const pp = label(s.labels, "pp_rank");
    if (pp !== undefined && pp !== "0") return false;
    const tp = label(s.labels, "tp_rank");
    if (tp === undefined || tp === "0") return true;
    const dp = label(s.labels, "dp_rank");
    return dp !== undefined && dp !== "" && !rankZero.has(withoutTpRank(s.name, s.labels));
  };
}

/** The engine series of one scrape, keyed for the window. */
export function engineEntries(targetId: string, samples: readonly ParsedSample[]): { key: string; info: EngineInfo; value: number }[] {
  const out: { key: string; info: EngineInfo; value: number }[] = [];
  const counted = countedRanks(samples);
  for (const s of samples) {
    const metric = ENGINE_SERIES.get(s.name);
    if (!metric || !counted(s)) continue;
    // The per-value copies of a family written also as a total (SGLang's per-priority queue counts).
    if (metric.totalWhereEmpty !== undefined && (label(s.labels, metric.totalWhereEmpty) ?? "") !== "") continue;
    const rest: string[] = [];
    let le: string | undefined;
    for (let i = 0; i < s.labels.length; i += 2) {
      if (s.labels[i] === "le") le = s.labels[i + 1];
      else rest.push(`${s.labels[i]}=${s.labels[i + 1]}`);
    }
    if (metric.kind === "histogram" && le === undefined) continue;
    const identity = `${targetId}\xff${rest.sort().join("\xfe")}`;
    const info: EngineInfo = { metric, model: label(s.labels, "model_name") ?? "", identity };
    if (le !== undefined) info.le = le;
    if (metric.groupBy !== undefined) info.group = label(s.labels, metric.groupBy) ?? "";
    out.push({ key: `${identity}\xff${s.name}\xff${le ?? ""}`, info, value: s.value });
  }
  return out;
}

/** What a window keeps of an engine series' info (SeriesWindow's `keep`): its label values as pooled copies, not views of the scrape. */
export function keepEngineInfo(names: NamePool): (info: EngineInfo) => EngineInfo {
  return (info) => {
    const kept: EngineInfo = { metric: info.metric, model: names.of(info.model), identity: info.identity };
    if (info.le !== undefined) kept.le = names.of(info.le);
    if (info.group !== undefined) kept.group = names.of(info.group);
    return kept;
  };
}

/**
 * Per series slot (identity and `le`), the value of the newest generation that has one, in slot
 * order: what `f(new) or f(old)` yields.
 */
function newestGeneration(series: readonly WindowSeries<EngineInfo>[], value: (s: WindowSeries<EngineInfo>) => number | undefined): { info: EngineInfo; value: number }[] {
  const best = new Map<string, { info: EngineInfo; value: number }>();
  for (const s of series) {
    const v = value(s);
    if (v === undefined) continue;
    const slot = `${s.info.identity}\xff${s.info.le ?? ""}`;
    const cur = best.get(slot);
    if (!cur || s.info.metric.generation < cur.info.metric.generation) best.set(slot, { info: s.info, value: v });
  }
  return [...best.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, x]) => x);
}

/** Percentiles of summed bucket rates keyed by `le` text; equal bounds are added as histogram_quantile coalesces them. */
export function quantilesOf(rateByLe: ReadonlyMap<string, number>, scale = 1): Map<number, number> {
  const sorted = [...rateByLe].map(([le, v]) => ({ bound: le === "+Inf" ? Infinity : Number(le), v })).filter((b) => !Number.isNaN(b.bound)).sort((a, b) => a.bound - b.bound);
  // Made ready once for the three quantiles (bucketsOf adds equal bounds in this order; 0 + v as the
  // first addition to 0 made a -0 rate 0).
  const buckets = bucketsOf(
    sorted.map((b) => b.bound),
    sorted.map((b) => 0 + b.v),
  );
  const out = new Map<number, number>();
  if (buckets === undefined) return out;
  for (const q of QUANTILES) {
    const v = bucketQuantile(q, buckets);
    // The rules keep `>= 0`: a window without observations gives NaN, which they drop.
    if (v >= 0) out.set(q, scale === 1 ? v : v / scale);
  }
  return out;
}

/** Sums per `le` text, in slot order (what `sum by (le)` adds). */
export function sumByLe(values: readonly { info: { le?: string }; value: number }[]): Map<string, number> {
  const groups = new Map<string, number[]>();
  for (const x of values) {
    if (x.info.le === undefined) continue;
    let g = groups.get(x.info.le);
    if (!g) groups.set(x.info.le, (g = []));
    g.push(x.value);
  }
  return new Map([...groups].map(([le, vs]) => [le, sumOf(vs)!]));
}

/** The signals of every model a pod's engines report, at `t` over `windowMs`. */
export function modelSignals(all: readonly WindowSeries<EngineInfo>[], t: number, windowMs: number): Map<string, ModelSignals> {
  const byModel = new Map<string, WindowSeries<EngineInfo>[]>();
  for (const s of all) {
    let list = byModel.get(s.info.model);
    if (!list) byModel.set(s.info.model, (list = []));
    list.push(s);
  }
  const out = new Map<string, ModelSignals>();
  for (const [model, series] of byModel) {
    const of = (kind: EngineMetric["kind"], signal: EngineGauge | EngineCounter | EnginePhase): WindowSeries<EngineInfo>[] => series.filter((s) => s.info.metric.kind === kind && s.info.metric.signal === signal);
    const instant = (signal: EngineGauge): number[] => newestGeneration(of("gauge", signal), (s) => instantValue(s, t)).map((x) => x.value);
    const rate = (signal: EngineCounter): number | undefined => sumOf(newestGeneration(of("counter", signal), (s) => extrapolatedRate(s, t, windowMs)).map((x) => x.value));
    const ratio = (num: number | undefined, den: number | undefined): number | undefined => (num === undefined || den === undefined || !(den > 0) ? undefined : num / den);
    const m: ModelSignals = { phases: new Map(), waitingByReason: new Map(), prefixCacheHitRatioBySource: new Map(), requestTpot: new Map() };
    const set = <K extends keyof ModelSignals>(key: K, v: ModelSignals[K] | undefined): void => {
      if (v !== undefined) m[key] = v;
    };
    set("waiting", sumOf(instant("waiting")));
    set("running", sumOf(instant("running")));
    set("kvCacheUsage", avgOf(instant("kv_cache_usage")));
    set("prefixCacheHitRatio", ratio(rate("prefix_cache_hits"), rate("prefix_cache_queries")));
    set("preemptionsPerSecond", rate("preemptions"));
    set("externalPrefixCacheHitRatio", ratio(rate("external_prefix_cache_hits"), rate("external_prefix_cache_queries")));
    set("prefillKvComputedTokensMean", ratio(rate("prefill_kv_computed_tokens"), rate("prefill_kv_computed_requests")));
    set("requestPreemptionsMean", ratio(rate("request_preemptions"), rate("request_preemptions_requests")));
    m.requestTpot = quantilesOf(sumByLe(newestGeneration(of("histogram", "request_tpot"), (s) => extrapolatedRate(s, t, windowMs))));
    // sum by (..., reason): per value of the grouping label, the series in slot order.
    const byGroup = <T extends { info: EngineInfo; value: number }>(xs: T[]): Map<string, number[]> => {
      const groups = new Map<string, number[]>();
      for (const x of xs) {
        // No value: an older server without the label (the family's total is read elsewhere).
        if (x.info.group === undefined || x.info.group === "") continue;
        let g = groups.get(x.info.group);
        if (!g) groups.set(x.info.group, (g = []));
        g.push(x.value);
      }
      return new Map([...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    };
    for (const [reason, vs] of byGroup(newestGeneration(of("gauge", "waiting_by_reason"), (s) => instantValue(s, t)))) m.waitingByReason.set(reason, sumOf(vs)!);
    const prompts = rate("prefix_cache_queries");
    const sglHits = newestGeneration(of("counter", "prefix_cache_hits").filter((s) => s.info.metric.groupBy !== undefined), (s) => extrapolatedRate(s, t, windowMs));
    for (const [source, vs] of byGroup(sglHits)) {
      const r = ratio(sumOf(vs), prompts);
      if (r !== undefined) m.prefixCacheHitRatioBySource.set(source, r);
    }
    // vLLM counts drafted and accepted tokens; SGLang only exports the ratio of its last log
    // interval (0 when speculative decoding is off, so it counts only where the accepted length is above 0).
    let spec = ratio(rate("spec_accepted_tokens"), rate("spec_draft_tokens"));
    if (spec === undefined) {
      const lengths = new Map(of("gauge", "spec_accept_length").map((s) => [s.info.identity, maxOverTime(s, t, windowMs)]));
      const rates = of("gauge", "spec_accept_rate")
        .filter((s) => (lengths.get(s.info.identity) ?? 0) > 0)
        .sort((a, b) => (a.info.identity < b.info.identity ? -1 : 1))
        .map((s) => avgOverTime(s, t, windowMs))
        .filter((v): v is number => v !== undefined);
      spec = avgOf(rates);
    }
    set("specDecodeAcceptance", spec);
    for (const phase of ["queue", "prefill", "decode", "inter_token"] as const) {
      const rates = newestGeneration(of("histogram", phase), (s) => extrapolatedRate(s, t, windowMs));
      const q = quantilesOf(sumByLe(rates));
      if (q.size > 0) m.phases.set(phase, q);
    }
    out.set(model, m);
  }
  return out;
}
