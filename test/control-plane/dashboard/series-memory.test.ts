// The dashboard's history is bounded in bytes: each interval's estimated size (intervalBytes) is
// at least what V8's heap and array buffers grow by when the series holds it (measured in a child
// run with --expose-gc, for several shapes), and the series never holds more than its budget, the
// oldest intervals of any route going first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DashboardSeries, DEFAULT_LIMITS, intervalBytes } from "../../../control-plane/src/dashboard/series.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { measureInChild } from "../heap.js";

const child = new URL("./series-memory-child.ts", import.meta.url);

// The last column: what each bucket grows by per interval, at most (1, 1,000 and 2^32 x 48: counts of
// one, two and eight bytes).
for (const [models, buckets, keeps, errorTypes, classes, longNames, step] of [
  [2, 48, 0, 0, 0, 0, 1],
  [1, 12, 1, 0, 0, 0, 1],
  [8, 24, 1, 0, 0, 0, 1],
  [8, 12, 0, 9, 0, 0, 1],
  [2, 48, 0, 0, 1, 0, 1],
  [2, 48, 0, 0, 3, 0, 1],
  [2, 48, 0, 0, 0, 1, 1],
  [2, 48, 0, 0, 0, 0, 1000],
  [2, 48, 0, 0, 3, 0, 2 ** 32],
] as const) {
  test(`intervalBytes is at least what one interval costs V8 and at most 1.5 times it (${models} models${longNames === 1 ? " with names as long as real ones" : ""}, ${buckets} buckets growing by up to ${step * buckets} an interval, keep counters ${keeps === 1 ? "on" : "off"}, ${errorTypes} error types failing, ${classes} length classes growing; measured with --expose-gc)`, { timeout: 120_000 }, (t) => {
    const r = measureInChild<{ held: number; measuredPerInterval: number; estimatedPerInterval: number }>(child, [3000, models, buckets, keeps, errorTypes, classes, longNames, step]);
    t.diagnostic(`measured ${r.measuredPerInterval.toFixed(0)} B, estimated ${r.estimatedPerInterval.toFixed(0)} B per interval`);
    assert.equal(r.held, 3000);
    assert.ok(r.estimatedPerInterval >= r.measuredPerInterval, `estimate ${r.estimatedPerInterval} below the measured ${r.measuredPerInterval}`);
    assert.ok(r.estimatedPerInterval <= 1.5 * r.measuredPerInterval, `estimate ${r.estimatedPerInterval} far above the measured ${r.measuredPerInterval}`);
  });
}

const batch = (route: string, k: number): WriteSeries[] => [
  { labels: ["__name__", "tokentrace_requests_total", "route", route, "status_class", "2xx"], samples: [{ value: k, timestampMs: 0 }] },
  ...["10", "100", "+Inf"].map((le, i) => ({ labels: ["__name__", "tokentrace_llm_duration_ms_bucket", "route", route, "model", "m", "le", le], samples: [{ value: k * (i + 1), timestampMs: 0 }] })),
];

test("the series holds at most maxBytes: past it the oldest intervals of any route go first, the newest of every route stay", () => {
  const maxBytes = 40_000;
  const d = new DashboardSeries({ ...DEFAULT_LIMITS, maxBytes });
  let peak = 0;
  for (let k = 0; k < 400; k++) {
    for (const route of ["a", "b", "c"]) d.observe(batch(route, k), { target: { id: `envoy/ns/${route}`, kind: "envoy", namespace: "ns", pod: route }, timestampMs: 1_000_000 + k * 2000 });
    peak = Math.max(peak, d.bytes);
  }
  assert.ok(peak <= maxBytes, `held ${peak} bytes`);
  const held = ["a", "b", "c"].map((route) => d.intervals({ namespace: "ns", route }));
  const sum = held.flat().reduce((n, i) => n + intervalBytes(i), 0);
  assert.equal(d.bytes, sum, "the running total is the intervals' sizes");
  assert.ok(sum > maxBytes - 3 * intervalBytes(held[0]![0]!), "the budget is used, not emptied");
  for (const list of held) assert.equal(list.at(-1)!.endMs, 1_000_000 + 399 * 2000, "every route keeps its newest");
  // Each route lost its oldest: what is left of every route starts within one scrape of the others.
  const starts = held.map((list) => list[0]!.endMs);
  assert.ok(Math.max(...starts) - Math.min(...starts) <= 2000, `starts ${starts.join(", ")}`);
});

test("the series forgets targets not scraped within the retention (a rollout's old pods), though nothing removes them", () => {
  const d = new DashboardSeries({ ...DEFAULT_LIMITS, retentionMs: 600_000 });
  // A rollout every minute for two hours: each pod scraped for a minute, then gone.
  for (let minute = 0; minute < 120; minute++) {
    for (let s = 0; s < 60; s += 15) d.observe(batch("chat", minute * 4 + s / 15), { target: { id: `envoy/ns/p${minute}`, kind: "envoy", namespace: "ns", pod: `p${minute}` }, timestampMs: 1_000_000 + minute * 60_000 + s * 1000 });
  }
  // Those of the last ten minutes, and one more minute's at most until the next sweep.
  assert.ok(d.targets <= 12, `${d.targets} targets remembered`);
  assert.ok(d.targets >= 10, `${d.targets} targets remembered`);
});
