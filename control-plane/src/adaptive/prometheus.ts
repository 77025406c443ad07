// A RateSource that reads request rates per route from a Prometheus-compatible instant-query
// API (GET /api/v1/query). The query is a template so it fits the deployment's scrape labels:
// `{namespace}` and `{policy}` are replaced (label-value escaped) before sending, and the
// result must be a vector with a `route` label, e.g. the default
//   sum by (route) (rate(tokentrace_requests_total{namespace="{namespace}"}[2m]))
import type { RateSource, RouteRate } from "./rates.js";

/** Default query template; `tokentrace_requests_total{route}` is the filter's request counter. */
export const defaultRateQuery = 'sum by (route) (rate(tokentrace_requests_total{namespace="{namespace}"}[2m]))';

/** Options of {@link PrometheusRateSource}. */
export interface PrometheusRateSourceOptions {
  /** Base URL, e.g. http://prometheus:9090. */
  url: string;
  /** Query template with `{namespace}` and `{policy}` placeholders. */
  query: string;
  /** The target namespace of a policy (undefined when the policy is gone). */
  namespaceOf: (policyName: string) => string | undefined;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

interface QueryResponse {
  status?: string;
  error?: string;
  data?: { resultType?: string; result?: { metric?: Record<string, string>; value?: [number, string] }[] };
}

/** Request rates from Prometheus; throws (the sampler skips the policy) when the query fails. */
export class PrometheusRateSource implements RateSource {
  constructor(private readonly options: PrometheusRateSourceOptions) {}

  /** The query sent for a policy. */
  queryFor(policyName: string, namespace: string): string {
    return this.options.query.replaceAll("{namespace}", escapeLabelValue(namespace)).replaceAll("{policy}", escapeLabelValue(policyName));
  }

  async requestRates(policyName: string): Promise<RouteRate[]> {
    const namespace = this.options.namespaceOf(policyName);
    if (namespace === undefined) return [];
    const url = new URL("/api/v1/query", this.options.url);
    url.searchParams.set("query", this.queryFor(policyName, namespace));
    const response = await (this.options.fetch ?? fetch)(url, { signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000) });
    const body = (await response.json().catch(() => ({}))) as QueryResponse;
    if (!response.ok || body.status !== "success") {
      throw new Error(`prometheus query failed: HTTP ${response.status}${body.error ? `: ${body.error}` : ""}`);
    }
    if (body.data?.resultType !== "vector") throw new Error(`prometheus query returned ${String(body.data?.resultType)}, expected vector`);
    const rates: RouteRate[] = [];
    for (const sample of body.data.result ?? []) {
      const route = sample.metric?.route;
      const value = Number(sample.value?.[1]);
      // NaN/Inf appear when a counter has too few points; they carry no rate.
      if (route !== undefined && Number.isFinite(value) && value >= 0) rates.push({ route, requestsPerSecond: value });
    }
    return rates;
  }
}
