// The express application (no listen): policy API, pull endpoint, OpenAPI, health and metrics.
// Everything it needs comes in through `AppDeps`, so tests build it with their own store,
// clock, tokens and readiness.
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { readAccess, requireScope, requireToken, type TokenEntry } from "./api/auth.js";
import { installConditionalGet } from "./api/conditional.js";
import { errorHandler, notFoundHandler } from "./api/errors.js";
import { filterRoutes } from "./api/filters.js";
import { methodGuard, pathMethods } from "./api/method-guard.js";
import type { ControlPlaneMetrics } from "./api/metrics.js";
import { openApiDocument } from "./api/openapi.js";
import { policyRoutes } from "./api/policies.js";
import { dashboardRoutes } from "./dashboard/routes.js";
import type { LiveThresholdView } from "./dashboard/keep-route.js";
import type { AlertsSource } from "./dashboard/alerts-route.js";
import type { DashboardSource } from "./dashboard/series.js";
import { traceReadRoutes } from "./traces/routes.js";
import type { TraceStore } from "./traces/store.js";
import type { ContentKeyStatus } from "./content/keys.js";
import type { OverrideSource } from "./policy/effective.js";
import type { PolicyRepository } from "./policy/repository.js";
import { PullIndex } from "./policy/resolve.js";

/** One readiness check. */
export interface ReadinessCheck {
  ok: boolean;
  detail: string;
}

/** What the app is built from. */
export interface AppDeps {
  store: PolicyRepository;
  tokens: readonly TokenEntry[];
  reads: "public" | "token";
  bodyLimitBytes: number;
  metrics: ControlPlaneMetrics;
  /** Adaptive-sampling overrides for the pull endpoint. */
  overrides: OverrideSource;
  /** Named readiness checks (e.g. "store", "kubernetes"). */
  readiness: () => Record<string, ReadinessCheck>;
  /** Error log for unexpected failures. */
  log: (record: object) => void;
  /** The dashboard's series (the pipeline's joined batches); absent: the page shows policies only. */
  dashboard?: DashboardSource;
  /** Live tail-keep thresholds as the dashboard shows them; absent: off. */
  liveThresholds?: LiveThresholdView;
  /** The pseudonym keys' state for admins (never a key); absent: reported as not configured. */
  contentKeys?: { status(): ContentKeyStatus };
  /** What the span receiver (on the filter-facing listener) holds; absent: the trace list is off. */
  traces?: { store: TraceStore; linkTemplate: string };
  /** Firing and pending alerts for the dashboard (a Prometheus's rules API); absent: none configured. */
  alerts?: AlertsSource;
}

/** Builds the express app. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  installConditionalGet(app);

  app.use((req: Request, res: Response, next: NextFunction) => {
    res.on("finish", () => {
      // The route pattern, not the path, keeps the label set bounded.
      const route = req.route?.path !== undefined ? String(req.route.path) : "unmatched";
      deps.metrics.apiRequests.inc({ method: req.method, route, code: String(res.statusCode) });
    });
    next();
  });

  const read = readAccess(deps.tokens, deps.reads);
  const write = requireToken(deps.tokens);
  app.use(methodGuard(pathMethods(openApiDocument.paths)));
  app.use(policyRoutes({ store: deps.store, bodyLimitBytes: deps.bodyLimitBytes, read, write }));
  app.use(filterRoutes({ index: new PullIndex(deps.store), overrides: deps.overrides, metrics: deps.metrics, read }));
  app.use(dashboardRoutes(deps));
  if (deps.traces) app.use(traceReadRoutes({ store: deps.traces.store, read }));

  app.get("/v1/content-keys", requireScope(deps.tokens, "admin"), (_req, res) => {
    res.set("cache-control", "no-store").json(deps.contentKeys?.status() ?? { configured: false, current: null, versions: [], problem: null });
  });
  app.get("/openapi.json", (_req, res) => {
    res.json(openApiDocument);
  });
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", (_req, res) => {
    const checks = deps.readiness();
    const ready = Object.values(checks).every((c) => c.ok);
    res.status(ready ? 200 : 503).json({ ready, checks });
  });
  app.get("/metrics", async (_req, res) => {
    deps.metrics.policies.set(deps.store.size);
    deps.metrics.quarantined.set(deps.store.quarantined().length);
    res.set("content-type", deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}
