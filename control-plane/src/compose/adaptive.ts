// Adaptive sampling: where its rates come from, its periodic step (the leader's only), and the
// rates every replica serves; and live tail-keep thresholds on their own schedule (the leader's),
// which the leader publishes in status beside the rates so that followers serve them too.
import type { ControlPlaneMetrics } from "../api/metrics.js";
import type { AdaptiveConfig } from "../adaptive/config.js";
import { PipelineRateSource } from "../adaptive/pipeline-rates.js";
import { PrometheusRateSource } from "../adaptive/prometheus.js";
import { noRates, type RateSource } from "../adaptive/rates.js";
import { LiveThresholdScheduler } from "../adaptive/live-scheduler.js";
import { DEFAULT_LIVE_THRESHOLDS } from "../adaptive/live-thresholds.js";
import { PipelineHistogramSource, type WindowSource } from "../adaptive/pipeline-histograms.js";
import { AdaptiveSampler } from "../adaptive/sampler.js";
import type { LiveThresholdView } from "../dashboard/keep-route.js";
import type { KeepLiveThreshold, OverrideSource, RateOverrides } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import type { Runtime } from "./runtime.js";

/** What adaptive sampling is wired to. */
export interface AdaptiveDeps {
  config: AdaptiveConfig;
  runtime: Pick<Runtime, "ticker" | "nowMs" | "log">;
  store: PolicyRepository;
  metrics: Pick<ControlPlaneMetrics, "adaptiveUpdates" | "liveThresholdUpdates" | "liveThresholdOverflow">;
  /** Injected rates (tests); otherwise chosen from the config. */
  rates: RateSource | undefined;
  /** The pipeline's scrape interval when the pipeline runs. */
  pipelineScrapeIntervalMs: number | undefined;
  /** Whether this replica adapts (with leader election, only the leader does). */
  leading: () => boolean;
  /** The rates and live thresholds a leader published in a policy's status (Kubernetes mode; none otherwise). */
  published: OverrideSource;
  /** A policy's rates changed. */
  onChange: (policy: string) => void;
  /** Kubernetes mode: live thresholds reach the filters through WasmPlugins, whose updates are rate-limited. */
  kubernetes: boolean;
  /** Injected windows for live thresholds (tests); otherwise the pipeline's when it runs. */
  windows?: WindowSource;
}

/** The sampler, the pipeline-fed rate source when used, and the rates served. */
export interface AdaptiveSampling {
  sampler: AdaptiveSampler;
  /** Fed by the pipeline's joined batches when it runs without a Prometheus to ask. */
  pipelineRates: PipelineRateSource | undefined;
  /** The leader's own rates and live thresholds, else those published in the policy's status (a follower, or a new leader before its first step). */
  overrides: OverrideSource;
  /** Live tail-keep thresholds: computed on a schedule when `adaptive.liveThresholds.enabled` and windows exist. */
  live: LiveThresholdScheduler;
  /** Fed by the pipeline's joined batches: the windows live thresholds are computed from. */
  pipelineHistograms: PipelineHistogramSource | undefined;
  /** What the dashboard says about live thresholds: their settings, bounds and who computes them. */
  liveView: LiveThresholdView;
}

/** Builds the sampler and schedules its step when `adaptive.enabled`. */
export function wireAdaptiveSampling(deps: AdaptiveDeps): AdaptiveSampling {
  const { config, runtime, store, leading, published } = deps;
  const namespaceOf = (name: string): string | undefined => store.get(name)?.policy.target.namespace;
  // Without a Prometheus to ask, adaptive sampling learns rates from the pipeline's own scrapes:
  // a rate counts for three scrape intervals, and at least two adaptive steps.
  const pipelineRates =
    deps.pipelineScrapeIntervalMs !== undefined && config.prometheus.url === ""
      ? new PipelineRateSource({ namespaceOf, now: runtime.nowMs, maxAgeMs: Math.max(3 * deps.pipelineScrapeIntervalMs, 2 * config.intervalSeconds * 1000) })
      : undefined;
  const sampler = new AdaptiveSampler({
    source: deps.rates ?? pipelineRates ?? rateSourceFor(config, namespaceOf),
    policies: () => store.list(),
    now: runtime.nowMs,
    minPushIntervalMs: config.minPushIntervalSeconds * 1000,
    onChange: (name) => {
      deps.metrics.adaptiveUpdates.inc({ policy: name });
      deps.onChange(name);
    },
    onError: (name, error) => runtime.log({ level: "warn", msg: "adaptive sampling could not read rates", policy: name, error: String(error) }),
    // A new leader continues from the rates the previous one published (status.adaptive).
    seed: (record) => published(record.policy.name),
  });
  if (config.enabled) {
    runtime.ticker.every("adaptive", config.intervalSeconds * 1000, () => (leading() ? sampler.step() : undefined));
  }
  // Live thresholds: from the pipeline's histograms (a Prometheus source is not read for them yet).
  const liveConfig = config.liveThresholds;
  const pipelineHistograms =
    deps.pipelineScrapeIntervalMs !== undefined
      ? new PipelineHistogramSource({ namespaceOf, now: runtime.nowMs, windowMs: liveConfig.windowSeconds * 1000, maxAgeMs: Math.max(3 * deps.pipelineScrapeIntervalMs, 2 * liveConfig.intervalSeconds * 1000) })
      : undefined;
  const windows = deps.windows ?? pipelineHistograms;
  const thresholds = { ...DEFAULT_LIVE_THRESHOLDS, quantile: liveConfig.quantile, margin: liveConfig.margin };
  const live = new LiveThresholdScheduler({
    source: windows ?? { windows: () => [] },
    policies: () => store.list(),
    now: runtime.nowMs,
    // A pull costs the filters nothing more when thresholds move; a WasmPlugin update reconfigures every sidecar it selects.
    minPushIntervalMs: deps.kubernetes ? liveConfig.wasmPluginMinIntervalSeconds * 1000 : 0,
    thresholds,
    onChange: (name) => {
      deps.metrics.liveThresholdUpdates.inc({ policy: name });
      deps.onChange(name);
    },
    onOverflow: (name, pairs) => deps.metrics.liveThresholdOverflow.set({ policy: name }, pairs),
    seed: (name) => published(name)?.keepLive,
  });
  if (liveConfig.enabled && windows !== undefined) {
    runtime.ticker.every("live-thresholds", liveConfig.intervalSeconds * 1000, () => (leading() ? live.step() : undefined));
  }
  // Every replica serves the leader's live thresholds: the leader its own (until its first step,
  // those its predecessor published), a follower those the leader published in the policy's
  // status (Kubernetes mode), so a filter gets the same config whichever replica it pulls from.
  const merged = new Map<string, { rates: RateOverrides | undefined; keepLive: readonly KeepLiveThreshold[] | undefined; out: RateOverrides | undefined }>();
  const overrides: OverrideSource = (name) => {
    const fromStatus = published(name);
    if (!leading()) return fromStatus;
    const rates = sampler.overrides(name) ?? fromStatus;
    const own = live.live(name);
    const keepLive = own ?? fromStatus?.keepLive;
    if (rates?.keepLive === keepLive || (rates?.keepLive === undefined && (keepLive === undefined || keepLive.length === 0))) {
      merged.delete(name);
      return rates;
    }
    // One object per (rates, thresholds) pair: the served-config cache keys on its identity.
    const hit = merged.get(name);
    if (hit !== undefined && hit.rates === rates && hit.keepLive === keepLive) return hit.out;
    const { keepLive: _stale, ...ratesAlone } = rates ?? { routeRates: new Map<number, number>() };
    const out: RateOverrides = keepLive === undefined || keepLive.length === 0 ? ratesAlone : { ...ratesAlone, keepLive };
    merged.set(name, { rates, keepLive, out });
    return out;
  };
  const liveView: LiveThresholdView = {
    enabled: liveConfig.enabled && windows !== undefined,
    quantile: thresholds.quantile,
    margin: thresholds.margin,
    floorMs: thresholds.floorMs,
    ceilingMs: thresholds.ceilingMs,
    intervalSeconds: liveConfig.intervalSeconds,
    windowSeconds: liveConfig.windowSeconds,
    leading,
  };
  return { sampler, pipelineRates, overrides, live, pipelineHistograms, liveView };
}

/** The rate source the config asks for. */
function rateSourceFor(config: AdaptiveConfig, namespaceOf: (policy: string) => string | undefined): RateSource {
  const prometheus = config.prometheus;
  return prometheus.url === "" ? noRates : new PrometheusRateSource({ url: prometheus.url, query: prometheus.query, namespaceOf });
}
