// The keep-reasons panel's endpoint: GET /v1/dashboard/keep, for one route why its sidecars kept
// spans (head, forced, slow, error) and what the span budget dropped, as rates, beside the tail-keep
// thresholds in force for the route and each of its models: the live ones this control plane serves
// (the leader's own, or on a follower those the leader published in the policy's status), their
// floor and ceiling, and the static threshold a pair without a live entry falls back to.
import type { NextFunction, Request, RequestHandler, Response, Router } from "express";
import { effectiveConfig, type KeepLiveThreshold, type OverrideSource } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import { KEEP_COLUMNS, keepColumns } from "./keep-window.js";
import { rangeOf, routeOf } from "./query.js";
import { policyFor } from "./route-policy.js";
import { KEEP_REASONS, type DashboardSource } from "./series.js";
import { resolution, scrapeIntervalOf } from "./window.js";

/** The live thresholds' settings as this control plane runs them (adaptive.liveThresholds and nextLiveThresholds' bounds). */
export interface LiveThresholdView {
  /** Computed here at all: adaptive.liveThresholds.enabled and the pipeline's histograms to read. */
  enabled: boolean;
  quantile: number;
  margin: number;
  floorMs: number;
  ceilingMs: number;
  intervalSeconds: number;
  windowSeconds: number;
  /** Whether this replica computes them (the leader) or serves the leader's from status. */
  leading: () => boolean;
}

/** What the endpoint is given (the dashboard's dependencies, the read guard, the clock). */
export interface KeepFamilyContext {
  deps: { store: PolicyRepository; overrides?: OverrideSource; dashboard?: DashboardSource; liveThresholds?: LiveThresholdView };
  read: RequestHandler;
  now: () => number;
}

/** One model's (or, with model null, the route's) live thresholds. */
interface LiveRow {
  model: string | null;
  durationMs: number | null;
  ttftMs: number | null;
}

type Keep = { slowerThanMs?: number; routes?: { routeName: string; slowerThanMs: number }[]; live?: KeepLiveThreshold[]; errors?: boolean; budget?: { tracesPerSecond: number } };

/** Where a route's live entries come from, as the page says it. */
function liveSourceOf(view: LiveThresholdView | undefined, handWritten: boolean): string | null {
  if (handWritten) return "the policy's own spans.keep.live";
  if (view === undefined || !view.enabled) return null;
  return view.leading() ? "computed by this replica (the leader)" : "computed by the leader (read from the policy's status)";
}

/** The tail-keep thresholds in force for `route` in the config the route's filters are served (null: no policy targets the namespace). */
function thresholdsOf(deps: KeepFamilyContext["deps"], namespace: string, route: string): object | null {
  const policy = policyFor(deps.store, namespace);
  if (!policy) return null;
  const own = (policy.pluginConfig.spans as { keep?: Keep } | undefined)?.keep;
  const handWritten = own?.live !== undefined;
  // The config as served (pull and WasmPlugin alike): the live entries are the control plane's own state.
  const served = (effectiveConfig(policy, deps.overrides?.(policy.name)).spans as { keep?: Keep } | undefined)?.keep;
  const view = deps.liveThresholds;
  const rule = (served?.routes ?? []).find((r) => r.routeName === route);
  const live: LiveRow[] = (served?.live ?? [])
    .filter((t) => t.route === route)
    .map((t) => ({ model: t.model ?? null, durationMs: t.durationMs ?? null, ttftMs: t.ttftMs ?? null }))
    .sort((a, b) => (a.model ?? "").localeCompare(b.model ?? ""));
  const computed = served !== undefined && !handWritten && view !== undefined && view.enabled;
  return {
    policy: policy.name,
    tailKeep: served !== undefined,
    errors: served?.errors === true,
    budgetTracesPerSecond: served?.budget?.tracesPerSecond ?? null,
    live,
    liveFrom: served === undefined ? null : liveSourceOf(view, handWritten),
    // What a model without a live entry (and no route-wide one) is kept by.
    staticMs: rule?.slowerThanMs ?? served?.slowerThanMs ?? null,
    staticFrom: rule !== undefined ? "route rule" : served?.slowerThanMs !== undefined ? "slowerThanMs" : null,
    // The bounds every computed value is clamped to (nextLiveThresholds), and how it is computed.
    settings: computed ? { quantile: view.quantile, margin: view.margin, floorMs: view.floorMs, ceilingMs: view.ceilingMs, intervalSeconds: view.intervalSeconds, windowSeconds: view.windowSeconds } : null,
  };
}

/** GET /v1/dashboard/keep. */
export function keepRoutes(router: Router, { deps, read, now }: KeepFamilyContext): void {
  router.get("/v1/dashboard/keep", read, (req: Request, res: Response, next: NextFunction) => {
    const rangeSeconds = rangeOf(req, next);
    if (rangeSeconds === undefined) return;
    const picked = routeOf(req, deps.dashboard, next);
    if (picked === undefined) return;
    const { key, intervals } = picked;
    const grid = resolution(rangeSeconds * 1000, scrapeIntervalOf(intervals));
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      pipeline: deps.dashboard ? "on" : "off",
      namespace: key?.namespace ?? null,
      route: key?.route ?? null,
      rangeSeconds,
      stepSeconds: grid.stepMs / 1000,
      windowSeconds: grid.windowMs / 1000,
      reasons: [...KEEP_REASONS],
      series: [...KEEP_COLUMNS],
      thresholds: key ? thresholdsOf(deps, key.namespace, key.route) : null,
      columns: key ? keepColumns(intervals, { nowMs: now(), rangeMs: rangeSeconds * 1000, stepMs: grid.stepMs, windowMs: grid.windowMs }) : { t: [] },
    });
  });
}
