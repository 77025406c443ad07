// The policy store: current policies, their versions and history, behind one write lock.
// A write computes the next state, persists it, and only then becomes visible, so a failed save
// changes nothing. Expected failures (missing, exists, stale version) are typed results.
import { emptyState, type Persistence, type StoreState } from "./file-persistence.js";
import type { HistoryEntry, Policy, PolicyRecord } from "./model.js";

/** History entries kept per policy (oldest dropped first). */
export const historyLimit = 50;

/** Outcome of a write. */
export type WriteResult =
  | { ok: true; record: PolicyRecord | null; previous: PolicyRecord | null }
  | { ok: false; kind: "not-found" | "exists" | "precondition-failed" | "version-not-found" };

/** A change, for listeners (reconciler, adaptive sampler, audit). */
export interface PolicyChange {
  name: string;
  action: HistoryEntry["action"];
  /** Who made it (a token id, or a component such as the Kubernetes import). */
  by: string;
  previous: PolicyRecord | null;
  current: PolicyRecord | null;
}

/** Write options: who writes, and the If-Match version when given. */
export interface WriteOptions {
  by: string;
  ifMatch?: string | undefined;
}

/** Current policies with history; persisted through a {@link Persistence}. */
export class PolicyStore {
  private state: StoreState;
  private lock: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<(change: PolicyChange) => void>();

  constructor(private readonly persistence: Persistence, private readonly now: () => Date = () => new Date()) {
    this.state = persistence.load() ?? emptyState();
  }

  /** Current policies sorted by name. */
  list(): PolicyRecord[] {
    return Object.keys(this.state.policies)
      .sort()
      .map((name) => this.state.policies[name]?.current)
      .filter((r): r is PolicyRecord => r !== null && r !== undefined)
      .map((r) => structuredClone(r));
  }

  /** The current record, or undefined. */
  get(name: string): PolicyRecord | undefined {
    const current = this.state.policies[name]?.current;
    return current ? structuredClone(current) : undefined;
  }

  /** History, oldest first; undefined when the name was never used. */
  history(name: string): HistoryEntry[] | undefined {
    const entry = this.state.policies[name];
    return entry ? structuredClone(entry.history) : undefined;
  }

  /** Subscribes to committed changes; returns the unsubscribe function. */
  onChange(listener: (change: PolicyChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Creates; `exists` when a current policy has the name. */
  create(policy: Policy, options: WriteOptions): Promise<WriteResult> {
    return this.write(policy.name, options, (current) => (current ? { fail: "exists" } : { next: policy, action: "create" }));
  }

  /** Creates or replaces (If-Match applies to an existing policy; If-Match on a missing one fails). */
  put(policy: Policy, options: WriteOptions): Promise<WriteResult> {
    return this.write(policy.name, options, (current) => ({ next: policy, action: current ? "replace" : "create" }));
  }

  /** Replaces an existing policy with `next(current)` (used for merge patch). */
  update(name: string, options: WriteOptions, next: (current: Policy) => Policy): Promise<WriteResult> {
    return this.write(name, options, (current) => (current ? { next: next(current.policy), action: "patch" } : { fail: "not-found" }));
  }

  /** Deletes; the history is kept. */
  delete(name: string, options: WriteOptions): Promise<WriteResult> {
    return this.write(name, options, (current) => (current ? { next: null, action: "delete" } : { fail: "not-found" }));
  }

  /** Makes the policy as it was at `version` current again, as a new version. */
  rollback(name: string, version: string, options: WriteOptions): Promise<WriteResult> {
    return this.write(name, options, () => {
      const entry = this.state.policies[name]?.history.find((h) => h.version === version);
      if (entry?.policy === undefined) return { fail: "version-not-found" };
      return { next: entry.policy, action: "rollback" };
    });
  }

  private write(
    name: string,
    options: WriteOptions,
    decide: (current: PolicyRecord | null) => { fail: "exists" | "not-found" | "version-not-found" } | { next: Policy | null; action: HistoryEntry["action"] },
  ): Promise<WriteResult> {
    const run = async (): Promise<WriteResult> => {
      const current = this.state.policies[name]?.current ?? null;
      if (options.ifMatch !== undefined && options.ifMatch !== "*" && current?.version !== options.ifMatch) {
        return { ok: false, kind: "precondition-failed" };
      }
      if (options.ifMatch === "*" && current === null) return { ok: false, kind: "precondition-failed" };
      const decision = decide(current);
      if ("fail" in decision) return { ok: false, kind: decision.fail };
      const next = structuredClone(this.state);
      const version = String(next.nextVersion);
      next.nextVersion += 1;
      const at = this.now().toISOString();
      const record: PolicyRecord | null = decision.next === null ? null : { policy: structuredClone(decision.next), version, updatedAt: at, updatedBy: options.by };
      const slot = next.policies[name] ?? { current: null, history: [] };
      slot.current = record;
      const entry: HistoryEntry = { action: decision.action, version, at, by: options.by };
      if (decision.next !== null) entry.policy = structuredClone(decision.next);
      slot.history.push(entry);
      while (slot.history.length > historyLimit) slot.history.shift();
      next.policies[name] = slot;
      await this.persistence.save(next);
      this.state = next;
      const change: PolicyChange = {
        name,
        action: decision.action,
        by: options.by,
        previous: current ? structuredClone(current) : null,
        current: record ? structuredClone(record) : null,
      };
      for (const listener of this.listeners) listener(change);
      return { ok: true, record: record ? structuredClone(record) : null, previous: change.previous };
    };
    const result = this.lock.then(run, run);
    this.lock = result.catch(() => undefined);
    return result;
  }
}
