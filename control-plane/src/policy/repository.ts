// The seam between the control plane and wherever policies live. The API, the pull endpoint's
// index, the Kubernetes reconciler and adaptive sampling depend on this interface only. The first
// implementation is the file store (file-store.ts: versions are counters, history is local and
// synchronous); a cluster-backed one (a CRD, versions = resourceVersions, history in the cluster)
// implements the same contract, with the latitude the comments below allow it.
import type { FieldError, HistoryEntry, Policy, PolicyRecord } from "./model.js";

/**
 * Conditions a write must meet, evaluated against the policy's current version before anything
 * is written (RFC 9110 §13.2.2 order: If-Match, then If-None-Match; then `expectVersion`).
 * Versions are opaque strings compared exactly (strong comparison); parsing header syntax,
 * weak tags included, is the HTTP layer's job.
 */
export interface Preconditions {
  /** If-Match: "*" = the policy must exist; a list = its current version must be one of these. */
  ifMatch?: "*" | readonly string[];
  /** If-None-Match: "*" = the policy must not exist; a list = its current version must be none of these. */
  ifNoneMatch?: "*" | readonly string[];
  /**
   * The version the writer read, carried in the document (as Kubernetes' metadata.resourceVersion):
   * a write to any other current version, or to a missing policy, is a `conflict`
   * (kubernetes/apiserver @24a394e pkg/registry/generic/registry/store.go Update: a stale
   * resourceVersion answers Conflict with OptimisticLockErrorMsg).
   */
  expectVersion?: string;
}

/** Who writes (a token id, or a component such as "kubernetes-import"), and the conditions. */
export interface WriteOptions extends Preconditions {
  by: string;
}

/** Why a write did not happen. Nothing was changed in any of these cases. */
export type WriteFailure =
  /** No current policy (patch, delete) or a name never used (rollback). */
  | { ok: false; kind: "not-found" }
  /** create: a current policy has this name. */
  | { ok: false; kind: "exists" }
  /** If-Match or If-None-Match did not hold (HTTP 412); `header` says which. */
  | { ok: false; kind: "precondition-failed"; header: "if-match" | "if-none-match" }
  /** `expectVersion` is stale (HTTP 409, as Kubernetes answers a stale resourceVersion). */
  | { ok: false; kind: "conflict"; reason: string }
  /** rollback: no history entry with that version carries a policy. */
  | { ok: false; kind: "version-not-found" }
  /** The document (after a merge patch, or a rolled-back version) is not a valid policy. */
  | { ok: false; kind: "invalid"; errors: FieldError[] }
  /** The storage failed or is unreachable (HTTP 503). */
  | { ok: false; kind: "unavailable"; reason: string };

/**
 * Outcome of a write. `changed: false` is a no-op: the stored policy already equals the document,
 * so no version, history entry, change event or audit line was made, and `record` is the current
 * one (as kubernetes/apiserver @24a394e pkg/storage/etcd3/store.go GuaranteedUpdate skips a write
 * whose encoding equals the stored bytes and keeps the resourceVersion).
 */
export type WriteResult = { ok: true; record: PolicyRecord | null; previous: PolicyRecord | null; changed: boolean } | WriteFailure;

/** One committed change, for listeners (pull index, reconciler, adaptive sampler). */
export interface PolicyChange {
  name: string;
  action: HistoryEntry["action"];
  /** Who made it (a token id, or a component such as the Kubernetes import). */
  by: string;
  at: string;
  previous: PolicyRecord | null;
  current: PolicyRecord | null;
}

/** A policy as admitted (deeply frozen, exactly what is stored), or every field error. */
export type Admission = { ok: true; policy: Policy } | { ok: false; errors: FieldError[] };

/** A stored record set aside at load because it no longer validates; never served. */
export interface QuarantinedRecord {
  name: string;
  version: string;
  errors: FieldError[];
}

/**
 * Where policies live.
 *
 * Reads are synchronous and served from memory (a cluster store: its informer cache). Records are
 * deeply frozen and shared: callers never clone them and cannot modify them. A store applies each
 * write it acknowledges to what it serves before resolving the write (read-your-writes in this
 * process); changes made elsewhere (another replica, kubectl) appear when the store learns of them.
 *
 * Writes validate the exact object they store (see admission.ts): no write path may store what
 * validation did not see. Every write resolves to a typed result; a rejected promise is a bug.
 * Each committed change is recorded together with who made it in one atomic write (the file
 * store: one journal record; a cluster store: the object and its annotations), and each
 * implementation emits one audit record per committed change.
 */
export interface PolicyRepository {
  /** The current record, or undefined (also for quarantined records). */
  get(name: string): PolicyRecord | undefined;
  /** Current records sorted by name. */
  list(): readonly PolicyRecord[];
  /** Number of current records. */
  readonly size: number;
  /**
   * History of a name, oldest first, bounded; undefined when the name was never used. A cluster
   * store may answer from the API server and may lag the latest change by a moment.
   */
  history(name: string): Promise<readonly HistoryEntry[] | undefined>;
  /**
   * Subscribes to committed changes, delivered synchronously in commit order after `get`/`list`
   * reflect them; returns the unsubscribe function. A listener must not throw.
   */
  onChange(listener: (change: PolicyChange) => void): () => void;
  /** The answer a create of `document` would get from validation (dry run); nothing is stored. */
  validate(document: unknown): Promise<Admission>;
  /** Creates; `exists` when a current policy has the name. */
  create(document: unknown, options: WriteOptions): Promise<WriteResult>;
  /** Creates or replaces the policy `name`; the document's name must be `name`. */
  put(name: string, document: unknown, options: WriteOptions): Promise<WriteResult>;
  /** Applies a JSON merge patch (RFC 7396) to the current policy; the name cannot change. */
  patch(name: string, mergePatch: unknown, options: WriteOptions): Promise<WriteResult>;
  /** Deletes the current policy; its history is kept. */
  delete(name: string, options: WriteOptions): Promise<WriteResult>;
  /** Makes the policy as it was at `version` current again, as a new version. */
  rollback(name: string, version: string, options: WriteOptions): Promise<WriteResult>;
  /** Records set aside at load (invalid under today's validation). */
  quarantined(): readonly QuarantinedRecord[];
  /** Whether the store can serve and accept writes, and why not. */
  readiness(): { ok: boolean; detail: string };
}
