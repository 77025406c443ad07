// The start-up line of memory budgets: one part per structure the composition holds over time, each
// derived from its configuration (or the structure's own byte limit), and their total.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { formatBytes, memoryBudgetLine, memoryBudgets, memoryLimitWarning, NOT_BUDGETED, SAMPLE_FRAMING_BYTES, type MemoryBudget } from "../../../control-plane/src/compose/memory-budgets.js";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { windowPoints } from "../../../control-plane/src/join/joiner.js";
import { DEFAULT_MAX_KEYS, REMEMBERED_RECORD_BYTES } from "../../../control-plane/src/log-limit.js";
import { startPipeline, withDefaults } from "../../../control-plane/src/pipeline/index.js";
import { windowSeriesBytes } from "../../../control-plane/src/promql/series-window.js";
import { MIN_RECORD_BYTES, RECORD_INDEX_BYTES } from "../../../control-plane/src/remote-write/disk-queue.js";
import { encodeLabelsV1, ProtoWriter, writeSampleV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { seriesKey } from "../../../control-plane/src/remote-write/series.js";
import { NOMINAL_KEY_CHARS, seriesBytes } from "../../../control-plane/src/remote-write/series-registry.js";
import { TraceStore } from "../../../control-plane/src/traces/store.js";
import { FakeClock } from "../../support/fake-clock.js";

const byPart = (budgets: readonly MemoryBudget[]): Map<string, MemoryBudget> => new Map(budgets.map((b) => [b.part, b]));

test("with the pipeline, the dashboard and the span receiver: every part, each from its configuration, and the total is their sum", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tt-budgets-"));
  const config = withDefaults({
    scrape: { intervalMs: 15_000, static: [{ url: "http://127.0.0.1:9/stats/prometheus", kind: "envoy", namespace: "llm", pod: "chat-0", intervalMs: 5_000 }] },
    join: { maxSeries: 20_000, rateWindowMs: 600_000 },
    remoteWrite: { queueDir: dir, targets: [{ name: "prom", url: "http://127.0.0.1:9/api/v1/write", maxQueueBytes: 64 << 20, shards: 2, maxSamplesPerSend: 200 }, { name: "mimir", url: "http://127.0.0.1:9/api/v1/push" }] },
  });
  const pipeline = await startPipeline(config, { registry: new Registry(), clock: new FakeClock(), transportFor: () => ({ send: () => Promise.resolve({ kind: "success", status: 204 }) }) });
  try {
    const dashboard = new DashboardSeries();
    const traces = new TraceStore(1000, { maxBytes: 8 << 20 });
    const budgets = memoryBudgets({ pipeline: pipeline.config, dashboard, traces });
    assert.deepEqual(budgets.map((b) => b.part), [
      "pipeline.series",
      "pipeline.joinWindows",
      "remoteWrite.prom.queueIndex",
      "remoteWrite.prom.requests",
      "remoteWrite.mimir.queueIndex",
      "remoteWrite.mimir.requests",
      "dashboard.history",
      "dashboard.engineSignals",
      "dashboard.gpuHealth",
      "dashboard.loraAdapters",
      "traces.spans",
      "log.repeats",
    ]);
    const parts = byPart(budgets);
    // Two remote-write queues each keep their own record of every series.
    assert.equal(parts.get("pipeline.series")!.bytes, 20_000 * seriesBytes(NOMINAL_KEY_CHARS, NOMINAL_KEY_CHARS, 2));
    assert.equal(parts.get("pipeline.series")!.bytes, pipeline.gate.maxBytes, "what the cardinality cap enforces");
    assert.match(parts.get("pipeline.series")!.from, /^join\.maxSeries 20,000 x 1,832 B \(400 characters of labels, 2 remote-write queues\)$/);
    // The static target's 5 s interval is the shortest: 600 s of it, plus the newest before the horizon and the one arriving.
    assert.equal(windowPoints(600_000, 5_000), 122);
    assert.equal(parts.get("pipeline.joinWindows")!.bytes, 20_000 * windowSeriesBytes(NOMINAL_KEY_CHARS, 122));
    assert.equal(parts.get("pipeline.joinWindows")!.bytes, pipeline.joiner.windowBudget.maxBytes, "what the join enforces");
    assert.match(parts.get("pipeline.joinWindows")!.from, /122 points: join\.rateWindowMs 600000 at the shortest scrape interval, 5000 ms/);
    // maxQueueRecords (262,144 by default) and a segment's share of it (8 MiB of 64 MiB: an eighth;
    // of 256 MiB: a 32nd), fewer than maxQueueBytes would hold of the smallest records.
    assert.ok(Math.ceil((64 << 20) / MIN_RECORD_BYTES) > 262_144 + 32_768);
    assert.equal(parts.get("remoteWrite.prom.queueIndex")!.bytes, (262_144 + 32_768) * RECORD_INDEX_BYTES);
    assert.equal(parts.get("remoteWrite.mimir.queueIndex")!.bytes, (262_144 + 8_192) * RECORD_INDEX_BYTES);
    const perSample = NOMINAL_KEY_CHARS + SAMPLE_FRAMING_BYTES;
    assert.equal(parts.get("remoteWrite.prom.requests")!.bytes, 2 * (256 * 1024 + 200 * perSample) + 2 * 200 * perSample, "a shard's buffer stays at its first 256 KiB while a batch fits in half of it");
    assert.equal(parts.get("remoteWrite.mimir.requests")!.bytes, 4 * 3 * 2000 * perSample + 2 * 2000 * perSample);
    assert.equal(parts.get("dashboard.history")!.bytes, dashboard.maxBytes);
    assert.equal(parts.get("dashboard.engineSignals")!.bytes, dashboard.engine.maxBytes);
    assert.equal(parts.get("dashboard.gpuHealth")!.bytes, dashboard.gpu.maxBytes);
    assert.equal(parts.get("dashboard.loraAdapters")!.bytes, dashboard.lora.maxBytes);
    assert.equal(parts.get("traces.spans")!.bytes, 8 << 20);
    assert.equal(parts.get("log.repeats")!.bytes, DEFAULT_MAX_KEYS * REMEMBERED_RECORD_BYTES);

    const line = memoryBudgetLine(budgets) as { msg: string; totalBytes: number; total: string; parts: Record<string, { bytes: number; from: string }>; notBudgeted: readonly string[] };
    assert.equal(line.msg, "memory budgets");
    assert.deepEqual(Object.keys(line.parts), budgets.map((b) => b.part), "every part, in order");
    for (const b of budgets) assert.deepEqual(line.parts[b.part], { bytes: b.bytes, from: b.from });
    assert.equal(line.totalBytes, budgets.reduce((n, b) => n + b.bytes, 0));
    assert.equal(line.total, formatBytes(line.totalBytes));
    assert.deepEqual(line.notBudgeted, NOT_BUDGETED);
    assert.doesNotThrow(() => JSON.stringify(line));
  } finally {
    await pipeline.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("without the pipeline or the span receiver, only what the composition holds: the log's repeat limiter", () => {
  const budgets = memoryBudgets({});
  assert.deepEqual(budgets, [{ part: "log.repeats", bytes: DEFAULT_MAX_KEYS * REMEMBERED_RECORD_BYTES, from: `${DEFAULT_MAX_KEYS} records remembered x 2,248 B` }]);
  assert.equal((memoryBudgetLine(budgets) as { totalBytes: number }).totalBytes, DEFAULT_MAX_KEYS * REMEMBERED_RECORD_BYTES);
  assert.equal(memoryBudgets({ logKeys: 10 })[0]!.bytes, 10 * REMEMBERED_RECORD_BYTES);
});

test("a remote-write sample of NOMINAL_KEY_CHARS characters of labels (16 of them) takes at most NOMINAL_KEY_CHARS + SAMPLE_FRAMING_BYTES bytes of its request", () => {
  for (const labelCount of [2, 8, 16]) {
    const labels = ["__name__", "m"];
    for (let i = 1; i < labelCount; i++) labels.push(`l${i}`, "v");
    // Pad the last value until the key is NOMINAL_KEY_CHARS characters.
    labels[labels.length - 1] += "x".repeat(NOMINAL_KEY_CHARS - seriesKey(labels).length);
    assert.equal(seriesKey(labels).length, NOMINAL_KEY_CHARS);
    const w = new ProtoWriter(64);
    writeSampleV1(w, encodeLabelsV1(labels), 1_800_000_000_000, 0.123, false);
    assert.ok(w.pos <= NOMINAL_KEY_CHARS + SAMPLE_FRAMING_BYTES, `${labelCount} labels: ${w.pos} bytes`);
  }
});

test("bytes read as people read them", () => {
  assert.deepEqual([formatBytes(640), formatBytes(1536), formatBytes(64 << 20), formatBytes(1_910_653_184)], ["640 B", "1.5 KiB", "64 MiB", "1822.1 MiB"]);
});

test("a warning when the budgets together exceed what the process may use, naming the largest; none under it or without a limit", () => {
  const budgets = [
    { part: "a", bytes: 300 << 20, from: "a's setting" },
    { part: "b", bytes: 200 << 20, from: "b's setting" },
    { part: "c", bytes: 20 << 20, from: "c's setting" },
    { part: "d", bytes: 1 << 20, from: "d's setting" },
  ];
  const warning = memoryLimitWarning(budgets, 512 << 20) as { level: string; msg: string; totalBytes: number; limitBytes: number; largest: string[] };
  assert.equal(warning.level, "warn");
  assert.equal(warning.totalBytes, 521 << 20);
  assert.match(warning.msg, /memory budgets total 521 MiB, over the 512 MiB the process may use/);
  assert.deepEqual(warning.largest, ["a 300 MiB (a's setting)", "b 200 MiB (b's setting)", "c 20 MiB (c's setting)"]);
  assert.equal(memoryLimitWarning(budgets, 521 << 20), undefined, "at the limit: no warning");
  assert.equal(memoryLimitWarning(budgets, undefined), undefined, "no limit known");
});
