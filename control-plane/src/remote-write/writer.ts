// The remote-write front door: validates series (sorted unique labels, __name__, time order per
// series), gives each series a ref in the registry, encodes each batch of samples once as the
// samples part of a compact record (record.ts), and appends it to every target's queue with the
// series definitions that queue's current segment still lacks.
import { normalizeLabels, seriesKey, type WriteSeries } from "./series.js";
import { SeriesRegistry, type SeriesEntry } from "./series-registry.js";
import { SamplesPart } from "./record.js";
import { TargetQueue, type RemoteWriteTargetConfig, type TargetDeps } from "./queue-manager.js";
import { HttpTransport, type Transport } from "./transport.js";
import type { Clock } from "./retry.js";
import type { RemoteWriteMetrics } from "./metrics.js";
import type { GatedSeries } from "../pipeline/series-gate.js";

/** What the writer needs from outside; `transportFor` lets tests swap the HTTP transport. */
export interface WriterDeps {
  clock: Clock;
  metrics: RemoteWriteMetrics;
  transportFor?: (target: RemoteWriteTargetConfig) => Transport;
  random?: () => number;
  fsync?: TargetDeps["fsync"];
  /** The queues' file system (tests: a simulated disk). */
  fs?: TargetDeps["fs"];
  log?: TargetDeps["log"];
}

/** Fans series out to several remote-write targets, each with its own durable queue. */
export class RemoteWriter {
  readonly targets: TargetQueue[];
  readonly registry: SeriesRegistry;
  private readonly recordSamples: number;
  private readonly part = new SamplesPart();
  /** Distinct series of the record being built. */
  private readonly recordSeries: SeriesEntry[] = [];
  private readonly inRecord = new Set<SeriesEntry>();

  constructor(configs: RemoteWriteTargetConfig[], private readonly deps: WriterDeps) {
    // Each queue keeps its own record of every series: the registry counts them in each series' cost.
    this.registry = new SeriesRegistry(configs.length);
    this.targets = configs.map((c) => {
      const transport = deps.transportFor?.(c) ?? new HttpTransport({ url: c.url, headers: c.headers, timeoutMs: c.remoteTimeoutMs, now: () => deps.clock.now() });
      const td: TargetDeps = { transport, clock: deps.clock, metrics: deps.metrics };
      if (deps.random) td.random = deps.random;
      if (deps.fsync) td.fsync = deps.fsync;
      if (deps.fs) td.fs = deps.fs;
      if (deps.log) td.log = deps.log;
      return new TargetQueue(c, td);
    });
    this.registry.onRecycle = (id) => {
      for (const t of this.targets) t.forgetSeries(id);
    };
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

  /** Queues series given as labels (normalised here; no cardinality cap). Returns the samples queued. */
  write(series: WriteSeries[]): number {
    const gated: GatedSeries[] = [];
    for (const s of series) {
      const labels = normalizeLabels(s.labels);
      if (typeof labels === "string") {
        this.drop("invalid_labels", s.samples.length);
        continue;
      }
      const key = seriesKey(labels);
      gated.push({ entry: this.registry.get(key) ?? this.registry.add(key, labels), samples: s.samples });
    }
    return this.writeGated(gated);
  }

  /**
   * Queues series the gate admitted, durably, on every target. A sample not newer than the last one
   * queued for its series is dropped (reason out_of_order); a series whose last sample is a
   * staleness marker ends (its registry entry goes). Returns the samples queued.
   */
  writeGated(series: GatedSeries[]): number {
    if (this.targets.length === 0) {
      for (const s of series) if (s.samples[s.samples.length - 1]?.stale) this.registry.release(s.entry);
      this.registry.recycle();
      return 0;
    }
    let queued = 0;
    for (const { entry, samples } of series) {
      let ended = false;
      for (const smp of samples) {
        if (smp.timestampMs <= entry.lastTs) {
          this.drop("out_of_order", 1);
          continue;
        }
        if (this.part.count >= this.recordSamples) queued += this.flush();
        entry.lastTs = smp.timestampMs;
        if (!this.inRecord.has(entry)) {
          this.inRecord.add(entry);
          this.recordSeries.push(entry);
        }
        this.part.add(entry.id, smp.timestampMs, smp.value, smp.stale === true);
        ended = smp.stale === true;
      }
      // A series that went stale starts over: forget it so memory follows the active series.
      if (ended) this.registry.release(entry);
    }
    queued += this.flush();
    this.registry.recycle();
    return queued;
  }

  private flush(): number {
    const n = this.part.count;
    if (n === 0) return 0;
    for (const t of this.targets) t.enqueueRecord(this.recordSeries, this.part);
    this.part.reset();
    this.recordSeries.length = 0;
    this.inRecord.clear();
    return n;
  }

  /** Series the writer knows (for the memory report). */
  get activeSeries(): number {
    return this.registry.size;
  }
}
