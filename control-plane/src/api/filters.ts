// The pull contract the filter's `policySource` implements:
//   GET /v1/filters/{namespace}.{name}/config?version=<last>&labels=k=v,k2=v2
// -> 200 {"version","policy","config"} with ETag "<version>", 304 when `version` (or
// If-None-Match) is current, 404 when no policy targets the workload.
import { Router, type NextFunction, type Request, type Response } from "express";
import { configVersion, effectiveConfig, type OverrideSource } from "../policy/effective.js";
import { parseLabels, parseWorkload, resolvePolicy } from "../policy/resolve.js";
import type { PolicyStore } from "../policy/store.js";
import { ApiError } from "./errors.js";
import type { ControlPlaneMetrics } from "./metrics.js";
import { parseEtag } from "./policies.js";

/** What the pull route needs. */
export interface FilterRoutesDeps {
  store: PolicyStore;
  overrides: OverrideSource;
  metrics: ControlPlaneMetrics;
  read: (req: Request, res: Response, next: NextFunction) => void;
}

/** The /v1/filters router. */
export function filterRoutes(deps: FilterRoutesDeps): Router {
  const router = Router();
  router.get("/v1/filters/:workload/config", deps.read, (req, res) => {
    const raw = req.params.workload as string;
    const workload = parseWorkload(raw);
    if (workload === undefined) {
      throw new ApiError(400, "invalid workload", [{ field: "workload", reason: "must be <namespace>.<name>" }]);
    }
    const query = req.query as Record<string, unknown>;
    for (const key of Object.keys(query)) {
      if (key !== "version" && key !== "labels") throw new ApiError(400, "invalid query", [{ field: key, reason: "unknown query parameter" }]);
      if (typeof query[key] !== "string") throw new ApiError(400, "invalid query", [{ field: key, reason: "must be given once" }]);
    }
    const labelText = query.labels as string | undefined;
    const labels = labelText === undefined ? { app: workload.name } : parseLabels(labelText);
    if (labels === undefined) throw new ApiError(400, "invalid query", [{ field: "labels", reason: "must be k=v pairs separated by commas" }]);
    const record = resolvePolicy(deps.store.list(), workload, labels);
    if (record === undefined) {
      throw new ApiError(404, "no policy", [{ field: "workload", reason: `no policy in namespace ${workload.namespace} selects these labels` }]);
    }
    const config = effectiveConfig(record.policy, deps.overrides(record.policy.name));
    const version = configVersion(record.policy.name, config);
    const known = (query.version as string | undefined) ?? parseEtag(req.get("if-none-match"));
    res.set("etag", `"${version}"`).set("cache-control", "no-cache");
    if (known === version) {
      res.status(304).end();
      return;
    }
    deps.metrics.pushes.inc({ mode: "pull" });
    res.json({ version, policy: record.policy.name, config });
  });
  return router;
}
