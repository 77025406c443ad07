// Makes the cluster's WasmPlugins match the policies: one per policy, created, updated back
// when someone edits it (drift), recreated when deleted, and removed when its policy is gone.
// Work is a queue of keys (namespace/name); a key that fails for a retryable reason (API down,
// 409 conflict, 5xx) is retried after its own capped backoff, so no policy is ever dropped.
import type { ReadinessCheck } from "../app.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import { Backoff, type Delay } from "./backoff.js";
import type { KubeFailure } from "./client.js";
import type { WasmPluginApi } from "./wasmplugin-client.js";
import type { WasmPluginInformer } from "./informer.js";
import { managedByLabel, managedByValue, matchesDesired, mergedForUpdate, type WasmPlugin } from "./wasmplugin.js";

/** Reconciler options. */
export interface ReconcilerOptions {
  api: WasmPluginApi;
  informer: WasmPluginInformer;
  /** Desired WasmPlugins by key (computed from the store and adaptive overrides on each call). */
  desired: () => Map<string, WasmPlugin>;
  metrics: ControlPlaneMetrics;
  delay: Delay;
  backoff: { initialMs: number; maxMs: number; random?: () => number };
  /** Milliseconds clock for reconcile lag. */
  now: () => number;
  /** Whether writes may start; defaults to "the informer has listed once". */
  canWrite?: () => boolean;
  /**
   * Whether this replica reconciles at all (it holds the leader Lease); defaults to always.
   * While inactive nothing is queued or written; {@link WasmPluginReconciler.activate} catches up.
   */
  active?: () => boolean;
  log?: (record: object) => void;
}

type Outcome = "done" | "retry" | "failed";

/** The reconcile loop. */
export class WasmPluginReconciler {
  private readonly queue = new Set<string>();
  private readonly backoffs = new Map<string, Backoff>();
  /** Key -> when it first became out of date (for reconcile lag). */
  private readonly pendingSinceMs = new Map<string, number>();
  private readonly abort = new AbortController();
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private busy = false;
  private idleWaiters: (() => void)[] = [];
  /** Keys whose last write failed because the API was unreachable or erroring, with the failure. */
  private readonly apiFailures = new Map<string, string>();

  constructor(private readonly options: ReconcilerOptions) {}

  /** Starts the worker. */
  start(): void {
    this.running ??= this.work();
  }

  /** Stops the worker (pending keys stay in the store's desired state for the next start). */
  async stop(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    await this.running;
  }

  private isActive(): boolean {
    return this.options.active?.() ?? true;
  }

  private writable(): boolean {
    return this.isActive() && (this.options.canWrite ? this.options.canWrite() : this.options.informer.hasSynced);
  }

  /** Leadership gained: compare everything and start writing. */
  activate(): void {
    this.enqueueAll();
    this.poke();
  }

  /** Leadership lost: forget queued work (the next leader compares everything anyway). */
  deactivate(): void {
    this.queue.clear();
    this.pendingSinceMs.clear();
    this.apiFailures.clear();
    this.lagSeconds();
  }

  /** Wakes the worker (after `canWrite` became true). */
  poke(): void {
    this.wake?.();
  }

  /** Queues a key for comparison (ignored while inactive). */
  enqueue(key: string): void {
    if (!this.isActive()) return;
    if (!this.pendingSinceMs.has(key)) this.pendingSinceMs.set(key, this.options.now());
    this.queue.add(key);
    this.wake?.();
  }

  /** Queues every desired and every cached key (after a policy change or a resync). */
  enqueueAll(): void {
    for (const key of this.options.desired().keys()) this.enqueue(key);
    for (const key of this.options.informer.cache.keys()) this.enqueue(key);
  }

  /** Kubernetes readiness: the informer has listed and neither it nor the last write is failing. */
  readiness(): ReadinessCheck {
    const informer = this.options.informer;
    if (!informer.hasSynced) return { ok: false, detail: informer.lastError ?? "waiting for the first list of wasmplugins" };
    if (informer.lastError !== undefined) return { ok: false, detail: informer.lastError };
    const failure = this.apiFailures.values().next();
    if (!failure.done) return { ok: false, detail: failure.value };
    return { ok: true, detail: `synced; ${this.pendingSinceMs.size} pending` };
  }

  /** Seconds since the oldest pending change (0 when in sync); also sets the gauge. */
  lagSeconds(): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const since of this.pendingSinceMs.values()) oldest = Math.min(oldest, since);
    const lag = oldest === Number.POSITIVE_INFINITY ? 0 : Math.max(0, this.options.now() - oldest) / 1000;
    this.options.metrics.reconcileLag.set(lag);
    return lag;
  }

  /** Resolves when the queue is empty and nothing is in flight (retries may still be waiting). */
  whenIdle(): Promise<void> {
    if (!this.busy && this.queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Keys waiting to be applied. */
  get pending(): string[] {
    return [...this.pendingSinceMs.keys()].sort();
  }

  private async work(): Promise<void> {
    while (!this.abort.signal.aborted) {
      const next = this.queue.values().next();
      // Nothing is written before the first list: we must know what exists to avoid blind creates.
      if (next.done || !this.writable()) {
        this.busy = false;
        for (const resolve of this.idleWaiters.splice(0)) resolve();
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      this.busy = true;
      const key = next.value;
      this.queue.delete(key);
      let outcome: Outcome;
      try {
        outcome = await this.reconcile(key);
      } catch (error) {
        // A bug, not an API failure: log it and retry later rather than stop reconciling.
        this.options.log?.({ level: "error", msg: "reconcile crashed", key, error: String(error) });
        outcome = "retry";
      }
      if (outcome === "retry") {
        let backoff = this.backoffs.get(key);
        if (backoff === undefined) {
          backoff = new Backoff(this.options.backoff.initialMs, this.options.backoff.maxMs, this.options.backoff.random);
          this.backoffs.set(key, backoff);
        }
        const waitMs = backoff.next();
        void this.options.delay(waitMs, this.abort.signal).then(() => {
          if (!this.abort.signal.aborted) this.enqueue(key);
        });
      } else {
        this.backoffs.delete(key);
        // Settled either way (applied, or nothing to do any more): no longer an API failure.
        this.apiFailures.delete(key);
        if (outcome === "done") this.pendingSinceMs.delete(key);
      }
      this.lagSeconds();
    }
  }

  private fail(operation: string, key: string, failure: KubeFailure): Outcome {
    const reason = failure.code === 0 ? "unreachable" : failure.code === 409 ? "conflict" : failure.code === 422 ? "invalid" : failure.code >= 500 ? "server_error" : `http_${failure.code}`;
    this.options.metrics.pushFailures.inc({ mode: "kubernetes", reason });
    if (failure.code === 0 || failure.code >= 500 || failure.code === 429) {
      this.apiFailures.set(key, `${operation} ${key} failed: ${failure.code === 0 ? failure.reason : `${failure.code} ${failure.reason}`}`);
    }
    this.options.log?.({ level: "warn", msg: "wasmplugin write failed", operation, key, code: failure.code, reason: failure.reason, message: failure.message });
    // An Invalid object will not become valid by retrying; it stays pending until the policy changes.
    return failure.retryable ? "retry" : "failed";
  }

  private succeeded(key: string, object: WasmPlugin | undefined): Outcome {
    this.options.metrics.pushes.inc({ mode: "kubernetes" });

    // Keep the cache ahead of the watch so a quick re-queue compares with what we just wrote.
    if (object === undefined) this.options.informer.cache.delete(key);
    else this.options.informer.cache.set(key, object);
    return "done";
  }

  private async reconcile(key: string): Promise<Outcome> {
    const want = this.options.desired().get(key);
    const have = this.options.informer.cache.get(key);
    if (want === undefined) {
      if (have === undefined || have.metadata.labels?.[managedByLabel] !== managedByValue) return "done";
      const deleted = await this.options.api.delete(have.metadata.namespace, have.metadata.name, have.metadata.resourceVersion);
      if (deleted.ok || deleted.code === 404) return this.succeeded(key, undefined);
      return this.fail("delete", key, deleted);
    }
    if (have === undefined) {
      const created = await this.options.api.create(want);
      if (created.ok) return this.succeeded(key, created.value);
      if (created.code !== 409) return this.fail("create", key, created);
      // It exists but is not in our cache (not labelled as ours, or the watch is behind): read it and take it over.
      const current = await this.options.api.get(want.metadata.namespace, want.metadata.name);
      if (!current.ok) return this.fail("get", key, current);
      return this.update(key, want, current.value);
    }
    if (matchesDesired(want, have)) return "done";
    return this.update(key, want, have);
  }

  private async update(key: string, want: WasmPlugin, have: WasmPlugin): Promise<Outcome> {
    const replaced = await this.options.api.replace(mergedForUpdate(want, have));
    if (replaced.ok) return this.succeeded(key, replaced.value);
    if (replaced.code === 409) {
      // Someone wrote in between: refresh our view so the retry starts from their version.
      const current = await this.options.api.get(want.metadata.namespace, want.metadata.name);
      if (current.ok) this.options.informer.cache.set(key, current.value);
    }
    return this.fail("replace", key, replaced);
  }
}
