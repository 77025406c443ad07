// One remote-write target: its durable queue, batching by size or deadline, sending with retries,
// protocol fallback, and its metrics. After Prometheus's queue manager (storage/remote/
// queue_manager.go): samples are spread over `shards` by series, so each series keeps its order,
// and the shards of one round are sent at once; the round is committed when every shard is done.
// The sender loop never takes the process down: whatever it throws (a disk error, a record it
// cannot decode, a bug) is logged and counted, the queue is reopened from disk (recovery makes it
// consistent again) and sending resumes after a backoff.
import { DiskQueue, type QueueRecord } from "./disk-queue.js";
import { decodeWriteRequestV1, encodeRequestV2, ProtoWriter } from "./protobuf.js";
import { RefLabels } from "./ref-labels.js";
import { backoffMs, sendWithRetry, type Clock } from "./retry.js";
import { snappyCompress } from "./snappy.js";
import { sendSplitting } from "./split.js";
import { COMPACT_RECORD, decodeRecord, encodeRecord, LEGACY_V1_RECORD, type SamplesPart } from "./record.js";
import { encodedLabels, type SeriesEntry } from "./series-registry.js";
import type { Protocol, SendResult, Transport } from "./transport.js";
import type { RemoteWriteMetrics } from "./metrics.js";
import type { FileSystem } from "../storage/file-system.js";

/** Why the sender's wait was cut short (no one reads it: a sleep ends early on any abort). */
const WAKE = "wake";

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
  /** Records the queue indexes in memory at most (each RECORD_INDEX_BYTES); past it, as past maxQueueBytes, the oldest segment goes. */
  maxQueueRecords: number;
  segmentBytes: number;
  maxSamplesPerSend: number;
  /** Requests sent at once, samples spread over them by series (Prometheus's shards). */
  shards: number;
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
  /** See DiskQueueOptions.fsync. */
  fsync?: "always" | "segment" | "never";
  /** The queue's file system (tests: a simulated disk); node:fs by default. */
  fs?: FileSystem;
  /** Structured log lines: the sender's failures. */
  log?: (record: object) => void;
}

/** One shard's request being built. */
interface ShardBatch {
  w: ProtoWriter;
  samples: number;
}

/** A remote-write target with its own durable queue and sender loop. */
export class TargetQueue {
  private diskQueue: DiskQueue;
  private protocol: Protocol;
  private running: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  private wakeWaiter: (() => void) | undefined;
  private flushing = false;
  private newestSentMs: number | undefined;
  /** Writer side: the segment in which each ref was last defined (-1: not in any). */
  private definedIn = new Int32Array(1024).fill(-1);
  private readonly recordScratch = new ProtoWriter(64 * 1024);
  /** Sender side: encoded labels per ref, from the series definitions read so far. */
  private readonly labelsOf = new RefLabels();
  private readonly shardBatches: ShardBatch[];

  constructor(readonly config: RemoteWriteTargetConfig, private readonly deps: TargetDeps) {
    this.protocol = config.protocol;
    this.diskQueue = this.openQueue();
    this.newestSentMs = this.queue.newestDeliveredMs;
    this.shardBatches = Array.from({ length: Math.max(1, config.shards) }, () => ({ w: new ProtoWriter(256 * 1024), samples: 0 }));
    this.learnSegmentHead();
    this.updateGauges();
  }

  /** The on-disk queue (replaced when the sender reopens it after a failure). */
  get queue(): DiskQueue {
    return this.diskQueue;
  }

  private openQueue(): DiskQueue {
    const { config, deps } = this;
    return new DiskQueue({
      dir: config.queueDir,
      maxBytes: config.maxQueueBytes,
      maxRecords: config.maxQueueRecords,
      segmentBytes: config.segmentBytes,
      fsync: deps.fsync ?? "segment",
      now: () => deps.clock.now(),
      ...(deps.fs ? { fs: deps.fs } : {}),
    });
  }

  /** Records before the read position in its segment may define refs used after it. */
  private learnSegmentHead(): void {
    for (const payload of this.queue.readSegmentHead()) {
      try {
        this.learn(payload, false);
      } catch {
        // Its samples were delivered; only its definitions are lost, and the sends say which (unknown_series).
      }
    }
  }

  /** Closes the queue and opens it again from disk, with the sender's state from scratch. */
  private reopen(): void {
    try {
      this.diskQueue.close();
    } catch {
      // The descriptors go with the old queue either way; recovery reads what is on disk.
    }
    this.labelsOf.clear();
    this.definedIn.fill(-1);
    for (const b of this.shardBatches) {
      b.w.pos = 0;
      b.samples = 0;
    }
    this.diskQueue = this.openQueue();
    this.learnSegmentHead();
    this.updateGauges();
  }

  private log(record: object): void {
    this.deps.log?.({ ...record, target: this.config.name });
  }

  /** The protocol in use now (2.0 targets can fall back to 1.0). */
  get currentProtocol(): Protocol {
    return this.protocol;
  }

  /** A ref was freed for reuse: the next record that names it defines it again. */
  forgetSeries(id: number): void {
    if (id < this.definedIn.length) this.definedIn[id] = -1;
  }

  /** The series of `series` (distinct) that `segment` has not defined yet, with their encoded labels and the bytes they take. */
  private definitions(series: readonly SeriesEntry[], segment: number): { list: { id: number; labels: Uint8Array }[]; bytes: number } {
    const list: { id: number; labels: Uint8Array }[] = [];
    let bytes = 0;
    for (const e of series) {
      if (e.id >= this.definedIn.length) {
        const grown = new Int32Array(Math.max(e.id + 1, this.definedIn.length * 2)).fill(-1);
        grown.set(this.definedIn);
        this.definedIn = grown;
      }
      if (this.definedIn[e.id] === segment) continue;
      const labels = encodedLabels(e);
      list.push({ id: e.id, labels });
      bytes += labels.length + 12;
    }
    return { list, bytes };
  }

  /**
   * Appends one record durably and wakes the sender: the samples part, plus the definitions of the
   * series this queue's current segment has not defined yet (a segment is read, or dropped, alone).
   */
  enqueueRecord(series: readonly SeriesEntry[], part: SamplesPart): void {
    // The definitions the active segment lacks, encoded, give the record's size; if it does not fit
    // there, the new segment lacks them all. Snappy's worst case grows a block by a sixth; the
    // record's header and format byte are extra.
    const active = this.queue.activeSegment;
    let defs = this.definitions(series, active);
    const bound = part.w.pos + 64 + defs.bytes;
    const segment = this.queue.prepare(bound + Math.ceil(bound / 6) + 64);
    if (segment !== active) defs = this.definitions(series, segment);
    const list = defs.list;
    for (const d of list) this.definedIn[d.id] = segment;
    const payload = encodeRecord(list, part, this.recordScratch);
    const before = this.queue.droppedSamples;
    try {
      this.queue.append(payload, part.count, part.newestMs);
    } catch (error) {
      // Not written (a full disk, an I/O error): its definitions are made again by the next record.
      for (const d of list) this.definedIn[d.id] = -1;
      this.deps.metrics.samplesDropped.inc({ target: this.config.name, reason: "queue_write_failed" }, part.count);
      this.log({ level: "error", msg: "remote-write queue append failed; samples dropped", samples: part.count, error: String(error) });
      return;
    }
    const dropped = this.queue.droppedSamples - before;
    if (dropped > 0) this.deps.metrics.samplesDropped.inc({ target: this.config.name, reason: "queue_full" }, dropped);
    this.updateGauges();
    this.wakeWaiter?.();
  }

  /** Appends one raw 1.0 WriteRequest record (older queues wrote these; tests of recovery). */
  enqueue(payloadV1: Uint8Array, samples: number, newestTimestampMs: number): void {
    this.queue.append(payloadV1, samples, newestTimestampMs);
    this.updateGauges();
    this.wakeWaiter?.();
  }

  /** Starts the sender loop. */
  start(): void {
    this.running ??= this.run();
  }

  /** The sender loop, reopened from disk after any failure; never rejects. */
  private async run(): Promise<void> {
    for (let failures = 0; !this.stopController.signal.aborted; ) {
      try {
        if (failures > 0) this.reopen();
        await this.loop();
        return;
      } catch (error) {
        failures++;
        this.deps.metrics.queueRestarts.inc({ target: this.config.name });
        this.log({ level: "error", msg: "remote-write sender failed; reopening its queue from disk", failures, error: error instanceof Error ? error.stack ?? error.message : String(error) });
        const delay = backoffMs(failures - 1, this.config, (this.deps.random ?? Math.random)());
        await this.deps.clock.sleep(delay, this.stopController.signal);
      }
    }
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
    // A reason of our own: abort() with none builds a DOMException, stack trace and all, on every append.
    this.wakeWaiter = () => ac.abort(WAKE);
    return this.deps.clock.sleep(ms, ac.signal).finally(() => {
      this.wakeWaiter = undefined;
      this.stopController.signal.removeEventListener("abort", onStop);
    });
  }

  private async loop(): Promise<void> {
    const { config, deps } = this;
    const shards = this.shardBatches.length;
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
      const records = this.queue.read(config.maxSamplesPerSend * shards);
      if (records.length === 0) {
        // The count promised samples the records do not hold: count again from the committed
        // position rather than send (and commit) nothing, and wait rather than spin.
        this.log({ level: "warn", msg: "remote-write queue count disagreed with its records; counted again", unread });
        this.queue.rewind();
        await this.wait(config.batchSendDeadlineMs);
        continue;
      }
      for (const r of records) this.learnToSend(r);
      const results = await Promise.all(this.shardBatches.filter((b) => b.samples > 0).map((b) => this.sendShard(b)));
      for (const b of this.shardBatches) {
        b.w.pos = 0;
        b.samples = 0;
      }
      if (results.some((r) => r.kind === "retryable")) {
        // Only an abort (shutdown) ends retrying: the round stays on disk for the next start.
        this.queue.rewind();
        return;
      }
      this.committed(records);
    }
  }

  /** Routes a record's samples; a record that cannot be decoded is dropped and counted, not retried forever. */
  private learnToSend(r: QueueRecord): void {
    let before = 0;
    for (const b of this.shardBatches) before += b.samples;
    try {
      this.learn(r.payload, true);
    } catch (error) {
      let after = 0;
      for (const b of this.shardBatches) after += b.samples;
      const lost = Math.max(0, r.samples - (after - before));
      this.deps.metrics.samplesDropped.inc({ target: this.config.name, reason: "unreadable_record" }, lost);
      this.log({ level: "error", msg: "remote-write queue record could not be decoded; its samples are dropped", samples: lost, error: String(error) });
    }
  }

  /** Takes the series definitions of a record and, when `route`, spreads its samples over the shards. */
  private learn(payload: Uint8Array, route: boolean): void {
    if (payload[0] === LEGACY_V1_RECORD) {
      if (route) {
        // A raw 1.0 request of an older queue: its series go to the first shard as they are.
        this.shardBatches[0]!.w.bytes(payload);
        this.shardBatches[0]!.samples += decodeWriteRequestV1(payload).reduce((n, s) => n + s.samples.length, 0);
      }
      return;
    }
    if (payload[0] !== COMPACT_RECORD) return;
    const shards = this.shardBatches;
    decodeRecord(payload, {
      // Copied: a view would keep the whole decompressed record (allocated outside V8's heap) alive.
      define: (id, labels) => this.labelsOf.set(id, labels),
      sample: (id, ts, value, stale) => {
        if (!route) return;
        if (!this.labelsOf.has(id)) {
          this.deps.metrics.samplesDropped.inc({ target: this.config.name, reason: "unknown_series" });
          return;
        }
        const b = shards[id % shards.length]!;
        this.labelsOf.writeSample(b.w, id, ts, value, stale);
        b.samples++;
      },
    });
  }

  /** Sends one shard's request; a 400 splits it so that only the series the receiver refuses are dropped. */
  private async sendShard(b: ShardBatch): Promise<SendResult> {
    const { config, deps } = this;
    const t = { target: config.name };
    return sendSplitting(b.w.finish(), b.samples, {
      send: (v1, samples) => this.send(v1, samples),
      accepted: (samples) => deps.metrics.samplesSent.inc(t, samples),
      dropped: (reason, samples) => deps.metrics.samplesDropped.inc({ ...t, reason }, samples),
    });
  }

  private committed(records: QueueRecord[]): void {
    if (records.length === 0) return;
    // A batch given up on is done too: Prometheus moves its highest-sent timestamp after any send
    // that was not cancelled (storage/remote/queue_manager.go, sendSamplesWithBackoff).
    let newest = this.newestSentMs ?? -Infinity;
    for (const r of records) newest = Math.max(newest, r.newestTimestampMs);
    this.newestSentMs = newest;
    this.queue.commit(records[records.length - 1]!.next, newest);
    this.updateGauges();
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
          // Shards of one round find out together: the target falls back once.
          if (this.protocol === "2.0") deps.metrics.protocolFallbacks.inc({ target: config.name });
          this.protocol = "1.0";
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
