// The dashboard alert list's configuration section (`alerts`): where firing and pending alerts are
// read from, and the bounds of each read.
import type { ConfigSection } from "../config-section.js";

/** The `alerts` section. */
export interface AlertsConfig {
  /** A Prometheus whose rules API lists the alerts; empty: adaptive.prometheus.url, and none when that is empty too. */
  prometheusUrl: string;
  timeoutMs: number;
  maxBytes: number;
  maxAlerts: number;
  cacheMs: number;
}

/** Defaults, schema of `alerts`. */
export const alertsSection: ConfigSection<AlertsConfig> = {
  // 2 s: the page refreshes every few seconds and must not wait on a slow Prometheus; 1 MiB holds
  // the rules answer of a few hundred alert rules with their annotations (the demo's is 60 KB).
  defaults: { prometheusUrl: "", timeoutMs: 2000, maxBytes: 1048576, maxAlerts: 100, cacheMs: 2000 },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["prometheusUrl", "timeoutMs", "maxBytes", "maxAlerts", "cacheMs"],
    properties: {
      prometheusUrl: { type: "string", pattern: "^$|^https?://.+" },
      timeoutMs: { type: "integer", minimum: 100, maximum: 60000 },
      maxBytes: { type: "integer", minimum: 1024, maximum: 67108864 },
      maxAlerts: { type: "integer", minimum: 1, maximum: 10000 },
      cacheMs: { type: "integer", minimum: 0, maximum: 600000 },
    },
  },
};
