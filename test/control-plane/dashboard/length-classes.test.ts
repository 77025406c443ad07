// Latency by length class on the dashboard: the filter's TTFT histogram split by input_length and
// its decode and duration histograms by output_length, kept per class in each scrape interval (only
// the classes that grew, the one class of an interval sharing the histogram's own counts), then over
// the page's range buckets added per class across pods and models before the quantile, classes in
// the order of their boundaries; what a sidecar labels beyond the filter's shapes is not kept.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { compareLengthClasses, isLengthClass, MAX_LENGTH_CLASSES } from "../../../control-plane/src/dashboard/length-classes.js";
import { lengthClassFigures, type LengthClassFigures } from "../../../control-plane/src/dashboard/length-classes-window.js";
import { countsOf } from "../../../control-plane/src/dashboard/bucket-deltas.js";
import { DashboardSeries, intervalBytes } from "../../../control-plane/src/dashboard/series.js";
import { windowColumns } from "../../../control-plane/src/dashboard/window.js";
import { dashboardRoutes } from "../../../control-plane/src/dashboard/routes.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { errorHandler } from "../../../control-plane/src/api/errors.js";
import { demoTarget, lengthClassText, sidecarBatch, type ClassBuckets } from "./sidecar-batch.js";

const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
const NOW = T0 + 400_000;
const ZERO = [0, 0, 0, 0, 0, 0];
const KEY = { namespace: "demo", route: "chat" };

test("compareLengthClasses: by boundary, le before gt, unknown last, not by text (where le2048 sorts before le512)", () => {
  for (const [given, sorted] of [
    [["unknown", "gt8192", "le8192", "le512", "le2048"], ["le512", "le2048", "le8192", "gt8192", "unknown"]],
    [["le256", "le64", "unknown", "le1024", "gt1024"], ["le64", "le256", "le1024", "gt1024", "unknown"]],
    [["gt100", "le1000"], ["le1000", "gt100"]],
  ] as const) {
    assert.deepEqual([...given].sort(compareLengthClasses), sorted, given.join(","));
  }
});

test("isLengthClass: the filter's shapes (le<N>, gt<N>, unknown) and nothing else", () => {
  for (const [value, ok] of [
    ["le512", true],
    ["gt8192", true],
    ["unknown", true],
    ["le0", true],
    ["le", false],
    ["lt512", false],
    ["le512x", false],
    ["LE512", false],
    ["le12345678901", false],
    ["", false],
    ["../unknown", false],
  ] as const) {
    assert.equal(isLengthClass(value), ok, value);
  }
});

/** Cumulative per class and histogram, of one model. */
type Hist = { ttft: ClassBuckets; decode: ClassBuckets; duration: ClassBuckets };
const add = (a: number[], b: number[]): number[] => a.map((v, i) => v + b[i]!);

/**
 * Two pods, two models. In range (the last 300 s before NOW): p0's model a had 10 short prompts
 * (le512, 8 under 50 ms, 2 under 100) and 2 long ones (gt8192, 500 to 1000 ms); p1's model a 4
 * short prompts in (100, 250]; p0's model b 3 prompts of le8192 past 1000 ms. Before the range,
 * p0's model a had 100 short prompts at 500 to 1000 ms, which must not count.
 */
function observed(): DashboardSeries {
  const d = new DashboardSeries();
  const old: Hist = { ttft: { le512: [0, 0, 0, 0, 100, 100], gt8192: ZERO }, decode: { le64: ZERO, le256: ZERO }, duration: { le64: ZERO, le256: ZERO, unknown: ZERO } };
  const p0a: Hist = {
    ttft: { le512: add(old.ttft.le512!, [8, 10, 10, 10, 10, 10]), gt8192: [0, 0, 0, 0, 2, 2] },
    decode: { le64: [5, 5, 5, 5, 5, 5], le256: [0, 6, 6, 6, 6, 6] },
    duration: { le64: [0, 0, 5, 5, 5, 5], le256: [0, 0, 0, 3, 6, 6], unknown: [1, 1, 1, 1, 1, 1] },
  };
  const zeros = (h: Hist): Hist => ({ ttft: Object.fromEntries(Object.keys(h.ttft).map((c) => [c, ZERO])), decode: Object.fromEntries(Object.keys(h.decode).map((c) => [c, ZERO])), duration: Object.fromEntries(Object.keys(h.duration).map((c) => [c, ZERO])) });
  const p0b: Hist = { ttft: { le8192: [0, 0, 0, 0, 0, 3] }, decode: {}, duration: {} };
  const p1a: Hist = { ttft: { le512: [0, 0, 4, 4, 4, 4] }, decode: {}, duration: { le256: [0, 0, 0, 0, 0, 2] } };
  const scrape = (pod: string, ts: number, a: Hist, b?: Hist): void => d.observe(sidecarBatch(lengthClassText("chat", "a", a) + (b ? lengthClassText("chat", "b", b) : ""), ts), { target: demoTarget(pod), timestampMs: ts });
  scrape("p0", T0, zeros(p0a), zeros(p0b));
  scrape("p0", T0 + 2000, old, zeros(p0b));
  scrape("p0", NOW - 2000, old, zeros(p0b));
  scrape("p0", NOW, p0a, p0b);
  scrape("p1", NOW - 3000, zeros(p1a));
  scrape("p1", NOW - 1000, p1a);
  return d;
}

const LAST_5_MIN = { nowMs: NOW, rangeMs: 300_000 };

test("lengthClassFigures: per class over the range, buckets added across pods before the quantile; TTFT by input_length, decode and duration by output_length, classes by boundary, unknown last", () => {
  const d = observed();
  const figures = lengthClassFigures(d.intervals(KEY), { ...LAST_5_MIN, model: "a" });
  assert.deepEqual(figures, {
    ttft: [
      // p0's [8,10,10,10,10,10] and p1's [0,0,4,4,4,4]: 14 calls, P99 in (100, 250] (averaging the pods' P99s would give another figure).
      { lengthClass: "le512", calls: 14, p50: 43.75, p99: 244.75 },
      { lengthClass: "gt8192", calls: 2, p50: 750, p99: 995 },
    ],
    decode: [
      { lengthClass: "le64", calls: 5, p50: 25, p99: 49.5 },
      { lengthClass: "le256", calls: 6, p50: 75, p99: 99.5 },
    ],
    duration: [
      { lengthClass: "le64", calls: 5, p50: 175, p99: 248.5 },
      // p0's 6 and p1's 2 past the last bound: P99 in +Inf is the largest finite bound, as in Prometheus.
      { lengthClass: "le256", calls: 8, p50: 666.667, p99: 1000 },
      { lengthClass: "unknown", calls: 1, p50: 25, p99: 49.5 },
    ],
  } satisfies LengthClassFigures);
  // The route's own TTFT P99 sums the classes: 2 long prompts in 16 set it, and it is neither class's.
  const cols = windowColumns(d.intervals(KEY), { nowMs: NOW, rangeMs: 2000, stepMs: 2000, windowMs: 8000, samplingWindowMs: 60_000, model: "a" });
  assert.deepEqual(cols.ttftP99, [960]);

  // Every model: model b's le8192 between le512 and gt8192.
  const all = lengthClassFigures(d.intervals(KEY), LAST_5_MIN);
  assert.deepEqual(all.ttft.map((r) => [r.lengthClass, r.calls, r.p99]), [["le512", 14, 244.75], ["le8192", 3, 1000], ["gt8192", 2, 995]]);
  assert.deepEqual(lengthClassFigures(d.intervals(KEY), { ...LAST_5_MIN, model: "b" }), { ttft: [{ lengthClass: "le8192", calls: 3, p50: 1000, p99: 1000 }], decode: [], duration: [] });
  // The hour holds the 100 slow short prompts from before the 5 minutes.
  assert.deepEqual(lengthClassFigures(d.intervals(KEY), { nowMs: NOW, rangeMs: 3_600_000, model: "a" }).ttft[0], { lengthClass: "le512", calls: 114, p50: 715, p99: 994.3 });
  assert.deepEqual(lengthClassFigures(d.intervals(KEY), { ...LAST_5_MIN, model: "nope" }), { ttft: [], decode: [], duration: [] });
});

test("each interval keeps only the classes that grew: one alone shares the histogram's own counts (no second set), two have their own in the interval's cells, and intervalBytes counts them", () => {
  const d = new DashboardSeries();
  const hist = (le512: number, gt8192: number): Hist => ({ ttft: { le512: [le512, le512, le512, le512, le512, le512], gt8192: [0, 0, 0, 0, gt8192, gt8192] }, decode: {}, duration: {} });
  for (const [k, h] of [hist(0, 0), hist(3, 0), hist(5, 2), hist(5, 2)].entries()) d.observe(sidecarBatch(lengthClassText("chat", "a", h), T0 + 2000 * k), { target: demoTarget("p0"), timestampMs: T0 + 2000 * k });
  const [one, two, none] = d.intervals(KEY).map((i) => i.counts.models.get("a")!);
  assert.deepEqual(one!.ttftByClass?.classes, ["le512"]);
  assert.equal(one!.ttftByClass!.deltas[0], one!.ttft, "the one class's deltas are the histogram's");
  assert.deepEqual(two!.ttftByClass?.classes, ["le512", "gt8192"]);
  assert.deepEqual(two!.ttftByClass!.deltas.map(countsOf), [[2, 2, 2, 2, 2, 2], [0, 0, 0, 0, 2, 2]]);
  assert.ok(two!.ttftByClass!.deltas.every((x) => x.cells === two!.ttft.cells), "packed with the histogram's own counts");
  assert.ok(two!.ttftByClass!.deltas.every((x) => x !== two!.ttft));
  assert.equal(none!.ttftByClass, null, "nothing grew");
  const [b1, b2, b0] = d.intervals(KEY).map(intervalBytes);
  assert.ok(b1! > b0! && b1! - b0! < 200, `one class: a small object (${b1! - b0!} bytes)`);
  assert.ok(b2! - b1! >= 2 * (80 + 6), `two classes: two deltas and their 12 counts more (${b2! - b1!} bytes)`);
  assert.equal(d.bytes, b0! + b1! + b2!);
});

test("a sidecar cannot grow what an interval holds: class values not of the filter's shapes are not kept, nor more than MAX_LENGTH_CLASSES per histogram; the summed histogram keeps every series", () => {
  const d = new DashboardSeries();
  const bogus = ["le512x", "../etc", "x".repeat(200), "LE512"];
  const many = Array.from({ length: MAX_LENGTH_CLASSES + 4 }, (_, i) => `le${i + 1}`);
  const ttft = (n: number): ClassBuckets => Object.fromEntries([...bogus, ...many].map((c) => [c, [n, n, n, n, n, n]]));
  for (const [k, n] of [0, 1].entries()) d.observe(sidecarBatch(lengthClassText("chat", "a", { ttft: ttft(n), decode: {}, duration: {} }), T0 + 2000 * k), { target: demoTarget("p0"), timestampMs: T0 + 2000 * k });
  const m = d.intervals(KEY)[0]!.counts.models.get("a")!;
  assert.deepEqual(m.ttftByClass?.classes, many.slice(0, MAX_LENGTH_CLASSES));
  assert.equal(countsOf(m.ttft).at(-1), bogus.length + many.length, "the route's own TTFT counts every call");
});

test("GET /v1/dashboard/series: lengthClasses over the range for the route and the model picked, a few hundred bytes", async () => {
  const d = observed();
  const app = express();
  app.use(dashboardRoutes({ store: new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-length-")), "policies.json") }), tokens: [], reads: "public", dashboard: d, now: () => NOW }));
  app.use(errorHandler(() => undefined));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const body = (await (await fetch(`${url}/v1/dashboard/series?route=chat&range=300&model=a`)).json()) as { model: string; lengthClasses: LengthClassFigures };
    assert.equal(body.model, "a");
    assert.deepEqual(body.lengthClasses, lengthClassFigures(d.intervals(KEY), { ...LAST_5_MIN, model: "a" }));
    assert.deepEqual(body.lengthClasses.ttft.map((r) => r.lengthClass), ["le512", "gt8192"]);
    const every = (await (await fetch(`${url}/v1/dashboard/series?route=chat&range=3600`)).json()) as { model: null; lengthClasses: LengthClassFigures };
    assert.deepEqual(every.lengthClasses, lengthClassFigures(d.intervals(KEY), { nowMs: NOW, rangeMs: 3_600_000 }));
    assert.ok(JSON.stringify(every.lengthClasses).length < 1000, `${JSON.stringify(every.lengthClasses).length} bytes`);
    assert.equal((await fetch(`${url}/dashboard/length-classes.js`)).status, 200, "the panel's script is served");
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
