// The remote-write front door: validates series (sorted unique labels, __name__, time order per
// series), encodes them once as 1.0 records and appends each record to every target's queue.
import { ProtoWriter, writeSeriesV1 } from "./protobuf.js";
import { normalizeLabels, seriesKey, type WriteSeries } from "./series.js";
import { TargetQueue, type RemoteWriteTargetConfig, type TargetDeps } from "./queue-manager.js";
import { HttpTransport, type Transport } from "./transport.js";
import type { Clock } from "./retry.js";
import type { RemoteWriteMetrics } from "./metrics.js";

/** What the writer needs from outside; `transportFor` lets tests swap the HTTP transport. */
export interface WriterDeps {
  clock: Clock;
  metrics: RemoteWriteMetrics;
  transportFor?: (target: RemoteWriteTargetConfig) => Transport;
  random?: () => number;
  fsync?: "always" | "never";
}

/** Fans series out to several remote-write targets, each with its own durable queue. */
export class RemoteWriter {
  readonly targets: TargetQueue[];
  private readonly lastTimestamp = new Map<string, number>();
  private readonly recordSamples: number;

  constructor(configs: RemoteWriteTargetConfig[], private readonly deps: WriterDeps) {
    this.targets = configs.map((c) => {
      const transport = deps.transportFor?.(c) ?? new HttpTransport({ url: c.url, headers: c.headers, timeoutMs: c.remoteTimeoutMs, now: () => deps.clock.now() });
      const td: TargetDeps = { transport, clock: deps.clock, metrics: deps.metrics };
      if (deps.random) td.random = deps.random;
      if (deps.fsync) td.fsync = deps.fsync;
      return new TargetQueue(c, td);
    });
    // One record never holds more than the smallest batch, so a batch is always whole records.
    this.recordSamples = Math.min(...configs.map((c) => c.maxSamplesPerSend), 2000);
  }

  /** Starts every target's sender. */
  start(): void {
    for (const t of this.targets) t.start();
  }

  /** Flushes for a bounded time and stops every target. */
  async stop(): Promise<void> {
    await Promise.all(this.targets.map((t) => t.stop()));
  }

  private drop(reason: string, samples: number): void {
    for (const t of this.targets) this.deps.metrics.samplesDropped.inc({ target: t.config.name, reason }, samples);
  }

  /**
   * Queues series durably on every target. Labels are normalised (unless the series carries its
   * key, which says they already are); a sample not newer than the last
   * one queued for its series is dropped (reason out_of_order). Returns the samples queued.
   */
  write(series: WriteSeries[]): number {
    if (this.targets.length === 0) return 0;
    const w = new ProtoWriter();
    let inRecord = 0;
    let newest = 0;
    let queued = 0;
    const flush = (): void => {
      if (inRecord === 0) return;
      const payload = w.finish().slice();
      for (const t of this.targets) t.enqueue(payload, inRecord, newest);
      queued += inRecord;
      w.pos = 0;
      inRecord = 0;
      newest = 0;
    };
    for (const s of series) {
      const labels = s.key === undefined ? normalizeLabels(s.labels) : s.labels;
      if (typeof labels === "string") {
        this.drop("invalid_labels", s.samples.length);
        continue;
      }
      const key = s.key ?? seriesKey(labels);
      let last = this.lastTimestamp.get(key) ?? -Infinity;
      const samples = [];
      for (const smp of s.samples) {
        if (smp.timestampMs <= last) {
          this.drop("out_of_order", 1);
          continue;
        }
        last = smp.timestampMs;
        samples.push(smp);
      }
      if (samples.length === 0) continue;
      // A series that went stale starts over: forget it so memory follows the active series.
      if (samples[samples.length - 1]!.stale) this.lastTimestamp.delete(key);
      else this.lastTimestamp.set(key, last);
      if (inRecord + samples.length > this.recordSamples) flush();
      writeSeriesV1(w, labels, samples);
      inRecord += samples.length;
      newest = Math.max(newest, last);
    }
    flush();
    return queued;
  }

  /** Series whose last timestamp the writer remembers (for the memory report). */
  get activeSeries(): number {
    return this.lastTimestamp.size;
  }
}
