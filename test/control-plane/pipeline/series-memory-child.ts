// Run by series-memory.test.ts as `node --expose-gc`: `targets` targets each report, as the
// pipeline ships them, their `up` and `scrape_duration_seconds` (one source) and `perTarget` series
// (another) through one SeriesGate into a RemoteWriter with `queues` remote-write queues (a sender
// each, on a fake clock, every send answered 204), twice; label values are padded by `pad`
// characters (`wide` 1: characters past Latin-1), and every other series has one label more (label
// layouts that alternate). Prints, as JSON, what the heap and the array buffers grew by per series
// beside the registry's estimate (seriesBytes) per series, the records the queues indexed meanwhile
// (their index is budgeted apart: DiskQueue's RECORD_INDEX_BYTES), and what memory outside V8's
// count grew by per series.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { REMOTE_WRITE_TARGET_DEFAULTS } from "../../../control-plane/src/pipeline/config.js";
import { SeriesGate } from "../../../control-plane/src/pipeline/series-gate.js";
import { createRemoteWriteMetrics } from "../../../control-plane/src/remote-write/metrics.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { RemoteWriter } from "../../../control-plane/src/remote-write/writer.js";
import { FakeClock, settle } from "../../support/fake-clock.js";
import { heldBytes } from "../heap.js";

const [targets, perTarget, pad, queues, wide] = process.argv.slice(2).map(Number) as [number, number, number, number, number];
const dir = mkdtempSync(join(tmpdir(), "tt-series-memory-"));
const clock = new FakeClock(1_800_000_000_000, { recordSleeps: false });
const configs = Array.from({ length: queues }, (_, i) => ({ ...REMOTE_WRITE_TARGET_DEFAULTS, name: `q${i}`, url: "http://127.0.0.1:9/api/v1/write", queueDir: join(dir, `q${i}`) }));
const writer = new RemoteWriter(configs, { clock, metrics: createRemoteWriteMetrics(new Registry()), fsync: "never", transportFor: () => ({ send: () => Promise.resolve({ kind: "success", status: 204 }) }) });
const gate = new SeriesGate(writer.registry, Number.MAX_SAFE_INTEGER);
writer.start();

const padding = (wide === 1 ? "é€" : "x").repeat(pad).slice(0, pad);
const instance = (t: number): string[] => ["instance", `10.1.${t % 250}.${t % 100}:15020`, "job", "envoy", "namespace", "llm-serving", "pod", `chat-7d9f8b6c5-${t}`];
const report = (t: number, ts: number): WriteSeries[] => ["up", "scrape_duration_seconds"].map((name) => ({ labels: ["__name__", name, ...instance(t)], samples: [{ value: 1, timestampMs: ts }] }));
function scraped(t: number, ts: number): WriteSeries[] {
  const out: WriteSeries[] = [];
  for (let i = 0; i < perTarget; i++) {
    const labels = ["__name__", "tokentrace_llm_duration_ms_bucket", ...instance(t), "route", `route-${i % 7}`, "model", `meta-llama/Llama-3.1-8B-Instruct${padding}`, "le", String(i)];
    if (i % 2 === 1) labels.push("output_length", "le1024");
    out.push({ labels, samples: [{ value: ts % 1000, timestampMs: ts }] });
  }
  return out;
}

async function round(first: number, count: number, ts: number): Promise<void> {
  for (let t = first; t < first + count; t++) {
    writer.writeGated(gate.pass(`envoy|${t}#report`, report(t, ts), ts));
    writer.writeGated(gate.pass(`envoy|${t}`, scraped(t, ts), ts));
  }
  // Every queue's sender reads and sends what was queued (its batches' deadline is 5 s).
  for (let k = 0; k < 3; k++) {
    await clock.advance(6000);
    await settle();
  }
}

const records = (): number => writer.targets.reduce((n, t) => n + t.queue.records, 0);
// A warm-up of other targets first: compiled code, grown buffers and the queues' first segment are not counted.
for (let r = 0; r < 3; r++) await round(1_000_000, Math.min(targets, 20), clock.now());
const warm = writer.registry.size;
const estimatedBefore = writer.registry.bytes;
const recordsBefore = records();
const outside = (): number => process.memoryUsage().external - process.memoryUsage().arrayBuffers;
const before = heldBytes();
const outsideBefore = outside();
for (let r = 0; r < 2; r++) await round(0, targets, clock.now());
const after = heldBytes();
// Memory outside V8's heap and its array buffers (where a decompressed record is allocated): what
// the queues keep of it, once the finalizers of what was collected have run (after the event loop turns).
await new Promise((resolve) => setImmediate(resolve));
heldBytes();
await new Promise((resolve) => setImmediate(resolve));
const external = outside() - outsideBefore;
const series = writer.registry.size - warm;
process.stdout.write(JSON.stringify({ series, records: records() - recordsBefore, measuredPerSeries: (after - before) / series, estimatedPerSeries: (writer.registry.bytes - estimatedBefore) / series, externalPerSeries: external / series }));
await writer.stop();
rmSync(dir, { recursive: true, force: true });
