// The page's columns for one route (and optionally one model) over a time range: at each step, the
// intervals that ended within the trailing window are summed per pod, then rates are added across
// pods (`sum(rate(x[w]))`) and buckets are added before the quantile
// (`histogram_quantile(q, sum by (le) (increase(x_bucket[w])))`), as a Grafana panel on the remote-
// written series would show. Sampled traces per second use a longer window of their own, because at
// 1% sampling a short window shows isolated spikes.
import { histogramQuantile } from "../promql/quantile.js";
import { addDeltas, type Buckets } from "./bucket-deltas.js";
import type { ModelCounts, RouteInterval } from "./series.js";

/** Quantiles the page shows, in this order. */
export const QUANTILES = [0.5, 0.95, 0.99] as const;
export const QUANTILE_NAMES = QUANTILES.map((q) => `P${Math.round(q * 100)}`);

/** Latency histograms the page shows, by column prefix. */
export const LATENCY_PHASES = ["ttft", "decode", "duration"] as const;

/** Status classes shown as a share of all requests (2xx is the rest). */
export const ERROR_CLASSES = ["4xx", "5xx", "none"] as const;

/** Where and how densely to evaluate. */
export interface WindowQuery {
  /** End of the range (ms since the epoch); points are aligned to multiples of stepMs. */
  nowMs: number;
  rangeMs: number;
  stepMs: number;
  /** Trailing window of rates and percentiles at each point. */
  windowMs: number;
  /** Trailing window of the sampled-traces rate. */
  samplingWindowMs: number;
  /** One model's LLM figures only; undefined = every model of the route. */
  model?: string | undefined;
}

export type Columns = Record<string, (number | null)[]>;

const round3 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);

/**
 * The step and windows for a range, given the scrape interval: at most `maxPoints` points, and a
 * window of at least four scrapes and at least one step plus a scrape (Grafana's $__rate_interval),
 * so no scrape falls between two points.
 */
export function resolution(rangeMs: number, scrapeIntervalMs: number, maxPoints = 360): { stepMs: number; windowMs: number; samplingWindowMs: number } {
  const scrape = Math.max(100, scrapeIntervalMs);
  const stepMs = Math.max(scrape, Math.ceil(rangeMs / maxPoints / 1000) * 1000);
  const windowMs = Math.max(4 * scrape, stepMs + scrape);
  return { stepMs, windowMs, samplingWindowMs: Math.max(60_000, windowMs) };
}

/** The scrape interval the intervals show (their median length, to 100 ms), default 2 s. */
export function scrapeIntervalOf(intervals: readonly RouteInterval[]): number {
  const recent = intervals.slice(-21).map((i) => i.seconds * 1000).sort((a, b) => a - b);
  return recent.length > 0 ? Math.max(100, Math.round(recent[Math.floor(recent.length / 2)]! / 100) * 100) : 2000;
}

interface Sum {
  seconds: number;
  requests: number;
  byStatusClass: Map<string, number>;
  sampled: number;
  llmRequests: number;
  inputTokens: number;
  outputTokens: number;
  /** GPU samples of the pod in the window, averaged (avg_over_time): one collection can be noisy. */
  gpu: { util: number[]; power: number[] };
}

/** Columns for uPlot: `t` in seconds, then one array per figure, null where nothing was observed. */
export function windowColumns(source: readonly RouteInterval[], q: WindowQuery): Columns {
  const intervals = [...source].sort((a, b) => a.endMs - b.endMs);
  const last = Math.floor(q.nowMs / q.stepMs) * q.stepMs;
  const count = Math.max(1, Math.floor(q.rangeMs / q.stepMs));
  const cols: Columns = { t: [] };
  const push = (name: string, v: number | null): void => {
    (cols[name] ??= []).push(round3(v));
  };
  const models = (i: RouteInterval): ModelCounts[] =>
    q.model === undefined ? [...i.counts.models.values()] : i.counts.models.has(q.model) ? [i.counts.models.get(q.model)!] : [];

  const widest = Math.max(q.windowMs, q.samplingWindowMs);
  let lo = 0;
  for (let k = count - 1; k >= 0; k--) {
    const t = last - k * q.stepMs;
    // Points go forward in time: the first interval inside the widest window only moves forward.
    while (lo < intervals.length && intervals[lo]!.endMs <= t - widest) lo++;
    cols.t!.push(t / 1000);
    const inWindow = (i: RouteInterval, w: number): boolean => i.endMs > t - w && i.endMs <= t;
    const perPod = new Map<string, Sum>();
    const histograms = { ttft: new Map() as Buckets, decode: new Map() as Buckets, duration: new Map() as Buckets };
    let sampledRate: number | null = null;
    const sampledPods = new Map<string, { seconds: number; sampled: number }>();
    for (let j = lo; j < intervals.length && intervals[j]!.endMs <= t; j++) {
      const i = intervals[j]!;
      if (inWindow(i, q.samplingWindowMs)) {
        const s = sampledPods.get(i.pod) ?? { seconds: 0, sampled: 0 };
        s.seconds += i.seconds;
        s.sampled += i.counts.sampled;
        sampledPods.set(i.pod, s);
      }
      if (!inWindow(i, q.windowMs)) continue;
      let s = perPod.get(i.pod);
      if (!s) perPod.set(i.pod, (s = { seconds: 0, requests: 0, byStatusClass: new Map(), sampled: 0, llmRequests: 0, inputTokens: 0, outputTokens: 0, gpu: { util: [], power: [] } }));
      s.seconds += i.seconds;
      for (const [cls, v] of i.counts.byStatusClass) {
        s.requests += v;
        s.byStatusClass.set(cls, (s.byStatusClass.get(cls) ?? 0) + v);
      }
      for (const m of models(i)) {
        s.llmRequests += m.llmRequests;
        s.inputTokens += m.inputTokens;
        s.outputTokens += m.outputTokens;
        addDeltas(histograms.ttft, m.ttft);
        addDeltas(histograms.decode, m.decode);
        addDeltas(histograms.duration, m.duration);
      }
      if (i.gpuUtilizationPercent !== null) s.gpu.util.push(i.gpuUtilizationPercent);
      if (i.gpuPowerWatts !== null) s.gpu.power.push(i.gpuPowerWatts);
    }
    for (const s of sampledPods.values()) if (s.seconds > 0) sampledRate = (sampledRate ?? 0) + s.sampled / s.seconds;

    const pods = [...perPod.values()].filter((s) => s.seconds > 0);
    const rate = (f: (s: Sum) => number): number | null => (pods.length === 0 ? null : pods.reduce((a, s) => a + f(s) / s.seconds, 0));
    const requests = rate((s) => s.requests);
    push("requestsPerSecond", requests);
    push("llmRequestsPerSecond", rate((s) => s.llmRequests));
    for (const cls of ERROR_CLASSES) {
      const r = rate((s) => s.byStatusClass.get(cls) ?? 0);
      push(`ratio${cls === "none" ? "Reset" : cls}`, requests === null || requests === 0 || r === null ? null : r / requests);
    }
    push("inputTokensPerSecond", rate((s) => s.inputTokens));
    push("outputTokensPerSecond", rate((s) => s.outputTokens));
    for (const phase of LATENCY_PHASES) {
      QUANTILES.forEach((quantile, n) => push(`${phase}${QUANTILE_NAMES[n]}`, histogramQuantile(quantile, histograms[phase])));
    }
    const mean = (xs: number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
    const utils = pods.map((s) => mean(s.gpu.util)).filter((v): v is number => v !== null);
    const powers = pods.map((s) => mean(s.gpu.power)).filter((v): v is number => v !== null);
    // Utilisation: mean over the pods; power: their sum.
    push("gpuUtilizationPercent", mean(utils));
    push("gpuPowerWatts", powers.length === 0 ? null : powers.reduce((a, b) => a + b, 0));
    push("sampledPerSecond", sampledRate);
  }
  return cols;
}
