// The dashboard's data: per route, a bounded window of points computed from the metrics pipeline's
// joined batches (the same series remote write ships), so the page needs no Prometheus. Each Envoy
// scrape of a pod yields one point per route from the deltas against that pod's previous scrape:
// latency quantiles from the filter's histogram buckets (as Prometheus's histogram_quantile does),
// token, request and sampled-trace rates from its counters, and the pod's GPU state from the join.
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import { POD_GPU_POWER, POD_GPU_UTILIZATION } from "../join/catalogue.js";
import { counterDelta } from "../join/joiner.js";

/** Quantiles the page shows, in this order. */
export const QUANTILES = [0.5, 0.95, 0.99] as const;

/** One point of a route: rates per second, latencies in ms, null when unknown in that interval. */
export interface DashboardPoint {
  timestampMs: number;
  namespace: string;
  pod: string;
  /** TTFT, decode and total at QUANTILES. Decode is total minus TTFT at the same quantile (an attribution, not a measured decode histogram). */
  ttftMs: (number | null)[];
  decodeMs: (number | null)[];
  totalMs: (number | null)[];
  requestsPerSecond: number;
  sampledPerSecond: number;
  outputTokensPerSecond: number;
  gpuUtilizationPercent: number | null;
  gpuPowerWatts: number | null;
}

/** The scrape a batch came from (a subset of the pipeline's ScrapeResult). */
export interface BatchSource {
  target: { id: string; kind: string; namespace?: string; pod?: string };
  timestampMs: number;
}

/** What the dashboard routes read. */
export interface DashboardSource {
  routes(): string[];
  points(route: string): DashboardPoint[];
}

interface RouteCounters {
  ttftBuckets: Map<number, number>;
  totalBuckets: Map<number, number>;
  requests: number;
  sampled: number;
  outputTokens: number;
}

interface Snapshot {
  timestampMs: number;
  routes: Map<string, RouteCounters>;
}

const TTFT_BUCKET = "tokentrace_llm_ttft_ms_bucket";
const DURATION_BUCKET = "tokentrace_llm_duration_ms_bucket";
const REQUESTS = "tokentrace_requests_total";
const SAMPLED = "tokentrace_traces_sampled_total";
const OUTPUT_TOKENS = "tokentrace_llm_output_tokens_total";

/**
 * The q-quantile of a histogram given as cumulative counts per upper bound (+Inf included), by
 * linear interpolation inside the bucket, as Prometheus's histogram_quantile; null when empty.
 */
export function histogramQuantile(q: number, cumulative: Map<number, number>): number | null {
  const bounds = [...cumulative.keys()].sort((a, b) => a - b);
  const total = cumulative.get(Infinity) ?? (bounds.length > 0 ? cumulative.get(bounds[bounds.length - 1]!)! : 0);
  if (total <= 0) return null;
  const rank = q * total;
  let prevBound = 0;
  let prevCount = 0;
  for (const bound of bounds) {
    const count = cumulative.get(bound)!;
    if (count >= rank) {
      // Above the highest finite bound nothing is known but that bound.
      if (bound === Infinity) return prevBound;
      if (count === prevCount) return bound;
      return prevBound + ((bound - prevBound) * (rank - prevCount)) / (count - prevCount);
    }
    prevBound = bound;
    prevCount = count;
  }
  return prevBound;
}

const round3 = (v: number): number => Math.round(v * 1000) / 1000;

/** Collects points from joined batches; bounded to `maxPoints` per route and `maxRoutes` routes. */
export class DashboardSeries implements DashboardSource {
  private readonly previous = new Map<string, Snapshot>();
  private readonly byRoute = new Map<string, DashboardPoint[]>();

  constructor(private readonly limits: { maxPoints: number; maxRoutes: number } = { maxPoints: 720, maxRoutes: 64 }) {}

  /** Takes one joined batch (the pipeline's onBatch); batches of targets other than Envoy sidecars are ignored. */
  observe(series: WriteSeries[], source: BatchSource): void {
    const t = source.target;
    if (t.kind !== "envoy" && t.kind !== "static") return;
    const routes = new Map<string, RouteCounters>();
    const counters = (route: string): RouteCounters => {
      let c = routes.get(route);
      if (!c) routes.set(route, (c = { ttftBuckets: new Map(), totalBuckets: new Map(), requests: 0, sampled: 0, outputTokens: 0 }));
      return c;
    };
    const util: number[] = [];
    let power: number | null = null;
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      const value = s.samples[s.samples.length - 1]?.value;
      if (name === undefined || value === undefined || !Number.isFinite(value)) continue;
      if (name === POD_GPU_UTILIZATION) util.push(value);
      else if (name === POD_GPU_POWER) power = (power ?? 0) + value;
      if (!name.startsWith("tokentrace_")) continue;
      const route = labelValue(s.labels, "route");
      if (route === undefined) continue;
      if (name === TTFT_BUCKET || name === DURATION_BUCKET) {
        const le = labelValue(s.labels, "le");
        if (le === undefined) continue;
        const bound = le === "+Inf" ? Infinity : Number(le);
        if (Number.isNaN(bound)) continue;
        const buckets = name === TTFT_BUCKET ? counters(route).ttftBuckets : counters(route).totalBuckets;
        // Summed over models: the page is per route.
        buckets.set(bound, (buckets.get(bound) ?? 0) + value);
      } else if (name === REQUESTS) counters(route).requests += value;
      else if (name === SAMPLED) counters(route).sampled += value;
      else if (name === OUTPUT_TOKENS) counters(route).outputTokens += value;
    }
    if (routes.size === 0) return;
    const prev = this.previous.get(t.id);
    this.previous.set(t.id, { timestampMs: source.timestampMs, routes });
    if (!prev || source.timestampMs <= prev.timestampMs) return;
    const dtSec = (source.timestampMs - prev.timestampMs) / 1000;
    const gpuUtil = util.length > 0 ? round3(util.reduce((a, b) => a + b, 0) / util.length) : null;
    for (const [route, cur] of [...routes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const before = prev.routes.get(route);
      const diff = (now: Map<number, number>, then: Map<number, number> | undefined): Map<number, number> => {
        const out = new Map<number, number>();
        for (const [le, v] of now) out.set(le, counterDelta(then?.get(le) ?? 0, v));
        return out;
      };
      const ttft = QUANTILES.map((q) => histogramQuantile(q, diff(cur.ttftBuckets, before?.ttftBuckets)));
      const total = QUANTILES.map((q) => histogramQuantile(q, diff(cur.totalBuckets, before?.totalBuckets)));
      const point: DashboardPoint = {
        timestampMs: source.timestampMs,
        namespace: t.namespace ?? "",
        pod: t.pod ?? "",
        ttftMs: ttft.map((v) => (v === null ? null : round3(v))),
        decodeMs: total.map((v, i) => (v === null || ttft[i] === null ? null : round3(Math.max(0, v - ttft[i]!)))),
        totalMs: total.map((v) => (v === null ? null : round3(v))),
        requestsPerSecond: round3(counterDelta(before?.requests ?? 0, cur.requests) / dtSec),
        sampledPerSecond: round3(counterDelta(before?.sampled ?? 0, cur.sampled) / dtSec),
        outputTokensPerSecond: round3(counterDelta(before?.outputTokens ?? 0, cur.outputTokens) / dtSec),
        gpuUtilizationPercent: gpuUtil,
        gpuPowerWatts: power === null ? null : round3(power),
      };
      let list = this.byRoute.get(route);
      if (!list) {
        if (this.byRoute.size >= this.limits.maxRoutes) continue;
        this.byRoute.set(route, (list = []));
      }
      list.push(point);
      if (list.length > this.limits.maxPoints) list.splice(0, list.length - this.limits.maxPoints);
    }
  }

  /** Forgets a target that went away (the pipeline removed it). */
  removeTarget(id: string): void {
    this.previous.delete(id);
  }

  routes(): string[] {
    return [...this.byRoute.keys()].sort();
  }

  points(route: string): DashboardPoint[] {
    return this.byRoute.get(route) ?? [];
  }
}
