// The filter's stat catalogue as the tests, the local proxy and the pipeline fixtures see it: the
// tags Istio must extract (extraStatTags) and the series names. Mirrors filter/telemetry/metrics.ts.
export const FILTER_STAT_TAGS = ["route", "status_class", "error", "model", "stream", "finish_reason", "redacted", "pod_ip", "keep_reason", "error_type", "input_length", "output_length"] as const;
/** Tags only a filter on an ambient waypoint adds (stats.maxDestinationPods > 0): a sidecar never does. */
export const WAYPOINT_STAT_TAGS: readonly string[] = ["pod_ip"];
