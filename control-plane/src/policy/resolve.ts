// Which policy a pulling workload gets: same namespace, every matchLabels pair present in the
// workload's labels; the most specific (most labels) wins, ties go to the smaller name.
// `PullIndex` answers that without looking at policies that cannot match: policies are indexed
// by namespace and, within it, by each of their matchLabels pairs, and kept current from the
// repository's change events; a pull looks only at the policies sharing one of its labels.
import { hasSelector, type PolicyRecord, type SelectorTarget } from "./model.js";
import type { PolicyRepository } from "./repository.js";

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
export function parseLabels(text: string): Map<string, string> | undefined {
  const labels = new Map<string, string>();
  if (text === "") return labels;
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) return undefined;
    const key = pair.slice(0, eq);
    if (labels.has(key)) return undefined;
    labels.set(key, pair.slice(eq + 1));
  }
  return labels;
}

/** Whether `a` should win over `b` (both match): more labels, then the smaller name. */
function better(a: PolicyRecord, aSize: number, b: PolicyRecord | undefined, bSize: number): boolean {
  return b === undefined || aSize > bSize || (aSize === bSize && a.policy.name < b.policy.name);
}

const pairsByRecord = new WeakMap<PolicyRecord, readonly (readonly [string, string])[]>();

/** A selector policy's matchLabels as pairs, computed once per (immutable) record. */
function matchLabelsOf(record: PolicyRecord): readonly (readonly [string, string])[] {
  let pairs = pairsByRecord.get(record);
  if (pairs === undefined) {
    pairs = Object.entries((record.policy.target as SelectorTarget).selector.matchLabels);
    pairsByRecord.set(record, pairs);
  }
  return pairs;
}

/** The winning policy among `records` for the workload (a linear scan; the index below avoids it). */
export function resolvePolicy(records: Iterable<PolicyRecord>, workload: Workload, labels: ReadonlyMap<string, string>): PolicyRecord | undefined {
  let best: PolicyRecord | undefined;
  let bestSize = -1;
  for (const record of records) {
    const target = record.policy.target;
    if (target.namespace !== workload.namespace || !hasSelector(target)) continue;
    const wanted = matchLabelsOf(record);
    if (!wanted.every(([k, v]) => labels.get(k) === v)) continue;
    if (better(record, wanted.length, best, bestSize)) {
      best = record;
      bestSize = wanted.length;
    }
  }
  return best;
}

/** "k\0v": label keys and values cannot contain NUL, so the pair key is unambiguous. */
const pairKey = (key: string, value: string): string => `${key}\u0000${value}`;

interface NamespacePolicies {
  /** Policies with empty matchLabels (they select every workload of the namespace). */
  unconditional: Map<string, PolicyRecord>;
  /** The unconditional winner (smallest name), recomputed after a change; null = stale. */
  unconditionalBest: PolicyRecord | undefined | null;
  /** By matchLabels pair: the policies requiring it, by name. */
  byPair: Map<string, Map<string, PolicyRecord>>;
}

/** Selector policies indexed by namespace and label pair, following a repository. */
export class PullIndex {
  private readonly namespaces = new Map<string, NamespacePolicies>();
  private readonly unsubscribe: () => void;

  constructor(repository: PolicyRepository) {
    for (const record of repository.list()) this.add(record);
    this.unsubscribe = repository.onChange((change) => {
      if (change.previous !== null) this.remove(change.previous);
      if (change.current !== null) this.add(change.current);
    });
  }

  /** Stops following the repository. */
  close(): void {
    this.unsubscribe();
  }

  private add(record: PolicyRecord): void {
    const target = record.policy.target;
    if (!hasSelector(target)) return;
    let ns = this.namespaces.get(target.namespace);
    if (ns === undefined) {
      ns = { unconditional: new Map(), unconditionalBest: undefined, byPair: new Map() };
      this.namespaces.set(target.namespace, ns);
    }
    const pairs = matchLabelsOf(record);
    if (pairs.length === 0) {
      ns.unconditional.set(record.policy.name, record);
      ns.unconditionalBest = null;
      return;
    }
    for (const [k, v] of pairs) {
      const key = pairKey(k, v);
      let holders = ns.byPair.get(key);
      if (holders === undefined) {
        holders = new Map();
        ns.byPair.set(key, holders);
      }
      holders.set(record.policy.name, record);
    }
  }

  private remove(record: PolicyRecord): void {
    const target = record.policy.target;
    if (!hasSelector(target)) return;
    const ns = this.namespaces.get(target.namespace);
    if (ns === undefined) return;
    const name = record.policy.name;
    if (ns.unconditional.delete(name)) ns.unconditionalBest = null;
    for (const [k, v] of matchLabelsOf(record)) {
      const key = pairKey(k, v);
      const holders = ns.byPair.get(key);
      holders?.delete(name);
      if (holders?.size === 0) ns.byPair.delete(key);
    }
    if (ns.unconditional.size === 0 && ns.byPair.size === 0) this.namespaces.delete(target.namespace);
  }

  /** The winning policy for the workload, looking only at policies that share a label with it. */
  resolve(workload: Workload, labels: ReadonlyMap<string, string>): PolicyRecord | undefined {
    const ns = this.namespaces.get(workload.namespace);
    if (ns === undefined) return undefined;
    if (ns.unconditionalBest === null) {
      let best: PolicyRecord | undefined;
      for (const record of ns.unconditional.values()) if (better(record, 0, best, 0)) best = record;
      ns.unconditionalBest = best;
    }
    let best = ns.unconditionalBest;
    let bestSize = 0;
    for (const [k, v] of labels) {
      const holders = ns.byPair.get(pairKey(k, v));
      if (holders === undefined) continue;
      for (const record of holders.values()) {
        const wanted = matchLabelsOf(record);
        if (wanted.length < bestSize || !wanted.every(([wk, wv]) => labels.get(wk) === wv)) continue;
        if (better(record, wanted.length, best, bestSize)) {
          best = record;
          bestSize = wanted.length;
        }
      }
    }
    return best;
  }
}
