// The span receiver's configuration section (`traces`).
import type { ConfigSection } from "../config-section.js";

/**
 * The OTLP/HTTP span receiver (POST /v1/traces, JSON or protobuf): off unless `enabled`. It keeps the newest
 * `maxSpans` spans in memory for the dashboard's trace list and lookup; `linkTemplate` turns a
 * trace id into a link to Jaeger, Tempo or Grafana ({traceId}, {spanId}, {startMs}, {endMs}).
 */
export interface TracesConfig {
  enabled: boolean;
  maxSpans: number;
  maxBodyBytes: number;
  linkTemplate: string;
}

/** Defaults, schema and checks of `traces`. */
export const tracesSection: ConfigSection<TracesConfig> = {
  defaults: { enabled: false, maxSpans: 10000, maxBodyBytes: 4194304, linkTemplate: "" },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["enabled", "maxSpans", "maxBodyBytes", "linkTemplate"],
    properties: {
      enabled: { type: "boolean" },
      maxSpans: { type: "integer", minimum: 1, maximum: 1000000 },
      maxBodyBytes: { type: "integer", minimum: 1024, maximum: 67108864 },
      linkTemplate: { type: "string", pattern: "^$|^https?://.*\\{traceId\\}" },
    },
  },
};
