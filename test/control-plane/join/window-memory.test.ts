// The join's rate windows (route attribution's sidecar buckets, engine signals' model-server series,
// per pod over max(join.rateWindowMs, lookback)) are bounded in bytes: each series' estimate
// (windowSeriesBytes, added up in the budget's tally) is at least what V8's heap and array buffers
// grow by when a window holds it (measured in a child run with --expose-gc, for several shapes), and
// past the budget a pod's window neither starts nor takes new series.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PodWindows, WindowBudget, windowBudgetBytes } from "../../../control-plane/src/join/derivations/derivation.js";
import { windowSeriesBytes } from "../../../control-plane/src/promql/series-window.js";
import { measureInChild } from "../heap.js";

const child = new URL("./window-memory-child.ts", import.meta.url);

for (const [kind, pods, routes, models, buckets, intervalMs, pad] of [
  ["envoy", 20, 4, 2, 48, 15_000, 0],
  ["envoy", 20, 4, 2, 48, 2_000, 0],
  ["envoy", 5, 4, 2, 48, 500, 0],
  ["envoy", 20, 4, 2, 48, 15_000, 300],
  ["vllm", 20, 1, 2, 20, 15_000, 0],
  ["vllm", 50, 1, 1, 12, 5_000, 0],
] as const) {
  test(`a window series' estimate is at least what it costs V8 and at most twice it (${pods} ${kind} pods, ${routes} routes x ${models} models x ${buckets} buckets, scraped every ${intervalMs} ms, model names padded by ${pad}; measured with --expose-gc)`, { timeout: 120_000 }, (t) => {
    const r = measureInChild<{ series: number; points: number; measuredPerSeries: number; estimatedPerSeries: number }>(child, [kind, pods, routes, models, buckets, intervalMs, pad]);
    t.diagnostic(`${r.points} points a series: measured ${r.measuredPerSeries.toFixed(0)} B, estimated ${r.estimatedPerSeries.toFixed(0)} B per series`);
    assert.ok(r.series > 0);
    assert.ok(r.estimatedPerSeries >= r.measuredPerSeries, `estimate ${r.estimatedPerSeries} below the measured ${r.measuredPerSeries}`);
    assert.ok(r.estimatedPerSeries <= 2 * r.measuredPerSeries, `estimate ${r.estimatedPerSeries} far above the measured ${r.measuredPerSeries}`);
  });
}

const entries = (target: string, n: number, v: number) => Array.from({ length: n }, (_, i) => ({ key: `${target}\xffs${i}`, info: i, value: v }));

test("past the budget a new pod gets no window, a pod whose series grow loses its window, and the others go on; refused series are counted", () => {
  const refused: number[] = [];
  // Room for two pods of 10 series at 3 points, not three.
  const budget = new WindowBudget(2 * 10 * windowSeriesBytes(10, 3) + 100, (n) => refused.push(n));
  const windows = new PodWindows<number>(300_000, budget);
  for (let k = 0; k < 3; k++) {
    assert.ok(windows.observe("ns/a", "ta", k * 15_000, entries("ta", 10, k)));
    assert.ok(windows.observe("ns/b", "tb", k * 15_000, entries("tb", 10, k)));
  }
  assert.equal(windows.observe("ns/c", "tc", 45_000, entries("tc", 10, 0)), undefined, "a third pod does not fit");
  assert.equal(windows.has("ns/c"), false);
  assert.deepEqual(refused, [10]);
  // b grows by ten series past the budget: its window goes whole (no part of a histogram stays).
  assert.equal(windows.observe("ns/b", "tb", 45_000, entries("tb", 20, 3)), undefined);
  assert.equal(windows.has("ns/b"), false);
  assert.deepEqual(refused, [10, 20]);
  assert.ok(budget.bytes <= budget.maxBytes, `${budget.bytes} held of ${budget.maxBytes}`);
  // a, unchanged, goes on; c now fits in what b left.
  assert.equal(windows.observe("ns/a", "ta", 45_000, entries("ta", 10, 3))?.size, 10);
  assert.equal(windows.observe("ns/c", "tc", 45_000, entries("tc", 10, 0))?.size, 10);
  // The tally is what the windows hold: it goes back to nothing with them.
  windows.remove("ns/a", "ta");
  windows.remove("ns/c", "tc");
  assert.equal(budget.bytes, 0);
});

test("the tally follows the points a window keeps: added as they come, given back as they pass the horizon", () => {
  const budget = new WindowBudget();
  const windows = new PodWindows<number>(300_000, budget);
  for (let k = 0; k <= 40; k++) windows.observe("ns/a", "ta", k * 15_000, entries("ta", 5, k));
  // 300 s at 15 s: 21 points each (the newest before the horizon included).
  assert.equal(windows.get("ns/a")!.all()[0]!.count, 21);
  assert.equal(budget.bytes, 5 * windowSeriesBytes("ta\xffs0".length, 21));
  // A scrape without them marks them stale (a marker each), and past the horizon they go.
  windows.observe("ns/a", "ta", 41 * 15_000, []);
  windows.observe("ns/a", "ta", 70 * 15_000, []);
  assert.equal(windows.get("ns/a")?.size ?? 0, 0);
  assert.equal(budget.bytes, 0);
});

test("the budget holds join.maxSeries series of the nominal key at the points the shortest interval keeps", () => {
  assert.equal(windowBudgetBytes(1000, 400, 300_000, 15_000), 1000 * windowSeriesBytes(400, 22));
  assert.equal(windowBudgetBytes(1000, 400, 600_000, 2_000), 1000 * windowSeriesBytes(400, 302));
  assert.equal(windowBudgetBytes(1000, 400, 60_000, 15_000), 1000 * windowSeriesBytes(400, 22), "the lookback (5 min) when the rate window is shorter");
});
