// Conditional request headers (RFC 9110 §13.1): If-Match and If-None-Match are "*" or a list of
// entity tags, `"opaque"` or weak `W/"opaque"`. If-Match compares strongly (§13.1.1: a weak tag
// never matches), If-None-Match weakly (§13.1.2: W/"3" matches "3"). Our versions are strong tags.
import type { Express, Request } from "express";
import type { Preconditions } from "../policy/repository.js";
import { ApiError } from "./errors.js";

interface EntityTag {
  weak: boolean;
  opaque: string;
}

/** Parses `*` or `#entity-tag` (empty list elements allowed, RFC 9110 §5.6.1); undefined when malformed. */
export function parseEntityTags(value: string): "*" | EntityTag[] | undefined {
  const text = value.trim();
  if (text === "*") return "*";
  const tags: EntityTag[] = [];
  let i = 0;
  const skip = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t")) i++;
  };
  for (;;) {
    skip();
    if (i >= text.length) break;
    if (text[i] === ",") {
      i++;
      continue;
    }
    let weak = false;
    if (text.startsWith("W/", i)) {
      weak = true;
      i += 2;
    }
    if (text[i] !== '"') return undefined;
    const end = text.indexOf('"', i + 1);
    if (end < 0) return undefined;
    const opaque = text.slice(i + 1, end);
    // etagc = %x21 / %x23-7E / obs-text
    if (!/^[\x21\x23-\x7e\x80-\xff]*$/.test(opaque)) return undefined;
    tags.push({ weak, opaque });
    i = end + 1;
    skip();
    if (i < text.length && text[i] !== ",") return undefined;
  }
  return tags.length === 0 ? undefined : tags;
}

function header(req: Request, name: "if-match" | "if-none-match"): "*" | EntityTag[] | undefined {
  const value = req.get(name);
  if (value === undefined) return undefined;
  const tags = parseEntityTags(value);
  if (tags === undefined) throw new ApiError(400, "invalid header", [{ field: name, reason: 'must be "*" or a list of quoted entity tags, e.g. "3"' }]);
  return tags;
}

/** The write preconditions a request carries (400 when a header is malformed). */
export function writePreconditions(req: Request): Preconditions {
  const out: Preconditions = {};
  const ifMatch = header(req, "if-match");
  if (ifMatch !== undefined) out.ifMatch = ifMatch === "*" ? "*" : ifMatch.filter((t) => !t.weak).map((t) => t.opaque);
  const ifNoneMatch = header(req, "if-none-match");
  if (ifNoneMatch !== undefined) out.ifNoneMatch = ifNoneMatch === "*" ? "*" : ifNoneMatch.map((t) => t.opaque);
  return out;
}

/**
 * Conditional GET for every response the app sends (RFC 9110 §13.1.2, §13.2.2): a GET or HEAD
 * that would answer 2xx answers 304 when If-None-Match is "*" or names the response's ETag
 * (weak comparison). It replaces express's own `req.fresh`, which gives up whenever the request
 * says Cache-Control: no-cache, as fetch() adds to every request carrying If-None-Match, so a
 * browser could never get its 304. A malformed If-None-Match on a read is ignored: at worst it
 * costs a full 200, never a write.
 */
export function installConditionalGet(app: Express): void {
  Object.defineProperty(app.request, "fresh", {
    configurable: true,
    get(this: Request): boolean {
      if (this.method !== "GET" && this.method !== "HEAD") return false;
      const status = this.res?.statusCode ?? 0;
      if (status < 200 || status > 299) return false;
      const header = this.get("if-none-match");
      const tags = header === undefined ? undefined : parseEntityTags(header);
      if (tags === undefined) return false;
      if (tags === "*") return true;
      const etag = parseEntityTags(String(this.res?.get("etag") ?? ""));
      const current = etag === undefined || etag === "*" ? undefined : etag[0]?.opaque;
      return current !== undefined && tags.some((t) => t.opaque === current);
    },
  });
}

/** POST to a collection carries no preconditions we could evaluate: refuse them rather than ignore them. */
export function refusePreconditions(req: Request, hint: string): void {
  for (const name of ["if-match", "if-none-match", "if-unmodified-since"] as const) {
    if (req.get(name) !== undefined) throw new ApiError(400, "invalid header", [{ field: name, reason: `not supported here: ${hint}` }]);
  }
}
