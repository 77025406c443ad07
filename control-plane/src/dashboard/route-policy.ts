// Which policy the dashboard shows beside a route: the one a namespace's pods get.
import type { Policy } from "../policy/model.js";
import type { PolicyRepository } from "../policy/repository.js";

/** The policy a namespace's pods get: the first by name targeting it (pull resolution also matches labels). */
export function policyFor(store: PolicyRepository, namespace: string): Policy | undefined {
  return store.list().find((r) => r.policy.target.namespace === namespace)?.policy;
}
