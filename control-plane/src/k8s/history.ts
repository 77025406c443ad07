// Policy history in the cluster: one apps/v1 ControllerRevision per state of a SamplingPolicy (the
// object StatefulSets keep their history in: immutable `data`, a `revision` number), labelled with
// the policy's name and namespace, at most `historyLimit` per name and namespace (the oldest are
// deleted). The revisions live in one namespace the control plane owns (`historyNamespace`), not
// in the policies' namespaces: RBAC cannot confine a create or delete of ControllerRevisions to
// our own, so granting them in every namespace would let the control plane delete any
// StatefulSet's or DaemonSet's history; in one namespace a Role confines them. History is complete by design rather than by who happens to lead: a
// revision's name is derived from the object it records (its uid and generation, or its deletion),
// so every replica records every state it observes (watch events, and after each list the whole
// cache, including objects deleted while no replica watched) and the API server's AlreadyExists
// decides which replica's create stands (as controller_history.go names a StatefulSet's revisions
// by a hash of their content, so concurrent controllers converge on one object). A generation
// overwritten before any replica saw it never reached a watcher and cannot be recorded. Changes
// made outside the REST API are audited by the replica whose revision stood (the REST path
// audits its own).
import { AppsV1Api, type KubeConfig, type V1ControllerRevision } from "@kubernetes/client-node";
import type { AuditSink } from "../policy/audit.js";
import type { HistoryEntry } from "../policy/model.js";
import { attempt, type KubeResult } from "./client.js";
import { actionAnnotation, outsidePrincipal, specHash, specHashAnnotation, updatedByAnnotation, type KubernetesPolicyStore, type SamplingPolicyObject } from "./policy-store.js";
import { managedByLabel, managedByValue, policyLabel } from "./wasmplugin.js";

/** History entries kept per policy (as the embedded store keeps). */
export const historyLimit = 50;

/** The ControllerRevision calls history makes. */
export interface RevisionApi {
  list(namespace: string, labelSelector: string): Promise<KubeResult<V1ControllerRevision[]>>;
  create(namespace: string, revision: V1ControllerRevision): Promise<KubeResult<V1ControllerRevision>>;
  delete(namespace: string, name: string): Promise<KubeResult<void>>;
}


/** client-node implementation. */
export class ClientNodeRevisionApi implements RevisionApi {
  private readonly api: AppsV1Api;
  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(AppsV1Api);
  }
  list(namespace: string, labelSelector: string): Promise<KubeResult<V1ControllerRevision[]>> {
    return attempt(async () => (await this.api.listNamespacedControllerRevision({ namespace, labelSelector })).items);
  }
  create(namespace: string, revision: V1ControllerRevision): Promise<KubeResult<V1ControllerRevision>> {
    return attempt(() => this.api.createNamespacedControllerRevision({ namespace, body: revision }));
  }
  delete(namespace: string, name: string): Promise<KubeResult<void>> {
    return attempt(async () => {
      await this.api.deleteNamespacedControllerRevision({ namespace, name });
    });
  }
}

/** The label naming the namespace of the policy a revision records (revisions live elsewhere). */
export const policyNamespaceLabel = "tokentrace.dev/policy-namespace";

/** Label selector of one policy's revisions (in `namespace`, or in every namespace when undefined). */
export const revisionSelector = (policy: string, namespace?: string): string =>
  `${managedByLabel}=${managedByValue},${policyLabel}=${policy}${namespace === undefined ? "" : `,${policyNamespaceLabel}=${namespace}`}`;

/** Label selector of every policy revision. */
const allRevisionsSelector = `${managedByLabel}=${managedByValue},${policyLabel}`;

/** Annotations tying a revision to the object lifetime it records. */
export const objectUidAnnotation = "tokentrace.dev/object-uid";
export const objectCreatedAnnotation = "tokentrace.dev/object-created";

/** The state of one object a revision records. */
interface ObjectState {
  namespace: string;
  name: string;
  uid: string;
  created: string;
  generation: number;
}

/** The revision name of a state: the same on every replica, so the API server's AlreadyExists decides. */
export function revisionName(state: ObjectState, deleted: boolean): string {
  // A uid is a UUID: its first group tells lifetimes of one name apart. A namespace is a DNS label
  // (no dots), so "<namespace>.<name>" keeps policies of one name in two namespaces apart.
  const lifetime = state.uid.split("-")[0] ?? state.uid;
  return `samplingpolicy-${state.namespace}.${state.name}-${lifetime}-${deleted ? "deleted" : state.generation}`;
}

/** The namespace of the policy a revision records. */
const policyNamespaceOf = (r: V1ControllerRevision): string => r.metadata?.labels?.[policyNamespaceLabel] ?? "";

function entryOf(revision: V1ControllerRevision): HistoryEntry | undefined {
  const data = revision.data as Partial<HistoryEntry> | undefined;
  if (data === undefined || typeof data.version !== "string" || typeof data.action !== "string") return undefined;
  return data as HistoryEntry;
}

/** Oldest first: by revision (each one numbered after those recorded before it), then lifetime. */
function historyOrder(a: V1ControllerRevision, b: V1ControllerRevision): number {
  const key = (r: V1ControllerRevision): string => `${r.metadata?.annotations?.[objectCreatedAnnotation] ?? ""}\u0000${r.metadata?.annotations?.[objectUidAnnotation] ?? ""}`;
  return a.revision - b.revision || key(a).localeCompare(key(b));
}

function stateOf(object: SamplingPolicyObject): ObjectState | undefined {
  const { namespace, name, uid, creationTimestamp, generation } = object.metadata;
  if (uid === undefined || generation === undefined) return undefined;
  return { namespace, name, uid, created: creationTimestamp ?? "", generation };
}

/** What PolicyHistory needs. */
export interface PolicyHistoryOptions {
  api: RevisionApi;
  /** Namespace watched; undefined = every namespace. */
  namespace: string | undefined;
  /** Namespace the revisions live in (the control plane's own, where a Role grants their writes). */
  historyNamespace: string;
  store: KubernetesPolicyStore;
  now: () => Date;
  audit?: AuditSink;
  log?: (record: object) => void;
}

/** Reads and records policy history as ControllerRevisions (every replica records). */
export class PolicyHistory {
  private queue: Promise<unknown> = Promise.resolve();
  /** Revision names known to exist (created here, or listed). */
  private readonly known = new Set<string>();
  /** The last state seen of each object (namespace/name), to record its deletion. */
  private readonly lastSeen = new Map<string, { state: ObjectState; deletedBy: string }>();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: PolicyHistoryOptions) {}

  /** Follows the store: each object state it learns of, and after each (re-)list the whole cache. */
  start(): void {
    const objects = this.options.store.onObject((key) => void this.enqueue(() => this.observe(key)));
    const lists = this.options.store.onListed(() => void this.enqueue(() => this.reconcile()));
    this.unsubscribe = () => {
      objects();
      lists();
    };
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /** Revision names known to exist (at most historyLimit per policy lifetime recorded). */
  get knownRevisions(): number {
    return this.known.size;
  }

  /** Resolves when every recording queued so far finished. */
  idle(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task);
    this.queue = run.catch((error: unknown) => this.options.log?.({ level: "warn", msg: "recording policy history failed", error: String(error) }));
    return run.catch(() => undefined);
  }

  /**
   * History of a name, oldest first; undefined when none is recorded. It is the history of the
   * namespace that serves the name (or, for a name no longer served, the namespace it was last
   * changed in): a name used in two namespaces keeps two histories apart. Throws nothing: a
   * failed read is logged and answers undefined.
   */
  async read(name: string): Promise<readonly HistoryEntry[] | undefined> {
    const served = this.options.store.get(name)?.policy.target.namespace ?? this.options.namespace;
    const listed = await this.options.api.list(this.options.historyNamespace, revisionSelector(name, served));
    if (!listed.ok) {
      this.options.log?.({ level: "warn", msg: "reading policy history failed", policy: name, code: listed.code, reason: listed.reason });
      return undefined;
    }
    let revisions = listed.value;
    if (served === undefined && revisions.length > 0) {
      const latest = [...revisions].sort((a, b) => (entryOf(a)?.at ?? "").localeCompare(entryOf(b)?.at ?? "")).at(-1);
      revisions = revisions.filter((r) => latest !== undefined && policyNamespaceOf(r) === policyNamespaceOf(latest));
    }
    const entries = revisions.sort(historyOrder).map(entryOf).filter((e): e is HistoryEntry => e !== undefined);
    return entries.length === 0 ? undefined : Object.freeze(entries);
  }

  /** Records the state of one object the store just learned of (or its deletion). */
  private async observe(key: string): Promise<void> {
    const object = this.options.store.objects().get(key);
    const seen = this.lastSeen.get(key);
    if (object === undefined || (seen !== undefined && object.metadata.uid !== seen.state.uid)) {
      if (seen !== undefined) {
        this.lastSeen.delete(key);
        await this.recordDeletion(seen.state, seen.deletedBy);
      }
      if (object === undefined) return;
    }
    await this.recordObject(key, object);
  }

  private async recordObject(key: string, object: SamplingPolicyObject): Promise<void> {
    const state = stateOf(object);
    if (state === undefined) return;
    const annotations = object.metadata.annotations ?? {};
    const ours = annotations[specHashAnnotation] === specHash(object.spec);
    this.lastSeen.set(key, { state, deletedBy: ours && annotations[actionAnnotation] === "delete" ? (annotations[updatedByAnnotation] ?? outsidePrincipal) : outsidePrincipal });
    // Only an accepted generation is a state of the policy (a refused one never took effect).
    const inForce = this.options.store.recordOfKey(key);
    if (inForce === undefined || inForce.generation !== state.generation) return;
    const name = revisionName(state, false);
    if (this.known.has(`${state.namespace}/${name}`)) return;
    const record = inForce.record;
    const action = ours && isAction(annotations[actionAnnotation]) && annotations[actionAnnotation] !== "delete" ? annotations[actionAnnotation] : state.generation === 1 ? "create" : "replace";
    await this.create(state, name, { action, version: record.version, at: record.updatedAt, by: record.updatedBy, policy: record.policy });
  }

  private async recordDeletion(state: ObjectState, by: string): Promise<void> {
    const name = revisionName(state, true);
    if (this.known.has(`${state.namespace}/${name}`)) return;
    await this.create(state, name, { action: "delete", version: "", at: this.options.now().toISOString(), by });
  }

  /**
   * Reconciles the cluster's revisions with the cache: a revision for every live object's
   * accepted generation, and a deletion for every recorded lifetime whose object is gone.
   */
  private async reconcile(): Promise<void> {
    const listed = await this.options.api.list(this.options.historyNamespace, allRevisionsSelector);
    if (!listed.ok) {
      this.options.log?.({ level: "warn", msg: "listing policy history failed", code: listed.code, reason: listed.reason });
      return;
    }
    // Only the watched namespace's policies (another deployment may keep its history here too).
    const watched = listed.value.filter((r) => this.options.namespace === undefined || policyNamespaceOf(r) === this.options.namespace);
    // The revisions listed are those that exist: those trimmed since (by any replica) are forgotten.
    this.known.clear();
    for (const r of watched) if (r.metadata?.name !== undefined) this.known.add(`${policyNamespaceOf(r)}/${r.metadata.name}`);
    const objects = this.options.store.objects();
    const liveUids = new Set([...objects.values()].map((o) => o.metadata.uid));
    // Lifetimes with revisions, whose object is gone and whose deletion is not recorded.
    const lifetimes = new Map<string, { state: ObjectState; deleted: boolean }>();
    for (const r of watched) {
      const uid = r.metadata?.annotations?.[objectUidAnnotation];
      const name = r.metadata?.labels?.[policyLabel];
      if (uid === undefined || name === undefined || liveUids.has(uid)) continue;
      const id = `${policyNamespaceOf(r)}/${uid}`;
      const seen = lifetimes.get(id);
      const generation = Number(/-(\d+)$/.exec(r.metadata?.name ?? "")?.[1] ?? "0");
      const state: ObjectState = { namespace: policyNamespaceOf(r), name, uid, created: r.metadata?.annotations?.[objectCreatedAnnotation] ?? "", generation: Math.max(generation, seen?.state.generation ?? 0) };
      lifetimes.set(id, { state, deleted: (seen?.deleted ?? false) || entryOf(r)?.action === "delete" });
    }
    // Deletions first: a name's next lifetime comes after them.
    for (const { state, deleted } of lifetimes.values()) if (!deleted) await this.recordDeletion(state, outsidePrincipal);
    for (const [key, object] of objects) await this.recordObject(key, object);
  }

  private async create(state: ObjectState, name: string, data: Omit<HistoryEntry, "previousVersion">): Promise<void> {
    const { namespace } = state;
    const { historyNamespace } = this.options;
    const knownName = `${namespace}/${name}`;
    if (this.known.has(knownName)) return;
    const listed = await this.options.api.list(historyNamespace, revisionSelector(state.name, namespace));
    if (!listed.ok) {
      this.options.log?.({ level: "warn", msg: "recording policy history failed", policy: state.name, code: listed.code, reason: listed.reason });
      return;
    }
    const existing = listed.value.sort(historyOrder);
    if (existing.some((r) => r.metadata?.name === name)) {
      this.known.add(knownName);
      return;
    }
    // Numbered after every revision of the name; the state before it is the newest of those
    // (for a deletion, the newest of its own lifetime).
    const revision = (existing.at(-1)?.revision ?? 0) + 1;
    const before = data.action === "delete" ? existing.filter((r) => r.metadata?.annotations?.[objectUidAnnotation] === state.uid).at(-1) : existing.at(-1);
    const previous = before === undefined ? undefined : entryOf(before);
    const entry: HistoryEntry = { ...data, previousVersion: previous === undefined || previous.action === "delete" ? null : previous.version };
    if (data.action === "delete") entry.version = `${previous?.version ?? "unknown"}-deleted`;
    const created = await this.options.api.create(historyNamespace, {
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: {
        name,
        namespace: historyNamespace,
        labels: { [managedByLabel]: managedByValue, [policyLabel]: state.name, [policyNamespaceLabel]: namespace },
        annotations: { [objectUidAnnotation]: state.uid, [objectCreatedAnnotation]: state.created },
      },
      data: entry as unknown as object,
      revision,
    });
    if (!created.ok) {
      // Another replica recorded this state first: the same name, so the same entry.
      if (created.code === 409 && created.reason === "AlreadyExists") this.known.add(knownName);
      else this.options.log?.({ level: "warn", msg: "recording policy history failed", policy: state.name, code: created.code, reason: created.reason });
      return;
    }
    this.known.add(knownName);
    if (entry.by === outsidePrincipal) {
      this.options.audit?.({ who: outsidePrincipal, action: entry.action, policy: state.name, oldVersion: entry.previousVersion, newVersion: entry.action === "delete" ? null : entry.version, at: entry.at });
    }
    const all = [...existing, created.value].sort(historyOrder);
    for (const old of all.slice(0, Math.max(0, all.length - historyLimit))) {
      if (old.metadata?.name === undefined) continue;
      const removed = await this.options.api.delete(historyNamespace, old.metadata.name);
      if (!removed.ok && removed.code !== 404) this.options.log?.({ level: "warn", msg: "trimming policy history failed", policy: state.name, code: removed.code, reason: removed.reason });
      // What is trimmed is no longer known to exist: the set follows the revisions kept, not every one ever made.
      else this.known.delete(`${namespace}/${old.metadata.name}`);
    }
  }
}

function isAction(value: string | undefined): value is HistoryEntry["action"] {
  return value === "create" || value === "replace" || value === "patch" || value === "rollback" || value === "delete";
}
