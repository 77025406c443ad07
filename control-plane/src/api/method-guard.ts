// Methods per path, from the OpenAPI document (the one list of what the API serves): a request
// for a known path with a method it does not serve gets 405 with `Allow` (RFC 9110 §15.5.6: the
// origin server MUST send Allow with a 405), OPTIONS gets 204 with `Allow` (§9.3.7), and HEAD is
// allowed wherever GET is (§9.3.2). Paths match the way express matches them: case-insensitive,
// an optional trailing slash. The Kubernetes API server answers 405 the same way (kubernetes/apiserver
// @24a394e pkg/endpoints/installer.go: go-restful reports MethodNotAllowed for a known path).
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "./errors.js";

const httpMethods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** One documented path and the methods it answers. */
export interface PathMethods {
  template: string;
  pattern: RegExp;
  allow: string[];
}

/** Matchers for every path of `paths` (an OpenAPI paths object). */
export function pathMethods(paths: Record<string, object>): PathMethods[] {
  return Object.entries(paths).map(([template, item]) => {
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith("{") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("");
    const methods = Object.keys(item).filter((k) => httpMethods.includes(k)).map((m) => m.toUpperCase());
    if (methods.includes("GET") && !methods.includes("HEAD")) methods.push("HEAD");
    if (!methods.includes("OPTIONS")) methods.push("OPTIONS");
    return { template, pattern: new RegExp(`^${source}/?$`, "i"), allow: methods };
  });
}

/** The documented path template `path` falls under, if any. */
export function matchPath(table: readonly PathMethods[], path: string): PathMethods | undefined {
  return table.find((p) => p.pattern.test(path));
}

/** Middleware in front of every route: OPTIONS and 405 for known paths; unknown paths pass on (to 404). */
export function methodGuard(table: readonly PathMethods[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const known = matchPath(table, req.path);
    if (known === undefined) {
      next();
      return;
    }
    const allow = known.allow.join(", ");
    if (req.method === "OPTIONS") {
      res.status(204).set("allow", allow).end();
      return;
    }
    if (!known.allow.includes(req.method)) {
      next(new ApiError(405, "method not allowed", [{ field: "method", reason: `${req.method} is not served for ${known.template}; allowed: ${allow}` }], { allow }));
      return;
    }
    next();
  };
}
