// The pipeline's per-series state (the registry's entry and key, the staleness tracker, the gate's
// record of each source's last report, each remote-write queue's record of the series) is bounded
// in bytes: each series' estimated cost (seriesBytes) is at least what V8's heap and array buffers
// grow by when the pipeline holds it (measured in a child run with --expose-gc, for several
// shapes; nothing kept outside V8's count), and the cardinality cap counts those bytes as well as
// the series, so long label sets cannot hold more than join.maxSeries series of NOMINAL_KEY_CHARS
// characters would.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SeriesGate } from "../../../control-plane/src/pipeline/series-gate.js";
import { RECORD_INDEX_BYTES } from "../../../control-plane/src/remote-write/disk-queue.js";
import { NOMINAL_KEY_CHARS, SeriesRegistry, seriesBytes } from "../../../control-plane/src/remote-write/series-registry.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { measureInChild } from "../heap.js";

const child = new URL("./series-memory-child.ts", import.meta.url);

for (const [targets, perTarget, pad, queues, wide] of [
  [100, 500, 0, 0, 0],
  [100, 500, 0, 1, 0],
  [1000, 50, 0, 2, 0],
  [2000, 10, 0, 1, 0],
  [100, 500, 1000, 1, 0],
  [100, 500, 300, 2, 1],
] as const) {
  test(`a series' estimated cost is at least what it costs V8 and at most twice it (${targets} targets of ${perTarget} series, labels padded by ${pad} ${wide === 1 ? "characters past Latin-1" : "ASCII characters"}, ${queues} remote-write queues; measured with --expose-gc)`, { timeout: 180_000 }, (t) => {
    const r = measureInChild<{ series: number; records: number; measuredPerSeries: number; estimatedPerSeries: number; externalPerSeries: number }>(child, [targets, perTarget, pad, queues, wide]);
    // The records the queues indexed meanwhile are budgeted apart, as the queue's index.
    const estimated = r.estimatedPerSeries + (r.records * RECORD_INDEX_BYTES) / r.series;
    t.diagnostic(`measured ${r.measuredPerSeries.toFixed(0)} B, estimated ${estimated.toFixed(0)} B per series (${r.records} records indexed)`);
    assert.equal(r.series, targets * (perTarget + 2));
    assert.ok(estimated >= r.measuredPerSeries, `estimate ${estimated} below the measured ${r.measuredPerSeries}`);
    assert.ok(estimated <= 2 * r.measuredPerSeries, `estimate ${estimated} far above the measured ${r.measuredPerSeries}`);
    // A queue's sender keeps each series' labels as a copy, not as a view that would keep the whole
    // decompressed record alive (allocated outside V8's heap, so the measure above would not see it).
    assert.ok(r.externalPerSeries < 64, `${r.externalPerSeries.toFixed(0)} B a series outside V8's heap`);
  });
}

const series = (i: number, value: string): WriteSeries => ({ labels: ["__name__", "m", "i", String(i), "v", value], samples: [{ value: 1, timestampMs: 1 }] });

test("the cardinality cap counts bytes too: series with label sets longer than NOMINAL_KEY_CHARS meet it before join.maxSeries does, and what they cost stays within it", () => {
  const drops: string[] = [];
  const registry = new SeriesRegistry(1);
  const gate = new SeriesGate(registry, 100, (reason) => drops.push(reason));
  assert.equal(gate.maxBytes, 100 * seriesBytes(NOMINAL_KEY_CHARS, NOMINAL_KEY_CHARS, 1));
  const long = "x".repeat(4 * NOMINAL_KEY_CHARS);
  gate.pass("t", Array.from({ length: 100 }, (_, i) => series(i, long)), 1);
  assert.ok(gate.activeSeries < 40, `${gate.activeSeries} series of ${long.length} characters admitted`);
  assert.ok(gate.activeSeries > 20, `${gate.activeSeries} series of ${long.length} characters admitted`);
  assert.ok(registry.bytes <= gate.maxBytes, `${registry.bytes} bytes held`);
  assert.equal(drops.length, 100 - gate.activeSeries);
  assert.ok(drops.every((d) => d === "cardinality_cap"));
  // Short ones meet the count first, as before.
  const short = new SeriesGate(new SeriesRegistry(1), 100);
  short.pass("t", Array.from({ length: 150 }, (_, i) => series(i, "short")), 1);
  assert.equal(short.activeSeries, 100);
});

test("a series' cost follows the registry: added when admitted, given back when it ends", () => {
  const registry = new SeriesRegistry(2);
  const gate = new SeriesGate(registry, 10);
  gate.pass("t", [series(1, "a"), series(2, "é")], 1);
  const key = (i: number, v: string): string => ["__name__", "m", "i", String(i), "v", v].join("\xff");
  assert.equal(registry.bytes, registry.costOf(key(1, "a")) + registry.costOf(key(2, "é")));
  // é is Latin-1 (one byte in V8, two in UTF-8); € is not (two bytes a character in V8, three in UTF-8).
  const e = key(2, "é");
  assert.equal(registry.costOf(e), seriesBytes(e.length, Buffer.byteLength(e), 2));
  const euro = key(3, "€");
  assert.equal(registry.costOf(euro), seriesBytes(2 * euro.length, Buffer.byteLength(euro), 2));
  gate.removeSource("t", 2);
  assert.equal(registry.bytes, 0);
});
