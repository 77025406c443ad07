// What every dashboard endpoint reads from its query string.
import type { NextFunction, Request } from "express";
import { ApiError } from "../api/errors.js";
import type { DashboardSource, RouteInterval, RouteKey } from "./series.js";

/** Time ranges the page offers, in seconds (5 min to 1 h). */
export const RANGES_SECONDS = [300, 900, 1800, 3600] as const;

/** A non-empty query string value, else undefined. */
export function queryString(req: Request, name: string): string | undefined {
  const v = req.query[name];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The `range` query (seconds, default 900), or undefined after passing a 400 to `next`. */
export function rangeOf(req: Request, next: NextFunction): number | undefined {
  const rangeText = queryString(req, "range") ?? "900";
  const rangeSeconds = Number(rangeText);
  if ((RANGES_SECONDS as readonly number[]).includes(rangeSeconds)) return rangeSeconds;
  next(new ApiError(400, "invalid query", [{ field: "range", reason: `must be one of ${RANGES_SECONDS.join(", ")} (seconds), got ${JSON.stringify(rangeText)}` }]));
  return undefined;
}


/**
 * The route the `route` and `namespace` queries pick (the first with data when neither is given),
 * with its intervals and every route with data; undefined after passing a 404 to `next` when a
 * named route has no data.
 */
export function routeOf(req: Request, dashboard: DashboardSource | undefined, next: NextFunction): { routes: RouteKey[]; key: RouteKey | undefined; intervals: readonly RouteInterval[] } | undefined {
  const routes = dashboard?.routes() ?? [];
  const askedRoute = queryString(req, "route");
  const askedNamespace = queryString(req, "namespace");
  const matches = routes.filter((r) => (askedRoute === undefined || r.route === askedRoute) && (askedNamespace === undefined || r.namespace === askedNamespace));
  if (askedRoute !== undefined && matches.length === 0) {
    const known = routes.map((r) => `${r.namespace}/${r.route}`).join(", ") || "none yet";
    next(new ApiError(404, "no data for this route", [{ field: "route", reason: `no points for ${JSON.stringify(askedRoute)}; routes with data: ${known}` }]));
    return undefined;
  }
  const key = matches[0] ?? routes[0];
  return { routes, key, intervals: key ? (dashboard?.intervals(key) ?? []) : [] };
}
