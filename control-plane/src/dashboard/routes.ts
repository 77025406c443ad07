// The web dashboard: a static page (HTML, JS, CSS, and uPlot served from node_modules) and the JSON
// it draws. Data source: the metrics pipeline's joined batches collected in memory by
// DashboardSeries (series.ts), not a Prometheus query API, so the page works wherever the pipeline
// runs, Prometheus or not. The policy editor on the page talks to the ordinary /v1/policies API.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { readAccess, type TokenEntry } from "../api/auth.js";
import { effectiveConfig, type OverrideSource } from "../policy/effective.js";
import type { Policy } from "../policy/model.js";
import type { PolicyRepository } from "../policy/repository.js";
import type { DashboardSource, RouteKey } from "./series.js";
import { LATENCY_PHASES, QUANTILES, resolution, scrapeIntervalOf, windowColumns } from "./window.js";
import { lengthClassFigures } from "./length-classes-window.js";
import { SLO_THRESHOLDS } from "./engine-signals.js";
import { ADAPTER_FIGURES_WINDOW_MS, adapterRowsWithFigures } from "./lora-figures.js";
import { engineCausesRoutes } from "./engine-causes-route.js";
import { gpuRoutes } from "./gpu-route.js";
import { keepRoutes, type LiveThresholdView } from "./keep-route.js";
import { errorsRoutes } from "./errors-route.js";
import { alertsRoutes, type AlertsSource } from "./alerts-route.js";
import { sloRoutes, type SloSource } from "./slo-route.js";
import { policyFor } from "./route-policy.js";
import { queryString, rangeOf, RANGES_SECONDS, routeOf } from "./query.js";

/** What the dashboard routes need (a subset of the app's deps). */
export interface DashboardDeps {
  store: PolicyRepository;
  tokens: readonly TokenEntry[];
  reads: "public" | "token";
  /** Adaptive-sampling overrides: the rates the filters run with. */
  overrides?: OverrideSource;
  /** Absent: the metrics pipeline is off; the page then shows the policies and how to turn it on. */
  dashboard?: DashboardSource;
  /** The span receiver, when on: the page lists recent calls and links them with `linkTemplate`. */
  traces?: { linkTemplate: string };
  /** Milliseconds clock (tests inject one). */
  now?: () => number;
  /** Live tail-keep thresholds: their settings and whether this replica computes them (absent: off). */
  liveThresholds?: LiveThresholdView;
  /** Firing and pending alerts from a Prometheus's rules API; absent: the page says alert state needs one. */
  alerts?: AlertsSource;
  /** The SLO figures per route and model from a Prometheus's query API; absent: the page says the view needs one. */
  slo?: SloSource;
}

/** What the page says when the metrics pipeline is off (`make run`'s default). */
export const PIPELINE_OFF_HINT =
  "The metrics pipeline is off, so there is nothing to chart. Turn it on with TOKENTRACE_PIPELINE_ENABLED=true and give it targets " +
  "(pipeline.scrape.static in the config file, or pipeline.scrape.kubernetes), or run `make demo` for the whole stack with simulated traffic.";

interface Asset {
  body: Buffer;
  type: string;
}


const staticDir = fileURLToPath(new URL("./static/", import.meta.url));
const uplotDir = dirname(createRequire(import.meta.url).resolve("uplot"));

function loadAssets(): Map<string, Asset> {
  const js = "text/javascript; charset=utf-8";
  const files: [string, string, string][] = [
    ["/dashboard", join(staticDir, "index.html"), "text/html; charset=utf-8"],
    ["/dashboard/app.js", join(staticDir, "app.js"), js],
    ["/dashboard/charts.js", join(staticDir, "charts.js"), js],
    ["/dashboard/policies.js", join(staticDir, "policies.js"), js],
    ["/dashboard/traces.js", join(staticDir, "traces.js"), js],
    ["/dashboard/length-classes.js", join(staticDir, "length-classes.js"), js],
    ["/dashboard/waterfall.js", join(staticDir, "waterfall.js"), js],
    ["/dashboard/diff.js", join(staticDir, "diff.js"), js],
    ["/dashboard/gpu.js", join(staticDir, "gpu.js"), js],
    ["/dashboard/keep.js", join(staticDir, "keep.js"), js],
    ["/dashboard/alerts.js", join(staticDir, "alerts.js"), js],
    ["/dashboard/slo.js", join(staticDir, "slo.js"), js],
    ["/dashboard/engine.js", join(staticDir, "engine.js"), js],
    ["/dashboard/style.css", join(staticDir, "style.css"), "text/css; charset=utf-8"],
    ["/dashboard/vendor/uPlot.iife.min.js", join(uplotDir, "uPlot.iife.min.js"), js],
    ["/dashboard/vendor/uPlot.min.css", join(uplotDir, "uPlot.min.css"), "text/css; charset=utf-8"],
  ];
  return new Map(files.map(([path, file, type]) => [path, { body: readFileSync(file), type }]));
}

/** The sampling rate a policy's config gives `route`: the first rule naming only that route, else the default rate. */
export function configuredRate(config: Policy["pluginConfig"], route: string): { rate: number; from: "route rule" | "default rate" } {
  const sampling = config.sampling ?? {};
  // Rules with pathPrefix or host cannot be evaluated per route name; they are skipped.
  const rule = (sampling.routes ?? []).find((r) => r.routeName === route && r.pathPrefix === undefined && r.host === undefined);
  return rule ? { rate: rule.rate, from: "route rule" } : { rate: sampling.defaultRate ?? 0.01, from: "default rate" };
}

/** What the page says about sampling on a route: the rate in force and, with adaptive sampling, its target. */
function samplingOf(deps: DashboardDeps, key: RouteKey): object | null {
  const policy = policyFor(deps.store, key.namespace);
  if (!policy) return null;
  const overrides = deps.overrides?.(policy.name);
  const { rate, from } = configuredRate(effectiveConfig(policy, overrides), key.route);
  return {
    policy: policy.name,
    rate,
    from,
    adjustedByAdaptive: overrides !== undefined,
    adaptiveTargetTracesPerSecond: policy.adaptive?.targetTracesPerSecond ?? null,
    // The sampler aims each route with a rule of its own at the target, and all other routes together.
    adaptiveTargetAppliesTo: policy.adaptive ? (from === "route rule" ? "this route" : "all routes without a rule of their own, together") : null,
  };
}

/** The adaptive target in force at each time (null where the policy had none), from the policy's history. */
async function adaptiveTargets(store: PolicyRepository, namespace: string, times: readonly number[]): Promise<(number | null)[]> {
  const policy = policyFor(store, namespace);
  if (!policy) return times.map(() => null);
  const history = ((await store.history(policy.name)) ?? [])
    .filter((h) => h.policy !== undefined)
    .map((h) => ({ atMs: Date.parse(h.at), target: h.policy!.adaptive?.targetTracesPerSecond ?? null }));
  let i = -1;
  return times.map((tSec) => {
    while (i + 1 < history.length && history[i + 1]!.atMs <= tSec * 1000) i++;
    return i >= 0 ? history[i]!.target : null;
  });
}

/** The signals' ratios to 4 decimals (0.01 %), `t` as is: a full double is 18 characters, a point of the page's JSON per refresh. */
function roundedRatios(columns: Record<string, (number | null)[]>): Record<string, (number | null)[]> {
  return Object.fromEntries(Object.entries(columns).map(([name, values]) => [name, name === "t" ? values : values.map((v) => (v === null ? null : Math.round(v * 10_000) / 10_000))]));
}

/** The dashboard router: GET /dashboard (+ assets), GET /v1/dashboard/series (per route), GET /v1/dashboard/models (engine signals per model), GET /v1/dashboard/gpus (GPU health per pod), GET /v1/dashboard/keep (keep reasons and live thresholds per route), GET /v1/dashboard/errors (failed share and failures by error_type per route and model), GET /v1/dashboard/alerts (firing and pending alerts), GET /v1/dashboard/slo (goodput, budget and burn per route and model) and GET /v1/dashboard/engine-causes (the cause panels per model). */
export function dashboardRoutes(deps: DashboardDeps): Router {
  const router = express.Router();
  const assets = loadAssets();
  const read = readAccess(deps.tokens, deps.reads);
  const now = deps.now ?? Date.now;

  // Static files, served like express.static (a middleware, not API routes, so not in /openapi.json).
  router.use((req: Request, res: Response, next: NextFunction) => {
    const asset = req.method === "GET" || req.method === "HEAD" ? assets.get(req.path.replace(/(.)\/$/, "$1")) : undefined;
    if (!asset) {
      next();
      return;
    }
    res.set("content-type", asset.type).set("cache-control", "no-cache").send(asset.body);
  });

  router.get("/v1/dashboard/status", read, (_req: Request, res: Response) => {
    res.set("cache-control", "no-store").json({
      pipeline: deps.dashboard ? { enabled: true } : { enabled: false, hint: PIPELINE_OFF_HINT },
      traces: deps.traces ? { enabled: true, linkTemplate: deps.traces.linkTemplate } : { enabled: false, hint: "The span receiver is off: set traces.enabled (TOKENTRACE_TRACES_ENABLED=true) and point the filter's spans.cluster at this control plane (path /v1/traces)." },
      ranges: RANGES_SECONDS,
    });
  });

  router.get("/v1/dashboard/series", read, async (req: Request, res: Response, next: NextFunction) => {
    const model = queryString(req, "model");
    const rangeSeconds = rangeOf(req, next);
    if (rangeSeconds === undefined) return;
    const picked = routeOf(req, deps.dashboard, next);
    if (picked === undefined) return;
    const { routes, key, intervals } = picked;
    const models = [...new Set(intervals.flatMap((i) => [...i.counts.models.keys()]))].sort();
    // Which latency histograms the route's filters export (a filter older than tokentrace_llm_decode_ms has none for decode).
    const histograms = LATENCY_PHASES.filter((phase) => intervals.some((i) => [...i.counts.models.values()].some((m) => m[phase].bounds.length > 0)));
    const scrapeMs = scrapeIntervalOf(intervals);
    const grid = resolution(rangeSeconds * 1000, scrapeMs);
    const shownModel = model !== undefined && models.includes(model) ? model : undefined;
    const nowMs = now();
    const columns = key ? windowColumns(intervals, { nowMs, rangeMs: rangeSeconds * 1000, ...grid, model: shownModel }) : { t: [] };
    // Over the whole range, not per point: a few rows (at most MAX_LENGTH_CLASSES per histogram), not columns.
    const lengthClasses = key ? lengthClassFigures(intervals, { nowMs, rangeMs: rangeSeconds * 1000, model: shownModel }) : null;
    if (key) {
      try {
        columns.adaptiveTargetTracesPerSecond = await adaptiveTargets(deps.store, key.namespace, columns.t as number[]);
      } catch (error) {
        next(error);
        return;
      }
    }
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      pipeline: deps.dashboard ? "on" : "off",
      routes,
      namespace: key?.namespace ?? null,
      route: key?.route ?? null,
      models,
      model: shownModel ?? null,
      pods: [...new Set(intervals.map((i) => i.pod))].sort(),
      rangeSeconds,
      stepSeconds: grid.stepMs / 1000,
      windowSeconds: grid.windowMs / 1000,
      samplingWindowSeconds: grid.samplingWindowMs / 1000,
      scrapeIntervalSeconds: scrapeMs / 1000,
      quantiles: [...QUANTILES],
      histograms,
      sampling: key ? samplingOf(deps, key) : null,
      lengthClasses,
      columns,
    });
  });

  router.get("/v1/dashboard/models", read, (req: Request, res: Response, next: NextFunction) => {
    const namespace = queryString(req, "namespace");
    const rangeSeconds = rangeOf(req, next);
    if (rangeSeconds === undefined) return;
    const engine = deps.dashboard?.engine;
    const lora = deps.dashboard?.lora;
    // A base model whose server reports only its adapters (no other engine signal) still gets a panel.
    const keys = [...(engine?.models(namespace) ?? [])];
    for (const k of lora?.models(namespace) ?? []) if (!keys.some((x) => x.namespace === k.namespace && x.model === k.model)) keys.push(k);
    keys.sort((a, b) => (a.namespace !== b.namespace ? (a.namespace < b.namespace ? -1 : 1) : a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
    const scrapeMs = engine && keys.length > 0 ? engine.scrapeIntervalMs(keys[0]!) : 2000;
    const grid = resolution(rangeSeconds * 1000, scrapeMs);
    const nowMs = now();
    // Per adapter: where it runs now (within the lookback) and its sidecar figures over 5 min, one pass per namespace.
    const adapters = deps.dashboard ? adapterRowsWithFigures(deps.dashboard, keys, nowMs, grid.windowMs) : keys.map(() => []);
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      pipeline: deps.dashboard ? "on" : "off",
      namespace: namespace ?? null,
      rangeSeconds,
      stepSeconds: grid.stepMs / 1000,
      lookbackSeconds: grid.windowMs / 1000,
      adapterWindowSeconds: ADAPTER_FIGURES_WINDOW_MS / 1000,
      thresholds: SLO_THRESHOLDS,
      models: keys.map((k, i) => ({
        namespace: k.namespace,
        model: k.model,
        pods: [...new Set(engine!.points(k).map((p) => p.pod))].sort(),
        columns: roundedRatios(engine!.columns(k, { nowMs, rangeMs: rangeSeconds * 1000, stepMs: grid.stepMs, lookbackMs: grid.windowMs })),
        adapters: adapters[i]!,
      })),
    });
  });
  gpuRoutes(router, { deps, read, now });
  keepRoutes(router, { deps, read, now });
  errorsRoutes(router, { deps, read, now });
  alertsRoutes(router, { alerts: deps.alerts, read });
  sloRoutes(router, { slo: deps.slo, read });
  engineCausesRoutes(router, { deps, read, now });
  return router;
}
