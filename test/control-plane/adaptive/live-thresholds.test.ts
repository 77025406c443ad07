// The control plane's live tail-keep thresholds (control-plane/src/adaptive/live-thresholds.ts):
// a pair's P95 from its window's histogram, moved only past the hysteresis, rising at most
// maxIncrease per step, falling at once, bounded by floor and ceiling, and at most maxEntries pairs
// (the busiest), the rest counted as overflow.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_LIVE_THRESHOLDS, nextLiveThresholds, windowOf, type PairWindow } from "../../../control-plane/src/adaptive/live-thresholds.js";

/** A cumulative histogram of `n` requests spread evenly over (0, maxMs], buckets every 100 ms. */
function even(n: number, maxMs: number): Map<number, number> {
  const h = new Map<number, number>();
  for (let le = 100; le <= maxMs; le += 100) h.set(le, Math.round((n * le) / maxMs));
  h.set(Infinity, n);
  return h;
}

const pair = (route: string, model: string, n: number, maxMs: number, ttftMaxMs?: number): PairWindow => ({ route, model, duration: even(n, maxMs), ...(ttftMaxMs === undefined ? {} : { ttft: even(n, ttftMaxMs) }) });

describe("live tail-keep thresholds", () => {
  it("starts at each pair's P95 of duration and TTFT", () => {
    const step = nextLiveThresholds([], [pair("chat", "m", 1000, 1000, 200)]);
    assert.deepEqual(step.entries, [{ route: "chat", model: "m", durationMs: 950, ttftMs: 190 }]);
    assert.equal(step.changed, true);
    assert.equal(step.overflow, 0);
  });

  it("holds a rise within the hysteresis, rises at most 1.5x per step, falls at once", () => {
    const prev = [{ route: "chat", model: "m", durationMs: 950 }];
    const within = nextLiveThresholds(prev, [pair("chat", "m", 1000, 1040)]);
    assert.deepEqual(within.entries, prev);
    assert.equal(within.changed, false);
    assert.equal(nextLiveThresholds(prev, [pair("chat", "m", 1000, 4000)]).entries[0]!.durationMs, 1425);
    assert.equal(nextLiveThresholds(prev, [pair("chat", "m", 1000, 500)]).entries[0]!.durationMs, 475);
    assert.equal(nextLiveThresholds(prev, [pair("chat", "m", 1000, 980)]).entries[0]!.durationMs, 900, "a fall within the hysteresis too");
  });

  it("sets the threshold at margin times the quantile", () => {
    assert.equal(nextLiveThresholds([], [pair("chat", "m", 1000, 1000)], { ...DEFAULT_LIVE_THRESHOLDS, margin: 0.8 }).entries[0]!.durationMs, 760);
  });

  it("bounds values by floor and ceiling and skips pairs with too few requests", () => {
    const o = { ...DEFAULT_LIVE_THRESHOLDS, floorMs: 300, ceilingMs: 600 };
    assert.equal(nextLiveThresholds([], [pair("a", "m", 1000, 100)], o).entries[0]!.durationMs, 300);
    assert.equal(nextLiveThresholds([], [pair("a", "m", 1000, 5000)], o).entries[0]!.durationMs, 600);
    assert.deepEqual(nextLiveThresholds([], [pair("a", "m", 5, 1000)]).entries, []);
  });

  it("sends at most maxEntries pairs, the busiest, and counts the rest", () => {
    const windows = Array.from({ length: 5 }, (_, i) => pair(`r${i}`, "m", 100 * (i + 1), 1000));
    const step = nextLiveThresholds([], windows, { ...DEFAULT_LIVE_THRESHOLDS, maxEntries: 2 });
    assert.deepEqual(step.entries.map((e) => e.route), ["r4", "r3"]);
    assert.equal(step.overflow, 3);
  });

  it("a window is the later cumulative counts minus the earlier", () => {
    assert.deepEqual([...windowOf(new Map([[100, 7], [Infinity, 10]]), new Map([[100, 2], [Infinity, 4]]))], [[100, 5], [Infinity, 6]]);
    assert.deepEqual([...windowOf(new Map([[Infinity, 3]]), undefined)], [[Infinity, 3]]);
  });
});
