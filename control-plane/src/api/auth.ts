// Bearer tokens for the API: loaded from a file and/or an env value as `<id>:<token>` pairs,
// several allowed. A presented token is compared with every known token in constant time (on
// SHA-256 digests, so lengths do not leak either); the caller is then known by its id only.
//
// What an id may do is its scope, granted apart from the token as kube-apiserver separates
// authentication (a token file names a user) from authorization (RBAC grants the user verbs):
// `api.scopes` maps ids to `read` (policies, pulls, the dashboard, traces and captured content),
// `write` (read, plus policy writes) or `admin` (write, plus key material: what the content keys
// are). An id not listed gets `write`, what every token could do before scopes existed.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "./errors.js";

/** What a token may do; each scope includes the ones before it. */
export type Scope = "read" | "write" | "admin";
const scopeRank: Record<Scope, number> = { read: 1, write: 2, admin: 3 };

/** A known token: its id (logged), the digest of its secret (never logged) and its scope. */
export interface TokenEntry {
  id: string;
  digest: Buffer;
  scope: Scope;
}

/** Tokens shorter than this are refused at start-up. */
export const minimumTokenLength = 16;

function digest(secret: string): Buffer {
  return createHash("sha256").update(secret, "utf8").digest();
}

/** Parses `<id>:<token>` items (lines of a file, or comma-separated); errors name the source and line, never the token. */
export function parseTokens(text: string, source: string, separator: RegExp): { tokens: TokenEntry[]; errors: string[] } {
  const tokens: TokenEntry[] = [];
  const errors: string[] = [];
  text.split(separator).forEach((raw, i) => {
    const item = raw.trim();
    if (item === "" || item.startsWith("#")) return;
    const colon = item.indexOf(":");
    const id = colon > 0 ? item.slice(0, colon) : "";
    const secret = colon > 0 ? item.slice(colon + 1) : "";
    if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(id)) errors.push(`${source} item ${i + 1}: expected <id>:<token> with an id of letters, digits, _ . @ -`);
    else if (secret.length < minimumTokenLength) errors.push(`${source} item ${i + 1} (id ${id}): token shorter than ${minimumTokenLength} characters`);
    else tokens.push({ id, digest: digest(secret), scope: "write" });
  });
  return { tokens, errors };
}

/** Loads tokens from the configured file and env value; messages name the keys under `section`. */
export function loadTokens(tokensFile: string, tokensValue: string, section = "api"): { tokens: TokenEntry[]; errors: string[] } {
  const tokens: TokenEntry[] = [];
  const errors: string[] = [];
  if (tokensFile !== "") {
    let text = "";
    try {
      text = readFileSync(tokensFile, "utf8");
    } catch (error) {
      errors.push(`${section}.tokensFile: cannot read ${tokensFile} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    const parsed = parseTokens(text, `${section}.tokensFile ${tokensFile}`, /\r?\n/);
    tokens.push(...parsed.tokens);
    errors.push(...parsed.errors);
  }
  if (tokensValue !== "") {
    const parsed = parseTokens(tokensValue, `${section}.tokens`, /,/);
    tokens.push(...parsed.tokens);
    errors.push(...parsed.errors);
  }
  const ids = new Set<string>();
  for (const t of tokens) {
    if (ids.has(t.id)) errors.push(`${section} tokens: id ${t.id} is defined twice`);
    ids.add(t.id);
  }
  return { tokens, errors };
}

/** Grants scopes from `id=scope` items (comma-separated); errors name the id, unknown ids and scopes. */
export function applyScopes(tokens: TokenEntry[], text: string, key = "api.scopes"): string[] {
  const errors: string[] = [];
  const ids = new Set(tokens.map((t) => t.id));
  const granted = new Map<string, Scope>();
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const [id, scope, extra] = item.split("=");
    if (id === undefined || scope === undefined || extra !== undefined || !(scope in scopeRank)) {
      errors.push(`${key}: expected <id>=read|write|admin, got ${JSON.stringify(item.slice(0, 80))}`);
      continue;
    }
    if (!ids.has(id)) errors.push(`${key}: no token has the id ${id}`);
    else if (granted.has(id)) errors.push(`${key}: id ${id} is given a scope twice`);
    else granted.set(id, scope as Scope);
  }
  for (const t of tokens) t.scope = granted.get(t.id) ?? t.scope;
  return errors;
}

/** The token presented, or undefined; checks every token so timing does not depend on which matched. */
export function authenticateEntry(tokens: readonly TokenEntry[], header: string | undefined): TokenEntry | undefined {
  // RFC 9110 §11.1: the auth-scheme is case-insensitive and 1*SP separates it from the
  // credentials (kubernetes/apiserver @24a394e pkg/authentication/request/bearertoken/bearertoken.go
  // AuthenticateRequest also lower-cases the scheme; it refuses a second space, RFC 9110 allows it).
  const match = /^bearer +([^\s]+)$/i.exec((header ?? "").trim());
  if (match === null) return undefined;
  const presented = digest(match[1] as string);
  let found: TokenEntry | undefined;
  for (const token of tokens) {
    if (timingSafeEqual(presented, token.digest) && found === undefined) found = token;
  }
  return found;
}

/** The id of the token presented, or undefined. */
export function authenticate(tokens: readonly TokenEntry[], header: string | undefined): string | undefined {
  return authenticateEntry(tokens, header)?.id;
}

declare module "express-serve-static-core" {
  interface Request {
    /** Who is calling: a token id, or "anonymous" for public reads. */
    principal?: string;
  }
}

/** Middleware: a valid bearer token of at least `scope` (401 without one, 403 when its scope is lower). */
export function requireScope(tokens: readonly TokenEntry[], scope: Scope) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const entry = authenticateEntry(tokens, req.get("authorization"));
    if (entry === undefined) {
      const reason = tokens.length === 0 ? `no API tokens are configured, so ${scope === "read" ? "reads need a token and none can be given" : "writes are disabled"}` : "missing or unknown bearer token";
      next(new ApiError(401, "unauthorized", [{ field: "authorization", reason }], { "www-authenticate": 'Bearer realm="tokentrace"' }));
      return;
    }
    if (scopeRank[entry.scope] < scopeRank[scope]) {
      next(new ApiError(403, "forbidden", [{ field: "authorization", reason: `token ${entry.id} has scope ${entry.scope}; this needs ${scope} (api.scopes)` }]));
      return;
    }
    req.principal = entry.id;
    next();
  };
}

/** Middleware for policy writes: a token of scope write or admin. */
export function requireToken(tokens: readonly TokenEntry[]) {
  return requireScope(tokens, "write");
}

/** Middleware for reads: public (a presented valid token still names the caller), or scope read. */
export function readAccess(tokens: readonly TokenEntry[], reads: "public" | "token") {
  const check = requireScope(tokens, "read");
  return (req: Request, res: Response, next: NextFunction): void => {
    if (reads === "token") {
      check(req, res, next);
      return;
    }
    req.principal = authenticate(tokens, req.get("authorization")) ?? "anonymous";
    next();
  };
}
