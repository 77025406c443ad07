// The "Errors by model" table's endpoint: GET /v1/dashboard/errors, per route and model over the
// page's range, the LLM calls, failed calls, failed share and failures per second by error_type
// (errors-window.ts), from the metrics pipeline's joined scrapes, worst first.
import type { NextFunction, Request, RequestHandler, Response, Router } from "express";
import { ApiError } from "../api/errors.js";
import { modelErrors, type ModelErrorFigures } from "./errors-window.js";
import { queryString, rangeOf } from "./query.js";
import type { DashboardSource } from "./series.js";

/** Rows answered at most (worst first); the rest are counted in `truncated`. maxRoutes x maxModelsPerRoute could be 2,048. */
export const MAX_ERROR_ROWS = 100;

/** One route and model's row. */
export interface ErrorRow extends ModelErrorFigures {
  namespace: string;
  route: string;
}

/** What the endpoint is given. */
export interface ErrorsContext {
  deps: { dashboard?: DashboardSource };
  read: RequestHandler;
  now: () => number;
}

/** GET /v1/dashboard/errors. */
export function errorsRoutes(router: Router, { deps, read, now }: ErrorsContext): void {
  router.get("/v1/dashboard/errors", read, (req: Request, res: Response, next: NextFunction) => {
    const rangeSeconds = rangeOf(req, next);
    if (rangeSeconds === undefined) return;
    const askedRoute = queryString(req, "route");
    const askedNamespace = queryString(req, "namespace");
    const routes = deps.dashboard?.routes() ?? [];
    const picked = routes.filter((r) => (askedRoute === undefined || r.route === askedRoute) && (askedNamespace === undefined || r.namespace === askedNamespace));
    if (askedRoute !== undefined && picked.length === 0) {
      const known = routes.map((r) => `${r.namespace}/${r.route}`).join(", ") || "none yet";
      next(new ApiError(404, "no data for this route", [{ field: "route", reason: `no points for ${JSON.stringify(askedRoute)}; routes with data: ${known}` }]));
      return;
    }
    const q = { nowMs: now(), rangeMs: rangeSeconds * 1000 };
    const rows: ErrorRow[] = picked.flatMap((key) => modelErrors(deps.dashboard!.intervals(key), q).map((m) => ({ namespace: key.namespace, route: key.route, ...m })));
    // Worst first; a stable order among equals (routes come sorted, models by name).
    rows.sort((a, b) => b.failuresPerSecond - a.failuresPerSecond || (b.failedShare ?? 0) - (a.failedShare ?? 0));
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      pipeline: deps.dashboard ? "on" : "off",
      namespace: askedNamespace ?? null,
      route: askedRoute ?? null,
      rangeSeconds,
      rows: rows.slice(0, MAX_ERROR_ROWS),
      truncated: Math.max(0, rows.length - MAX_ERROR_ROWS),
    });
  });
}
