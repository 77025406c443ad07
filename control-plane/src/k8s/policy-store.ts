// Policies as SamplingPolicy objects (tokentrace.dev/v1alpha1, scripts/crd.ts): in Kubernetes mode
// the cluster is the record, so `kubectl apply -f policy.yaml` works with no REST call and every
// replica serves the same policies. A policy named N targeting namespace NS is the object NS/N;
// its version (the ETag) is the object's resourceVersion, so REST preconditions become the API
// server's (a stale write is its 409). Reads come from an informer cache; a write this replica
// makes is applied to that cache before it is acknowledged. Who wrote a change travels in
// annotations the REST path sets; a change made any other way (kubectl) is attributed to
// "kubernetes". History is recorded as ControllerRevisions (history.ts).
// A policy changes when its object's generation does (the API server bumps it for spec changes
// only: customresource/strategy.go PrepareForUpdate), so status writes (conditions, the adaptive
// rates the leader publishes) and annotation edits neither make a new version nor reset adaptive
// sampling. A new generation that fails validation is reported (Accepted=False) and the object's
// last accepted policy stays in force, as a Deployment whose rollout fails keeps its old pods.
import { admitPolicy, deepFreeze, type PolicyCheck } from "../policy/admission.js";
import type { AuditSink } from "../policy/audit.js";
import { canonicalJson } from "../policy/canonical-json.js";
import { checkPreconditions } from "../policy/preconditions.js";
import { mergePatch } from "../policy/merge-patch.js";
import type { FieldError, HistoryEntry, Policy, PolicyRecord } from "../policy/model.js";
import type { KeepLiveThreshold, RateOverrides } from "../policy/effective.js";
import type { Admission, PolicyChange, PolicyRepository, QuarantinedRecord, WriteOptions, WriteResult } from "../policy/repository.js";
import type { Backoff, Delay } from "./backoff.js";
import type { CustomObject, CustomObjectApi, KubeFailure } from "./client.js";
import { Informer } from "./informer.js";

export const samplingPolicyGroup = "tokentrace.dev";
export const samplingPolicyVersion = "v1alpha1";
export const samplingPolicyPlural = "samplingpolicies";

/** Annotations a REST write sets; valid only while the spec still hashes to updated-spec. */
export const updatedByAnnotation = "tokentrace.dev/updated-by";
export const updatedAtAnnotation = "tokentrace.dev/updated-at";
export const actionAnnotation = "tokentrace.dev/action";
export const specHashAnnotation = "tokentrace.dev/updated-spec";
/** Who changed a policy when it was not the REST API (kubectl, GitOps). */
export const outsidePrincipal = "kubernetes";

/** A SamplingPolicy object (only the fields the store reads or writes are typed). */
export interface SamplingPolicyObject extends CustomObject {
  apiVersion: string;
  kind: "SamplingPolicy";
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    uid?: string;
    generation?: number;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  spec: { target?: Record<string, unknown>; pluginConfig?: unknown; adaptive?: unknown; [key: string]: unknown };
  status?: Record<string, unknown>;
}

/** The policy an object holds (name and target namespace from its metadata). */
export function policyOf(object: SamplingPolicyObject): unknown {
  const { target, ...rest } = object.spec ?? {};
  return { name: object.metadata.name, target: { namespace: object.metadata.namespace, ...(target ?? {}) }, ...rest };
}

function specOf(policy: Policy): SamplingPolicyObject["spec"] {
  const { name: _name, target, ...rest } = policy;
  const { namespace: _namespace, ...targetRest } = target;
  return { target: targetRest as Record<string, unknown>, ...rest };
}

/** A short hash of a spec, to tell a REST write's annotations from a later outside edit. */
export function specHash(spec: unknown): string {
  let h = 0x811c9dc5;
  const text = canonicalJson(spec);
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

interface Entry {
  key: string;
  /** The object as last seen (its status and resourceVersion may be newer than `record`). */
  object: SamplingPolicyObject;
  /** The policy this object serves: its current generation's, or the last accepted one while `errors` is set. */
  record?: PolicyRecord;
  /** The generation `record` was read from. */
  recordGeneration?: number;
  /** Why the current generation is not accepted. */
  errors?: FieldError[];
}

/** The adaptive rates a status carries, as `status.adaptive` (scripts/crd.ts). */
export interface AdaptiveStatus {
  /** The generation whose policy the rates were computed for. */
  observedGeneration: number;
  defaultRate?: number;
  routeRates?: { index: number; rate: number }[];
  /** The leader's live tail-keep thresholds (spans.keep.live), so that followers serve them too. */
  keepLive?: KeepLiveThreshold[];
}

/** The filter's cap on spans.keep.live (filter/config.schema.json maxItems), also the CRD's. */
export const MAX_STATUS_KEEP_LIVE = 128;

/** Overrides as a status field (route rates by rule index, ascending). */
export function adaptiveStatusOf(overrides: RateOverrides, generation: number): AdaptiveStatus {
  const out: AdaptiveStatus = { observedGeneration: generation };
  if (overrides.defaultRate !== undefined) out.defaultRate = overrides.defaultRate;
  const routeRates = [...overrides.routeRates].sort((a, b) => a[0] - b[0]).map(([index, rate]) => ({ index, rate }));
  if (routeRates.length > 0) out.routeRates = routeRates;
  if (overrides.keepLive !== undefined && overrides.keepLive.length > 0) out.keepLive = overrides.keepLive.map((t) => ({ ...t }));
  return out;
}

const isThresholdMs = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 3_600_000;
const isLabel = (v: unknown): v is string => typeof v === "string" && v.length >= 1 && v.length <= 64;

/**
 * The live thresholds a status carries, as the filter's schema accepts them (filter/config.schema.json
 * spans.keep.live): the status is anyone's to edit, and one bad entry would make every filter refuse
 * the config, so malformed entries are left out.
 */
function keepLiveOf(value: unknown): KeepLiveThreshold[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: KeepLiveThreshold[] = [];
  for (const entry of value.slice(0, MAX_STATUS_KEEP_LIVE) as unknown[]) {
    if (typeof entry !== "object" || entry === null) continue;
    const { route, model, durationMs, ttftMs } = entry as Record<string, unknown>;
    if (!isLabel(route) || (model !== undefined && !isLabel(model))) continue;
    if ((durationMs !== undefined && !isThresholdMs(durationMs)) || (ttftMs !== undefined && !isThresholdMs(ttftMs)) || (durationMs === undefined && ttftMs === undefined)) continue;
    out.push({ route, ...(model === undefined ? {} : { model }), ...(durationMs === undefined ? {} : { durationMs }), ...(ttftMs === undefined ? {} : { ttftMs }) });
  }
  return out.length > 0 ? out : undefined;
}

function overridesOf(status: unknown, generation: number | undefined): RateOverrides | undefined {
  if (typeof status !== "object" || status === null) return undefined;
  const adaptive = (status as { adaptive?: Partial<AdaptiveStatus> }).adaptive;
  // Rates computed for another generation belong to a policy that is no longer in force.
  if (adaptive === undefined || adaptive === null || generation === undefined || adaptive.observedGeneration !== generation) return undefined;
  const routeRates = new Map<number, number>();
  for (const r of adaptive.routeRates ?? []) routeRates.set(r.index, r.rate);
  const keepLive = keepLiveOf(adaptive.keepLive);
  return { ...(adaptive.defaultRate === undefined ? {} : { defaultRate: adaptive.defaultRate }), routeRates, ...(keepLive === undefined ? {} : { keepLive }) };
}

/** What the Kubernetes store needs. */
export interface KubernetesPolicyStoreOptions {
  api: CustomObjectApi<SamplingPolicyObject>;
  /** Namespace to watch; undefined = every namespace. */
  namespace: string | undefined;
  backoff: Backoff;
  delay: Delay;
  now: () => Date;
  audit?: AuditSink;
  check?: PolicyCheck;
  log?: (record: object) => void;
  /** History reader (ControllerRevisions); absent = no history. */
  history?: (name: string) => Promise<readonly HistoryEntry[] | undefined>;
}

/** The PolicyRepository whose record is the cluster's SamplingPolicy objects. */
export class KubernetesPolicyStore implements PolicyRepository {
  readonly informer: Informer<SamplingPolicyObject>;
  private readonly byKey = new Map<string, Entry>();
  /** The served record of each name (the oldest object of that name wins a cross-namespace clash). */
  private readonly served = new Map<string, Entry>();
  private readonly listeners = new Set<(change: PolicyChange) => void>();
  private readonly objectListeners = new Set<(key: string) => void>();
  private readonly listListeners = new Set<() => void>();
  /** Overrides read from each served object's status, by object (identity changes when the status does). */
  private readonly statusOverrides = new WeakMap<SamplingPolicyObject, RateOverrides | undefined>();
  private sorted: readonly PolicyRecord[] | undefined;
  /**
   * When the record of each object (namespace/name) was first seen at its version, for changes
   * made outside the REST API; one entry per object in the cache, dropped with the object.
   */
  private readonly seenAt = new Map<string, { version: string; at: string }>();
  /** Versions of objects this replica deleted: a late watch event carrying one must not bring it back. */
  private readonly tombstones = new Map<string, Set<string>>();

  constructor(private readonly options: KubernetesPolicyStoreOptions) {
    this.informer = new Informer<SamplingPolicyObject>({
      api: options.api,
      resource: samplingPolicyPlural,
      namespace: options.namespace,
      labelSelector: "",
      backoff: options.backoff,
      delay: options.delay,
      onChange: (key) => this.refresh(key),
      onSynced: () => {
        for (const listener of this.listListeners) listener();
      },
      log: options.log,
      now: () => options.now().getTime(),
    });
  }

  /** Starts the informer. */
  start(): void {
    this.informer.start();
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  // ---- reads -------------------------------------------------------------------------------

  get(name: string): PolicyRecord | undefined {
    return this.served.get(name)?.record;
  }

  list(): readonly PolicyRecord[] {
    if (this.sorted === undefined) {
      const records = [...this.served.values()].map((e) => e.record).filter((r): r is PolicyRecord => r !== undefined);
      records.sort((a, b) => (a.policy.name < b.policy.name ? -1 : a.policy.name > b.policy.name ? 1 : 0));
      this.sorted = Object.freeze(records);
    }
    return this.sorted;
  }

  get size(): number {
    return this.list().length;
  }

  history(name: string): Promise<readonly HistoryEntry[] | undefined> {
    return this.options.history?.(name) ?? Promise.resolve(undefined);
  }

  onChange(listener: (change: PolicyChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Objects whose first-seen time is remembered (at most one per object in the cache). */
  get rememberedVersions(): number {
    return this.seenAt.size;
  }

  /** Subscribes to every object the cache learns of (namespace/name), status-only changes included. */
  onObject(listener: (key: string) => void): () => void {
    this.objectListeners.add(listener);
    return () => this.objectListeners.delete(listener);
  }

  /** Subscribes to the end of every (re-)list of the objects. */
  onListed(listener: () => void): () => void {
    this.listListeners.add(listener);
    return () => this.listListeners.delete(listener);
  }

  /**
   * The adaptive rates (and live tail-keep thresholds) the leader published in the served object's status, when they were
   * computed for the generation in force; the same object for the same status, so the pull
   * endpoint's config cache (keyed by identity) recomputes exactly when they change.
   */
  publishedOverrides(name: string): RateOverrides | undefined {
    const entry = this.served.get(name);
    if (entry === undefined) return undefined;
    if (!this.statusOverrides.has(entry.object)) this.statusOverrides.set(entry.object, overridesOf(entry.object.status, entry.recordGeneration));
    return this.statusOverrides.get(entry.object);
  }

  /** The record object `key` (namespace/name) serves, and the generation it came from. */
  recordOfKey(key: string): { record: PolicyRecord; generation: number | undefined } | undefined {
    const entry = this.byKey.get(key);
    return entry?.record === undefined ? undefined : { record: entry.record, generation: entry.recordGeneration };
  }

  validate(document: unknown): Promise<Admission> {
    return Promise.resolve(admitPolicy(document, this.options.check));
  }

  quarantined(): readonly QuarantinedRecord[] {
    const out: QuarantinedRecord[] = [];
    for (const entry of this.byKey.values()) {
      if (entry.errors !== undefined) out.push({ name: entry.object.metadata.name, version: entry.object.metadata.resourceVersion ?? "", errors: entry.errors });
    }
    return out;
  }

  /** Objects whose name another namespace's older object already serves (not served; status says so). */
  conflicts(): { key: string; name: string; servedBy: string }[] {
    const out: { key: string; name: string; servedBy: string }[] = [];
    for (const entry of this.byKey.values()) {
      const winner = this.served.get(entry.object.metadata.name);
      if (winner !== undefined && winner.key !== entry.key && entry.record !== undefined) out.push({ key: entry.key, name: entry.object.metadata.name, servedBy: winner.key });
    }
    return out;
  }

  /** The stored objects by namespace/name (for the status writer and history). */
  objects(): ReadonlyMap<string, SamplingPolicyObject> {
    return this.informer.cache;
  }

  readiness(): { ok: boolean; detail: string } {
    if (!this.informer.hasSynced) return { ok: false, detail: this.informer.lastError ?? "waiting for the first list of samplingpolicies" };
    if (this.informer.lastError !== undefined) return { ok: false, detail: this.informer.lastError };
    const q = this.quarantined().length;
    return { ok: true, detail: `${this.size} policies (samplingpolicies)${q > 0 ? `, ${q} invalid` : ""}` };
  }

  // ---- cache -------------------------------------------------------------------------------

  private recordOf(object: SamplingPolicyObject): { record?: PolicyRecord; errors?: FieldError[] } {
    const admitted = admitPolicy(policyOf(object), this.options.check);
    if (!admitted.ok) return { errors: admitted.errors };
    const version = object.metadata.resourceVersion ?? "";
    const annotations = object.metadata.annotations ?? {};
    const ours = annotations[specHashAnnotation] === specHash(object.spec);
    let at = ours ? annotations[updatedAtAnnotation] : undefined;
    if (at === undefined) {
      const key = `${object.metadata.namespace ?? ""}/${object.metadata.name}`;
      const seen = this.seenAt.get(key);
      at = seen?.version === version ? seen.at : this.options.now().toISOString();
      this.seenAt.set(key, { version, at });
    }
    return { record: deepFreeze({ policy: admitted.policy, version, updatedAt: at, updatedBy: (ours ? annotations[updatedByAnnotation] : undefined) ?? outsidePrincipal }) };
  }

  /**
   * The entry for a new state of `key`'s object. The same object (uid) at the same generation
   * keeps its record (only status or metadata moved); a refused generation keeps the last
   * accepted record of the same object.
   */
  private entryFor(key: string, object: SamplingPolicyObject, previous: Entry | undefined): Entry {
    const sameObject = previous !== undefined && previous.object.metadata.uid === object.metadata.uid;
    const generation = object.metadata.generation;
    if (sameObject && previous.record !== undefined && generation !== undefined && previous.object.metadata.generation === generation) {
      return { ...previous, object };
    }
    const read = this.recordOf(object);
    if (read.record !== undefined) return { key, object, record: read.record, recordGeneration: generation };
    const lastGood = sameObject ? previous.record : undefined;
    return lastGood === undefined ? { key, object, errors: read.errors } : { key, object, record: lastGood, recordGeneration: previous?.recordGeneration, errors: read.errors };
  }

  /**
   * The resourceVersion a write of `entry` must be made at: the object's current one while the
   * record still is its current generation (status writes do not stale a reader's version), the
   * record's own otherwise (then the API server refuses the write: the reader never saw the
   * newer generation).
   */
  private writeVersion(entry: Entry): string | undefined {
    return entry.recordGeneration !== undefined && entry.recordGeneration === entry.object.metadata.generation ? entry.object.metadata.resourceVersion : entry.record?.version;
  }

  /** Recomputes what `key` (namespace/name) contributes, and publishes a change of the served record. */
  private refresh(key: string): void {
    let object = this.informer.cache.get(key);
    const dead = this.tombstones.get(key);
    if (object !== undefined && dead !== undefined) {
      if (dead.has(object.metadata.resourceVersion ?? "")) {
        this.informer.cache.delete(key);
        object = undefined;
      } else {
        // A newer object took the name (re-created): what was deleted can no longer arrive.
        this.tombstones.delete(key);
      }
    }
    const previousEntry = this.byKey.get(key);
    const name = object?.metadata.name ?? previousEntry?.object.metadata.name;
    if (name === undefined) return;
    if (object === undefined) {
      this.byKey.delete(key);
      this.seenAt.delete(key);
    } else if (previousEntry === undefined || previousEntry.object.metadata.resourceVersion !== object.metadata.resourceVersion) this.byKey.set(key, this.entryFor(key, object, previousEntry));
    const before = this.served.get(name)?.record ?? null;
    // The oldest valid object of the name wins (then namespace order), as a first-come reservation.
    const candidates = [...this.byKey.values()].filter((e) => e.object.metadata.name === name && e.record !== undefined);
    candidates.sort((a, b) => (a.object.metadata.creationTimestamp ?? "").localeCompare(b.object.metadata.creationTimestamp ?? "") || a.key.localeCompare(b.key));
    const winner = candidates[0];
    if (winner === undefined) this.served.delete(name);
    else this.served.set(name, winner);
    const after = winner?.record ?? null;
    for (const listener of this.objectListeners) listener(key);
    if ((before?.version ?? null) === (after?.version ?? null) && before?.policy.target.namespace === after?.policy.target.namespace) return;
    this.sorted = undefined;
    const annotations = winner?.object.metadata.annotations ?? {};
    const ours = winner !== undefined && annotations[specHashAnnotation] === specHash(winner.object.spec);
    const action: HistoryEntry["action"] = after === null ? "delete" : before === null ? "create" : ours && isAction(annotations[actionAnnotation]) ? annotations[actionAnnotation] : "replace";
    // A deletion the REST path made carries its principal on the last state of the object.
    const last = previousEntry?.object.metadata.annotations ?? {};
    const deletedBy = previousEntry !== undefined && last[actionAnnotation] === "delete" && last[specHashAnnotation] === specHash(previousEntry.object.spec) ? last[updatedByAnnotation] : undefined;
    const by = after === null ? (deletedBy ?? outsidePrincipal) : after.updatedBy;
    const change: PolicyChange = { name, action, by, at: after?.updatedAt ?? this.options.now().toISOString(), previous: before, current: after };
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        this.options.log?.({ level: "error", msg: "policy change listener failed", policy: name, error: String(error) });
      }
    }
  }

  /** Applies an object this replica just wrote (or deleted) to the cache, ahead of the watch. */
  private applied(key: string, object: SamplingPolicyObject | undefined): void {
    if (object === undefined) this.informer.cache.delete(key);
    else this.informer.cache.set(key, object);
    this.refresh(key);
  }

  // ---- writes ------------------------------------------------------------------------------

  private failure(failure: KubeFailure, options: WriteOptions, name: string): WriteResult {
    if (failure.code === 409 && failure.reason === "AlreadyExists") return { ok: false, kind: "exists" };
    if (failure.code === 409 || failure.code === 412) {
      // The API server's optimistic-concurrency answer: an If-Match write is a failed precondition (412).
      if (options.ifMatch !== undefined) return { ok: false, kind: "precondition-failed", header: "if-match" };
      return { ok: false, kind: "conflict", reason: `policy ${name} changed since version ${options.expectVersion ?? "read"}; get it again and apply your change to it` };
    }
    if (failure.code === 404) return { ok: false, kind: "not-found" };
    if (failure.code === 422) return { ok: false, kind: "invalid", errors: [{ field: "(body)", reason: failure.message }] };
    return { ok: false, kind: "unavailable", reason: `kubernetes API: ${failure.code === 0 ? failure.reason : `${failure.code} ${failure.reason}`}: ${failure.message}` };
  }

  private objectFor(policy: Policy, action: HistoryEntry["action"], by: string, current: SamplingPolicyObject | undefined): SamplingPolicyObject {
    const spec = specOf(policy);
    const at = this.options.now().toISOString();
    const metadata: SamplingPolicyObject["metadata"] = current === undefined ? { name: policy.name, namespace: policy.target.namespace } : { ...structuredClone(current.metadata) };
    metadata.annotations = { ...(metadata.annotations ?? {}), [updatedByAnnotation]: by, [updatedAtAnnotation]: at, [actionAnnotation]: action, [specHashAnnotation]: specHash(spec) };
    return { apiVersion: `${samplingPolicyGroup}/${samplingPolicyVersion}`, kind: "SamplingPolicy", metadata, spec, ...(current?.status === undefined ? {} : { status: current.status }) };
  }

  private audited(result: WriteResult, name: string, action: HistoryEntry["action"], by: string): WriteResult {
    if (result.ok && result.changed) {
      this.options.audit?.({ who: by, action, policy: name, oldVersion: result.previous?.version ?? null, newVersion: result.record?.version ?? null, at: result.record?.updatedAt ?? this.options.now().toISOString() });
    }
    return result;
  }

  /** Writes `policy` as the object of `name` (create when absent), after the REST preconditions. */
  private async write(name: string, policy: Policy, action: HistoryEntry["action"], options: WriteOptions, mustExist: boolean, mustNotExist: boolean): Promise<WriteResult> {
    const entry = this.served.get(name);
    const current = entry?.record ?? null;
    const failed = checkPreconditions(name, current, options);
    if (failed !== undefined) return failed;
    if (mustExist && current === null) return { ok: false, kind: "not-found" };
    if (mustNotExist && current !== null) return { ok: false, kind: "exists" };
    if (current !== null && current.policy.target.namespace !== policy.target.namespace) {
      return { ok: false, kind: "invalid", errors: [{ field: "target.namespace", reason: `cannot change in Kubernetes mode (the policy is the SamplingPolicy ${entry?.key}); delete it and create it in ${policy.target.namespace}` }] };
    }
    if (current !== null && canonicalJson(current.policy) === canonicalJson(policy)) return { ok: true, record: current, previous: current, changed: false };
    const object = this.objectFor(policy, current === null ? "create" : action, options.by, entry?.object);
    // The version the writer read is the precondition the API server enforces.
    // (checkPreconditions above held: a given expectVersion is the record's version.)
    if (entry !== undefined) object.metadata.resourceVersion = this.writeVersion(entry);
    const result = entry === undefined ? await this.options.api.create(object) : await this.options.api.replace(object);
    if (!result.ok) return this.failure(result, options, name);
    const key = `${result.value.metadata.namespace}/${result.value.metadata.name}`;
    this.applied(key, result.value);
    const record = this.byKey.get(key)?.record ?? null;
    return this.audited({ ok: true, record, previous: current, changed: true }, name, current === null ? "create" : action, options.by);
  }

  create(document: unknown, options: WriteOptions): Promise<WriteResult> {
    const admitted = admitPolicy(document, this.options.check);
    if (!admitted.ok) return Promise.resolve({ ok: false, kind: "invalid", errors: admitted.errors });
    return this.write(admitted.policy.name, admitted.policy, "create", options, false, true);
  }

  put(name: string, document: unknown, options: WriteOptions): Promise<WriteResult> {
    const admitted = admitPolicy(document, this.options.check);
    if (!admitted.ok) return Promise.resolve({ ok: false, kind: "invalid", errors: admitted.errors });
    if (admitted.policy.name !== name) return Promise.resolve({ ok: false, kind: "invalid", errors: [{ field: "name", reason: `must equal the name in the path (${name})` }] });
    return this.write(name, admitted.policy, "replace", options, false, false);
  }

  patch(name: string, patch: unknown, options: WriteOptions): Promise<WriteResult> {
    const current = this.served.get(name)?.record;
    if (current === undefined) return Promise.resolve({ ok: false, kind: "not-found" });
    const admitted = admitPolicy(mergePatch(current.policy, patch), this.options.check);
    if (!admitted.ok) return Promise.resolve({ ok: false, kind: "invalid", errors: admitted.errors });
    if (admitted.policy.name !== name) return Promise.resolve({ ok: false, kind: "invalid", errors: [{ field: "name", reason: "the name of a policy cannot change" }] });
    return this.write(name, admitted.policy, "patch", { ...options, expectVersion: options.expectVersion ?? current.version }, true, false);
  }

  async delete(name: string, options: WriteOptions): Promise<WriteResult> {
    const entry = this.served.get(name);
    const current = entry?.record ?? null;
    if (entry === undefined || current === null) return { ok: false, kind: "not-found" };
    const failed = checkPreconditions(name, current, options);
    if (failed !== undefined) return failed;
    // A deletion leaves no object to say who made it: the object is first annotated (so the last
    // state every watcher sees names the principal), then deleted at exactly that version.
    const marked = this.objectFor(current.policy, "delete", options.by, entry.object);
    marked.metadata.resourceVersion = this.writeVersion(entry);
    const annotated = await this.options.api.replace(marked);
    if (!annotated.ok) return this.failure(annotated, options, name);
    this.informer.cache.set(entry.key, annotated.value);
    this.byKey.set(entry.key, this.entryFor(entry.key, annotated.value, entry));
    const result = await this.options.api.delete(entry.object.metadata.namespace, entry.object.metadata.name, annotated.value.metadata.resourceVersion);
    if (!result.ok) return this.failure(result, options, name);
    this.tombstones.set(entry.key, new Set([entry.object.metadata.resourceVersion ?? "", annotated.value.metadata.resourceVersion ?? ""]));
    this.applied(entry.key, undefined);
    return this.audited({ ok: true, record: null, previous: current, changed: true }, name, "delete", options.by);
  }

  async rollback(name: string, version: string, options: WriteOptions): Promise<WriteResult> {
    const history = await this.history(name);
    if (history === undefined || history.length === 0) return { ok: false, kind: "not-found" };
    const entry = history.find((h) => h.version === version && h.policy !== undefined);
    if (entry?.policy === undefined) return { ok: false, kind: "version-not-found" };
    const admitted = admitPolicy(entry.policy, this.options.check);
    if (!admitted.ok) return { ok: false, kind: "invalid", errors: admitted.errors };
    return this.write(name, admitted.policy, "rollback", options, false, false);
  }
}

function isAction(value: string | undefined): value is HistoryEntry["action"] {
  return value === "create" || value === "replace" || value === "patch" || value === "rollback" || value === "delete";
}
