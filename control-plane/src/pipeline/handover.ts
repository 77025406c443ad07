// Targets change hands between replicas at scrape boundaries. Every replica places a target's
// scrapes on the same grid (Scraper.slotAtOrAfter: a fixed phase counted from the epoch), so a
// hand-over is one instant both sides agree on: the old owner scrapes the slots before it, the
// new owner the slots from it, and no slot is scraped twice or skipped.
//
// Joining: a replica that joins takes slots from live members (rendezvous hashing moves slots only
// to a new member). The instant is its member Lease's creationTimestamp (one clock for all: the
// API server's, second precision, the same number on every replica that reads it) plus two
// membership periods, by when every live member has listed the new Lease. Until a member has read
// that time it keeps its slots (the read is bounded: a failed or late read hands over at once,
// never late); the joiner waits for its own read. A joiner whose Lease is not new (a process that
// restarted within the lease) falls back to waiting two periods from now.
//
// Leaving: a replica that stops deletes its Lease (membership.ts) after its last scrape; one that
// dies is counted out when its Lease runs out. The others read the Lease: gone means a stop they
// saw within a period (and a quarter), a Lease still there means a death up to a lease and a period
// ago. They take its slots at the next slot, or at once when a slot fell in that look-back (the
// leaver may have stopped before it). No instant is shared there, so such a slot is scraped late
// (by up to the look-back), or twice when the leaver had scraped it; none in the look-back is skipped.
// Except: a member whose Lease is still there counts itself out at its renew deadline after the
// renewal it last sent (membership.ts, by a timer of its own), and that renewal was sent before the
// others saw it; so nothing at or after (last change seen + renew deadline) was scraped by it, and
// the look-back of a death starts no earlier than that (a replica cut off from a hung API server
// is alive and scraping until then: going back further would scrape its slots twice).
import { CoordinationV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Clock } from "../remote-write/retry.js";
import type { ScrapeWindow } from "../scrape/scraper.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import { signalOptions } from "../k8s/bounded-call.js";
import { memberLeaseName } from "./membership.js";
import { ShardAssignment, SHARD_SLOTS } from "./sharding.js";

/** A member's Lease as the API server has it: its creationTimestamp (ms), gone (404), or undefined when it cannot be read. */
export type MemberLeaseState = { createdMs: number } | "gone" | undefined;

/** Reads a member's Lease for the hand-over (bounded: a late answer is undefined). */
export type MemberLeaseReader = (member: string) => Promise<MemberLeaseState>;

/** Hand-over settings. */
export interface HandoverOptions {
  self: string;
  /** The membership period: the longest a live member takes to list a change. */
  periodMs: number;
  /** The member lease duration: how long a dead member may have been missing before it is counted out. */
  leaseDurationMs: number;
  clock: Clock;
  readLease: MemberLeaseReader;
  /** Called when windows change outside a membership change (a read settled, a boundary passed). */
  onChange: () => void;
  /**
   * The instant by which a member counted out had stopped scraping, if known: the last change of its
   * Lease this replica saw plus the renew deadline at which it counts itself out.
   */
  stoppedBy?: (member: string) => number | undefined;
  /**
   * This replica restarted while its Lease was still live: the others never counted it out, so its
   * slots never moved and it takes them back at once (with the take-over look-back), not by joining.
   */
  resumed?: boolean;
}

/** One slot's state on this replica. */
type SlotState =
  | { kind: "owned"; fromMs?: number }
  /** Taken from a member that left: owned once its Lease is read (stopped or died decides the look-back). */
  | { kind: "taking"; from: string; observedMs: number; stoppedByMs: number | undefined }
  /** Taken from a live member: scraped from `fromMs` (undefined while this replica's own join time is being read). */
  | { kind: "joining"; fromMs: number | undefined }
  /** Going to a member that joined: scraped until `untilMs` (undefined while its join time is being read). */
  | { kind: "leaving"; to: string; untilMs: number | undefined };

/** Reads member Leases through client-node, each read bounded by `timeoutMs` on `clock` (the request is aborted there). */
export function clientNodeLeaseReader(kubeConfig: KubeConfig, namespace: string, clock: Clock, timeoutMs: number): MemberLeaseReader {
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  return async (member) => {
    const stop = new AbortController();
    const read = api.readNamespacedLease({ namespace, name: memberLeaseName(member) }, signalOptions(stop.signal)).then(
      (lease): MemberLeaseState => {
        const created = lease.metadata?.creationTimestamp;
        return created === undefined ? undefined : { createdMs: new Date(created).getTime() };
      },
      (error: unknown): MemberLeaseState => ((error as { code?: number }).code === 404 ? "gone" : undefined),
    );
    const late = clock.sleep(timeoutMs, stop.signal).then(() => undefined);
    try {
      return await Promise.race([read, late]);
    } finally {
      stop.abort();
    }
  };
}

/** The windows in which this replica scrapes each target, as membership changes. */
export class Handover {
  private assignment: ShardAssignment | undefined;
  private readonly slots: (SlotState | undefined)[] = new Array<SlotState | undefined>(SHARD_SLOTS).fill(undefined);
  /** Lease reads per member (reset when the member leaves, so a departure reads afresh). */
  private readonly leases = new Map<string, Promise<MemberLeaseState>>();
  private readonly stopSignal = new AbortController();
  private generation = 0;

  constructor(private readonly opts: HandoverOptions) {}

  /** The members of the current membership (sorted), or undefined before the first. */
  get members(): readonly string[] | undefined {
    return this.assignment?.members;
  }

  /** Two membership periods: by then every live member has listed a new Lease. */
  private get waitMs(): number {
    return 2 * this.opts.periodMs;
  }

  /** A new membership (sorted live members; [] while this replica counts itself out). */
  setMembers(members: readonly string[]): void {
    const { self, clock } = this.opts;
    const now = clock.now();
    const previous = this.assignment;
    const next = new ShardAssignment(members, self);
    this.settlePassed(now);
    const generation = ++this.generation;
    const before = new Set(previous?.members ?? []);
    const joined = new Set(members.filter((m) => !before.has(m)));
    // A member that came or went has a new Lease, or none: read it afresh.
    for (const m of [...this.leases.keys()]) if (!members.includes(m) || joined.has(m)) this.leases.delete(m);
    const others = members.some((m) => m !== self);
    // This replica's own arrival: just started, or back after counting itself out.
    const starting = previous === undefined;
    const returning = previous !== undefined && previous.members.length === 0 && members.length > 0;
    for (let slot = 0; slot < SHARD_SLOTS; slot++) {
      const owner = next.owners[slot];
      const was = previous?.owners[slot];
      const state = this.slots[slot];
      if (owner === self) {
        if (was === self && state !== undefined && state.kind !== "leaving") continue;
        if ((starting || returning) && others && !(starting && this.opts.resumed === true)) this.slots[slot] = { kind: "joining", fromMs: starting ? undefined : now + this.waitMs };
        else if (was !== undefined && was !== "" && was !== self && members.includes(was)) this.slots[slot] = { kind: "joining", fromMs: undefined };
        // Taken from a member that left (it may have stopped before a slot it owned), or a start alone.
        else if (starting || was === undefined || was === "") this.slots[slot] = { kind: "owned" };
        else this.slots[slot] = { kind: "taking", from: was, observedMs: now, stoppedByMs: this.opts.stoppedBy?.(was) };
      } else if (was === self && state?.kind === "owned" && joined.has(owner ?? "")) {
        this.slots[slot] = { kind: "leaving", to: owner!, untilMs: undefined };
      } else if (state?.kind === "leaving" && state.to === owner) {
        continue;
      } else {
        this.slots[slot] = undefined;
      }
    }
    this.assignment = next;
    this.settle(generation, now);
  }

  /** Starts the reads this membership waits for; each settles its slots and calls onChange. */
  private settle(generation: number, now: number): void {
    const wanted = new Set<string>();
    for (const s of this.slots) {
      if (s?.kind === "joining" && s.fromMs === undefined) wanted.add(this.opts.self);
      if (s?.kind === "leaving" && s.untilMs === undefined) wanted.add(s.to);
      if (s?.kind === "taking") wanted.add(s.from);
    }
    for (const member of wanted) {
      let read = this.leases.get(member);
      if (read === undefined) this.leases.set(member, (read = this.opts.readLease(member)));
      void read.then((state) => {
        if (generation !== this.generation || this.stopSignal.signal.aborted) return;
        this.resolve(member, state, now);
      });
    }
    this.scheduleRemovals();
  }

  /** A member's Lease is read (or known unreadable): its slots get their boundaries. */
  private resolve(member: string, state: MemberLeaseState, observedMs: number): void {
    const now = this.opts.clock.now();
    const createdMs = typeof state === "object" ? state.createdMs : undefined;
    const cut = createdMs === undefined ? undefined : createdMs + this.waitMs;
    // Gone: a stop seen within a listing period; else (a Lease left to run out, or unknown) a death.
    const lookBackMs = state === "gone" ? Math.round(1.25 * this.opts.periodMs) : this.opts.leaseDurationMs + this.opts.periodMs;
    for (let slot = 0; slot < SHARD_SLOTS; slot++) {
      const s = this.slots[slot];
      if (s?.kind === "taking" && s.from === member) {
        const stopped = state !== "gone" && s.stoppedByMs !== undefined ? s.stoppedByMs + 1 : -Infinity;
        this.slots[slot] = { kind: "owned", fromMs: Math.max(s.observedMs - lookBackMs, stopped) };
        continue;
      }
      if (s?.kind === "joining" && s.fromMs === undefined && member === this.opts.self) {
        // Our own Lease, created at this start: its instant. An older one (a restart within the
        // lease) or an unreadable one: wait two periods from the observation, as the others may not.
        const fresh = cut !== undefined && createdMs! >= observedMs - this.waitMs / 2 && cut <= observedMs + 2 * this.waitMs;
        s.fromMs = fresh ? cut : observedMs + this.waitMs;
      } else if (s?.kind === "leaving" && s.untilMs === undefined && s.to === member) {
        // Keep scraping up to the joiner's instant; one already past, or not plausible, ends now.
        s.untilMs = cut !== undefined && cut > now && cut <= now + 2 * this.waitMs ? cut : now;
      }
    }
    this.scheduleRemovals();
    this.opts.onChange();
  }

  private removalTimer: AbortController | undefined;

  /** Re-applies after the earliest `untilMs` plus a scrape timeout, when the last scrape before it has ended. */
  private scheduleRemovals(graceMs = 0): void {
    this.removalTimer?.abort();
    let earliest = Infinity;
    for (const s of this.slots) if (s?.kind === "leaving" && s.untilMs !== undefined) earliest = Math.min(earliest, s.untilMs);
    if (earliest === Infinity) return;
    const timer = new AbortController();
    this.removalTimer = timer;
    const stop = (): void => timer.abort();
    this.stopSignal.signal.addEventListener("abort", stop, { once: true });
    const wait = Math.max(0, earliest - this.opts.clock.now()) + graceMs;
    void this.opts.clock.sleep(wait, timer.signal).then(() => {
      this.stopSignal.signal.removeEventListener("abort", stop);
      if (timer.signal.aborted) return;
      this.expire();
    });
  }

  /** The longest scrape timeout of the targets applied last (a scrape started before a boundary ends within it). */
  private timeoutMs = 0;

  /** Slots whose boundary passed (and whose last scrape has ended) are no longer ours. */
  private expire(): void {
    const now = this.opts.clock.now();
    let changed = false;
    let pending = false;
    for (let slot = 0; slot < SHARD_SLOTS; slot++) {
      const s = this.slots[slot];
      if (s?.kind !== "leaving" || s.untilMs === undefined) continue;
      if (s.untilMs + this.timeoutMs <= now) {
        this.slots[slot] = undefined;
        changed = true;
      } else pending = true;
    }
    if (pending) this.scheduleRemovals(this.timeoutMs);
    if (changed) this.opts.onChange();
  }

  /** A join instant that has passed is plain ownership. */
  private settlePassed(now: number): void {
    for (const [slot, s] of this.slots.entries()) if (s?.kind === "joining" && s.fromMs !== undefined && s.fromMs <= now) this.slots[slot] = { kind: "owned" };
  }

  /**
   * The targets this replica scrapes now, with their windows. A target whose slot is being taken
   * over is left out until its instant is known. A take-over's look back applies once, to the
   * targets present when it happens (one discovered later starts at its next slot).
   */
  assign(targets: readonly ScrapeTarget[]): { targets: ScrapeTarget[]; windows: Map<string, ScrapeWindow> } {
    const out: ScrapeTarget[] = [];
    const windows = new Map<string, ScrapeWindow>();
    const assignment = this.assignment;
    if (assignment === undefined) return { targets: out, windows };
    // A target discovered after a join instant passed starts at its next slot.
    this.settlePassed(this.opts.clock.now());
    for (const t of targets) {
      const s = this.slots[assignment.slotOf(t)];
      if (s === undefined) continue;
      if ((s.kind === "joining" && s.fromMs === undefined) || s.kind === "taking") continue;
      this.timeoutMs = Math.max(this.timeoutMs, t.timeoutMs);
      out.push(t);
      if (s.kind === "leaving") {
        if (s.untilMs !== undefined) windows.set(t.id, { untilMs: s.untilMs });
      } else if (s.fromMs !== undefined) windows.set(t.id, { fromMs: s.fromMs });
    }
    for (const s of this.slots) if (s?.kind === "owned") s.fromMs = undefined;
    return { targets: out, windows };
  }

  /**
   * Whether this replica writes what `t`'s slot yields from a scrape at slot instant `atMs`, by the
   * same windows `assign` gives the scraper (from `fromMs` inclusive, until `untilMs` exclusive).
   * For series sharded apart from the target scraped (a waypoint's, by destination pod): every
   * replica scrapes the target at the same instants, and each keeps the series whose slot it owns
   * at that instant, so a hand-over writes each scrape's series once, on either side of the boundary.
   */
  ownsAt(t: ScrapeTarget, atMs: number): boolean {
    const assignment = this.assignment;
    if (assignment === undefined) return false;
    const s = this.slots[assignment.slotOf(t)];
    if (s === undefined || s.kind === "taking") return false;
    if (s.kind === "joining") return s.fromMs !== undefined && atMs >= s.fromMs;
    if (s.kind === "leaving") return s.untilMs === undefined || atMs < s.untilMs;
    return true;
  }

  stop(): void {
    this.stopSignal.abort();
    this.removalTimer?.abort();
  }
}
