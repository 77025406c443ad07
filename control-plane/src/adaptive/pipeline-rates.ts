// A RateSource fed by the control plane's own metrics pipeline, so adaptive sampling works without
// a Prometheus to query. Each joined batch of an Envoy sidecar carries the filter's request counter
// per route; two consecutive scrapes of a target give its requests per second per route. A
// policy's rates are those of the targets in its namespace, summed per route (what the Prometheus
// source's default query asks for). A target whose last rate is older than `maxAgeMs` (a pod that
// went away, a sidecar no longer scraped) no longer counts.
import { counterDelta } from "../join/joiner.js";
import { labelValue } from "../scrape/sample.js";
import { NamePool } from "../scrape/name-pool.js";
import type { WriteSeries } from "../remote-write/series.js";
import type { RateSource, RouteRate } from "./rates.js";

/** The filter's request counter (labels `route`, `status_class`). */
const REQUESTS = "tokentrace_requests_total";

/** The scrape a batch came from (a subset of the pipeline's ScrapeResult). */
export interface RateBatchSource {
  target: { id: string; kind: string; namespace?: string };
  timestampMs: number;
}

/** Options of {@link PipelineRateSource}. */
export interface PipelineRateSourceOptions {
  /** The target namespace of a policy (undefined when the policy is gone). */
  namespaceOf: (policyName: string) => string | undefined;
  /** Milliseconds clock (injected in tests). */
  now: () => number;
  /** Rates measured longer ago than this are dropped. */
  maxAgeMs: number;
}

interface Totals {
  timestampMs: number;
  byRoute: Map<string, number>;
}

interface TargetRates {
  namespace: string;
  timestampMs: number;
  byRoute: Map<string, number>;
}

/** Request rates per route from the pipeline's joined batches (see the file comment). */
export class PipelineRateSource implements RateSource {
  private readonly previous = new Map<string, Totals>();
  private readonly rates = new Map<string, TargetRates>();
  /** Route names kept (copies: a kept slice would keep its scrape's text). */
  private readonly routes = new NamePool();
  private sweptAtMs = -Infinity;

  constructor(private readonly options: PipelineRateSourceOptions) {}

  /** Targets whose totals or rates are held. */
  get targets(): number {
    return new Set([...this.previous.keys(), ...this.rates.keys()]).size;
  }

  /** Takes one joined batch (the pipeline's onBatch); batches of targets other than Envoy sidecars are ignored. */
  observe(series: WriteSeries[], source: RateBatchSource): void {
    const { target, timestampMs } = source;
    if ((target.kind !== "envoy" && target.kind !== "static") || target.namespace === undefined) return;
    const totals = new Map<string, number>();
    for (const s of series) {
      if (labelValue(s.labels, "__name__") !== REQUESTS) continue;
      const route = labelValue(s.labels, "route");
      const value = s.samples[s.samples.length - 1]?.value;
      if (route === undefined || value === undefined || !Number.isFinite(value)) continue;
      // Summed over status classes (and models, should a series carry one).
      const kept = totals.has(route) ? route : this.routes.of(route);
      totals.set(kept, (totals.get(kept) ?? 0) + value);
    }
    // Targets gone (a pod of an old rollout) go even when nothing asks for rates (adaptive sampling off).
    if (timestampMs - this.sweptAtMs >= this.options.maxAgeMs) this.sweep(timestampMs - this.options.maxAgeMs);
    const before = this.previous.get(target.id);
    this.previous.set(target.id, { timestampMs, byRoute: totals });
    if (before === undefined || timestampMs <= before.timestampMs) return;
    const seconds = (timestampMs - before.timestampMs) / 1000;
    const byRoute = new Map<string, number>();
    for (const [route, now] of totals) {
      const then = before.byRoute.get(route);
      // A route first seen in this scrape has no rate yet (as Prometheus's rate() needs two points).
      if (then === undefined) continue;
      // A counter that went down was reset (the sidecar restarted): it counted up from zero.
      byRoute.set(route, counterDelta(then, now) / seconds);
    }
    this.rates.set(target.id, { namespace: target.namespace, timestampMs, byRoute });
  }

  async requestRates(policyName: string): Promise<RouteRate[]> {
    const namespace = this.options.namespaceOf(policyName);
    if (namespace === undefined) return [];
    this.sweep(this.options.now() - this.options.maxAgeMs);
    const sum = new Map<string, number>();
    for (const r of this.rates.values()) {
      if (r.namespace !== namespace) continue;
      for (const [route, rps] of r.byRoute) sum.set(route, (sum.get(route) ?? 0) + rps);
    }
    return [...sum].map(([route, requestsPerSecond]) => ({ route, requestsPerSecond }));
  }

  /** Forgets targets last measured before `oldest`. */
  private sweep(oldest: number): void {
    this.sweptAtMs = oldest + this.options.maxAgeMs;
    for (const [id, p] of this.previous) if (p.timestampMs < oldest) this.previous.delete(id);
    for (const [id, r] of this.rates) if (r.timestampMs < oldest) this.rates.delete(id);
  }
}
