// Adaptive sampling's configuration section (`adaptive`).
import type { ConfigSection } from "../config-section.js";
import { defaultRateQuery } from "./prometheus.js";

/** The `adaptive` section. */
export interface AdaptiveConfig {
  enabled: boolean;
  /** How often rates are recomputed (Jaeger recomputes every minute). */
  intervalSeconds: number;
  /** At most one adaptive change per policy per this many seconds. */
  minPushIntervalSeconds: number;
  /** Where request rates come from: a Prometheus query API; empty url = no rates (nothing adapts). */
  prometheus: { url: string; query: string };
  /** Live tail-keep thresholds (spans.keep.live) from the pipeline's duration and TTFT histograms. */
  liveThresholds: LiveThresholdsConfig;
}

/** The `adaptive.liveThresholds` section. */
export interface LiveThresholdsConfig {
  enabled: boolean;
  /** How often thresholds are recomputed. */
  intervalSeconds: number;
  /** The window each (route, model)'s quantile is taken over. */
  windowSeconds: number;
  /** Kubernetes mode: at most one WasmPlugin change per policy per this many seconds (each reconfigures every sidecar it selects). */
  wasmPluginMinIntervalSeconds: number;
  /** The quantile a request must exceed to be kept as slow. */
  quantile: number;
  /** The threshold is this share of the quantile (below 1 errs toward keeping). */
  margin: number;
}

/** Defaults, schema and checks of `adaptive`. */
export const adaptiveSection: ConfigSection<AdaptiveConfig> = {
  defaults: {
    enabled: true,
    intervalSeconds: 60,
    minPushIntervalSeconds: 60,
    prometheus: { url: "", query: defaultRateQuery },
    // margin 0.85: what the tail-keep replay measured best (docs/sampling.md#measured).
    liveThresholds: { enabled: true, intervalSeconds: 10, windowSeconds: 60, wasmPluginMinIntervalSeconds: 60, quantile: 0.95, margin: 0.85 },
  },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["enabled", "intervalSeconds", "minPushIntervalSeconds", "prometheus", "liveThresholds"],
    properties: {
      enabled: { type: "boolean" },
      intervalSeconds: { type: "integer", minimum: 1, maximum: 3600 },
      minPushIntervalSeconds: { type: "integer", minimum: 0, maximum: 86400 },
      prometheus: {
        type: "object",
        additionalProperties: false,
        required: ["url", "query"],
        properties: { url: { type: "string", pattern: "^$|^https?://.+" }, query: { type: "string", minLength: 1 } },
      },
      liveThresholds: {
        type: "object",
        additionalProperties: false,
        required: ["enabled", "intervalSeconds", "windowSeconds", "wasmPluginMinIntervalSeconds", "quantile", "margin"],
        properties: {
          enabled: { type: "boolean" },
          intervalSeconds: { type: "integer", minimum: 1, maximum: 3600 },
          windowSeconds: { type: "integer", minimum: 10, maximum: 3600 },
          wasmPluginMinIntervalSeconds: { type: "integer", minimum: 0, maximum: 86400 },
          quantile: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
          margin: { type: "number", exclusiveMinimum: 0, maximum: 2 },
        },
      },
    },
  },
};
