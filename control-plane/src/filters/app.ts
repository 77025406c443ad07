// The filter-facing listener's application (no listen): what sidecars call, and nothing else.
// The policy pull (`/v1/filters/{namespace}.{name}/config`), the content key
// (`/v1/filters/{namespace}.{name}/content-key`, only here) and the OTLP span receiver
// (`POST /v1/traces`, only here). Every request is authenticated first (identity.ts); the policy
// API, the dashboard and /metrics are not served on this port.
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { TokenEntry } from "../api/auth.js";
import { errorHandler, notFoundHandler } from "../api/errors.js";
import { filterRoutes } from "../api/filters.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import type { ContentKeyRing } from "../content/keys.js";
import { contentKeyRoutes } from "../content/routes.js";
import type { OverrideSource } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import { PullIndex } from "../policy/resolve.js";
import { traceReceiverRoutes, type TraceReceiverDeps } from "../traces/routes.js";
import type { FilterAuth } from "./config.js";
import { filterCallerAuth } from "./identity.js";

/** What the filter-facing app is built from. */
export interface FilterAppDeps {
  auth: FilterAuth;
  trustDomain: string;
  /** Per-namespace tokens (auth: token), the id being the namespace. */
  tokens: readonly TokenEntry[];
  store: PolicyRepository;
  overrides: OverrideSource;
  metrics: ControlPlaneMetrics;
  keys: ContentKeyRing;
  /** The span receiver when traces are enabled. */
  traces?: Omit<TraceReceiverDeps, "metrics">;
  log: (record: object) => void;
}

const authenticated = (_req: Request, _res: Response, next: NextFunction): void => next();

/** Builds the filter-facing express app. */
export function createFilterApp(deps: FilterAppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.on("finish", () => {
      const route = req.route?.path !== undefined ? String(req.route.path) : "unmatched";
      deps.metrics.filterRequests.inc({ method: req.method, route, code: String(res.statusCode) });
    });
    next();
  });
  app.use(filterCallerAuth(deps.auth, { trustDomain: deps.trustDomain, tokens: deps.tokens }));
  app.use(filterRoutes({ index: new PullIndex(deps.store), overrides: deps.overrides, metrics: deps.metrics, read: authenticated }));
  app.use(contentKeyRoutes({ keys: deps.keys, store: deps.store }));
  if (deps.traces !== undefined) app.use(traceReceiverRoutes({ ...deps.traces, metrics: deps.metrics }));
  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}
