// Retry as a wrapper around a Transport (after opentelemetry-js): exponential backoff with jitter
// and a cap, Retry-After honoured, an optional deadline, and an abort signal for shutdown.
import type { Protocol, SendResult, Transport } from "./transport.js";

/** Time as the retry loop sees it; tests pass a fake so no test sleeps. */
export interface Clock {
  /** Wall-clock milliseconds since the epoch (timestamps, and instants the API server wrote). */
  now(): number;
  /**
   * Monotonic milliseconds (immune to wall-clock steps) for durations that decide who may act;
   * a clock without one (a test's) times those with `now`.
   */
  monotonicMs?(): number;
  /** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicMs: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    }),
};

/** `clock`'s monotonic reading, or its `now` when it has none. */
export function monotonicOf(clock: Clock): () => number {
  return clock.monotonicMs === undefined ? () => clock.now() : () => clock.monotonicMs!();
}

/** Backoff settings; Prometheus's defaults are 30 ms to 5 s. */
export interface RetryOptions {
  minBackoffMs: number;
  maxBackoffMs: number;
  /** Longest Retry-After honoured; a longer one is capped here so a bad header cannot park a queue. */
  maxRetryAfterMs: number;
  /** Give up (result "failed", reason "deadline") once this much time has passed; undefined = never. */
  deadlineMs?: number;
  clock: Clock;
  /** Uniform in [0, 1); injectable for exact tests. */
  random?: () => number;
  signal?: AbortSignal;
  /** Called before each wait with the retryable result and the delay chosen. */
  onRetry?: (result: SendResult & { kind: "retryable" }, delayMs: number) => void;
}

/** Delay before retry number `attempt` (0-based): half fixed, half jitter, doubling up to the cap. */
export function backoffMs(attempt: number, o: Pick<RetryOptions, "minBackoffMs" | "maxBackoffMs">, random: number): number {
  const ceiling = Math.min(o.maxBackoffMs, o.minBackoffMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}

/** Sends until success, a final failure, the deadline, or abort (reported as retryable "aborted"). */
export async function sendWithRetry(transport: Transport, body: Uint8Array, protocol: Protocol, o: RetryOptions): Promise<SendResult> {
  const random = o.random ?? Math.random;
  const started = o.clock.now();
  for (let attempt = 0; ; attempt++) {
    if (o.signal?.aborted) return { kind: "retryable", reason: "aborted" };
    const result = await transport.send(body, protocol);
    if (result.kind !== "retryable") return result;
    let delay = backoffMs(attempt, o, random());
    if (result.retryAfterMs !== undefined) delay = Math.min(Math.max(result.retryAfterMs, 0), o.maxRetryAfterMs);
    if (o.deadlineMs !== undefined && o.clock.now() + delay - started > o.deadlineMs) {
      return { kind: "failed", reason: "deadline", ...(result.status === undefined ? {} : { status: result.status }) };
    }
    o.onRetry?.(result, delay);
    await o.clock.sleep(delay, o.signal);
  }
}
