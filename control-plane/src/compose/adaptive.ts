// Adaptive sampling: where its rates come from, its periodic step (the leader's only), and the
// rates every replica serves.
import type { ControlPlaneMetrics } from "../api/metrics.js";
import type { AdaptiveConfig } from "../adaptive/config.js";
import { PipelineRateSource } from "../adaptive/pipeline-rates.js";
import { PrometheusRateSource } from "../adaptive/prometheus.js";
import { noRates, type RateSource } from "../adaptive/rates.js";
import { AdaptiveSampler } from "../adaptive/sampler.js";
import type { OverrideSource } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import type { Runtime } from "./runtime.js";

/** What adaptive sampling is wired to. */
export interface AdaptiveDeps {
  config: AdaptiveConfig;
  runtime: Pick<Runtime, "ticker" | "nowMs" | "log">;
  store: PolicyRepository;
  metrics: Pick<ControlPlaneMetrics, "adaptiveUpdates">;
  /** Injected rates (tests); otherwise chosen from the config. */
  rates: RateSource | undefined;
  /** The pipeline's scrape interval when the pipeline runs. */
  pipelineScrapeIntervalMs: number | undefined;
  /** Whether this replica adapts (with leader election, only the leader does). */
  leading: () => boolean;
  /** The rates a leader published in a policy's status (Kubernetes mode; none otherwise). */
  published: OverrideSource;
  /** A policy's rates changed. */
  onChange: (policy: string) => void;
}

/** The sampler, the pipeline-fed rate source when used, and the rates served. */
export interface AdaptiveSampling {
  sampler: AdaptiveSampler;
  /** Fed by the pipeline's joined batches when it runs without a Prometheus to ask. */
  pipelineRates: PipelineRateSource | undefined;
  /** The leader's own rates, else those published in the policy's status (a follower, or a new leader before its first step). */
  overrides: OverrideSource;
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
  const overrides: OverrideSource = (name) => {
    const fromStatus = published(name);
    return leading() ? (sampler.overrides(name) ?? fromStatus) : fromStatus;
  };
  return { sampler, pipelineRates, overrides };
}

/** The rate source the config asks for. */
function rateSourceFor(config: AdaptiveConfig, namespaceOf: (policy: string) => string | undefined): RateSource {
  const prometheus = config.prometheus;
  return prometheus.url === "" ? noRates : new PrometheusRateSource({ url: prometheus.url, query: prometheus.query, namespaceOf });
}
