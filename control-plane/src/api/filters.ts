// The pull contract the filter's `policySource` implements:
//   GET /v1/filters/{namespace}.{name}/config?version=<last>&labels=k=v,k2=v2
// -> 200 {"version","policy","config"} with ETag "<version>", 304 when `version` (or
// If-None-Match) is current, 404 when no policy targets the workload.
// The cost of a pull does not depend on how many policies exist: the policy comes from the
// namespace/label index, its config, version and 200 body from a cache keyed by the policy
// record, and a 304 touches no policy data at all.
import { Router, type NextFunction, type Request, type Response } from "express";
import { EffectiveConfigCache, type OverrideSource } from "../policy/effective.js";
import { parseLabels, parseWorkload, type PullIndex } from "../policy/resolve.js";
import { ApiError } from "./errors.js";
import type { ControlPlaneMetrics } from "./metrics.js";

/** What the pull route needs. */
export interface FilterRoutesDeps {
  index: PullIndex;
  overrides: OverrideSource;
  metrics: ControlPlaneMetrics;
  read: (req: Request, res: Response, next: NextFunction) => void;
}

/** The /v1/filters router. */
export function filterRoutes(deps: FilterRoutesDeps): Router {
  const router = Router();
  const configs = new EffectiveConfigCache();
  router.get("/v1/filters/:workload/config", deps.read, (req, res) => {
    const workload = parseWorkload(req.params.workload as string);
    if (workload === undefined) {
      throw new ApiError(400, "invalid workload", [{ field: "workload", reason: "must be <namespace>.<name>" }]);
    }
    const query = req.query as Record<string, unknown>;
    let version: string | undefined;
    let labelText: string | undefined;
    for (const key in query) {
      const value = query[key];
      if (key !== "version" && key !== "labels") throw new ApiError(400, "invalid query", [{ field: key, reason: "unknown query parameter" }]);
      if (typeof value !== "string") throw new ApiError(400, "invalid query", [{ field: key, reason: "must be given once" }]);
      if (key === "version") version = value;
      else labelText = value;
    }
    const labels = labelText === undefined ? new Map([["app", workload.name]]) : parseLabels(labelText);
    if (labels === undefined) throw new ApiError(400, "invalid query", [{ field: "labels", reason: "must be k=v pairs separated by commas" }]);
    const record = deps.index.resolve(workload, labels);
    if (record === undefined) {
      throw new ApiError(404, "no policy", [{ field: "workload", reason: `no policy in namespace ${workload.namespace} selects these labels` }]);
    }
    const served = configs.get(record, deps.overrides(record.policy.name));
    res.set("etag", `"${served.version}"`).set("cache-control", "no-cache");
    // If-None-Match is evaluated by installConditionalGet when the body is sent.
    if (version === served.version) {
      res.status(304).end();
      return;
    }
    res.set("content-type", "application/json; charset=utf-8").send(served.body);
    if (res.statusCode === 200) deps.metrics.pushes.inc({ mode: "pull" });
  });
  return router;
}
