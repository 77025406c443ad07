// The span receiver's configuration section (`traces`).
import type { ConfigSection } from "../config-section.js";

/**
 * The OTLP/HTTP span receiver (POST /v1/traces on the filter-facing listener, JSON or protobuf):
 * off unless `enabled`. It keeps the newest spans in memory for the dashboard's trace list and
 * lookup, within `maxBytes` (every retained byte counted; 0 = a fraction of the memory the process
 * may use, read from its cgroup and V8's heap limit) and `maxSpans`, shared fairly between the
 * callers that send them; `linkTemplate` turns a trace id into a link to Jaeger, Tempo or Grafana
 * ({traceId}, {spanId}, {startMs}, {endMs}).
 */
export interface TracesConfig {
  enabled: boolean;
  maxSpans: number;
  /** Bytes the held spans may take; 0 = memoryFraction of the process's memory limit. */
  maxBytes: number;
  /** The share of the memory limit (cgroup, else V8's heap limit) `maxBytes: 0` uses. */
  memoryFraction: number;
  maxBodyBytes: number;
  /** Bytes of request bodies being read or decoded at once; more get 429 (0 = 4 x maxBodyBytes). */
  maxInflightBytes: number;
  /** Deepest nesting of a JSON or protobuf body (refused before any tree is built). */
  maxDepth: number;
  linkTemplate: string;
}

/** Defaults, schema and checks of `traces`. */
export const tracesSection: ConfigSection<TracesConfig> = {
  defaults: { enabled: false, maxSpans: 10000, maxBytes: 0, memoryFraction: 0.125, maxBodyBytes: 4194304, maxInflightBytes: 0, maxDepth: 32, linkTemplate: "" },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["enabled", "maxSpans", "maxBytes", "memoryFraction", "maxBodyBytes", "maxInflightBytes", "maxDepth", "linkTemplate"],
    properties: {
      enabled: { type: "boolean" },
      maxSpans: { type: "integer", minimum: 1, maximum: 1000000 },
      maxBytes: { type: "integer", minimum: 0, maximum: 17179869184 },
      memoryFraction: { type: "number", exclusiveMinimum: 0, maximum: 0.5 },
      maxBodyBytes: { type: "integer", minimum: 1024, maximum: 67108864 },
      maxInflightBytes: { type: "integer", minimum: 0, maximum: 1073741824 },
      maxDepth: { type: "integer", minimum: 8, maximum: 128 },
      linkTemplate: { type: "string", pattern: "^$|^https?://.*\\{traceId\\}" },
    },
  },
  problems: (section, key) =>
    section.maxInflightBytes !== 0 && section.maxInflightBytes < section.maxBodyBytes
      ? [`${key}.maxInflightBytes: must be 0 or at least ${key}.maxBodyBytes (${section.maxBodyBytes}), got ${section.maxInflightBytes}`]
      : [],
};
