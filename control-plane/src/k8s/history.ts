// Policy history in the cluster: one apps/v1 ControllerRevision per change (the object StatefulSets
// keep their history in: immutable `data`, a `revision` number), labelled with the policy's name,
// in the policy's namespace, at most `historyLimit` per policy (the oldest are deleted). Only the
// leader records, from the changes its informer sees, so each change is recorded once whichever
// replica (or kubectl) made it; any replica reads. Changes made outside the REST API are audited
// here too (the REST path audits its own).
import { AppsV1Api, type KubeConfig, type V1ControllerRevision } from "@kubernetes/client-node";
import type { AuditSink } from "../policy/audit.js";
import type { HistoryEntry } from "../policy/model.js";
import type { PolicyChange } from "../policy/repository.js";
import { attempt, type KubeResult } from "./client.js";
import { outsidePrincipal } from "./policy-store.js";
import { managedByLabel, managedByValue, policyLabel } from "./wasmplugin.js";

/** History entries kept per policy (as the embedded store keeps). */
export const historyLimit = 50;

/** The ControllerRevision calls history makes. */
export interface RevisionApi {
  list(namespace: string | undefined, labelSelector: string): Promise<KubeResult<V1ControllerRevision[]>>;
  create(namespace: string, revision: V1ControllerRevision): Promise<KubeResult<V1ControllerRevision>>;
  delete(namespace: string, name: string): Promise<KubeResult<void>>;
}


/** client-node implementation. */
export class ClientNodeRevisionApi implements RevisionApi {
  private readonly api: AppsV1Api;
  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(AppsV1Api);
  }
  list(namespace: string | undefined, labelSelector: string): Promise<KubeResult<V1ControllerRevision[]>> {
    return attempt(async () => (namespace === undefined ? await this.api.listControllerRevisionForAllNamespaces({ labelSelector }) : await this.api.listNamespacedControllerRevision({ namespace, labelSelector })).items);
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

/** Label selector of one policy's revisions. */
export const revisionSelector = (policy: string): string => `${managedByLabel}=${managedByValue},${policyLabel}=${policy}`;

function entryOf(revision: V1ControllerRevision): HistoryEntry | undefined {
  const data = revision.data as Partial<HistoryEntry> | undefined;
  if (data === undefined || typeof data.version !== "string" || typeof data.action !== "string") return undefined;
  return data as HistoryEntry;
}

/** Reads and (on the leader) records policy history as ControllerRevisions. */
export class PolicyHistory {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly options: { api: RevisionApi; namespace: string | undefined; audit?: AuditSink; log?: (record: object) => void },
  ) {}

  /** History of a name, oldest first; undefined when none is recorded. Throws nothing: a failed read is logged and answers undefined. */
  async read(name: string): Promise<readonly HistoryEntry[] | undefined> {
    const listed = await this.options.api.list(this.options.namespace, revisionSelector(name));
    if (!listed.ok) {
      this.options.log?.({ level: "warn", msg: "reading policy history failed", policy: name, code: listed.code, reason: listed.reason });
      return undefined;
    }
    const entries = listed.value.sort((a, b) => a.revision - b.revision).map(entryOf).filter((e): e is HistoryEntry => e !== undefined);
    return entries.length === 0 ? undefined : Object.freeze(entries);
  }

  /** Records one change (serialised: revisions of a policy are numbered in order). */
  record(change: PolicyChange): Promise<void> {
    const run = this.queue.then(() => this.recordNow(change));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async recordNow(change: PolicyChange): Promise<void> {
    const record = change.current ?? change.previous;
    if (record === null) return;
    const namespace = record.policy.target.namespace;
    const version = change.current?.version ?? `${change.previous?.version ?? ""}-deleted`;
    const listed = await this.options.api.list(namespace, revisionSelector(change.name));
    if (!listed.ok) {
      this.options.log?.({ level: "warn", msg: "recording policy history failed", policy: change.name, code: listed.code, reason: listed.reason });
      return;
    }
    const existing = listed.value.sort((a, b) => a.revision - b.revision);
    // A leader that took over may see a change again: record each version once.
    if (existing.some((r) => entryOf(r)?.version === version)) return;
    const entry: HistoryEntry = { action: change.action, version, previousVersion: change.previous?.version ?? null, at: change.at, by: change.by };
    if (change.current !== null) entry.policy = change.current.policy;
    const revision = (existing.at(-1)?.revision ?? 0) + 1;
    const created = await this.options.api.create(namespace, {
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: { name: `samplingpolicy-${change.name}-${revision}`, namespace, labels: { [managedByLabel]: managedByValue, [policyLabel]: change.name } },
      data: entry as unknown as object,
      revision,
    });
    if (!created.ok) {
      this.options.log?.({ level: "warn", msg: "recording policy history failed", policy: change.name, code: created.code, reason: created.reason });
      return;
    }
    if (change.by === outsidePrincipal) {
      this.options.audit?.({ who: outsidePrincipal, action: change.action, policy: change.name, oldVersion: change.previous?.version ?? null, newVersion: change.current?.version ?? null, at: change.at });
    }
    for (const old of existing.slice(0, Math.max(0, existing.length + 1 - historyLimit))) {
      if (old.metadata?.name !== undefined) await this.options.api.delete(namespace, old.metadata.name);
    }
  }
}
