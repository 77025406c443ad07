// A Kubernetes call bounded in time: the request is aborted when the bound passes and an answer
// that would arrive later counts as a failure. client-go runs every leader-election renewal under
// a context whose deadline is RenewDeadline (kubernetes/client-go 32ce75a7
// tools/leaderelection/leaderelection.go renew: context.WithTimeout(ctx, RenewDeadline)), and the
// request is cancelled with it; a Lease call without a bound lets a hung API server stall the
// loop that decides whether this replica may still act.
import { Observable, type ConfigurationOptions } from "@kubernetes/client-node";
import type { Delay } from "./backoff.js";
import type { KubeFailure, KubeResult } from "./client.js";

/** The failure a call that ran out of time gets (no response: code 0, retryable). */
export function timedOut(timeoutMs: number): KubeFailure {
  return { ok: false, code: 0, reason: "Timeout", message: `no answer within ${timeoutMs} ms (request aborted)`, retryable: true };
}

/**
 * Runs `call` with a signal that aborts after `timeoutMs` (measured with `delay`, so tests drive
 * it with a fake clock); resolves with the call's result, or with a timeout failure at the bound
 * even while the request has not settled.
 */
export async function boundedCall<T>(delay: Delay, timeoutMs: number, call: (signal: AbortSignal) => Promise<KubeResult<T>>, outer?: AbortSignal): Promise<KubeResult<T>> {
  const request = new AbortController();
  const timer = new AbortController();
  const stopOuter = (): void => request.abort();
  outer?.addEventListener("abort", stopOuter, { once: true });
  let late = false;
  const expired = delay(Math.max(0, timeoutMs), timer.signal).then((): KubeResult<T> => {
    late = !timer.signal.aborted;
    return timedOut(timeoutMs);
  });
  try {
    const result = await Promise.race([call(request.signal), expired]);
    // An answer in the same turn as the bound is still late: the bound decides.
    return late ? timedOut(timeoutMs) : result;
  } finally {
    timer.abort();
    request.abort();
    outer?.removeEventListener("abort", stopOuter);
  }
}

/** client-node per-call options that attach `signal` to the request (the fetch is aborted with it). */
// The object-parameter API hands its options to the observable API unwrapped: the middleware
// must return Observables.
export function signalOptions(signal: AbortSignal | undefined): ConfigurationOptions | undefined {
  if (signal === undefined) return undefined;
  return {
    middleware: [
      {
        pre: (context) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (context) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: "append",
  };
}
