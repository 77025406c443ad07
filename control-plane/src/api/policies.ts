// /v1/policies: list, get, create, replace, merge-patch, delete, history, rollback, and the
// validate-only endpoint. Versions are ETags; If-Match makes a write conditional (412 if stale).
import express, { Router, type NextFunction, type Request, type Response } from "express";
import type { FieldError, Policy, PolicyRecord } from "../policy/model.js";
import type { PolicyStore, WriteResult } from "../policy/store.js";
import { validatePolicy } from "../policy/validate.js";
import { mergePatch } from "../policy/merge-patch.js";
import { ApiError } from "./errors.js";

/** What the policy routes need. */
export interface PolicyRoutesDeps {
  store: PolicyStore;
  bodyLimitBytes: number;
  read: (req: Request, res: Response, next: NextFunction) => void;
  write: (req: Request, res: Response, next: NextFunction) => void;
  /** Deployment-specific checks after schema validation (e.g. the one namespace Kubernetes mode manages). */
  policyCheck?: (policy: Policy) => FieldError[];
}

/** `"3"` -> `3`; `W/"3"` -> `3`; `*` stays. */
export function parseEtag(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === "*") return "*";
  const match = /^(?:W\/)?"([^"]*)"$/.exec(value);
  return match ? match[1] : value;
}

function etag(version: string): string {
  return `"${version}"`;
}

function view(record: PolicyRecord): object {
  return { version: record.version, updatedAt: record.updatedAt, updatedBy: record.updatedBy, policy: record.policy };
}

function jsonBody(limit: number, types: string[]) {
  const parse = express.json({ limit, strict: true, type: types });
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!req.is(types)) {
      next(new ApiError(415, "unsupported media type", [{ field: "content-type", reason: `must be ${types.join(" or ")}` }]));
      return;
    }
    parse(req, res, next);
  };
}

function validated(body: unknown, extraCheck?: (policy: Policy) => FieldError[]): Policy {
  const result = validatePolicy(body);
  if (!result.ok) throw new ApiError(400, "invalid policy", result.errors);
  const errors = extraCheck?.(result.policy) ?? [];
  if (errors.length > 0) throw new ApiError(400, "invalid policy", errors);
  return result.policy;
}

function nameParam(req: Request): string {
  return req.params.name as string;
}

/** The /v1 policy router. */
export function policyRoutes(deps: PolicyRoutesDeps): Router {
  const router = Router();
  const json = jsonBody(deps.bodyLimitBytes, ["application/json"]);
  const patchJson = jsonBody(deps.bodyLimitBytes, ["application/merge-patch+json", "application/json"]);

  // Audit lines come from the store's change events (see app.ts), so every change is audited once.
  const finish = (res: Response, name: string, result: WriteResult, created = false): void => {
    if (!result.ok) {
      switch (result.kind) {
        case "not-found":
          throw new ApiError(404, "policy not found", [{ field: "name", reason: `no policy named ${name}` }]);
        case "exists":
          throw new ApiError(409, "policy exists", [{ field: "name", reason: `a policy named ${name} exists; use PUT to replace it` }]);
        case "precondition-failed":
          throw new ApiError(412, "precondition failed", [{ field: "if-match", reason: "the policy changed since that version; get it again and retry" }]);
        case "version-not-found":
          throw new ApiError(404, "version not found", [{ field: "version", reason: `policy ${name} has no such version in its history` }]);
      }
    }
    if (result.record === null) {
      res.status(204).end();
      return;
    }
    res.status(created ? 201 : 200).set("etag", etag(result.record.version));
    if (created) res.location(`/v1/policies/${encodeURIComponent(name)}`);
    res.json(view(result.record));
  };

  router.get("/v1/policies", deps.read, (_req, res) => {
    res.json({ items: deps.store.list().map(view) });
  });

  router.post("/v1/policies", deps.write, json, async (req, res) => {
    const policy = validated(req.body, deps.policyCheck);
    finish(res, policy.name, await deps.store.create(policy, { by: req.principal as string }), true);
  });

  router.post("/v1/validate", deps.write, json, (req, res) => {
    const policy = validated(req.body, deps.policyCheck);
    res.json({ valid: true, policy });
  });

  router.get("/v1/policies/:name", deps.read, (req, res) => {
    const record = deps.store.get(nameParam(req));
    if (record === undefined) throw new ApiError(404, "policy not found", [{ field: "name", reason: `no policy named ${nameParam(req)}` }]);
    res.set("etag", etag(record.version)).json(view(record));
  });

  router.put("/v1/policies/:name", deps.write, json, async (req, res) => {
    const policy = validated(req.body, deps.policyCheck);
    const name = nameParam(req);
    if (policy.name !== name) throw new ApiError(400, "invalid policy", [{ field: "name", reason: `must equal the name in the path (${name})` }]);
    const result = await deps.store.put(policy, { by: req.principal as string, ifMatch: parseEtag(req.get("if-match")) });
    const created = result.ok && result.previous === null;
    finish(res, name, result, created);
  });

  router.patch("/v1/policies/:name", deps.write, patchJson, async (req, res) => {
    const name = nameParam(req);
    if (typeof req.body !== "object" || req.body === null || Array.isArray(req.body)) {
      throw new ApiError(400, "invalid patch", [{ field: "(body)", reason: "a merge patch must be a JSON object" }]);
    }
    const result = await deps.store.update(name, { by: req.principal as string, ifMatch: parseEtag(req.get("if-match")) }, (current) => {
      const patched = mergePatch(current, req.body as object);
      const policy = validated(patched, deps.policyCheck);
      if (policy.name !== name) throw new ApiError(400, "invalid patch", [{ field: "name", reason: "the name of a policy cannot change" }]);
      return policy;
    });
    finish(res, name, result);
  });

  router.delete("/v1/policies/:name", deps.write, async (req, res) => {
    const name = nameParam(req);
    finish(res, name, await deps.store.delete(name, { by: req.principal as string, ifMatch: parseEtag(req.get("if-match")) }));
  });

  router.get("/v1/policies/:name/history", deps.read, (req, res) => {
    const history = deps.store.history(nameParam(req));
    if (history === undefined) throw new ApiError(404, "policy not found", [{ field: "name", reason: `no policy named ${nameParam(req)} ever existed` }]);
    res.json({ items: history });
  });

  router.post("/v1/policies/:name/rollback", deps.write, json, async (req, res) => {
    const body = req.body as { version?: unknown };
    const extra = Object.keys(body ?? {}).filter((k) => k !== "version");
    if (typeof body !== "object" || body === null || typeof body.version !== "string" || extra.length > 0) {
      const details = extra.length > 0 ? extra.map((field) => ({ field, reason: "unknown field" })) : [{ field: "version", reason: "required string" }];
      throw new ApiError(400, "invalid rollback", details);
    }
    const name = nameParam(req);
    finish(res, name, await deps.store.rollback(name, body.version, { by: req.principal as string, ifMatch: parseEtag(req.get("if-match")) }));
  });

  return router;
}
