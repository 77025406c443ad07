// The control plane's metric catalogue (one place; tests import the names from here), on an
// explicit prom-client Registry so tests and embedders never share global state.
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";

/** Metric names, for tests and dashboards. */
export const metricNames = {
  apiRequests: "tokentrace_control_plane_api_requests_total",
  pushes: "tokentrace_control_plane_pushes_total",
  pushFailures: "tokentrace_control_plane_push_failures_total",
  reconcileLag: "tokentrace_control_plane_reconcile_lag_seconds",
  policies: "tokentrace_control_plane_policies",
  quarantined: "tokentrace_control_plane_policies_quarantined",
  adaptiveUpdates: "tokentrace_control_plane_adaptive_updates_total",
  liveThresholdUpdates: "tokentrace_control_plane_live_threshold_updates_total",
  liveThresholdOverflow: "tokentrace_control_plane_live_threshold_overflow_pairs",
  spansReceived: "tokentrace_control_plane_spans_received_total",
  spansDropped: "tokentrace_control_plane_spans_dropped_total",
  spanRequestsRefused: "tokentrace_control_plane_span_requests_refused_total",
  spansHeld: "tokentrace_control_plane_spans_held",
  spansHeldBytes: "tokentrace_control_plane_spans_held_bytes",
  filterRequests: "tokentrace_control_plane_filter_requests_total",
  alertsReadFailures: "tokentrace_control_plane_alerts_read_failures_total",
} as const;

/** Every metric the control plane's API, push and adaptive parts export. */
export interface ControlPlaneMetrics {
  registry: Registry;
  /** By method, route pattern (bounded) and status code. */
  apiRequests: Counter<"method" | "route" | "code">;
  /** Config deliveries: mode "kubernetes" (WasmPlugin writes) or "pull" (a new version served). */
  pushes: Counter<"mode">;
  /** Failed deliveries by mode and bounded reason. */
  pushFailures: Counter<"mode" | "reason">;
  /** Age of the oldest policy change not yet applied to Kubernetes; 0 when in sync. */
  reconcileLag: Gauge;
  /** Current number of policies. */
  policies: Gauge;
  /** Stored records set aside at load because they no longer validate. */
  quarantined: Gauge;
  /** Published adaptive-sampling changes. */
  adaptiveUpdates: Counter<"policy">;
  /** Published live tail-keep threshold changes (spans.keep.live). */
  liveThresholdUpdates: Counter<"policy">;
  /** (route, model) pairs the last live-threshold step left out (past 128; they fall back in the filter). */
  liveThresholdOverflow: Gauge<"policy">;
  /** Spans the receiver decoded (kept or not). */
  spansReceived: Counter;
  /** Spans not kept, by reason: invalid, over_budget, token_trace_id_conflict, and evicted (kept, then dropped for room). */
  spansDropped: Counter<"reason">;
  /** Export requests refused whole, by reason: too_large, too_deep, inflight, malformed, unsupported. */
  spanRequestsRefused: Counter<"reason">;
  /** Spans held and the bytes they keep (set on scrape). */
  spansHeld: Gauge;
  spansHeldBytes: Gauge;
  /** Filter-facing listener requests by method, route pattern and status code. */
  filterRequests: Counter<"method" | "route" | "code">;
  /** The dashboard's reads of the Prometheus rules API that failed, by reason (dashboard/alerts.ts AlertsFailure). */
  alertsReadFailures: Counter<"reason">;
}

/** Creates the catalogue on a new registry (with process metrics when `processMetrics`). */
export function createMetrics(processMetrics = false): ControlPlaneMetrics {
  const registry = new Registry();
  if (processMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    apiRequests: new Counter({ name: metricNames.apiRequests, help: "API requests by method, route and status code.", labelNames: ["method", "route", "code"], registers: [registry] }),
    pushes: new Counter({ name: metricNames.pushes, help: "Policy deliveries to filters, by mode (kubernetes, pull).", labelNames: ["mode"], registers: [registry] }),
    pushFailures: new Counter({ name: metricNames.pushFailures, help: "Failed policy deliveries by mode and reason.", labelNames: ["mode", "reason"], registers: [registry] }),
    reconcileLag: new Gauge({ name: metricNames.reconcileLag, help: "Seconds since the oldest policy change not yet applied to Kubernetes (0 when in sync).", registers: [registry] }),
    policies: new Gauge({ name: metricNames.policies, help: "Number of sampling policies.", registers: [registry] }),
    quarantined: new Gauge({ name: metricNames.quarantined, help: "Stored policy records not served because they failed validation at load.", registers: [registry] }),
    adaptiveUpdates: new Counter({ name: metricNames.adaptiveUpdates, help: "Adaptive-sampling rate changes published, by policy.", labelNames: ["policy"], registers: [registry] }),
    liveThresholdUpdates: new Counter({ name: metricNames.liveThresholdUpdates, help: "Live tail-keep threshold changes published (spans.keep.live), by policy.", labelNames: ["policy"], registers: [registry] }),
    liveThresholdOverflow: new Gauge({ name: metricNames.liveThresholdOverflow, help: "(route, model) pairs the last live-threshold step left out of spans.keep.live (they fall back to the static thresholds), by policy.", labelNames: ["policy"], registers: [registry] }),
    spansReceived: new Counter({ name: metricNames.spansReceived, help: "Spans the OTLP receiver decoded, kept or not.", registers: [registry] }),
    spansDropped: new Counter({ name: metricNames.spansDropped, help: "Spans the OTLP receiver did not keep (or evicted for room), by reason.", labelNames: ["reason"], registers: [registry] }),
    spanRequestsRefused: new Counter({ name: metricNames.spanRequestsRefused, help: "OTLP export requests refused whole, by reason.", labelNames: ["reason"], registers: [registry] }),
    spansHeld: new Gauge({ name: metricNames.spansHeld, help: "Spans the receiver holds.", registers: [registry] }),
    spansHeldBytes: new Gauge({ name: metricNames.spansHeldBytes, help: "Bytes the held spans keep, as counted against traces.maxBytes.", registers: [registry] }),
    filterRequests: new Counter({ name: metricNames.filterRequests, help: "Filter-facing listener requests by method, route and status code.", labelNames: ["method", "route", "code"], registers: [registry] }),
    alertsReadFailures: new Counter({ name: metricNames.alertsReadFailures, help: "Reads of the Prometheus rules API for the dashboard's alert list that failed, by reason (timeout, unreachable, http_status, too_large, invalid, error_status).", labelNames: ["reason"], registers: [registry] }),
  };
}
