// The filter-facing listener's application (no listen): what sidecars call, and nothing else.
// The policy pull (`/v1/filters/{namespace}.{name}/config`), the content key
// (`/v1/filters/{namespace}.{name}/content-key`, only here) and the OTLP span receiver
// (`POST /v1/traces`, only here). Every request is authenticated first (identity.ts); the policy
// API, the dashboard and /metrics are not served on this port.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import type { TokenEntry } from "../api/auth.js";
import { ApiError, errorHandler, notFoundHandler } from "../api/errors.js";
import { filterRoutes } from "../api/filters.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import type { ContentKeyRing } from "../content/keys.js";
import { contentKeyRoutes } from "../content/routes.js";
import type { OverrideSource } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import { PullIndex } from "../policy/resolve.js";
import { traceReceiver, type TraceReceiverDeps } from "../traces/routes.js";
import type { FilterAuth } from "./config.js";
import { filterCaller, filterCallerAuth } from "./identity.js";

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

/**
 * Builds the filter-facing listener's handler: POST /v1/traces goes straight to the receiver
 * (authenticated the same way, without express's router: ingest is the hot path), everything else
 * through the express app.
 */
export function createFilterApp(deps: FilterAppDeps): RequestListener {
  const app = expressApp(deps);
  if (deps.traces === undefined) return app;
  const receive = traceReceiver({ ...deps.traces, metrics: deps.metrics });
  const options = { trustDomain: deps.trustDomain, tokens: deps.tokens };
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "";
    if (req.method !== "POST" || (url !== "/v1/traces" && !url.startsWith("/v1/traces?"))) {
      app(req, res);
      return;
    }
    res.once("finish", () => deps.metrics.filterRequests.inc({ method: "POST", route: "/v1/traces", code: String(res.statusCode) }));
    const caller = filterCaller(deps.auth, options, req.headers);
    if (caller instanceof ApiError) {
      res.statusCode = caller.status;
      for (const [name, value] of Object.entries(caller.headers)) res.setHeader(name, value);
      res.setHeader("content-type", "application/json; charset=utf-8");
      res.setHeader("connection", "close");
      res.end(JSON.stringify({ error: caller.error, details: caller.details }));
      return;
    }
    receive(req, res, caller.source).catch((error: unknown) => {
      deps.log({ level: "error", msg: "span receiver failed", error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      if (!res.headersSent) {
        res.statusCode = 500;
        res.end();
      } else res.destroy();
    });
  };
}

function expressApp(deps: FilterAppDeps): express.Express {
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
  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}
