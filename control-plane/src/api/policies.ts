// /v1/policies: list, get, create, replace, merge-patch, delete, history, rollback, and the
// validate-only endpoint. Versions are strong ETags; If-Match / If-None-Match make writes
// conditional (412), a `version` in a PUT body (what GET returned) makes it conditional the way
// Kubernetes' metadata.resourceVersion does (409 when stale). Every decision about what may be
// stored belongs to the repository; this file maps HTTP to it and its typed results back.
import { Router, type NextFunction, type Request, type Response } from "express";
import type { FieldError, PolicyRecord } from "../policy/model.js";
import type { PolicyRepository, WriteResult } from "../policy/repository.js";
import { refusePreconditions, writePreconditions } from "./conditional.js";
import { ApiError } from "./errors.js";
import { jsonBody } from "./json-body.js";

/** What the policy routes need. */
export interface PolicyRoutesDeps {
  store: PolicyRepository;
  bodyLimitBytes: number;
  read: (req: Request, res: Response, next: NextFunction) => void;
  write: (req: Request, res: Response, next: NextFunction) => void;
}

/** The fields of a record as GET returns it, besides `policy`; a PUT may send them back. */
const envelopeFields = new Set(["version", "updatedAt", "updatedBy", "policy"]);

/** A write body: a bare policy, or the record GET returned (`{version, updatedAt, updatedBy, policy}`). */
interface WriteDocument {
  policy: unknown;
  /** The `version` the body carries (record form only). */
  version?: string;
  /** "policy." when the record form was sent, so field errors name what the client sent. */
  prefix: string;
}

/**
 * GET returns the record, PUT accepts it back (the Kubernetes way: the object you read is the
 * object you write, server-set fields included). `updatedAt`/`updatedBy` are set by the server
 * and ignored; `version` is a precondition. A bare policy is accepted too.
 */
export function writeDocument(body: unknown): WriteDocument {
  if (typeof body !== "object" || body === null || Array.isArray(body) || !Object.hasOwn(body, "policy")) return { policy: body, prefix: "" };
  const record = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(record)) if (!envelopeFields.has(key)) errors.push({ field: key, reason: "unknown field" });
  for (const key of ["version", "updatedAt", "updatedBy"]) {
    if (record[key] !== undefined && typeof record[key] !== "string") errors.push({ field: key, reason: "must be a string" });
  }
  if (errors.length > 0) throw new ApiError(400, "invalid policy", errors);
  const out: WriteDocument = { policy: record.policy, prefix: "policy." };
  if (typeof record.version === "string") out.version = record.version;
  return out;
}

function etag(version: string): string {
  return `"${version}"`;
}

function view(record: PolicyRecord): object {
  return { version: record.version, updatedAt: record.updatedAt, updatedBy: record.updatedBy, policy: record.policy };
}

function nameParam(req: Request): string {
  return req.params.name as string;
}

function prefixed(errors: FieldError[], prefix: string): FieldError[] {
  return prefix === "" ? errors : errors.map((e) => ({ field: e.field === "(body)" ? prefix.slice(0, -1) : `${prefix}${e.field}`, reason: e.reason }));
}

/** The /v1 policy router. */
export function policyRoutes(deps: PolicyRoutesDeps): Router {
  const router = Router();
  const json = jsonBody(deps.bodyLimitBytes, ["application/json"]);
  const patchJson = jsonBody(deps.bodyLimitBytes, ["application/merge-patch+json", "application/json"]);
  const store = deps.store;

  // Audit lines come from the store, in the same record as the change, so every change is audited once.
  const finish = (res: Response, name: string, result: WriteResult, options: { created?: boolean; prefix?: string } = {}): void => {
    if (!result.ok) {
      switch (result.kind) {
        case "invalid":
          throw new ApiError(400, "invalid policy", prefixed(result.errors, options.prefix ?? ""));
        case "not-found":
          throw new ApiError(404, "policy not found", [{ field: "name", reason: `no policy named ${name}` }]);
        case "exists":
          throw new ApiError(409, "policy exists", [{ field: "name", reason: `a policy named ${name} exists; use PUT to replace it` }]);
        case "conflict":
          throw new ApiError(409, "conflict", [{ field: "version", reason: result.reason }]);
        case "precondition-failed":
          throw new ApiError(412, "precondition failed", [
            { field: result.header, reason: result.header === "if-match" ? "the policy changed since that version; get it again and retry" : "the policy exists or is at a listed version" },
          ]);
        case "version-not-found":
          throw new ApiError(404, "version not found", [{ field: "version", reason: `policy ${name} has no such version in its history` }]);
        case "unavailable":
          throw new ApiError(503, "store unavailable", [{ field: "(store)", reason: "the policy store cannot write now; nothing changed, retry later" }], { "retry-after": "5" });
      }
    }
    if (result.record === null) {
      res.status(204).end();
      return;
    }
    const created = options.created === true && result.changed && result.previous === null;
    res.status(created ? 201 : 200).set("etag", etag(result.record.version));
    if (created) res.location(`/v1/policies/${encodeURIComponent(name)}`);
    res.json(view(result.record));
  };

  router.get("/v1/policies", deps.read, (_req, res) => {
    res.json({ items: store.list().map(view) });
  });

  router.post("/v1/policies", deps.write, (req, _res, next) => {
    refusePreconditions(req, "POST always creates; for a conditional write use PUT /v1/policies/{name} (If-None-Match: * creates only when absent)");
    next();
  }, json, async (req, res) => {
    const document = writeDocument(req.body);
    // As kubernetes/apiserver @24a394e pkg/storage/errors.go ErrResourceVersionSetOnCreate.
    if (document.version !== undefined) throw new ApiError(400, "invalid policy", [{ field: "version", reason: "must not be set on create" }]);
    const result = await store.create(document.policy, { by: req.principal as string });
    const named = document.policy as { name?: unknown } | null;
    const name = typeof named === "object" && named !== null && typeof named.name === "string" ? named.name : "";
    finish(res, name, result, { created: true, prefix: document.prefix });
  });

  router.post("/v1/validate", deps.write, json, async (req, res) => {
    const document = writeDocument(req.body);
    const admission = await store.validate(document.policy);
    if (!admission.ok) throw new ApiError(400, "invalid policy", prefixed(admission.errors, document.prefix));
    res.json({ valid: true, policy: admission.policy });
  });

  router.get("/v1/policies/:name", deps.read, (req, res) => {
    const record = store.get(nameParam(req));
    if (record === undefined) throw new ApiError(404, "policy not found", [{ field: "name", reason: `no policy named ${nameParam(req)}` }]);
    // 304 for a current If-None-Match comes from installConditionalGet.
    res.set("etag", etag(record.version)).json(view(record));
  });

  router.put("/v1/policies/:name", deps.write, json, async (req, res) => {
    const name = nameParam(req);
    const conditions = writePreconditions(req);
    const document = writeDocument(req.body);
    const options = { by: req.principal as string, ...conditions, ...(document.version === undefined ? {} : { expectVersion: document.version }) };
    finish(res, name, await store.put(name, document.policy, options), { created: true, prefix: document.prefix });
  });

  router.patch("/v1/policies/:name", deps.write, patchJson, async (req, res) => {
    const name = nameParam(req);
    const conditions = writePreconditions(req);
    if (typeof req.body !== "object" || req.body === null || Array.isArray(req.body)) {
      throw new ApiError(400, "invalid patch", [{ field: "(body)", reason: "a merge patch must be a JSON object" }]);
    }
    finish(res, name, await store.patch(name, req.body, { by: req.principal as string, ...conditions }));
  });

  router.delete("/v1/policies/:name", deps.write, async (req, res) => {
    const name = nameParam(req);
    finish(res, name, await store.delete(name, { by: req.principal as string, ...writePreconditions(req) }));
  });

  router.get("/v1/policies/:name/history", deps.read, async (req, res) => {
    const history = await store.history(nameParam(req));
    if (history === undefined) throw new ApiError(404, "policy not found", [{ field: "name", reason: `no policy named ${nameParam(req)} ever existed` }]);
    res.json({ items: history });
  });

  router.post("/v1/policies/:name/rollback", deps.write, json, async (req, res) => {
    const conditions = writePreconditions(req);
    const body = req.body as { version?: unknown };
    const extra = typeof body === "object" && body !== null ? Object.keys(body).filter((k) => k !== "version") : [];
    if (typeof body !== "object" || body === null || Array.isArray(body) || typeof body.version !== "string" || extra.length > 0) {
      const details = extra.length > 0 ? extra.map((field) => ({ field, reason: "unknown field" })) : [{ field: "version", reason: "required string" }];
      throw new ApiError(400, "invalid rollback", details);
    }
    const name = nameParam(req);
    finish(res, name, await store.rollback(name, body.version, { by: req.principal as string, ...conditions }));
  });

  return router;
}
