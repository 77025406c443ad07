// Which policy a pulling workload gets: same namespace, every matchLabels pair present in the
// workload's labels; the most specific (most labels) wins, ties go to the smaller name.
import { hasSelector, type PolicyRecord } from "./model.js";

/** A workload identity parsed from `<namespace>.<name>`. */
export interface Workload {
  namespace: string;
  name: string;
}

/** Parses `<namespace>.<name>`: the namespace is a DNS label, so the first dot splits. */
export function parseWorkload(text: string): Workload | undefined {
  const dot = text.indexOf(".");
  if (dot <= 0 || dot === text.length - 1) return undefined;
  const namespace = text.slice(0, dot);
  const name = text.slice(dot + 1);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace) || namespace.length > 63) return undefined;
  if (!/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name) || name.length > 253) return undefined;
  return { namespace, name };
}

/** Parses `k=v,k2=v2`; undefined when malformed (empty keys, missing `=`, duplicates). */
export function parseLabels(text: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  if (text === "") return labels;
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) return undefined;
    const key = pair.slice(0, eq);
    if (Object.hasOwn(labels, key)) return undefined;
    labels[key] = pair.slice(eq + 1);
  }
  return labels;
}

/** The winning policy for the workload, or undefined. */
export function resolvePolicy(records: readonly PolicyRecord[], workload: Workload, labels: Record<string, string>): PolicyRecord | undefined {
  let best: PolicyRecord | undefined;
  let bestSize = -1;
  for (const record of records) {
    const target = record.policy.target;
    if (target.namespace !== workload.namespace || !hasSelector(target)) continue;
    const wanted = Object.entries(target.selector.matchLabels);
    if (!wanted.every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v)) continue;
    if (wanted.length > bestSize || (wanted.length === bestSize && best !== undefined && record.policy.name < best.policy.name)) {
      best = record;
      bestSize = wanted.length;
    }
  }
  return best;
}
