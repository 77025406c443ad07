// Who the pipeline's replicas are, from coordination.k8s.io/v1 Leases (no gossip): each replica
// holds a Lease of its own, labelled as a member, and renews it; every replica lists the members'
// Leases and counts as live those whose record it has seen change within their lease duration. As
// client-go's leader election (tools/leaderelection/leaderelection.go, tryAcquireOrRenew), expiry is
// judged by when this replica last *observed* a change, not by the renew time written in the record,
// so clocks need not agree. A replica that has not renewed its own Lease for `renewDeadlineMs` counts
// itself out (it owns nothing) before the others may count it out and take its targets over: by a
// timer of its own, armed at each successful renewal and timed from when that renewal was sent, so
// a renewal call that hangs cannot keep it in. Every Lease call is bounded by the renew deadline
// and aborted there (client-go runs each renewal under a RenewDeadline context,
// kubernetes/client-go 32ce75a7 tools/leaderelection/leaderelection.go renew).
// Every duration (validity, observed changes, the self-out timer) is read from a monotonic clock,
// as client-go's observedTime is a time.Now() reading compared through its monotonic part: a
// wall-clock step neither keeps a replica in nor counts it out. The record's renewTime is wall.
// Stopping deletes this replica's Lease (as client-go's ReleaseOnCancel gives its Lease up,
// leaderelection.go release/tryRelease at 32ce75a7), so the others take its targets over at their
// next listing instead of after the lease duration.
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import { toFailure, type KubeResult } from "../k8s/client.js";
import { boundedCall, signalOptions } from "../k8s/bounded-call.js";
import { monotonicOf, type Clock } from "../remote-write/retry.js";

/** The label every member's Lease carries. */
export const MEMBER_LABEL = "tokentrace.io/pipeline-member";

/** One member's Lease as listed. */
export interface MemberLease {
  name: string;
  holderIdentity: string;
  leaseDurationSeconds: number;
  renewTimeMs: number;
  resourceVersion: string;
}

/** The Lease calls membership makes. */
// Each call takes a signal that aborts its request (the caller bounds it in time).
export interface MemberLeaseApi {
  list(namespace: string, signal?: AbortSignal): Promise<KubeResult<MemberLease[]>>;
  get(namespace: string, name: string, signal?: AbortSignal): Promise<KubeResult<MemberLease>>;
  create(namespace: string, lease: Omit<MemberLease, "resourceVersion">, signal?: AbortSignal): Promise<KubeResult<MemberLease>>;
  update(namespace: string, lease: MemberLease, signal?: AbortSignal): Promise<KubeResult<MemberLease>>;
  /** Deletes, only while the Lease still has `resourceVersion` (409 otherwise). */
  delete(namespace: string, name: string, resourceVersion: string, signal?: AbortSignal): Promise<KubeResult<void>>;
}

function toLease(namespace: string, l: Omit<MemberLease, "resourceVersion"> & { resourceVersion?: string }): V1Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: l.name, namespace, labels: { [MEMBER_LABEL]: "true" }, ...(l.resourceVersion ? { resourceVersion: l.resourceVersion } : {}) },
    spec: { holderIdentity: l.holderIdentity, leaseDurationSeconds: l.leaseDurationSeconds, renewTime: new V1MicroTime(l.renewTimeMs) },
  };
}

function fromLease(l: V1Lease): MemberLease {
  const renew = l.spec?.renewTime;
  return {
    name: l.metadata?.name ?? "",
    holderIdentity: l.spec?.holderIdentity ?? "",
    leaseDurationSeconds: l.spec?.leaseDurationSeconds ?? 0,
    renewTimeMs: renew ? new Date(renew as unknown as string).getTime() : 0,
    resourceVersion: l.metadata?.resourceVersion ?? "",
  };
}

async function attempt<T>(call: () => Promise<T>): Promise<KubeResult<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return toFailure(error);
  }
}

/** client-node implementation. */
export class ClientNodeMemberLeaseApi implements MemberLeaseApi {
  private readonly api: CoordinationV1Api;
  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(CoordinationV1Api);
  }
  list(namespace: string, signal?: AbortSignal): Promise<KubeResult<MemberLease[]>> {
    return attempt(async () => (await this.api.listNamespacedLease({ namespace, labelSelector: `${MEMBER_LABEL}=true` }, signalOptions(signal))).items.map(fromLease));
  }
  get(namespace: string, name: string, signal?: AbortSignal): Promise<KubeResult<MemberLease>> {
    return attempt(async () => fromLease(await this.api.readNamespacedLease({ namespace, name }, signalOptions(signal))));
  }
  create(namespace: string, lease: Omit<MemberLease, "resourceVersion">, signal?: AbortSignal): Promise<KubeResult<MemberLease>> {
    return attempt(async () => fromLease(await this.api.createNamespacedLease({ namespace, body: toLease(namespace, lease) }, signalOptions(signal))));
  }
  update(namespace: string, lease: MemberLease, signal?: AbortSignal): Promise<KubeResult<MemberLease>> {
    return attempt(async () => fromLease(await this.api.replaceNamespacedLease({ namespace, name: lease.name, body: toLease(namespace, lease) }, signalOptions(signal))));
  }
  delete(namespace: string, name: string, resourceVersion: string, signal?: AbortSignal): Promise<KubeResult<void>> {
    return attempt(async () => {
      await this.api.deleteNamespacedLease({ namespace, name, body: { preconditions: { resourceVersion } } }, signalOptions(signal));
    });
  }
}

/** Membership settings. */
export interface MembershipOptions {
  api: MemberLeaseApi;
  namespace: string;
  /** This replica's identity (its pod name). */
  identity: string;
  leaseDurationMs: number;
  /**
   * How long this replica counts itself live after a renewal was sent, and the bound on every
   * Lease call (default two thirds of the lease: out before the others may count it out).
   */
  renewDeadlineMs?: number;
  /** Wall clock for the record's renewTime; its `sleep` for the timers. */
  clock: Clock;
  /** Monotonic milliseconds for every duration (default: the clock's, performance.now() on the system clock). */
  monotonicMs?: () => number;
  /** Called with the sorted live members whenever they change ([] while this replica is out). */
  onChange: (members: string[]) => void;
  onError?: (message: string) => void;
}

/** A Lease name for an identity (DNS-1123: lower case, digits, '-', '.'). */
export function memberLeaseName(identity: string): string {
  return `tokentrace-pipeline-${identity.toLowerCase().replace(/[^a-z0-9.-]/g, "-")}`.slice(0, 253).replace(/[^a-z0-9]+$/, "");
}

/** Keeps this replica's Lease renewed and reports the live members. */
export class LeaseMembership {
  private readonly observed = new Map<string, { version: string; atMs: number; lease: MemberLease }>();
  /** When the last successful renewal was sent (monotonic). */
  private lastRenewMs = -Infinity;
  private members: string[] | undefined;
  private stopped = false;
  private readonly stopSignal = new AbortController();
  private loopDone: Promise<void> | undefined;
  private selfOutTimer: AbortController | undefined;

  private readonly monotonicMs: () => number;

  constructor(private readonly opts: MembershipOptions) {
    this.monotonicMs = opts.monotonicMs ?? monotonicOf(opts.clock);
  }

  /** Renew and list every third of the lease duration (client-go's retryPeriod is of that order). */
  get periodMs(): number {
    return Math.max(1, Math.floor(this.opts.leaseDurationMs / 3));
  }

  /** How long a renewal keeps this replica in, and the bound on each Lease call. */
  get renewDeadlineMs(): number {
    return this.opts.renewDeadlineMs ?? Math.max(1, Math.floor((this.opts.leaseDurationMs * 2) / 3));
  }

  /**
   * The instant by which `member` has stopped scraping when its Lease stops changing: the last
   * change of it this replica saw, plus the renew deadline at which it counts itself out (its
   * renewal was sent before that change was seen). Monotonic; undefined when never seen.
   */
  stoppedByMs(member: string): number | undefined {
    let seen: number | undefined;
    for (const o of this.observed.values()) if (o.lease.holderIdentity === member) seen = Math.max(seen ?? -Infinity, o.atMs);
    return seen === undefined ? undefined : seen + this.renewDeadlineMs;
  }

  /** Renews and lists once, then keeps doing so in the background. */
  async start(): Promise<void> {
    await this.tick();
    this.loopDone = this.loop();
  }

  /**
   * Stops renewing and deletes this replica's Lease, so the others take its targets over at their
   * next listing. The caller stops scraping first: once the Lease is gone, another replica may
   * scrape what this one did.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    this.selfOutTimer?.abort();
    await this.loopDone;
    await this.release();
  }

  /** One Lease call, aborted at the renew deadline (or when `signal` aborts); a late answer is a failure. */
  private call<T>(request: (signal: AbortSignal) => Promise<KubeResult<T>>, signal?: AbortSignal, timeoutMs = this.renewDeadlineMs): Promise<KubeResult<T>> {
    return boundedCall((ms, s) => this.opts.clock.sleep(ms, s), timeoutMs, request, signal);
  }

  /**
   * tryRelease's shape (client-go leaderelection.go at 32ce75a7): read the Lease, give it up only
   * while this replica holds it, and read again when a write raced with it (409). The Lease is
   * deleted rather than emptied: its name is this replica's own and no one else takes it over, so
   * deleting leaves nothing behind for every pod that ever ran.
   */
  private async release(attempts = 3): Promise<void> {
    const { api, namespace, identity } = this.opts;
    const name = memberLeaseName(identity);
    const current = await this.call((signal) => api.get(namespace, name, signal));
    if (!current.ok) {
      if (current.code !== 404) this.opts.onError?.(`releasing lease ${name}: ${current.code} ${current.message}`);
      return;
    }
    if (current.value.holderIdentity !== identity) return;
    const deleted = await this.call((signal) => api.delete(namespace, name, current.value.resourceVersion, signal));
    if (deleted.ok || deleted.code === 404) return;
    if (deleted.code === 409 && attempts > 1) return this.release(attempts - 1);
    this.opts.onError?.(`releasing lease ${name}: ${deleted.code} ${deleted.message}`);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      await this.opts.clock.sleep(this.periodMs, this.stopSignal.signal);
      if (!this.stopped) await this.tick();
    }
  }

  /**
   * Counts this replica out when its last renewal's validity ends, whatever the renew loop is
   * doing (a call in flight, a slow listing): the loop cannot be what ends the validity.
   */
  private armSelfOut(): void {
    this.selfOutTimer?.abort();
    const timer = new AbortController();
    this.selfOutTimer = timer;
    const { clock } = this.opts;
    const waitMs = Math.max(0, this.lastRenewMs + this.renewDeadlineMs - this.monotonicMs());
    void clock.sleep(waitMs, timer.signal).then(() => {
      if (timer.signal.aborted || this.stopped) return;
      this.report(this.monotonicMs());
    });
  }

  /** One renewal (read, then update or create, within one renew deadline) and one listing. */
  async tick(): Promise<void> {
    const { api, namespace, identity, clock } = this.opts;
    const name = memberLeaseName(identity);
    const stop = this.stopSignal.signal;
    // Validity counts from before the renewal went out, never from its answer (client-go's
    // observedTime is taken before the write; a late answer must not extend it).
    const sentMs = this.monotonicMs();
    const remaining = (): number => Math.max(0, sentMs + this.renewDeadlineMs - this.monotonicMs());
    const record = { name, holderIdentity: identity, leaseDurationSeconds: Math.max(1, Math.ceil(this.opts.leaseDurationMs / 1000)), renewTimeMs: clock.now() };
    const current = await this.call((signal) => api.get(namespace, name, signal), stop, remaining());
    const renewed = current.ok
      ? await this.call((signal) => api.update(namespace, { ...record, resourceVersion: current.value.resourceVersion }, signal), stop, remaining())
      : current.code === 404
        ? await this.call((signal) => api.create(namespace, record, signal), stop, remaining())
        : current;
    if (renewed.ok) {
      this.lastRenewMs = Math.max(this.lastRenewMs, sentMs);
      this.armSelfOut();
    } else if (!this.stopped) this.opts.onError?.(`renewing lease ${name}: ${renewed.code} ${renewed.message}`);
    const listed = await this.call((signal) => api.list(namespace, signal), stop);
    const now = this.monotonicMs();
    if (listed.ok) {
      const seen = new Set<string>();
      for (const lease of listed.value) {
        seen.add(lease.name);
        const before = this.observed.get(lease.name);
        if (!before || before.version !== lease.resourceVersion) this.observed.set(lease.name, { version: lease.resourceVersion, atMs: now, lease });
      }
      for (const n of [...this.observed.keys()]) if (!seen.has(n)) this.observed.delete(n);
    } else if (!this.stopped) this.opts.onError?.(`listing member leases: ${listed.code} ${listed.message}`);
    if (!this.stopped) this.report(now);
  }

  private report(now: number): void {
    // Out before the others may count this replica out: the renew deadline after the last renewal sent.
    const selfLive = now - this.lastRenewMs < this.renewDeadlineMs;
    const live = selfLive
      ? [...this.observed.values()].filter((o) => o.lease.holderIdentity !== "" && now - o.atMs < o.lease.leaseDurationSeconds * 1000).map((o) => o.lease.holderIdentity)
      : [];
    if (selfLive && !live.includes(this.opts.identity)) live.push(this.opts.identity);
    const members = [...new Set(live)].sort();
    if (this.members && members.join("\n") === this.members.join("\n")) return;
    this.members = members;
    this.opts.onChange(members);
  }
}
