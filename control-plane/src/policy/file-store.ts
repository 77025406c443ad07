// The file-backed policy repository (embedded mode). State lives in memory, indexed by name in a
// Map; every change is one journal line (journal.ts) holding the new record and its audit facts,
// fsynced before the write is acknowledged and before anyone can read the change. Writes queue
// and commit in batches on the next turn of the event loop: one append and one fsync for every
// write that arrived since the last batch (group commit), so concurrent writers share the disk's
// latency. A batch that cannot be appended changes nothing and every write in it answers
// `unavailable`.
//
// At start the snapshot and journal are replayed and every current record is validated again
// with today's rules: a record that fails is quarantined (logged, counted, never served, kept on
// disk as it was until the name is written again), and the rest are served. A journal line of a
// type this version does not know (a newer version wrote it, then was rolled back) stops the
// start with a message naming the file, the line and the type: applying the lines around it
// would serve a state that never was, and skipping it would lose it at the next compaction, as
// the snapshot path already refuses a format it does not know.
import type { AuditRecord, AuditSink } from "./audit.js";
import { admitPolicy, deepFreeze, type PolicyCheck } from "./admission.js";
import { canonicalJson } from "./canonical-json.js";
import { PolicyJournal, type JournalLine, type Snapshot } from "./journal.js";
import { mergePatch } from "./merge-patch.js";
import type { FieldError, HistoryEntry, Policy, PolicyRecord } from "./model.js";
import { checkPreconditions } from "./preconditions.js";
import { StoreLock } from "./store-lock.js";
import { writeProbe } from "./write-probe.js";
import type { Admission, PolicyChange, PolicyRepository, QuarantinedRecord, WriteFailure, WriteOptions, WriteResult } from "./repository.js";
import type { FileSystem } from "../storage/file-system.js";

/** History entries kept per policy (oldest dropped first). */
export const historyLimit = 50;

/** Compaction starts once the journal is larger than this and than the snapshot. */
export const defaultCompactMinBytes = 1 << 20;

const actions = new Set<HistoryEntry["action"]>(["create", "replace", "patch", "rollback", "delete"]);

interface Slot {
  current: PolicyRecord | null;
  /** Canonical JSON of current.policy: a write whose result equals it is a no-op. */
  canonical: string | null;
  history: readonly HistoryEntry[];
  /** The stored record when it failed validation at load: kept on disk as it was, never served. */
  quarantined?: { stored: unknown; version: string; errors: FieldError[] };
}

/** A journal line recording one change: the record after it and who made it (the audit facts). */
interface ChangeLine {
  type: "change";
  name: string;
  action: HistoryEntry["action"];
  version: string;
  previousVersion: string | null;
  at: string;
  by: string;
  policy?: Policy;
}

/** A journal line saying audit lines were emitted for every change up to `through` (not fsynced). */
interface AuditedLine {
  type: "audited";
  through: number;
}

type Plan = { fail: WriteFailure } | { unchanged: PolicyRecord | null } | { next: Policy | null; canonical: string | null; action: HistoryEntry["action"] };

interface PendingWrite {
  name: string;
  options: WriteOptions;
  plan: (slot: Slot | undefined) => Plan;
  resolve: (result: WriteResult) => void;
  reject: (error: unknown) => void;
}

/** Options of the file store. */
export interface FileStoreOptions {
  /** The snapshot file; the journal is `<path>.journal`. */
  path: string;
  /** fsync appends and snapshots (default true). */
  fsync?: boolean;
  now?: () => Date;
  /** Receives one audit record per committed change (and recovered ones at start). */
  audit?: AuditSink;
  log?: (record: object) => void;
  /** Deployment-specific checks every stored policy must also pass. */
  check?: PolicyCheck;
  compactMinBytes?: number;
  /** The journal to use (tests inject failures through a subclass). */
  journal?: PolicyJournal;
  /** The file system of the snapshot and journal (tests: a simulated disk); node:fs by default. */
  fs?: FileSystem;
  /** Take `<path>.lock` for the store's lifetime (store-lock.ts); default true on node:fs, false on an injected fs. */
  lock?: boolean;
  /** After a failed write, readiness asks this whether the store's directory takes writes again (default: write-probe.ts). */
  probe?: () => void;
  /** Milliseconds clock of the probe's rate limit. */
  nowMs?: () => number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isVersion(value: unknown): value is string {
  return typeof value === "string" && /^[1-9][0-9]{0,15}$/.test(value);
}

/** Current policies with history, journaled to a file. */
export class FilePolicyStore implements PolicyRepository {
  private readonly slots = new Map<string, Slot>();
  private readonly listeners = new Set<(change: PolicyChange) => void>();
  private readonly journal: PolicyJournal;
  private readonly now: () => Date;
  private readonly log: (record: object) => void;
  private readonly quarantine: QuarantinedRecord[] = [];
  private nextVersion = 1;
  private auditedThrough = 0;
  private currentCount = 0;
  private sorted: readonly PolicyRecord[] | undefined;
  private queue: PendingWrite[] = [];
  private committing = false;
  private idleWaiters: (() => void)[] = [];
  private readonly lock: StoreLock | undefined;
  /** Why the last write failed, until a write or a probe succeeds. */
  private writeFailure: string | undefined;
  private probedAtMs = -Infinity;

  constructor(private readonly options: FileStoreOptions) {
    this.journal = options.journal ?? new PolicyJournal(options.path, { ...(options.fsync === undefined ? {} : { fsync: options.fsync }), ...(options.fs ? { fs: options.fs } : {}) });
    this.now = options.now ?? (() => new Date());
    this.log = options.log ?? (() => undefined);
    // One process owns the file: a second one stops here, naming the holder.
    // A simulated disk (options.fs) has no processes to exclude, so it takes no lock unless asked.
    this.lock = (options.lock ?? options.fs === undefined) ? StoreLock.acquire(options.path) : undefined;
    try {
      this.load();
    } catch (error) {
      this.lock?.release();
      throw error;
    }
  }

  // ---- reads -------------------------------------------------------------------------------

  get(name: string): PolicyRecord | undefined {
    return this.slots.get(name)?.current ?? undefined;
  }

  list(): readonly PolicyRecord[] {
    if (this.sorted === undefined) {
      const records: PolicyRecord[] = [];
      for (const slot of this.slots.values()) if (slot.current !== null) records.push(slot.current);
      records.sort((a, b) => (a.policy.name < b.policy.name ? -1 : a.policy.name > b.policy.name ? 1 : 0));
      this.sorted = Object.freeze(records);
    }
    return this.sorted;
  }

  get size(): number {
    return this.currentCount;
  }

  history(name: string): Promise<readonly HistoryEntry[] | undefined> {
    const slot = this.slots.get(name);
    return Promise.resolve(slot === undefined || slot.history.length === 0 ? undefined : slot.history);
  }

  onChange(listener: (change: PolicyChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  quarantined(): readonly QuarantinedRecord[] {
    return this.quarantine;
  }

  readiness(): { ok: boolean; detail: string } {
    const broken = this.journal.broken;
    if (broken !== undefined) return { ok: false, detail: broken };
    const lost = this.lock?.lost();
    if (lost !== undefined) return { ok: false, detail: lost };
    if (this.writeFailure !== undefined) {
      // Ready again once the directory takes a write: probed at most once a second.
      const now = (this.options.nowMs ?? Date.now)();
      if (now - this.probedAtMs >= 1000) {
        this.probedAtMs = now;
        try {
          (this.options.probe ?? (() => writeProbe(this.options.path, this.options.fs)))();
          this.writeFailure = undefined;
        } catch (error) {
          this.writeFailure = `the store cannot write: ${(error as Error).message}`;
        }
      }
      if (this.writeFailure !== undefined) return { ok: false, detail: this.writeFailure };
    }
    const q = this.quarantine.length;
    return { ok: true, detail: `${this.currentCount} policies${q > 0 ? `, ${q} quarantined` : ""}` };
  }

  validate(document: unknown): Promise<Admission> {
    return Promise.resolve(admitPolicy(document, this.options.check));
  }

  /** Resolves when no write is queued or committing (tests, shutdown). */
  whenIdle(): Promise<void> {
    if (!this.committing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Closes the journal file; the store must not be used afterwards. */
  async close(): Promise<void> {
    await this.whenIdle();
    this.journal.close();
    this.lock?.release();
  }

  // ---- writes ------------------------------------------------------------------------------

  create(document: unknown, options: WriteOptions): Promise<WriteResult> {
    const admitted = admitPolicy(document, this.options.check);
    if (!admitted.ok) return Promise.resolve({ ok: false, kind: "invalid", errors: admitted.errors });
    const policy = admitted.policy;
    const canonical = canonicalJson(policy);
    return this.enqueue(policy.name, options, (slot) => {
      const current = slot?.current ?? null;
      const failed = checkPreconditions(policy.name, current, options);
      if (failed !== undefined) return { fail: failed };
      if (current !== null) return { fail: { ok: false, kind: "exists" } };
      return { next: policy, canonical, action: "create" };
    });
  }

  put(name: string, document: unknown, options: WriteOptions): Promise<WriteResult> {
    const admitted = admitPolicy(document, this.options.check);
    if (!admitted.ok) return Promise.resolve({ ok: false, kind: "invalid", errors: admitted.errors });
    const policy = admitted.policy;
    if (policy.name !== name) return Promise.resolve({ ok: false, kind: "invalid", errors: [{ field: "name", reason: `must equal the name in the path (${name})` }] });
    const canonical = canonicalJson(policy);
    return this.enqueue(name, options, (slot) => {
      const current = slot?.current ?? null;
      const failed = checkPreconditions(name, current, options);
      if (failed !== undefined) return { fail: failed };
      if (current !== null && slot?.canonical === canonical) return { unchanged: current };
      return { next: policy, canonical, action: current === null ? "create" : "replace" };
    });
  }

  patch(name: string, patch: unknown, options: WriteOptions): Promise<WriteResult> {
    return this.enqueue(name, options, (slot) => {
      const current = slot?.current ?? null;
      if (current === null) return { fail: { ok: false, kind: "not-found" } };
      const failed = checkPreconditions(name, current, options);
      if (failed !== undefined) return { fail: failed };
      const admitted = admitPolicy(mergePatch(current.policy, patch), this.options.check);
      if (!admitted.ok) return { fail: { ok: false, kind: "invalid", errors: admitted.errors } };
      if (admitted.policy.name !== name) return { fail: { ok: false, kind: "invalid", errors: [{ field: "name", reason: "the name of a policy cannot change" }] } };
      const canonical = canonicalJson(admitted.policy);
      if (canonical === slot?.canonical) return { unchanged: current };
      return { next: admitted.policy, canonical, action: "patch" };
    });
  }

  delete(name: string, options: WriteOptions): Promise<WriteResult> {
    return this.enqueue(name, options, (slot) => {
      const current = slot?.current ?? null;
      if (current === null) return { fail: { ok: false, kind: "not-found" } };
      const failed = checkPreconditions(name, current, options);
      if (failed !== undefined) return { fail: failed };
      return { next: null, canonical: null, action: "delete" };
    });
  }

  rollback(name: string, version: string, options: WriteOptions): Promise<WriteResult> {
    return this.enqueue(name, options, (slot) => {
      if (slot === undefined || slot.history.length === 0) return { fail: { ok: false, kind: "not-found" } };
      const current = slot.current;
      const failed = checkPreconditions(name, current, options);
      if (failed !== undefined) return { fail: failed };
      const entry = slot.history.find((h) => h.version === version && h.policy !== undefined);
      if (entry?.policy === undefined) return { fail: { ok: false, kind: "version-not-found" } };
      // Re-admitted: an old version must pass today's rules to become current again.
      const admitted = admitPolicy(entry.policy, this.options.check);
      if (!admitted.ok) return { fail: { ok: false, kind: "invalid", errors: admitted.errors } };
      const canonical = canonicalJson(admitted.policy);
      if (current !== null && canonical === slot.canonical) return { unchanged: current };
      return { next: admitted.policy, canonical, action: "rollback" };
    });
  }

  private enqueue(name: string, options: WriteOptions, plan: PendingWrite["plan"]): Promise<WriteResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ name, options, plan, resolve, reject });
      if (!this.committing) {
        this.committing = true;
        // The next turn: every write whose request was read in this one joins the batch.
        setImmediate(() => void this.commitLoop());
      }
    });
  }

  private async commitLoop(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        try {
          this.commit(batch);
        } catch (error) {
          // A bug, not a disk failure (those are typed results): no writer may wait forever.
          this.log({ level: "error", msg: "policy store commit crashed", error: String(error) });
          for (const write of batch) write.reject(error);
        }
        await this.compactIfDue();
      }
    } finally {
      this.committing = false;
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /** Plans every write of the batch against the state the earlier ones leave, appends once, then publishes. */
  private commit(batch: PendingWrite[]): void {
    const staged = new Map<string, Slot>();
    const lines: ChangeLine[] = [];
    const changes: PolicyChange[] = [];
    const results: (WriteResult | { error: unknown })[] = [];
    let nextVersion = this.nextVersion;
    for (const write of batch) {
      const slot = staged.get(write.name) ?? this.slots.get(write.name);
      let plan: Plan;
      try {
        plan = write.plan(slot);
      } catch (error) {
        results.push({ error });
        continue;
      }
      if ("fail" in plan) {
        results.push(plan.fail);
        continue;
      }
      const current = slot?.current ?? null;
      if ("unchanged" in plan) {
        results.push({ ok: true, record: plan.unchanged, previous: current, changed: false });
        continue;
      }
      const version = String(nextVersion++);
      const at = this.now().toISOString();
      const by = write.options.by;
      const record: PolicyRecord | null = plan.next === null ? null : deepFreeze({ policy: plan.next, version, updatedAt: at, updatedBy: by });
      const entry: HistoryEntry = { action: plan.action, version, previousVersion: current?.version ?? null, at, by };
      if (plan.next !== null) entry.policy = plan.next;
      const history = [...(slot?.history ?? []), deepFreeze(entry)];
      if (history.length > historyLimit) history.splice(0, history.length - historyLimit);
      staged.set(write.name, { current: record, canonical: plan.canonical, history: Object.freeze(history) });
      const line: ChangeLine = { type: "change", name: write.name, action: plan.action, version, previousVersion: entry.previousVersion, at, by };
      if (plan.next !== null) line.policy = plan.next;
      lines.push(line);
      changes.push({ name: write.name, action: plan.action, by, at, previous: current, current: record });
      results.push({ ok: true, record, previous: current, changed: true });
    }

    if (lines.length > 0) {
      try {
        const lost = this.lock?.lost();
        if (lost !== undefined) throw new Error(lost);
        this.journal.append(lines, true);
        this.writeFailure = undefined;
      } catch (error) {
        const reason = `policy journal append failed: ${(error as Error).message ?? String(error)}`;
        this.writeFailure = reason;
        this.log({ level: "error", msg: "policy store write failed; nothing changed", error: reason });
        // Answers planned against the batch's unwritten state may be wrong too: none of them stand.
        for (const write of batch) write.resolve({ ok: false, kind: "unavailable", reason });
        return;
      }
      for (const [name, slot] of staged) {
        const before = this.slots.get(name)?.current ?? null;
        if (before === null && slot.current !== null) this.currentCount += 1;
        if (before !== null && slot.current === null) this.currentCount -= 1;
        if (this.slots.get(name)?.quarantined !== undefined) this.unquarantine(name);
        this.slots.set(name, slot);
      }
      this.nextVersion = nextVersion;
      this.sorted = undefined;
      for (const change of changes) this.publish(change);
      this.markAudited(nextVersion - 1);
    }
    batch.forEach((write, i) => {
      const result = results[i] as WriteResult | { error: unknown };
      if ("error" in result) write.reject(result.error);
      else write.resolve(result);
    });
  }

  private publish(change: PolicyChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        this.log({ level: "error", msg: "policy change listener failed", policy: change.name, error: String(error) });
      }
    }
    this.options.audit?.(auditOf(change.name, change.action, change.by, change.at, change.previous?.version ?? null, change.current?.version ?? null));
  }

  /** Records (without fsync: a lost mark only repeats a line) that audit lines went out up to `through`. */
  private markAudited(through: number): void {
    if (this.options.audit === undefined) {
      this.auditedThrough = through;
      return;
    }
    try {
      const line: AuditedLine = { type: "audited", through };
      this.journal.append([line], false);
      this.auditedThrough = through;
    } catch (error) {
      this.log({ level: "warn", msg: "could not record emitted audit lines; they may repeat after a restart", error: String(error) });
    }
  }

  private unquarantine(name: string): void {
    const index = this.quarantine.findIndex((q) => q.name === name);
    if (index >= 0) this.quarantine.splice(index, 1);
  }

  private async compactIfDue(): Promise<void> {
    const minBytes = this.options.compactMinBytes ?? defaultCompactMinBytes;
    if (this.journal.journalBytes <= Math.max(minBytes, this.journal.snapshotBytes)) return;
    try {
      await this.journal.compact(this.snapshot());
    } catch (error) {
      // The journal keeps everything; compaction is retried after the next write.
      this.log({ level: "warn", msg: "policy store compaction failed", error: String(error) });
    }
  }

  private snapshot(): Snapshot {
    const policies: [string, unknown][] = [];
    for (const [name, slot] of this.slots) {
      policies.push([name, { current: slot.quarantined?.stored ?? slot.current, history: slot.history }]);
    }
    // Object.fromEntries defines own properties, so no name can reach a prototype.
    return { formatVersion: 2, nextVersion: this.nextVersion, auditedThrough: this.auditedThrough, policies: Object.fromEntries(policies) };
  }

  // ---- start-up ----------------------------------------------------------------------------

  private load(): void {
    const contents = this.journal.load();
    for (const file of contents.removedTemporaries) this.log({ level: "warn", msg: "policy store: removed a temporary file left by an interrupted write", file });
    if (contents.tornBytes > 0) {
      const preserved = contents.preservedBytes > 0 ? { preservedBytes: contents.preservedBytes, preservedIn: this.journal.rejectedPath } : {};
      this.log({ level: "warn", msg: "policy store: cut a torn journal line left by a crash (never acknowledged)", bytes: contents.tornBytes, ...preserved });
    }
    for (const bad of contents.corrupt) {
      this.log({ level: "error", msg: "policy store: corrupt journal line skipped", line: bad.line, reason: bad.reason });
      this.quarantine.push({ name: "(journal)", version: `line ${bad.line}`, errors: [{ field: "(record)", reason: bad.reason }] });
    }
    // The stored current record of each name, validated once replay has found the last one.
    const stored = new Map<string, unknown>();
    const snapshot = contents.snapshot;
    if (snapshot !== undefined) {
      this.nextVersion = snapshot.nextVersion;
      this.auditedThrough = snapshot.auditedThrough ?? snapshot.nextVersion - 1;
      for (const [name, raw] of Object.entries(snapshot.policies)) this.loadSlot(name, raw, stored);
    }
    const unaudited: ChangeLine[] = [];
    for (const { line, entry, raw } of contents.lines) {
      this.refuseUnknownType(line, entry);
      const parsed = this.parseLine(entry);
      if (parsed === undefined) {
        this.journal.preserve(raw);
        this.log({ level: "error", msg: "policy store: malformed journal record skipped", line });
        this.quarantine.push({ name: "(journal)", version: `line ${line}`, errors: [{ field: "(record)", reason: "malformed record" }] });
        continue;
      }
      if (parsed.type === "audited") {
        this.auditedThrough = Math.max(this.auditedThrough, parsed.through);
        continue;
      }
      const version = Number(parsed.version);
      if (version < this.nextVersion) continue; // already in the snapshot (crash during compaction)
      this.nextVersion = version + 1;
      this.applyLoaded(parsed, stored);
      unaudited.push(parsed);
    }
    for (const [name, record] of stored) {
      const slot = this.slots.get(name) as Slot;
      this.slots.set(name, { ...this.admitStored(name, record), history: slot.history });
      if (this.slots.get(name)?.current) this.currentCount += 1;
    }
    // Changes committed before a crash whose audit line may not have gone out: emit them now.
    const recovered = unaudited.filter((c) => Number(c.version) > this.auditedThrough);
    if (this.options.audit !== undefined && recovered.length > 0) {
      for (const c of recovered) this.options.audit({ ...auditOf(c.name, c.action, c.by, c.at, c.previousVersion, c.policy === undefined ? null : c.version), recovered: true });
      this.journal.append([{ type: "audited", through: this.nextVersion - 1 } satisfies AuditedLine], false);
    }
    this.auditedThrough = Math.max(this.auditedThrough, this.nextVersion - 1);
  }

  /** Throws when a journal line is of a type this version does not know (see the top of this file). */
  private refuseUnknownType(line: JournalLine["line"], entry: unknown): void {
    if (!isRecord(entry) || typeof entry.type !== "string" || entry.type === "change" || entry.type === "audited") return;
    const type = JSON.stringify(entry.type.length > 64 ? `${entry.type.slice(0, 64)}...` : entry.type);
    throw new Error(
      `policy store ${this.journal.journalPath}: line ${line} is of type ${type}, which this version does not know ` +
        "(written by a newer version?); refusing to start rather than drop it: run the version that wrote it",
    );
  }

  /** A journal entry as the store wrote it, or undefined when its shape is wrong. */
  private parseLine(entry: unknown): ChangeLine | AuditedLine | undefined {
    if (!isRecord(entry)) return undefined;
    if (entry.type === "audited") return Number.isSafeInteger(entry.through) ? { type: "audited", through: entry.through as number } : undefined;
    if (entry.type !== "change") return undefined;
    const { name, action, version, previousVersion, at, by, policy } = entry;
    if (typeof name !== "string" || !actions.has(action as HistoryEntry["action"]) || !isVersion(version)) return undefined;
    if (previousVersion !== null && !isVersion(previousVersion)) return undefined;
    if (typeof at !== "string" || typeof by !== "string") return undefined;
    if ((action === "delete") !== (policy === undefined)) return undefined;
    const line: ChangeLine = { type: "change", name, action: action as HistoryEntry["action"], version, previousVersion, at, by };
    if (policy !== undefined) line.policy = policy as Policy;
    return line;
  }

  /** Applies a journal change at start-up; the record it makes current is validated once replay ends. */
  private applyLoaded(change: ChangeLine, stored: Map<string, unknown>): void {
    const slot = this.slots.get(change.name);
    const entry: HistoryEntry = { action: change.action, version: change.version, previousVersion: change.previousVersion, at: change.at, by: change.by };
    if (change.policy !== undefined) entry.policy = change.policy;
    const history = [...(slot?.history ?? []), deepFreeze(entry)];
    if (history.length > historyLimit) history.splice(0, history.length - historyLimit);
    this.slots.set(change.name, { current: null, canonical: null, history: Object.freeze(history) });
    stored.set(change.name, change.policy === undefined ? null : { policy: change.policy, version: change.version, updatedAt: change.at, updatedBy: change.by });
  }

  /** A snapshot slot: its current record (validated) and history (entries of the wrong shape dropped). */
  private loadSlot(name: string, raw: unknown, stored: Map<string, unknown>): void {
    const value = isRecord(raw) ? raw : {};
    const history: HistoryEntry[] = [];
    let previous: string | null = null;
    for (const item of Array.isArray(value.history) ? (value.history as unknown[]) : []) {
      if (!isRecord(item) || !actions.has(item.action as HistoryEntry["action"]) || !isVersion(item.version) || typeof item.at !== "string" || typeof item.by !== "string") {
        this.log({ level: "warn", msg: "policy store: malformed history entry dropped", policy: name });
        continue;
      }
      // Format 1 had no previousVersion: it is the version before, unless that was a deletion.
      const previousVersion = isVersion(item.previousVersion) ? item.previousVersion : item.previousVersion === null ? null : previous;
      const entry: HistoryEntry = { action: item.action as HistoryEntry["action"], version: item.version, previousVersion, at: item.at, by: item.by };
      if (isRecord(item.policy)) entry.policy = item.policy as unknown as Policy;
      history.push(deepFreeze(entry));
      previous = entry.action === "delete" ? null : entry.version;
    }
    this.slots.set(name, { current: null, canonical: null, history: Object.freeze(history) });
    stored.set(name, value.current ?? null);
  }

  /** Validates a stored record as a write would; an invalid one is quarantined, not served. */
  private admitStored(name: string, stored: unknown): Pick<Slot, "current" | "canonical" | "quarantined"> {
    if (stored === null) return { current: null, canonical: null };
    const record = isRecord(stored) ? stored : {};
    const version = isVersion(record.version) ? record.version : "?";
    let errors: FieldError[];
    const admitted = admitPolicy(record.policy, this.options.check);
    if (!admitted.ok) errors = admitted.errors;
    else if (admitted.policy.name !== name) errors = [{ field: "name", reason: `stored under ${name}` }];
    else if (version === "?" || typeof record.updatedAt !== "string" || typeof record.updatedBy !== "string") errors = [{ field: "(record)", reason: "malformed record" }];
    else {
      const current = deepFreeze({ policy: admitted.policy, version, updatedAt: record.updatedAt, updatedBy: record.updatedBy });
      return { current, canonical: canonicalJson(admitted.policy) };
    }
    this.log({ level: "warn", msg: "policy quarantined: the stored record does not validate and is not served", policy: name, version, errors });
    this.quarantine.push({ name, version, errors });
    return { current: null, canonical: null, quarantined: { stored, version, errors } };
  }
}

function auditOf(policy: string, action: HistoryEntry["action"], who: string, at: string, oldVersion: string | null, newVersion: string | null): AuditRecord {
  return { who, action, policy, oldVersion, newVersion, at };
}
