// Capped exponential backoff with jitter, and the delay function it waits with. The delay is
// injected so tests control time instead of sleeping.

/** Waits `ms` or until `signal` aborts (then resolves early). */
export type Delay = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The real delay (setTimeout), cancelled by the signal. */
export const realDelay: Delay = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** initialMs * 2^attempt, capped at maxMs, times a jitter factor in [0.8, 1.2). */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The next wait; grows until the cap. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt += 1;
    return Math.round(base * (0.8 + 0.4 * this.random()));
  }

  /** Back to the initial wait after a success. */
  reset(): void {
    this.attempt = 0;
  }

  /** Failures since the last reset. */
  get failures(): number {
    return this.attempt;
  }
}
