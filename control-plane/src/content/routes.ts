// GET /v1/filters/{namespace}.{name}/content-key: the pseudonym key for the filters of one
// namespace, served only on the filter-facing listener (the contract in docs/security.md):
// 200 {"version","key"} with ETag "<version>" and Cache-Control: no-store; 304 when `?version=`
// or If-None-Match names the current version; 403 when the caller may not act for that namespace;
// 404 when no key is configured or no policy in that namespace turns pseudonyms on.
import { Router, type Request } from "express";
import { ApiError } from "../api/errors.js";
import { parseEntityTags } from "../api/conditional.js";
import { pseudonymsOn } from "../policy/pseudonyms.js";
import type { PolicyRepository } from "../policy/repository.js";
import { parseWorkload } from "../policy/resolve.js";
import type { ContentKeyRing } from "./keys.js";

/** Namespaces where some policy turns pseudonyms on, recomputed after each change of the store. */
class PseudonymNamespaces {
  private namespaces: Set<string> | undefined;

  constructor(private readonly store: PolicyRepository) {
    store.onChange(() => (this.namespaces = undefined));
  }

  has(namespace: string): boolean {
    if (this.namespaces === undefined) {
      const found = new Set<string>();
      for (const record of this.store.list()) if (pseudonymsOn(record.policy.pluginConfig)) found.add(record.policy.target.namespace);
      this.namespaces = found;
    }
    return this.namespaces.has(namespace);
  }
}

function ifNoneMatchNames(req: Request, version: string): boolean {
  const header = req.get("if-none-match");
  if (header === undefined) return false;
  const tags = parseEntityTags(header);
  // RFC 9110 §13.1.2: If-None-Match compares weakly.
  return tags === "*" || (tags !== undefined && tags.some((t) => t.opaque === version));
}

/** The content-key router (mount on the filter-facing app, after its authentication). */
export function contentKeyRoutes(deps: { keys: ContentKeyRing; store: PolicyRepository }): Router {
  const router = Router();
  const pseudonyms = new PseudonymNamespaces(deps.store);
  router.get("/v1/filters/:workload/content-key", (req, res) => {
    const workload = parseWorkload(req.params.workload as string);
    if (workload === undefined) throw new ApiError(400, "invalid workload", [{ field: "workload", reason: "must be <namespace>.<name>" }]);
    const query = req.query as Record<string, unknown>;
    for (const key in query) {
      if (key !== "version") throw new ApiError(400, "invalid query", [{ field: key, reason: "unknown query parameter" }]);
      if (typeof query[key] !== "string") throw new ApiError(400, "invalid query", [{ field: key, reason: "must be given once" }]);
    }
    const caller = req.filterCaller;
    if (caller === undefined || (caller.namespace !== undefined && caller.namespace !== workload.namespace)) {
      throw new ApiError(403, "forbidden", [{ field: "workload", reason: `the caller (${caller?.source ?? "unauthenticated"}) may not read the content key of namespace ${workload.namespace}` }]);
    }
    const key = deps.keys.current();
    if (key === undefined) throw new ApiError(404, "no content key", [{ field: "content.keysDir", reason: deps.keys.configured ? "no valid key is in force (see the control plane's log)" : "no key directory is configured: filters use typed placeholders" }]);
    if (!pseudonyms.has(workload.namespace)) throw new ApiError(404, "no content key", [{ field: "workload", reason: `no policy in namespace ${workload.namespace} turns pseudonyms on` }]);
    res.set("etag", `"${key.version}"`).set("cache-control", "no-store");
    if (query.version === key.version || ifNoneMatchNames(req, key.version)) {
      res.status(304).end();
      return;
    }
    res.set("content-type", "application/json; charset=utf-8").send(`{"version":${JSON.stringify(key.version)},"key":"${key.keyHex}"}`);
  });
  return router;
}
