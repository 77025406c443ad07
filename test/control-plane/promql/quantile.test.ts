// The dashboard's histogram_quantile against the real one: random bucket sets (also non-monotone
// ones, as remote-written or racy scrapes give) are evaluated by Debian's promtool (Prometheus's own
// PromQL engine, `promtool test rules`) and must agree; the special cases of
// promql/quantile.go BucketQuantile are asserted one by one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { histogramQuantile } from "../../../control-plane/src/promql/quantile.js";
import { mulberry32 } from "../../support/mulberry32.js";

const BOUNDS = [10, 25, 50, 100, 250, 500, 1000, 2500];

function randomBuckets(r: () => number, monotone: boolean): Map<number, number> {
  const out = new Map<number, number>();
  let count = 0;
  for (const le of [...BOUNDS.filter(() => r() < 0.8), Infinity]) {
    count += Math.floor(r() * 20);
    // Now and then a bucket below its predecessor, as an inconsistent scrape gives.
    out.set(le, !monotone && r() < 0.4 ? Math.max(0, count - 5 - Math.floor(r() * 25)) : count);
  }
  return out;
}

test("histogramQuantile agrees with Prometheus (promtool's PromQL engine) on 60 random bucket sets (240 quantiles), monotone or not", () => {
  const check = spawnSync("promtool", ["--version"], { stdio: "ignore" });
  assert.equal(check.status, 0, "promtool is missing: run `make test-deps` (installs Debian prometheus)");
  const r = mulberry32(15);
  const qs = [0.5, 0.9, 0.95, 0.99];
  const inputSeries: { series: string; values: string }[] = [];
  const exprTests: { expr: string; eval_time: string; exp_samples: { labels: string; value: number }[] }[] = [];
  for (let c = 0; c < 60; c++) {
    const buckets = randomBuckets(r, c % 2 === 0);
    for (const [le, v] of buckets) inputSeries.push({ series: `h${c}_bucket{le="${le === Infinity ? "+Inf" : le}"}`, values: String(v) });
    for (const q of qs) {
      const ours = histogramQuantile(q, buckets);
      if (ours === null) continue;
      exprTests.push({ expr: `histogram_quantile(${q}, h${c}_bucket)`, eval_time: "0m", exp_samples: [{ labels: "{}", value: ours }] });
    }
  }
  assert.ok(exprTests.length >= 100, `${exprTests.length} comparisons`);
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-promtool-"));
  try {
    const file = join(dir, "quantile_test.yml");
    writeFileSync(file, stringify({ rule_files: [], evaluation_interval: "1m", tests: [{ interval: "1m", input_series: inputSeries, promql_expr_test: exprTests }] }));
    const run = spawnSync("promtool", ["test", "rules", file], { encoding: "utf8" });
    assert.equal(run.status, 0, `promtool disagrees:\n${run.stdout}\n${run.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("histogramQuantile: BucketQuantile's special cases", () => {
  const h = new Map([[100, 2], [250, 8], [500, 10], [Infinity, 10]]);
  assert.equal(histogramQuantile(0.5, h), 175, "linear inside the bucket");
  assert.equal(histogramQuantile(0.1, h), 50, "from 0 inside the lowest bucket");
  assert.equal(histogramQuantile(0.99, new Map([[100, 1], [Infinity, 10]])), 100, "in the +Inf bucket: the highest finite bound");
  assert.equal(histogramQuantile(0.5, new Map([[-1, 4], [Infinity, 4]])), -1, "lowest bound <= 0: that bound");
  assert.equal(histogramQuantile(0.5, new Map([[100, 0], [Infinity, 0]])), null, "no observations: NaN");
  assert.equal(histogramQuantile(0.5, new Map([[100, 3], [200, 5]])), null, "no +Inf bucket: NaN");
  assert.equal(histogramQuantile(0.5, new Map([[Infinity, 5]])), null, "fewer than two buckets: NaN");
  assert.equal(histogramQuantile(-0.1, h), -Infinity);
  assert.equal(histogramQuantile(1.1, h), Infinity);
  // A decrease is lifted to the running maximum, so a higher quantile never reads lower.
  const racy = new Map([[100, 8], [250, 3], [500, 10], [Infinity, 10]]);
  const [p50, p95, p99] = [0.5, 0.95, 0.99].map((q) => histogramQuantile(q, racy)!) as [number, number, number];
  assert.ok(p50 <= p95 && p95 <= p99, `${p50} <= ${p95} <= ${p99}`);
  assert.deepEqual([p50, p95], [62.5, 437.5], "the 250 bucket counts as 8, not 3");
});

// prometheus/prometheus#13153 (after Debian's promtool 2.42, which answers 2 here): a rise of a
// relative 1e-13, as sums of rates give, is float noise, so the bucket above adds no observations.
test("histogramQuantile: a bucket count a relative 1e-13 above the one below counts as equal (ensureMonotonicAndIgnoreSmallDeltas)", () => {
  const noisy = new Map([[1, 100], [2, 100.00000000001], [Infinity, 100.00000000001]]);
  assert.equal(histogramQuantile(1, noisy), 1, "the top quantile stays in the first bucket");
  assert.equal(histogramQuantile(0.5, noisy), 0.5);
  // A rise of a relative 1e-11 is a real one.
  assert.equal(histogramQuantile(1, new Map([[1, 100], [2, 100.000000001], [Infinity, 100.000000001]])), 2);
});
