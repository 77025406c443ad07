// A manual clock for the remote-write and scrape loops: `sleep` registers a timer that fires only
// when the test advances time, so no test waits on real time for retries or deadlines.
import type { Clock } from "../../control-plane/src/remote-write/retry.js";

interface Timer { at: number; resolve: () => void; signal: AbortSignal | undefined; onAbort: () => void }

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
  /** Every sleep duration requested, in order (to assert backoff and Retry-After exactly). */
  readonly sleeps: number[] = [];

  constructor(startMs = 1_800_000_000_000) {
    this.t = startMs;
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

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.t + ms, resolve, signal, onAbort: () => this.fire(timer) };
      signal?.addEventListener("abort", timer.onAbort, { once: true });
      this.timers.push(timer);
    });
  }

  private fire(timer: Timer): void {
    const i = this.timers.indexOf(timer);
    if (i < 0) return;
    this.timers.splice(i, 1);
    timer.signal?.removeEventListener("abort", timer.onAbort);
    timer.resolve();
  }

  /** Number of sleeps not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward, firing due timers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
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
