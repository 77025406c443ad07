// A manual clock for the remote-write and scrape loops: `sleep` registers a timer that fires only
// when the test advances time, so no test waits on real time for retries or deadlines. Callback
// timers and nanosecond readings let the simulated engine, the proxy's ticks and the load run on the
// same time (the soak bench drives a whole stack on it).
import type { Clock } from "../../control-plane/src/remote-write/retry.js";

interface Timer { at: number; resolve: () => void; signal: AbortSignal | undefined; onAbort: () => void; id: number }

/**
 * Time stands still until `advance`. `now` is the wall clock, `monotonicMs` the monotonic one;
 * timers run on monotonic time; `stepWall` jumps the wall clock alone (an NTP step, a VM resume).
 */
export class FakeClock implements Clock {
  /** Monotonic time (timers fire on it). */
  private t: number;
  /** Wall minus monotonic: changed only by `stepWall`. */
  private wallOffsetMs = 0;
  private timers: Timer[] = [];
  /** Every sleep duration requested, in order (to assert backoff and Retry-After exactly); empty when not recorded. */
  readonly sleeps: number[] = [];
  private readonly recordSleeps: boolean;
  private nextId = 0;

  /** `recordSleeps: false` for long runs, where the list would grow with time. */
  constructor(startMs = 1_800_000_000_000, options: { recordSleeps?: boolean } = {}) {
    this.t = startMs;
    this.recordSleeps = options.recordSleeps ?? true;
  }

  now(): number {
    return this.t + this.wallOffsetMs;
  }

  monotonicMs(): number {
    return this.t;
  }

  /** Steps the wall clock by `ms` (either sign); monotonic time and timers are untouched. */
  stepWall(ms: number): void {
    this.wallOffsetMs += ms;
  }

  /** Wall and monotonic time in ns (a proxy-wasm host's clock, test/host/clock.ts). */
  realtimeNs(): bigint {
    return BigInt(this.now()) * 1_000_000n;
  }

  monotonicNs(): bigint {
    return BigInt(this.t) * 1_000_000n;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.recordSleeps) this.sleeps.push(ms);
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.t + ms, resolve, signal, onAbort: () => this.fire(timer), id: ++this.nextId };
      signal?.addEventListener("abort", timer.onAbort, { once: true });
      this.timers.push(timer);
    });
  }

  /** Runs `fn` once `ms` of this clock's time have passed (an engine's or a load's timer); the handle cancels it. */
  setTimeout(fn: () => void, ms: number): number {
    const timer: Timer = { at: this.t + Math.max(0, ms), resolve: fn, signal: undefined, onAbort: () => undefined, id: ++this.nextId };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    const i = this.timers.findIndex((t) => t.id === handle);
    if (i >= 0) this.timers.splice(i, 1);
  }

  /** Runs `fn` every `ms` (a proxy's tick) until cleared; the handle stays the same across repeats. */
  setInterval(fn: () => void, ms: number): number {
    const period = Math.max(1, ms);
    const timer: Timer = { at: this.t + period, resolve: () => undefined, signal: undefined, onAbort: () => undefined, id: ++this.nextId };
    timer.resolve = () => {
      timer.at = this.t + period;
      this.timers.push(timer);
      fn();
    };
    this.timers.push(timer);
    return timer.id;
  }

  clearInterval(handle: unknown): void {
    this.clearTimeout(handle);
  }

  private fire(timer: Timer): void {
    const i = this.timers.indexOf(timer);
    if (i < 0) return;
    this.timers.splice(i, 1);
    timer.signal?.removeEventListener("abort", timer.onAbort);
    timer.resolve();
  }

  /** Number of timers not yet fired: sleeps, and callback timers when any are set. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward, firing due timers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.t = Math.max(this.t, due.at);
      this.fire(due);
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending promise continuations and I/O callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Resolves when `cond` holds, polling between event-loop turns (real time, bounded). */
export async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 5));
  }
}
