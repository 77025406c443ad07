// control-plane/src/promql/: rate() against Prometheus's own engine (Debian's promtool 2.42, exact
// comparison) on random counters with resets, and the rules of the current source (d15adb9) that
// 2.42 does not have, one by one: a range's start is exclusive, extrapolation stops at a counter's
// zero point after the half-gap rule, avg_over_time and avg divide a compensated sum.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { avgOf, sumOf } from "../../../control-plane/src/promql/aggregate.js";
import { avgOverTime, extrapolatedRate, maxOverTime, rangeOf, type Samples } from "../../../control-plane/src/promql/rate.js";
import { instantValue, SeriesWindow } from "../../../control-plane/src/promql/series-window.js";
import { mulberry32 } from "../../support/mulberry32.js";
import { heldPoints } from "./samples.js";

interface Point {
  t: number;
  v: number;
}

/** Points as the rate functions read them. */
function pack(points: readonly Point[]): Samples {
  return { count: points.length, time: (i) => points[i]!.t, value: (i) => points[i]!.v };
}


test("rate(x[5m]) equals Prometheus's for 40 random counters with resets, gaps and irregular scrapes (promtool, exact)", () => {
  const r = mulberry32(7);
  const series: { name: string; points: Point[] }[] = [];
  for (let i = 0; i < 40; i++) {
    const points: Point[] = [];
    let v = Math.floor(r() * 1e6);
    // Scraped every 14 to 18 s from before the window on, so the window is covered (where 2.42 and
    // d15adb9 agree), at odd seconds: evaluated at even ones, no point falls on a range's start
    // (2.42 includes it, d15adb9 does not).
    for (let t = 1 + 2 * Math.floor(r() * 5); t < 700; t += 14 + 2 * Math.floor(r() * 3)) {
      v = r() < 0.04 ? Math.floor(r() * 50) : v + Math.floor(r() * (i % 3 === 0 ? 3 : 5000));
      points.push({ t: t * 1000, v });
    }
    series.push({ name: `c_total{i="${i}"}`, points });
  }
  const evals = [650, 676, 698];
  const tests = evals.map((sec) => ({
    expr: "rate(c_total[5m])",
    eval_time: `${sec}s`,
    exp_samples: series.flatMap((s, i) => {
      const v = extrapolatedRate(pack(s.points), sec * 1000, 300_000);
      return v === undefined ? [] : [{ labels: `{i="${i}"}`, value: v }];
    }),
  }));
  assert.ok(tests.every((t) => t.exp_samples.length === 40));
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-rate-"));
  try {
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups: [] }));
    const input = series.map((s) => {
      const at = new Map(s.points.map((p) => [p.t / 1000, p.v]));
      return { series: s.name, values: Array.from({ length: 701 }, (_, t) => (at.has(t) ? String(at.get(t)) : "_")).join(" ") };
    });
    writeFileSync(join(dir, "test.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: "1s", tests: [{ interval: "1s", input_series: input, promql_expr_test: tests }] }));
    const run = spawnSync("promtool", ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
    assert.equal(run.status, 0, run.stdout + run.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a range selector takes (end - range, end]: a point on the start is out (Prometheus 3.0 and later)", () => {
  const pts = [{ t: 0, v: 1 }, { t: 10_000, v: 2 }, { t: 20_000, v: 3 }];
  assert.deepEqual(rangeOf(pack(pts), 20_000, 20_000), [1, 3], "10 s and 20 s");
  assert.equal(extrapolatedRate(pack([{ t: 0, v: 100 }, { t: 10_000, v: 110 }]), 10_000, 10_000), undefined, "one point left: no rate");
});

test("extrapolation: up to half a gap past a series that starts inside the range, then no further back than the counter's zero", () => {
  // Two points 10 s apart, 60 s range ending 0 s after the last: the start is 50 s away (over 1.1 gaps), so 5 s is added...
  assert.equal(extrapolatedRate(pack([{ t: 50_000, v: 1000 }, { t: 60_000, v: 1010 }]), 60_000, 60_000, false), 10 * (15 / 10));
  // ...unless the counter would reach zero sooner: from 4 to 14 in 10 s, zero is 4 s back (d15adb9 caps after the half-gap rule).
  assert.equal(extrapolatedRate(pack([{ t: 50_000, v: 4 }, { t: 60_000, v: 14 }]), 60_000, 60_000, false), 10 * (14 / 10));
  // A reset adds the value before the drop: 25 over 20 s, extrapolated 5 s back to the range's start.
  assert.equal(extrapolatedRate(pack([{ t: 0, v: 50 }, { t: 10_000, v: 70 }, { t: 20_000, v: 5 }]), 20_000, 25_000, false), (70 - 50 + 5) * ((20 + 5) / 20));
});

test("avg_over_time and avg divide a compensated sum (d15adb9), max_over_time skips NaN", () => {
  const pts = [1e16, 1, -1e16].map((v, i) => ({ t: i * 1000, v }));
  // A plain running sum or running mean loses the 1; the compensated sum keeps it.
  assert.equal(avgOverTime(pack(pts), 2000, 10_000), 1 / 3);
  assert.equal(avgOf([1e16, 1, -1e16]), 1 / 3);
  assert.equal(sumOf([1e16, 1, -1e16]), 1);
  assert.equal(maxOverTime(pack([{ t: 0, v: Number.NaN }, { t: 1000, v: 2 }]), 1000, 5000), 2);
  assert.equal(sumOf([]), undefined);
});

test("instant values: the newest point within 5 min, none after a staleness marker or a failed scrape until the next point", () => {
  const w = new SeriesWindow<string>(600_000);
  w.observe("t", 0, [{ key: "a", info: "a", value: 1 }, { key: "b", info: "b", value: 2 }]);
  w.observe("t", 15_000, [{ key: "a", info: "a", value: 3 }]);
  const [a, b] = w.all();
  assert.equal(instantValue(a!, 20_000), 3);
  assert.equal(instantValue(b!, 10_000), 2);
  assert.equal(instantValue(b!, 15_000), undefined, "b vanished from the scrape at 15 s");
  w.failed("t", 30_000);
  assert.equal(instantValue(a!, 30_000), undefined);
  w.observe("t", 45_000, [{ key: "a", info: "a", value: 4 }]);
  assert.equal(instantValue(a!, 45_000), 4);
  assert.equal(instantValue(a!, 45_000 + 300_000), undefined, "past the lookback");
  assert.deepEqual(heldPoints(a!), [0, 1, 15_000, 3, 45_000, 4], "ranges keep the points before the failure");
});
