// The one gate every stored policy passes. The document is first copied to plain JSON data (own
// enumerable properties only: nothing inherited through a prototype can be validated and then
// lost), the copy is validated, and that same copy, deeply frozen, is what a store keeps and
// serves. Readers share it without cloning because nobody can modify it.
import type { FieldError, Policy } from "./model.js";
import type { Admission } from "./repository.js";
import { validatePolicy } from "./validate.js";

/** Checks a deployment adds after schema validation (e.g. the one namespace Kubernetes mode manages). */
export type PolicyCheck = (policy: Policy) => FieldError[];

/** A deep copy holding only what JSON can carry; undefined when `value` is not JSON data. */
function jsonCopy(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as unknown);
  } catch {
    // Cyclic or too deep for the serializer: not a document anyone could have sent.
    return undefined;
  }
}

/** Freezes a JSON value and everything in it. */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null || Object.isFrozen(item)) continue;
    Object.freeze(item);
    for (const child of Object.values(item)) stack.push(child);
  }
  return value;
}

/** Validates `document` exactly as it will be stored; the admitted policy is a frozen copy. */
export function admitPolicy(document: unknown, check?: PolicyCheck): Admission {
  const copy = jsonCopy(document);
  if (copy === undefined) return { ok: false, errors: [{ field: "(body)", reason: "not a JSON document" }] };
  const result = validatePolicy(copy);
  if (!result.ok) return result;
  const errors = check?.(result.policy) ?? [];
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, policy: deepFreeze(result.policy) };
}

/** In Kubernetes mode with one managed namespace, a policy elsewhere could never be applied: refuse it. */
export function namespaceCheck(namespace: string): PolicyCheck {
  return (policy) =>
    policy.target.namespace === namespace ? [] : [{ field: "target.namespace", reason: `must be ${namespace}: this control plane manages WasmPlugins only there` }];
}
