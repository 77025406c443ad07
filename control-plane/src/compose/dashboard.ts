// The dashboard: its series come from the pipeline's joined batches, so it is served only while
// the pipeline runs; the start-up log says where it is and why its charts may be empty.
import type { AppDeps } from "../app.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import type { AlertsConfig } from "../dashboard/alerts-config.js";
import { PrometheusAlertsReader } from "../dashboard/alerts.js";
import { DashboardSeries } from "../dashboard/series.js";

/** The series the dashboard charts, fed by the pipeline's batches. */
export function dashboardSeries(): DashboardSeries {
  return new DashboardSeries();
}

/** The app's `dashboard` option: the series while the pipeline runs, nothing otherwise. */
export function dashboardOption(series: DashboardSeries, pipelineRunning: boolean): Pick<AppDeps, "dashboard"> {
  return pipelineRunning ? { dashboard: series } : {};
}

/** The start-up log line: where the dashboard is, whether the pipeline feeds it, what its history may hold, and the span receiver's state. */
export function dashboardLine(url: string, pipelineRunning: boolean, historyMaxBytes: number, traces: string): object {
  return {
    msg: "dashboard",
    url: `${url}/dashboard`,
    pipeline: pipelineRunning ? "on" : "off: charts stay empty; set TOKENTRACE_PIPELINE_ENABLED=true with scrape targets (pipeline.scrape in the config), or run make demo",
    historyMaxBytes,
    traces,
  };
}

/** The dashboard's alert reader: alerts.prometheusUrl, else the Prometheus adaptive sampling reads; none without either. */
export function alertsOption(config: AlertsConfig, adaptivePrometheusUrl: string, metrics: Pick<ControlPlaneMetrics, "alertsReadFailures">): { alerts?: PrometheusAlertsReader } {
  const url = config.prometheusUrl || adaptivePrometheusUrl;
  if (url === "") return {};
  return { alerts: new PrometheusAlertsReader({ ...config, url }, (reason) => metrics.alertsReadFailures.inc({ reason })) };
}
