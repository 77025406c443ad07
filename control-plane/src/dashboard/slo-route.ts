// The SLO view's endpoint: GET /v1/dashboard/slo, per route and model the objective, goodput, 30-day
// budget left and fast and slow burn from the configured Prometheus (slo.ts), "unavailable" with the
// reason when a read fails, and what to configure when no Prometheus is. Always 200, like the alerts.
import type { Request, RequestHandler, Response, Router } from "express";
import { FAST_BURN, GOODPUT_WINDOW, SLOW_BURN, type SloRead } from "./slo.js";

/** Where the SLO figures come from: absent, no Prometheus is configured. */
export interface SloSource {
  read(): Promise<SloRead>;
  readonly queryUrl: string;
}

/** What the page says without a Prometheus. */
export const SLO_OFF_HINT =
  "The SLO view needs Prometheus: set alerts.prometheusUrl (TOKENTRACE_ALERTS_PROMETHEUS_URL) or adaptive.prometheus.url (TOKENTRACE_PROMETHEUS_URL) to a Prometheus that evaluates istio/observability/prometheus-rules.yaml (its SLO groups record goodput, burn rates and the budget left).";

/** The windows and thresholds the figures are read at, for the page's column heads. */
const WINDOWS = { goodput: GOODPUT_WINDOW, budget: "30d", burnFast: FAST_BURN, burnSlow: SLOW_BURN };

/** GET /v1/dashboard/slo. */
export function sloRoutes(router: Router, { slo, read }: { slo: SloSource | undefined; read: RequestHandler }): void {
  router.get("/v1/dashboard/slo", read, async (_req: Request, res: Response) => {
    res.set("cache-control", "no-store");
    if (!slo) {
      res.json({ source: "none", available: false, hint: SLO_OFF_HINT, windows: WINDOWS, ttft: [], errors: [], truncated: 0 });
      return;
    }
    const result = await slo.read();
    const readAt = new Date(result.readAtMs).toISOString();
    if (!result.ok) {
      res.json({ source: "prometheus", from: slo.queryUrl, available: false, reason: result.reason, detail: result.detail, readAt, windows: WINDOWS, ttft: [], errors: [], truncated: 0 });
      return;
    }
    res.json({ source: "prometheus", from: slo.queryUrl, available: true, readAt, windows: WINDOWS, ttft: result.ttft, errors: result.errors, truncated: result.truncated });
  });
}
