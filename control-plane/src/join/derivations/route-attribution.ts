// Latency attribution per route and model, at each sidecar scrape over the rate window: the
// sidecar's ttft and decode percentiles and what lies outside the engine (../../engine/attribution.ts),
// given the engine's signals of the same instant.
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { Labels } from "../../scrape/sample.js";
import type { ScrapeTarget } from "../../scrape/targets.js";
import type { WriteSeries } from "../../remote-write/series.js";
import { keepSidecarInfo, routePhases, sidecarEntries, type SidecarInfo } from "../../engine/attribution.js";
import { NamePool } from "../../scrape/name-pool.js";
import * as C from "../catalogue.js";
import { podKeyOf, podLabelsOf, sourceKeyOf, type PodIdentity } from "../identity.js";
import { PodWindows, WindowBudget, type Derivation } from "./derivation.js";
import type { EngineSignals } from "./engine-signals.js";

/** tokentrace_route_latency_quantile_seconds: per pod, its sidecar's TTFT and decode buckets over the rate window. */
export class RouteAttribution implements Derivation {
  private readonly windows: PodWindows<SidecarInfo>;

  constructor(private readonly engine: EngineSignals, private readonly rateWindowMs: number, budget: WindowBudget = new WindowBudget()) {
    this.windows = new PodWindows(rateWindowMs, budget, keepSidecarInfo(new NamePool()));
  }

  observe(r: ScrapeResult): void {
    const podKey = podKeyOf(r.target);
    // Prometheus marks a failed target's series stale: instant values stop, ranges keep what they had.
    if (!r.ok && podKey) this.windows.get(sourceKeyOf(r.target, podKey))?.failed(r.target.id, r.timestampMs);
  }

  forget(t: ScrapeTarget): void {
    const podKey = podKeyOf(t);
    if (podKey && t.kind !== "dcgm") this.windows.remove(sourceKeyOf(t, podKey), t.id);
  }

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    const ts = r.timestampMs;
    const entries = sidecarEntries(t.id, r.samples);
    const source = sourceKeyOf(t, pod.key);
    if (entries.length === 0 && !this.windows.has(source)) return;
    const window = this.windows.observe(source, t.id, ts, entries);
    if (window === undefined) return;
    const signals = this.engine.signalsAt(pod.key, ts);
    const podLabels: Labels = podLabelsOf(t);
    for (const [rm, phases] of [...routePhases(window.all(), signals, ts, this.rateWindowMs)].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const [route, model] = rm.split("\xff") as [string, string];
      for (const [phase, quantiles] of phases) {
        for (const [q, v] of quantiles) out.push({ labels: ["__name__", C.ROUTE_LATENCY_QUANTILE, ...podLabels, "route", route, "model", model, "phase", phase, "quantile", String(q)], samples: [{ value: v, timestampMs: ts }] });
      }
    }
  }
}
