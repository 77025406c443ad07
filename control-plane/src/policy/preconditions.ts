// Write preconditions evaluated against the current record, the same way for every repository
// implementation: If-Match, then If-None-Match (RFC 9110 §13.2.2), then the version the document
// carries (a 409, as Kubernetes answers a stale resourceVersion). Versions compare exactly.
import type { PolicyRecord } from "./model.js";
import type { Preconditions, WriteFailure } from "./repository.js";

/** Evaluates the write's conditions against the current record (RFC 9110 §13.2.2 order). */
export function checkPreconditions(name: string, current: PolicyRecord | null, options: Preconditions): WriteFailure | undefined {
  if (options.ifMatch !== undefined) {
    const holds = options.ifMatch === "*" ? current !== null : current !== null && options.ifMatch.includes(current.version);
    if (!holds) return { ok: false, kind: "precondition-failed", header: "if-match" };
  }
  if (options.ifNoneMatch !== undefined) {
    const holds = options.ifNoneMatch === "*" ? current === null : current === null || !options.ifNoneMatch.includes(current.version);
    if (!holds) return { ok: false, kind: "precondition-failed", header: "if-none-match" };
  }
  if (options.expectVersion !== undefined && current?.version !== options.expectVersion) {
    const reason =
      current === null
        ? `policy ${name} does not exist (any more): version ${options.expectVersion} is stale`
        : `policy ${name} is at version ${current.version}, not ${options.expectVersion}; get it again and apply your change to it`;
    return { ok: false, kind: "conflict", reason };
  }
  return undefined;
}

