// The alert list's endpoint: GET /v1/dashboard/alerts, the firing and pending alerts of the
// configured Prometheus (alerts.ts), "unavailable" with the reason when a read fails, and what to
// configure when no Prometheus is. It always answers 200: the page draws everything else anyway.
import type { Request, RequestHandler, Response, Router } from "express";
import type { AlertsRead } from "./alerts.js";

/** Where the alerts come from: absent, no Prometheus is configured. */
export interface AlertsSource {
  read(): Promise<AlertsRead>;
  /** The rules API read (for the page's "from" line). */
  readonly rulesUrl: string;
}

/** What the page says without a Prometheus. */
export const ALERTS_OFF_HINT =
  "Alert state needs Prometheus: set alerts.prometheusUrl (TOKENTRACE_ALERTS_PROMETHEUS_URL) or adaptive.prometheus.url (TOKENTRACE_PROMETHEUS_URL) to a Prometheus that evaluates istio/observability/prometheus-rules.yaml and gpu-health-rules.yaml.";

/** GET /v1/dashboard/alerts. */
export function alertsRoutes(router: Router, { alerts, read }: { alerts: AlertsSource | undefined; read: RequestHandler }): void {
  router.get("/v1/dashboard/alerts", read, async (_req: Request, res: Response) => {
    res.set("cache-control", "no-store");
    if (!alerts) {
      res.json({ source: "none", available: false, hint: ALERTS_OFF_HINT, alerts: [], truncated: 0 });
      return;
    }
    const result = await alerts.read();
    const readAt = new Date(result.readAtMs).toISOString();
    if (!result.ok) {
      res.json({ source: "prometheus", from: alerts.rulesUrl, available: false, reason: result.reason, detail: result.detail, readAt, alerts: [], truncated: 0 });
      return;
    }
    res.json({ source: "prometheus", from: alerts.rulesUrl, available: true, readAt, alerts: result.alerts, truncated: result.truncated });
  });
}
