// The web dashboard: a static page (HTML, JS, CSS, and uPlot served from node_modules) and the JSON
// series it draws. Data source: the metrics pipeline's joined batches collected in memory by
// DashboardSeries (series.ts), not a Prometheus query API, so the page works wherever the pipeline
// runs, Prometheus or not. The policy editor on the page talks to the ordinary /v1/policies API.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { readAccess, type TokenEntry } from "../api/auth.js";
import { ApiError } from "../api/errors.js";
import type { HistoryEntry, Policy, PolicyRecord } from "../policy/model.js";
import type { PolicyRepository } from "../policy/repository.js";
import { QUANTILES, type DashboardPoint, type DashboardSource } from "./series.js";

/** What the dashboard routes need (a subset of the app's deps). */
export interface DashboardDeps {
  store: PolicyRepository;
  tokens: readonly TokenEntry[];
  reads: "public" | "token";
  /** Absent: the page still serves the policy editor; the charts stay empty. */
  dashboard?: DashboardSource;
}

interface Asset {
  body: Buffer;
  type: string;
}

const staticDir = fileURLToPath(new URL("./static/", import.meta.url));
const uplotDir = dirname(createRequire(import.meta.url).resolve("uplot"));

function loadAssets(): Map<string, Asset> {
  const files: [string, string, string][] = [
    ["/dashboard", join(staticDir, "index.html"), "text/html; charset=utf-8"],
    ["/dashboard/app.js", join(staticDir, "app.js"), "text/javascript; charset=utf-8"],
    ["/dashboard/style.css", join(staticDir, "style.css"), "text/css; charset=utf-8"],
    ["/dashboard/vendor/uPlot.iife.min.js", join(uplotDir, "uPlot.iife.min.js"), "text/javascript; charset=utf-8"],
    ["/dashboard/vendor/uPlot.min.css", join(uplotDir, "uPlot.min.css"), "text/css; charset=utf-8"],
  ];
  return new Map(files.map(([path, file, type]) => [path, { body: readFileSync(file), type }]));
}

/** The sampling rate a policy gives `route`: the first rule naming only that route, else the default rate. */
export function configuredRate(policy: Policy, route: string): number {
  const sampling = policy.pluginConfig.sampling ?? {};
  // Rules with pathPrefix or host cannot be evaluated per route name; they are skipped.
  const rule = (sampling.routes ?? []).find((r) => r.routeName === route && r.pathPrefix === undefined && r.host === undefined);
  return rule?.rate ?? sampling.defaultRate ?? 0.01;
}

/**
 * Sampled traces per second the policy in force at that time aims at: its adaptive target when it
 * has one, else its configured rate times the observed request rate. The policy is the first one
 * (by name) targeting the point's namespace; null when none does.
 */
function targetAt(policyOf: (namespace: string) => { record: PolicyRecord; history: readonly HistoryEntry[] } | undefined, point: DashboardPoint, route: string): number | null {
  const found = policyOf(point.namespace);
  if (!found) return null;
  let policy = found.record.policy;
  for (const entry of found.history) if (entry.policy !== undefined && Date.parse(entry.at) <= point.timestampMs) policy = entry.policy;
  if (policy.adaptive) return policy.adaptive.targetTracesPerSecond;
  return Math.round(configuredRate(policy, route) * point.requestsPerSecond * 1000) / 1000;
}

/** The first policy (by name) targeting each namespace, with its history (read once per request). */
async function policiesByNamespace(store: PolicyRepository, namespaces: Iterable<string>): Promise<Map<string, { record: PolicyRecord; history: readonly HistoryEntry[] }>> {
  const out = new Map<string, { record: PolicyRecord; history: readonly HistoryEntry[] }>();
  const wanted = new Set(namespaces);
  for (const record of store.list()) {
    const namespace = record.policy.target.namespace;
    if (!wanted.has(namespace) || out.has(namespace)) continue;
    out.set(namespace, { record, history: (await store.history(record.policy.name)) ?? [] });
  }
  return out;
}

const QUANTILE_NAMES = QUANTILES.map((q) => `P${Math.round(q * 100)}`);

/** The dashboard router: GET /dashboard (+ assets) and GET /v1/dashboard/series. */
export function dashboardRoutes(deps: DashboardDeps): Router {
  const router = express.Router();
  const assets = loadAssets();
  const read = readAccess(deps.tokens, deps.reads);

  // Static files, served like express.static (a middleware, not API routes, so not in /openapi.json).
  router.use((req: Request, res: Response, next: NextFunction) => {
    const asset = req.method === "GET" || req.method === "HEAD" ? assets.get(req.path.replace(/(.)\/$/, "$1")) : undefined;
    if (!asset) {
      next();
      return;
    }
    res.set("content-type", asset.type).set("cache-control", "no-cache").send(asset.body);
  });

  router.get("/v1/dashboard/series", read, async (req: Request, res: Response, next: NextFunction) => {
    const routes = deps.dashboard?.routes() ?? [];
    const asked = typeof req.query.route === "string" && req.query.route !== "" ? req.query.route : undefined;
    if (asked !== undefined && !routes.includes(asked)) {
      next(new ApiError(404, "no data for this route", [{ field: "route", reason: `no points for ${JSON.stringify(asked)}; routes with data: ${routes.join(", ") || "none yet"}` }]));
      return;
    }
    const route = asked ?? routes[0] ?? null;
    const points = route === null ? [] : (deps.dashboard?.points(route) ?? []);
    const columns: Record<string, (number | null)[]> = { t: points.map((p) => p.timestampMs / 1000) };
    QUANTILE_NAMES.forEach((name, i) => {
      columns[`ttft${name}`] = points.map((p) => p.ttftMs[i] ?? null);
      columns[`decode${name}`] = points.map((p) => p.decodeMs[i] ?? null);
      columns[`total${name}`] = points.map((p) => p.totalMs[i] ?? null);
    });
    columns.outputTokensPerSecond = points.map((p) => p.outputTokensPerSecond);
    columns.requestsPerSecond = points.map((p) => p.requestsPerSecond);
    columns.gpuUtilizationPercent = points.map((p) => p.gpuUtilizationPercent);
    columns.gpuPowerWatts = points.map((p) => p.gpuPowerWatts);
    columns.sampledPerSecond = points.map((p) => p.sampledPerSecond);
    const byNamespace = await policiesByNamespace(deps.store, points.map((p) => p.namespace));
    columns.targetSampledPerSecond = route === null ? [] : points.map((p) => targetAt((ns) => byNamespace.get(ns), p, route));
    const last = points[points.length - 1];
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      routes,
      route,
      quantiles: [...QUANTILES],
      pod: last ? `${last.namespace}/${last.pod}` : null,
      columns,
    });
  });
  return router;
}
