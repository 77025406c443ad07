// What every part of the control plane is wired with: the log, the timers and clocks (injected by
// tests, real otherwise) and the cluster credentials, loaded once and only when a part asks.
import { KubeConfig } from "@kubernetes/client-node";
import type { WindowSource } from "../adaptive/pipeline-histograms.js";
import type { RateSource } from "../adaptive/rates.js";
import { realDelay, type Delay } from "../k8s/backoff.js";
import { limitRepeats } from "../log-limit.js";
import { IntervalTicker, type Ticker } from "../ticker.js";

/** What a caller (a test) may inject; everything defaults to the real thing. */
export interface ControlPlaneOptions {
  rates?: RateSource;
  /** The windows live tail-keep thresholds are computed from (else the pipeline's). */
  windows?: WindowSource;
  log?: (record: object) => void;
  auditLine?: (line: string) => void;
  /** Periodic tasks (adaptive steps, resyncs, status writes). */
  ticker?: Ticker;
  /** Milliseconds clock for adaptive sampling, Kubernetes timings and status times. */
  now?: () => number;
  /** Waits of backoffs and leader election; with `now`, also the metrics pipeline's clock. */
  delay?: Delay;
  /**
   * Monotonic milliseconds for the durations of leader election and shard membership (default
   * performance.now(); when only `now` is injected, `now`, so a test's timers and durations agree).
   */
  monotonicMs?: () => number;
}

/** JSON lines on stdout, the process's log. */
export function stdoutLog(record: object): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: "info", ...record })}\n`);
}

/** The shared means of every part. */
export interface Runtime {
  log: (record: object) => void;
  ticker: Ticker;
  nowMs: () => number;
  now: () => Date;
  /** Monotonic milliseconds: every duration that decides whether this replica may act. */
  monotonicMs: () => number;
  delay: Delay;
  /** The cluster's credentials: `kubeconfig` when set, else the client's default lookup; read on first call. */
  kubeConfig: () => KubeConfig;
}

/** The runtime from the caller's injections and the configured kubeconfig path. */
export function runtimeOf(options: ControlPlaneOptions, kubeconfig: string): Runtime {
  const nowMs = options.now ?? Date.now;
  let loaded: KubeConfig | undefined;
  return {
    // Identical warnings and errors at most once per 10 s, then with a count (log-limit.ts).
    log: limitRepeats(options.log ?? stdoutLog, { nowMs }),
    ticker: options.ticker ?? new IntervalTicker(),
    nowMs,
    now: () => new Date(nowMs()),
    monotonicMs: options.monotonicMs ?? options.now ?? (() => performance.now()),
    delay: options.delay ?? realDelay,
    kubeConfig: () => {
      if (loaded === undefined) {
        loaded = new KubeConfig();
        if (kubeconfig !== "") loaded.loadFromFile(kubeconfig);
        else loaded.loadFromDefault();
      }
      return loaded;
    },
  };
}
