// Where adaptive sampling learns request rates: a Prometheus query API (prometheus.ts) or the
// control plane's own metrics pipeline (pipeline-rates.ts); tests feed synthetic traffic.

/** Observed requests per second on one route of a policy's workloads. */
export interface RouteRate {
  /**
   * The route key: a rule's `routeName`, else its `pathPrefix`, else its `host` (see
   * {@link routeKey}). Any other value (the filter's `route` label of a route without a rule,
   * `default`, `other`, or `*`) counts as traffic no rule matched and adapts `defaultRate`.
   */
  route: string;
  requestsPerSecond: number;
}

/** Supplies the current request rates for a policy's routes. */
export interface RateSource {
  requestRates(policyName: string): Promise<RouteRate[]>;
}

/** Key of traffic that no route rule matched. */
export const unmatchedRoute = "*";

/** The key adaptive sampling uses for a route rule. */
export function routeKey(rule: { routeName?: string; pathPrefix?: string; host?: string }): string {
  return rule.routeName ?? rule.pathPrefix ?? rule.host ?? "";
}

/** A source that knows no rates: adaptive sampling then changes nothing. */
export const noRates: RateSource = { requestRates: async () => [] };
