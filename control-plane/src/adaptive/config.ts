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
}

/** Defaults, schema and checks of `adaptive`. */
export const adaptiveSection: ConfigSection<AdaptiveConfig> = {
  defaults: { enabled: true, intervalSeconds: 60, minPushIntervalSeconds: 60, prometheus: { url: "", query: defaultRateQuery } },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["enabled", "intervalSeconds", "minPushIntervalSeconds", "prometheus"],
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
    },
  },
};
