// Istio's metrics merging, read for the application alone. pilot-agent answers on its status port
// with its own series, then Envoy's, then the application's, concatenated (istio/istio 86c9f01f
// pilot/cmd/pilot-agent/status/server.go handleStats). The pipeline reads Envoy on :15090 anyway,
// so it asks the agent for none of Envoy's stats and keeps only the application's series.

/**
 * The query a merged scrape carries. pilot-agent passes the scrape's query on to Envoy (Istio >=
 * 1.24, istio/istio 85cd183a), and Envoy shows a stat only when its `filter` RE2 partly matches
 * the stat's name (envoyproxy/envoy 74fe3651 source/server/admin/stats_params.h shouldShowMetric):
 * `^$` matches no stat name, so Envoy's part is empty and the answer stays small.
 */
export const MERGED_QUERY = `filter=${encodeURIComponent("^$")}`;

/**
 * Name prefixes of series that are not the application's: the agent's registry (server.go
 * initializeMonitoring prefixes it `istio_agent_`), Envoy's own and Istio's stats (`envoy_`,
 * `istio_`), and this project's filter (its Wasm stats print without a prefix). The second line
 * of defence, for agents older than 1.24 that drop the query.
 */
const NOT_APPLICATION = ["istio_agent_", "envoy_", "istio_", "tokentrace_"];

/** True when a merged answer's series `name` is the application's. */
export function isApplicationSeries(name: string): boolean {
  return !NOT_APPLICATION.some((p) => name.startsWith(p));
}
