// The two patch formats the apiserver accepts for every resource: JSON merge patch (RFC 7386)
// and JSON patch (RFC 6902). Strategic merge patch is not offered for custom resources.

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 7386: objects merge key by key, `null` deletes, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const result: { [key: string]: Json } = isObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(Object.hasOwn(result, key) ? (result[key] as Json) : null, value);
  }
  return result;
}

/** One RFC 6902 operation. */
export interface JsonPatchOp {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

/** Result of applying a JSON patch: the new document or why it could not apply. */
export type PatchResult = { ok: true; value: Json } | { ok: false; error: string };

function parsePointer(pointer: string): string[] | undefined {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) return undefined;
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function getAt(doc: Json, tokens: string[]): Json | undefined {
  let current: Json | undefined = doc;
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (isObject(current)) {
      current = Object.hasOwn(current, token) ? current[token] : undefined;
    } else {
      return undefined;
    }
  }
  return current;
}

function deepEqual(a: Json | undefined, b: Json | undefined): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: Json | undefined): Json | undefined {
  if (Array.isArray(value)) return value.map((v) => canonical(v) as Json);
  if (isObject(value)) {
    const out: { [key: string]: Json } = {};
    for (const key of Object.keys(value).sort()) out[key] = canonical(value[key]) as Json;
    return out;
  }
  return value;
}

// Mutates `doc` in place; returns an error text or undefined.
function add(doc: { root: Json }, tokens: string[], value: Json): string | undefined {
  if (tokens.length === 0) {
    doc.root = value;
    return undefined;
  }
  const parent = getAt(doc.root, tokens.slice(0, -1));
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (!/^(0|[1-9][0-9]*|-)$/.test(last) || index > parent.length) return `add operation: index ${last} out of bounds`;
    parent.splice(index, 0, value);
    return undefined;
  }
  if (isObject(parent)) {
    parent[last] = value;
    return undefined;
  }
  return `add operation does not apply: doc is missing path: "/${tokens.join("/")}"`;
}

function remove(doc: { root: Json }, tokens: string[]): string | undefined {
  if (tokens.length === 0) return "remove operation: cannot remove the document root";
  const parent = getAt(doc.root, tokens.slice(0, -1));
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent) && /^(0|[1-9][0-9]*)$/.test(last) && Number(last) < parent.length) {
    parent.splice(Number(last), 1);
    return undefined;
  }
  if (isObject(parent) && Object.hasOwn(parent, last)) {
    delete parent[last];
    return undefined;
  }
  return `remove operation does not apply: doc is missing path: "/${tokens.join("/")}"`;
}

/** RFC 6902 with all six operations; the whole patch fails if any operation fails. */
export function jsonPatch(target: Json, ops: unknown): PatchResult {
  if (!Array.isArray(ops)) return { ok: false, error: "json patch must be an array of operations" };
  const doc = { root: structuredClone(target) };
  for (const raw of ops) {
    if (!isObject(raw) || typeof raw.op !== "string" || typeof raw.path !== "string") {
      return { ok: false, error: "json patch operation must have string \"op\" and \"path\"" };
    }
    const op = raw as unknown as JsonPatchOp;
    const tokens = parsePointer(op.path);
    if (tokens === undefined) return { ok: false, error: `invalid JSON pointer "${op.path}"` };
    let error: string | undefined;
    switch (op.op) {
      case "add":
        if (!Object.hasOwn(raw, "value")) return { ok: false, error: "add operation requires a value" };
        error = add(doc, tokens, structuredClone(op.value as Json));
        break;
      case "remove":
        error = remove(doc, tokens);
        break;
      case "replace":
        if (!Object.hasOwn(raw, "value")) return { ok: false, error: "replace operation requires a value" };
        if (getAt(doc.root, tokens) === undefined) {
          error = `replace operation does not apply: doc is missing key: "${op.path}"`;
        } else {
          error = remove(doc, tokens) ?? add(doc, tokens, structuredClone(op.value as Json));
        }
        break;
      case "move":
      case "copy": {
        const from = typeof op.from === "string" ? parsePointer(op.from) : undefined;
        if (from === undefined) return { ok: false, error: `${op.op} operation requires a valid "from"` };
        const value = getAt(doc.root, from);
        if (value === undefined) {
          error = `${op.op} operation does not apply: doc is missing from path: "${op.from}"`;
          break;
        }
        if (op.op === "move") error = remove(doc, from);
        error = error ?? add(doc, tokens, structuredClone(value));
        break;
      }
      case "test":
        if (!deepEqual(getAt(doc.root, tokens), op.value)) error = `testing value ${op.path} failed: test failed`;
        break;
      default:
        error = `Unexpected kind: ${op.op}`;
    }
    if (error !== undefined) return { ok: false, error };
  }
  return { ok: true, value: doc.root };
}
