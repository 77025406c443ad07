// One remote-write target: its durable queue, batching by size or deadline, sending with retries,
// protocol fallback, and its metrics. After Prometheus's queue manager, with a single shard: the
// control plane ships thousands of series per interval, not millions.
import { DiskQueue } from "./disk-queue.js";
import { decodeWriteRequestV1, encodeRequestV2 } from "./protobuf.js";
import { sendWithRetry, type Clock } from "./retry.js";
import { snappyCompress } from "./snappy.js";
import type { Protocol, SendResult, Transport } from "./transport.js";
import type { RemoteWriteMetrics } from "./metrics.js";

/** Settings of one remote-write target. */
export interface RemoteWriteTargetConfig {
  /** Short name, used as the `target` metric label and the queue folder name. */
  name: string;
  url: string;
  protocol: Protocol;
  headers: Record<string, string>;
  /** Folder of this target's on-disk queue. */
  queueDir: string;
  maxQueueBytes: number;
  segmentBytes: number;
  maxSamplesPerSend: number;
  batchSendDeadlineMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  maxRetryAfterMs: number;
  remoteTimeoutMs: number;
  /** How long `stop` keeps sending what is queued before leaving the rest on disk. */
  flushOnStopMs: number;
}

/** What a target needs from outside. */
export interface TargetDeps {
  transport: Transport;
  clock: Clock;
  metrics: RemoteWriteMetrics;
  random?: () => number;
  fsync?: "always" | "never";
}

/** A remote-write target with its own durable queue and sender loop. */
export class TargetQueue {
  readonly queue: DiskQueue;
  private protocol: Protocol;
  private running: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  private wakeWaiter: (() => void) | undefined;
  private flushing = false;
  private newestSentMs: number | undefined;

  constructor(readonly config: RemoteWriteTargetConfig, private readonly deps: TargetDeps) {
    this.protocol = config.protocol;
    this.queue = new DiskQueue({
      dir: config.queueDir,
      maxBytes: config.maxQueueBytes,
      segmentBytes: config.segmentBytes,
      fsync: deps.fsync ?? "always",
      now: () => deps.clock.now(),
    });
    this.newestSentMs = this.queue.newestDeliveredMs;
    this.updateGauges();
  }

  /** The protocol in use now (2.0 targets can fall back to 1.0). */
  get currentProtocol(): Protocol {
    return this.protocol;
  }

  /** Appends one encoded 1.0 WriteRequest record durably and wakes the sender. */
  enqueue(payloadV1: Uint8Array, samples: number, newestTimestampMs: number): void {
    const before = this.queue.droppedSamples;
    this.queue.append(payloadV1, samples, newestTimestampMs);
    const dropped = this.queue.droppedSamples - before;
    if (dropped > 0) this.deps.metrics.samplesDropped.inc({ target: this.config.name, reason: "queue_full" }, dropped);
    this.updateGauges();
    this.wakeWaiter?.();
  }

  /** Starts the sender loop. */
  start(): void {
    this.running ??= this.loop();
  }

  /** Sends what is queued for up to flushOnStopMs, then stops; undelivered data stays on disk. */
  async stop(): Promise<void> {
    this.flushing = true;
    this.wakeWaiter?.();
    if (this.running) {
      const timer = this.deps.clock.sleep(this.config.flushOnStopMs, this.stopController.signal).then(() => this.stopController.abort());
      await this.running;
      this.stopController.abort();
      await timer;
    }
    this.queue.close();
  }

  private updateGauges(): void {
    const t = { target: this.config.name };
    this.deps.metrics.queueBytes.set(t, this.queue.bytes);
    this.deps.metrics.queueSamples.set(t, this.queue.pendingSamples);
    const newest = this.queue.newestTimestampMs();
    if (newest !== undefined) this.deps.metrics.lagSeconds.set(t, Math.max(0, (newest - (this.newestSentMs ?? newest)) / 1000));
  }

  private wait(ms: number): Promise<void> {
    const ac = new AbortController();
    const onStop = (): void => ac.abort();
    this.stopController.signal.addEventListener("abort", onStop, { once: true });
    this.wakeWaiter = () => ac.abort();
    return this.deps.clock.sleep(ms, ac.signal).finally(() => {
      this.wakeWaiter = undefined;
      this.stopController.signal.removeEventListener("abort", onStop);
    });
  }

  private async loop(): Promise<void> {
    const { config, deps } = this;
    while (!this.stopController.signal.aborted) {
      const unread = this.queue.unreadSamples;
      if (unread === 0) {
        if (this.flushing) return;
        await this.wait(60_000);
        continue;
      }
      if (unread < config.maxSamplesPerSend && !this.flushing) {
        const oldest = this.queue.oldestUnreadAppendedAtMs() ?? 0;
        const dueIn = oldest + config.batchSendDeadlineMs - deps.clock.now();
        if (dueIn > 0) {
          await this.wait(dueIn);
          continue;
        }
      }
      const records = this.queue.read(config.maxSamplesPerSend);
      const samples = records.reduce((n, r) => n + r.samples, 0);
      const v1 = concat(records.map((r) => r.payload));
      const result = await this.send(v1, samples);
      const last = records[records.length - 1]!;
      if (result.kind !== "retryable") {
        if (result.kind === "success") deps.metrics.samplesSent.inc({ target: config.name }, samples);
        else deps.metrics.samplesDropped.inc({ target: config.name, reason: result.reason }, samples);
        // A batch given up on is done too: Prometheus moves its highest-sent timestamp after any
        // send that was not cancelled (storage/remote/queue_manager.go, sendSamplesWithBackoff).
        let newest = this.newestSentMs ?? -Infinity;
        for (const r of records) newest = Math.max(newest, r.newestTimestampMs);
        this.newestSentMs = newest;
        this.queue.commit(last.next, newest);
      } else {
        // Only an abort (shutdown) ends retrying: the batch stays on disk for the next start.
        this.queue.rewind();
        return;
      }
      this.updateGauges();
    }
  }

  private async send(v1: Uint8Array, samples: number): Promise<SendResult> {
    const { config, deps } = this;
    const endTimer = deps.metrics.sendDuration.startTimer({ target: config.name });
    try {
      for (;;) {
        const protocol = this.protocol;
        const body = snappyCompress(protocol === "2.0" ? encodeRequestV2(decodeWriteRequestV1(v1)) : v1);
        const result = await sendWithRetry(deps.transport, body, protocol, {
          minBackoffMs: config.minBackoffMs,
          maxBackoffMs: config.maxBackoffMs,
          maxRetryAfterMs: config.maxRetryAfterMs,
          clock: deps.clock,
          signal: this.stopController.signal,
          ...(deps.random ? { random: deps.random } : {}),
          onRetry: (r) => deps.metrics.samplesRetried.inc({ target: config.name, reason: r.reason }, samples),
        });
        if (protocol === "2.0" && this.needsFallback(result, samples)) {
          this.protocol = "1.0";
          deps.metrics.protocolFallbacks.inc({ target: config.name });
          continue;
        }
        return result;
      }
    } finally {
      endTimer();
    }
  }

  /**
   * A 2.0 receiver confirms with X-Prometheus-Remote-Write-Samples-Written. A 415 says "1.0 only";
   * a 1.0-only receiver that parses the 2.0 body as an (empty) 1.0 request answers 2xx without the
   * header, having stored nothing: both mean resend as 1.0. A 400 naming nothing is not a protocol
   * signal and stays a drop.
   */
  private needsFallback(result: SendResult, samples: number): boolean {
    if (result.kind === "failed" && result.status === 415) return true;
    return result.kind === "success" && samples > 0 && result.samplesWritten === undefined;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
