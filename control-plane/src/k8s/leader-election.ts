// One leader among the control plane's replicas, by a coordination.k8s.io Lease, with the
// semantics of client-go's tools/leaderelection (kubernetes/client-go 32ce75a7 leaderelection.go):
// a candidate takes the Lease only when it is free or its record has not changed for
// leaseDuration *as measured on the candidate's own clock* (observedTime, so clock skew between
// nodes does not matter); the leader renews every retryPeriod and steps down when it could not
// renew for renewDeadline (< leaseDuration, so it stops before anyone else may start); stopping
// releases the Lease (ReleaseOnCancel) so a successor need not wait. Time is injected. Every Lease
// call is aborted at the renew deadline (a renewal at the end of its round's, as client-go's renew
// runs tryAcquireOrRenew under context.WithTimeout(ctx, RenewDeadline)); a late answer is a failure.
// This replica's own validity (isLeader, and the fast path's observedTime) counts from the instant
// its successful write was *sent*, never from the answer: client-go stamps observedTime with
// clock.Now() once the Update returns (kubernetes/client-go 32ce75a7
// tools/leaderelection/leaderelection.go tryAcquireOrRenew), so an answer that arrives late would stretch the term past
// the instant the others time their take-over from. A read showing this replica as holder proves
// nothing about when its write landed, so it never extends the term. Every duration is read from a
// monotonic clock (client-go's observedTime is a time.Now() reading, whose monotonic part Go uses
// for Add/After/Since: a wall-clock step neither stretches nor cuts a term); the wall clock only
// fills in the record's acquire and renew times.
import type { Delay } from "./backoff.js";
import { boundedCall } from "./bounded-call.js";
import type { KubeResult } from "./client.js";
import type { LeaseApi, LeaseRecord, StoredLease } from "./lease-client.js";

/** client-go's JitterFactor: a candidate waits retryPeriod * (1 + random * 1.2) between tries. */
export const jitterFactor = 1.2;

/** Lease name, place and timing. */
export interface LeaderElectionSettings {
  namespace: string;
  leaseName: string;
  /** This replica's identity (the pod name). */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** NewLeaderElector's checks; returns the problems (empty when the timing is sound). */
export function leaderElectionProblems(s: Pick<LeaderElectionSettings, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs">): string[] {
  const problems: string[] = [];
  if (s.leaseDurationMs <= s.renewDeadlineMs) problems.push("leaseDuration must be greater than renewDeadline");
  if (s.renewDeadlineMs <= jitterFactor * s.retryPeriodMs) problems.push("renewDeadline must be greater than retryPeriod*JitterFactor");
  if (s.leaseDurationMs < 1000 || s.renewDeadlineMs < 1 || s.retryPeriodMs < 1) problems.push("leaseDuration, renewDeadline and retryPeriod must be positive (leaseDuration at least 1 s)");
  return problems;
}

/** What the elector needs. */
export interface LeaderElectorOptions {
  api: LeaseApi;
  settings: LeaderElectionSettings;
  /** Wall-clock milliseconds: the record's acquireTime and renewTime only. */
  now: () => number;
  /** Monotonic milliseconds: every duration (observed times, terms, deadlines). */
  monotonicMs: () => number;
  delay: Delay;
  random?: () => number;
  /** Called when this replica becomes leader; the work it starts must stop in `onStoppedLeading`. */
  onStartedLeading: () => void;
  /** Called when leadership ends (lost or released). */
  onStoppedLeading: () => void;
  /** Called when the observed holder changes ("" = nobody). */
  onNewLeader?: (identity: string) => void;
  log?: (record: object) => void;
}

/** Campaigns for, holds and releases the Lease. */
export class LeaderElector {
  private observed: LeaseRecord | undefined;
  private observedTimeMs = 0;
  private lease: StoredLease | undefined;
  private reportedLeader: string | undefined;
  private leading = false;
  /** When the write that last acquired or renewed the Lease was sent (monotonic). */
  private renewedAtMs = 0;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  /** Times this replica became leader (for metrics and tests). */
  terms = 0;

  constructor(private readonly options: LeaderElectorOptions) {}

  /**
   * True while this replica holds the Lease and renewed it less than renewDeadline ago: a leader
   * that was paused (GC, CPU starvation) stops acting at once, before its Lease can expire.
   */
  isLeader(): boolean {
    return this.leading && this.options.monotonicMs() - this.renewedAtMs < this.settings.renewDeadlineMs;
  }

  /** The holder last observed ("" = none). */
  get leader(): string {
    return this.observed?.holderIdentity ?? "";
  }

  /** Starts campaigning. */
  start(): void {
    this.running ??= this.run();
  }

  /** Stops; a leader steps down first, then releases the Lease. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private get settings(): LeaderElectionSettings {
    return this.options.settings;
  }

  // leaderelection.go IsLeader: the observed holder is us.
  private holdsRecord(): boolean {
    return this.observed?.holderIdentity === this.settings.identity;
  }

  // isLeaseValid: observedTime + leaseDurationSeconds is still in the future (monotonic).
  private leaseValid(nowMs: number): boolean {
    return this.observed !== undefined && this.observedTimeMs + this.observed.leaseDurationSeconds * 1000 > nowMs;
  }

  /**
   * Records what this replica saw: a record read (observed now), or its own successful write
   * (`writtenSentMs`: when the write was sent, which alone starts a term or extends it).
   */
  private setObserved(record: LeaseRecord, writtenSentMs?: number): void {
    this.observed = record;
    this.observedTimeMs = writtenSentMs ?? this.options.monotonicMs();
    if (writtenSentMs !== undefined && record.holderIdentity === this.settings.identity) this.renewedAtMs = writtenSentMs;
    if (record.holderIdentity !== this.reportedLeader) {
      this.reportedLeader = record.holderIdentity;
      this.options.onNewLeader?.(record.holderIdentity);
    }
  }

  private async run(): Promise<void> {
    const random = this.options.random ?? Math.random;
    while (!this.stopped) {
      // acquire: JitterUntil(tryAcquireOrRenew, retryPeriod, JitterFactor)
      while (!this.stopped && !(await this.tryAcquireOrRenew(this.options.monotonicMs() + this.settings.renewDeadlineMs))) {
        await this.options.delay(this.settings.retryPeriodMs * (1 + random() * jitterFactor), this.abort.signal);
      }
      if (this.stopped) break;
      this.leading = true;
      this.terms += 1;
      this.options.log?.({ msg: "became leader", lease: `${this.settings.namespace}/${this.settings.leaseName}`, identity: this.settings.identity });
      this.options.onStartedLeading();
      // renew: each round polls every retryPeriod until a renewal succeeds or renewDeadline passes.
      while (!this.stopped) {
        const pollStart = this.options.monotonicMs();
        let renewed = false;
        while (!this.stopped) {
          if (await this.tryAcquireOrRenew(pollStart + this.settings.renewDeadlineMs)) {
            renewed = true;
            break;
          }
          if (this.options.monotonicMs() - pollStart >= this.settings.renewDeadlineMs) break;
          await this.options.delay(this.settings.retryPeriodMs, this.abort.signal);
        }
        if (!renewed) break;
        await this.options.delay(this.settings.retryPeriodMs, this.abort.signal);
      }
      this.leading = false;
      this.options.onStoppedLeading();
      if (!this.stopped) this.options.log?.({ level: "warn", msg: "lost leadership: could not renew the lease", lease: `${this.settings.namespace}/${this.settings.leaseName}` });
    }
    await this.release();
  }

  // tryRelease: an empty holder and a 1 s duration let the next candidate take over at once.
  private async release(): Promise<void> {
    if (!this.holdsRecord() || this.observed === undefined) return;
    const deadlineMs = this.options.monotonicMs() + this.settings.renewDeadlineMs;
    const current = await this.call(deadlineMs, (signal) => this.options.api.get(this.settings.namespace, this.settings.leaseName, signal));
    if (!current.ok || current.value.record.holderIdentity !== this.settings.identity) return;
    const nowMs = this.options.now();
    const record: LeaseRecord = { holderIdentity: "", leaseDurationSeconds: 1, acquireTimeMs: nowMs, renewTimeMs: nowMs, leaseTransitions: current.value.record.leaseTransitions };
    const released = await this.call(deadlineMs, (signal) => this.options.api.update(this.settings.namespace, this.settings.leaseName, record, current.value.resourceVersion, signal));
    if (released.ok) {
      this.setObserved(record);
      this.options.log?.({ msg: "released the lease", lease: `${this.settings.namespace}/${this.settings.leaseName}` });
    } else if (released.code === 409) {
      // A renewal raced with the release: read again and retry, as tryRelease does.
      await this.release();
    }
  }

  /** One Lease call, aborted at `deadlineMs` (monotonic) or when the elector stops. */
  private call<T>(deadlineMs: number, request: (signal: AbortSignal) => Promise<KubeResult<T>>, outer?: AbortSignal): Promise<KubeResult<T>> {
    return boundedCall(this.options.delay, deadlineMs - this.options.monotonicMs(), request, outer);
  }

  /** leaderelection.go tryAcquireOrRenew; every call ends by `deadlineMs`. */
  private async tryAcquireOrRenew(deadlineMs: number): Promise<boolean> {
    const { namespace, leaseName, identity } = this.settings;
    const stop = this.abort.signal;
    const nowMs = this.options.now();
    const monoMs = this.options.monotonicMs();
    const desired: LeaseRecord = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.floor(this.settings.leaseDurationMs / 1000),
      acquireTimeMs: nowMs,
      renewTimeMs: nowMs,
      leaseTransitions: 0,
    };
    // 1. Fast path: the leader updates optimistically from the record it last wrote.
    if (this.holdsRecord() && this.leaseValid(monoMs) && this.lease !== undefined && this.observed !== undefined) {
      const record = { ...desired, acquireTimeMs: this.observed.acquireTimeMs, leaseTransitions: this.observed.leaseTransitions };
      const lease = this.lease;
      const sentMs = this.options.monotonicMs();
      const updated = await this.call(deadlineMs, (signal) => this.options.api.update(namespace, leaseName, record, lease.resourceVersion, signal), stop);
      if (updated.ok) {
        this.lease = updated.value;
        this.setObserved(record, sentMs);
        return true;
      }
    }
    // 2. Read the record, or create it.
    const current = await this.call(deadlineMs, (signal) => this.options.api.get(namespace, leaseName, signal), stop);
    if (!current.ok) {
      if (current.code !== 404) return false;
      const sentMs = this.options.monotonicMs();
      const created = await this.call(deadlineMs, (signal) => this.options.api.create(namespace, leaseName, desired, signal), stop);
      if (!created.ok) return false;
      this.lease = created.value;
      this.setObserved(desired, sentMs);
      return true;
    }
    this.lease = current.value;
    // 3. A changed record restarts the observation clock; an unchanged one keeps aging.
    if (this.observed === undefined || JSON.stringify(current.value.record) !== JSON.stringify(this.observed)) this.setObserved(current.value.record);
    const held = current.value.record.holderIdentity !== "";
    if (held && this.leaseValid(monoMs) && !this.holdsRecord()) return false;
    // 4. Take over (a new term) or renew through the slow path.
    const record = this.holdsRecord()
      ? { ...desired, acquireTimeMs: current.value.record.acquireTimeMs, leaseTransitions: current.value.record.leaseTransitions }
      : { ...desired, leaseTransitions: current.value.record.leaseTransitions + 1 };
    const sentMs = this.options.monotonicMs();
    const updated = await this.call(deadlineMs, (signal) => this.options.api.update(namespace, leaseName, record, current.value.resourceVersion, signal), stop);
    if (!updated.ok) return false;
    this.lease = updated.value;
    this.setObserved(record, sentMs);
    return true;
  }
}
