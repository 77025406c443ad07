// The dashboard's data from the filter's Prometheus text (fixtures in the format the sidecar's
// /stats/prometheus prints, including tokentrace_llm_decode_ms): increases per scrape interval, then
// per point the sum over a trailing window (rates added across pods, buckets added before the
// quantile), status-class shares, one model's figures, and the JSON endpoint the page reads.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import fc from "fast-check";
import { dashboardRoutes, PIPELINE_OFF_HINT } from "../../../control-plane/src/dashboard/routes.js";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { LATENCY_PHASES, windowColumns } from "../../../control-plane/src/dashboard/window.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { errorHandler } from "../../../control-plane/src/api/errors.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { demoTarget, sidecarBatch } from "./sidecar-batch.js";

const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
const BOUNDS = ["50", "100", "250", "500", "1000", "+Inf"];

/** Cumulative counts of one pod for one scrape. */
interface Counts {
  ok: number;
  e4: number;
  e5: number;
  reset?: number;
  sampled: number;
  /** Per model: cumulative bucket counts for ttft, decode, duration, and token counters. */
  models: Record<string, { ttft: number[]; decode: number[]; duration: number[]; calls: number; input: number; output: number }>;
}

/** The filter's stats as the sidecar prints them (the Istio tag-extracted form), one route "chat". */
function statsText(c: Counts): string {
  const lines = [
    "# TYPE tokentrace_requests_total counter",
    `tokentrace_requests_total{route="chat",status_class="2xx"} ${c.ok}`,
    `tokentrace_requests_total{route="chat",status_class="4xx"} ${c.e4}`,
    `tokentrace_requests_total{route="chat",status_class="5xx"} ${c.e5}`,
    `tokentrace_requests_total{route="chat",status_class="none"} ${c.reset ?? 0}`,
    "# TYPE tokentrace_traces_sampled_total counter",
    `tokentrace_traces_sampled_total{route="chat"} ${c.sampled}`,
  ];
  for (const [name, hist] of [["tokentrace_llm_ttft_ms", "ttft"], ["tokentrace_llm_decode_ms", "decode"], ["tokentrace_llm_duration_ms", "duration"]] as const) {
    lines.push(`# TYPE ${name} histogram`);
    for (const [model, m] of Object.entries(c.models)) {
      BOUNDS.forEach((le, i) => lines.push(`${name}_bucket{route="chat",model="${model}",le="${le}"} ${m[hist][i]}`));
      lines.push(`${name}_count{route="chat",model="${model}"} ${m[hist][BOUNDS.length - 1]}`);
    }
  }
  lines.push("# TYPE tokentrace_llm_requests_total counter");
  for (const [model, m] of Object.entries(c.models)) lines.push(`tokentrace_llm_requests_total{route="chat",model="${model}",stream="true",finish_reason="stop"} ${m.calls}`);
  lines.push("# TYPE tokentrace_llm_input_tokens_total counter");
  for (const [model, m] of Object.entries(c.models)) lines.push(`tokentrace_llm_input_tokens_total{route="chat",model="${model}"} ${m.input}`);
  lines.push("# TYPE tokentrace_llm_output_tokens_total counter");
  for (const [model, m] of Object.entries(c.models)) lines.push(`tokentrace_llm_output_tokens_total{route="chat",model="${model}"} ${m.output}`);
  return `${lines.join("\n")}\n`;
}

/** The joined batch the pipeline hands over: the parsed text plus the pod's GPU state. */
function batch(text: string, ts: number, gpu: { util: number; power: number } | null): WriteSeries[] {
  const out = sidecarBatch(text, ts);
  if (gpu) {
    out.push({ labels: ["gpu", "0", "__name__", "tokentrace_pod_gpu_utilization_percent"], samples: [{ value: gpu.util, timestampMs: ts }] });
    out.push({ labels: ["gpu", "0", "__name__", "tokentrace_pod_gpu_power_watts"], samples: [{ value: gpu.power, timestampMs: ts }] });
  }
  return out;
}

const zero = { ttft: [0, 0, 0, 0, 0, 0], decode: [0, 0, 0, 0, 0, 0], duration: [0, 0, 0, 0, 0, 0], calls: 0, input: 0, output: 0 };

test("one pod, two scrapes 2 s apart: rates, status-class shares, TTFT / decode / duration quantiles from their own histograms", () => {
  const d = new DashboardSeries();
  d.observe(batch(statsText({ ok: 10, e4: 0, e5: 0, sampled: 1, models: { a: zero } }), T0, { util: 40, power: 300 }), { target: demoTarget("p0"), timestampMs: T0 });
  assert.deepEqual(d.routes(), [], "the first scrape only sets the baseline");
  const a = { ttft: [2, 8, 10, 10, 10, 10], decode: [0, 0, 1, 6, 9, 10], duration: [0, 0, 0, 1, 8, 10], calls: 10, input: 300, output: 120 };
  d.observe(batch(statsText({ ok: 26, e4: 2, e5: 2, sampled: 5, models: { a, b: zero } }), T0 + 2000, { util: 60, power: 500 }), { target: demoTarget("p0"), timestampMs: T0 + 2000 });
  assert.deepEqual(d.routes(), [{ namespace: "demo", route: "chat" }]);
  const cols = windowColumns(d.intervals({ namespace: "demo", route: "chat" }), { nowMs: T0 + 2000, rangeMs: 2000, stepMs: 2000, windowMs: 8000, samplingWindowMs: 60_000 });
  assert.deepEqual(cols.t, [(T0 + 2000) / 1000]);
  assert.deepEqual(cols.requestsPerSecond, [10], "20 requests in 2 s");
  assert.deepEqual([cols.ratio4xx, cols.ratio5xx, cols.ratioReset], [[0.1], [0.1], [0]]);
  assert.deepEqual([cols.llmRequestsPerSecond, cols.inputTokensPerSecond, cols.outputTokensPerSecond, cols.sampledPerSecond], [[5], [150], [60], [2]]);
  assert.deepEqual([cols.ttftP50, cols.ttftP95, cols.ttftP99], [[75], [212.5], [242.5]]);
  assert.deepEqual([cols.decodeP50, cols.decodeP95, cols.decodeP99], [[450], [1000], [1000]], "decode from tokentrace_llm_decode_ms, not total minus TTFT");
  assert.deepEqual([cols.durationP50, cols.durationP95, cols.durationP99], [[785.714], [1000], [1000]]);
  assert.deepEqual([cols.gpuUtilizationPercent, cols.gpuPowerWatts], [[60], [500]]);

  const onlyB = windowColumns(d.intervals({ namespace: "demo", route: "chat" }), { nowMs: T0 + 2000, rangeMs: 2000, stepMs: 2000, windowMs: 8000, samplingWindowMs: 60_000, model: "b" });
  assert.deepEqual([onlyB.llmRequestsPerSecond, onlyB.ttftP50, onlyB.requestsPerSecond], [[0], [null], [10]], "model b was idle; route-wide requests stay");
});

test("histograms split by the filter's length classes (input_length on TTFT, output_length on decode and duration) give the unsplit quantiles", () => {
  // Each histogram line as two classes: floor(v / 3) and the rest, both cumulative.
  const classed = (text: string): string => text.replace(/^(tokentrace_llm_(ttft|decode|duration)_ms_\w+)\{([^}]*)\} (\d+)$/gm, (_m, name: string, hist: string, labels: string, v: string) => {
    const tag = hist === "ttft" ? "input_length" : "output_length";
    const third = Math.floor(Number(v) / 3);
    return `${name}{${labels},${tag}="le512"} ${third}\n${name}{${labels},${tag}="unknown"} ${Number(v) - third}`;
  });
  const a = { ttft: [2, 8, 10, 10, 10, 10], decode: [0, 0, 1, 6, 9, 10], duration: [0, 0, 0, 1, 8, 10], calls: 10, input: 300, output: 120 };
  const columns = (split: (text: string) => string): ReturnType<typeof windowColumns> => {
    const d = new DashboardSeries();
    d.observe(batch(split(statsText({ ok: 10, e4: 0, e5: 0, sampled: 1, models: { a: zero } })), T0, null), { target: demoTarget("p0"), timestampMs: T0 });
    d.observe(batch(split(statsText({ ok: 26, e4: 2, e5: 2, sampled: 5, models: { a } })), T0 + 2000, null), { target: demoTarget("p0"), timestampMs: T0 + 2000 });
    return windowColumns(d.intervals({ namespace: "demo", route: "chat" }), { nowMs: T0 + 2000, rangeMs: 2000, stepMs: 2000, windowMs: 8000, samplingWindowMs: 60_000 });
  };
  const split = columns(classed);
  assert.deepEqual([split.ttftP50, split.ttftP95, split.ttftP99, split.decodeP50, split.durationP50], [[75], [212.5], [242.5], [450], [785.714]]);
  assert.deepEqual(split, columns((text) => text));
});

test("a model's LLM calls split by status_class and error_type (the filter labels failures) still add up to its request rate", () => {
  const d = new DashboardSeries();
  const text = (ok: number, limited: number, reset: number): string => [
    "# TYPE tokentrace_llm_requests_total counter",
    `tokentrace_llm_requests_total{route="chat",model="a",stream="true",finish_reason="stop",status_class="2xx"} ${ok}`,
    `tokentrace_llm_requests_total{route="chat",model="a",stream="false",finish_reason="none",status_class="4xx",error_type="429"} ${limited}`,
    `tokentrace_llm_requests_total{route="chat",model="a",stream="true",finish_reason="none",status_class="none",error_type="reset_before_response"} ${reset}`,
    "",
  ].join("\n");
  d.observe(batch(text(10, 0, 0), T0, null), { target: demoTarget("p0"), timestampMs: T0 });
  d.observe(batch(text(16, 3, 1), T0 + 2000, null), { target: demoTarget("p0"), timestampMs: T0 + 2000 });
  const cols = windowColumns(d.intervals({ namespace: "demo", route: "chat" }), { nowMs: T0 + 2000, rangeMs: 2000, stepMs: 2000, windowMs: 8000, samplingWindowMs: 60_000, model: "a" });
  assert.deepEqual(cols.llmRequestsPerSecond, [5], "6 ok + 3 limited + 1 reset in 2 s");
});

test("two pods: rates add up, buckets add before the quantile, utilisation is the mean and power the sum, a point without data is null", () => {
  const d = new DashboardSeries();
  const b = (ok: number, ttft: number[]) => statsText({ ok, e4: 0, e5: 0, sampled: 0, models: { a: { ...zero, ttft, calls: ok } } });
  d.observe(batch(b(0, [0, 0, 0, 0, 0, 0]), T0, { util: 20, power: 100 }), { target: demoTarget("p0"), timestampMs: T0 });
  d.observe(batch(b(0, [0, 0, 0, 0, 0, 0]), T0 + 500, { util: 80, power: 600 }), { target: demoTarget("p1"), timestampMs: T0 + 500 });
  d.observe(batch(b(8, [8, 8, 8, 8, 8, 8]), T0 + 2000, { util: 20, power: 100 }), { target: demoTarget("p0"), timestampMs: T0 + 2000 });
  d.observe(batch(b(4, [0, 0, 0, 4, 4, 4]), T0 + 2500, { util: 80, power: 600 }), { target: demoTarget("p1"), timestampMs: T0 + 2500 });
  const cols = windowColumns(d.intervals({ namespace: "demo", route: "chat" }), { nowMs: T0 + 4000, rangeMs: 8000, stepMs: 2000, windowMs: 4000, samplingWindowMs: 60_000 });
  assert.deepEqual(cols.t, [T0 - 2000, T0, T0 + 2000, T0 + 4000].map((t) => t / 1000));
  assert.deepEqual(cols.requestsPerSecond, [null, null, 4, 6], "p0: 8 in 2 s, p1: 4 in 2 s (its interval ends after the 2 s point)");
  assert.deepEqual(cols.ttftP50, [null, null, 25, 37.5], "12 calls: 8 under 50 ms, 4 in (250, 500]");
  assert.deepEqual(cols.gpuUtilizationPercent, [null, null, 20, 50]);
  assert.deepEqual(cols.gpuPowerWatts, [null, null, 100, 700]);
});

test("every latency series the dashboard serves has P50 <= P95 <= P99 at every point, whatever the buckets do (resets, racy scrapes)", () => {
  const bucketsArb = fc.array(fc.nat(50), { minLength: 6, maxLength: 6 });
  fc.assert(
    fc.property(fc.array(fc.tuple(bucketsArb, bucketsArb, bucketsArb), { minLength: 2, maxLength: 8 }), (scrapes) => {
      const d = new DashboardSeries();
      scrapes.forEach(([ttft, decode, duration], i) => {
        const text = statsText({ ok: i * 5, e4: 0, e5: 0, sampled: 0, models: { a: { ttft, decode, duration, calls: i, input: 0, output: 0 } } });
        d.observe(batch(text, T0 + i * 1000, null), { target: demoTarget("p0"), timestampMs: T0 + i * 1000 });
      });
      const cols = windowColumns(d.intervals({ namespace: "demo", route: "chat" }), { nowMs: T0 + scrapes.length * 1000, rangeMs: 10_000, stepMs: 1000, windowMs: 3000, samplingWindowMs: 60_000 });
      for (const phase of LATENCY_PHASES) {
        cols.t!.forEach((_, k) => {
          const [p50, p95, p99] = [cols[`${phase}P50`]![k], cols[`${phase}P95`]![k], cols[`${phase}P99`]![k]];
          if (p50 === null) return;
          assert.ok(p50! <= p95! && p95! <= p99!, `${phase} at ${k}: ${p50} ${p95} ${p99}`);
        });
      }
    }),
    { numRuns: 300 },
  );
});

test("GET /v1/dashboard/series: columns for uPlot, the windows it used, the sampling in force and the adaptive target only while one is set", async () => {
  const times = [new Date(T0 - 60_000), new Date(T0 + 3000)];
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-series-")), "policies.json"), now: () => times.shift()! });
  const policy = { name: "demo-sampling", target: { namespace: "demo", selector: { matchLabels: { app: "llm-sim" } } }, pluginConfig: { sampling: { defaultRate: 0.1, routes: [{ routeName: "chat", rate: 0.25 }] } } };
  assert.equal((await store.create(policy, { by: "test" })).ok, true);
  assert.equal((await store.put(policy.name, { ...policy, adaptive: { targetTracesPerSecond: 2 } }, { by: "test" })).ok, true);
  const d = new DashboardSeries();
  [0, 2000, 4000, 6000].forEach((dt, i) => d.observe(batch(statsText({ ok: i * 8, e4: 0, e5: 0, sampled: i, models: { a: zero } }), T0 + dt, { util: 50, power: 400 }), { target: demoTarget("p0"), timestampMs: T0 + dt }));

  const app = express();
  app.use(dashboardRoutes({ store, tokens: [], reads: "public", dashboard: d, now: () => T0 + 6000 }));
  app.use(errorHandler(() => undefined));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const body = (await (await fetch(`${url}/v1/dashboard/series?range=300`)).json()) as Record<string, unknown> & { columns: Record<string, (number | null)[]> };
    assert.deepEqual([body.pipeline, body.route, body.namespace, body.models, body.pods], ["on", "chat", "demo", ["a"], ["p0"]]);
    assert.deepEqual([body.rangeSeconds, body.stepSeconds, body.windowSeconds, body.samplingWindowSeconds], [300, 2, 8, 60]);
    assert.deepEqual(body.sampling, { policy: "demo-sampling", rate: 0.25, from: "route rule", adjustedByAdaptive: false, adaptiveTargetTracesPerSecond: 2, adaptiveTargetAppliesTo: "this route" });
    assert.equal(body.columns.t!.length, 150);
    assert.deepEqual(body.columns.requestsPerSecond!.slice(-3), [4, 4, 4]);
    assert.deepEqual(body.columns.adaptiveTargetTracesPerSecond!.slice(-4), [null, null, 2, 2], "the adaptive target of the version in force at each point (set at T0 + 3 s)");
    assert.deepEqual(Object.keys(body.columns).filter((k) => /target/i.test(k)), ["adaptiveTargetTracesPerSecond"], "one target, named for what it is");

    const bad = await fetch(`${url}/v1/dashboard/series?range=7200`);
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: "invalid query", details: [{ field: "range", reason: 'must be one of 300, 900, 1800, 3600 (seconds), got "7200"' }] });
    const missing = await fetch(`${url}/v1/dashboard/series?route=nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "no data for this route", details: [{ field: "route", reason: 'no points for "nope"; routes with data: demo/chat' }] });
    const page = await fetch(`${url}/dashboard`);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    for (const asset of ["app.js", "charts.js", "policies.js", "traces.js", "diff.js", "vendor/uPlot.iife.min.js"]) assert.equal((await fetch(`${url}/dashboard/${asset}`)).status, 200, asset);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("GET /v1/dashboard/status without the pipeline: says it is off and how to turn it on; the series are empty, not an error", async () => {
  const app = express();
  app.use(dashboardRoutes({ store: new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-series-")), "policies.json") }), tokens: [], reads: "public" }));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const status = (await (await fetch(`${url}/v1/dashboard/status`)).json()) as { pipeline: { enabled: boolean; hint: string }; traces: { enabled: boolean } };
    assert.deepEqual(status.pipeline, { enabled: false, hint: PIPELINE_OFF_HINT });
    assert.match(status.pipeline.hint, /TOKENTRACE_PIPELINE_ENABLED=true/);
    assert.equal(status.traces.enabled, false);
    const series = (await (await fetch(`${url}/v1/dashboard/series`)).json()) as { pipeline: string; route: null; columns: { t: unknown[] } };
    assert.deepEqual([series.pipeline, series.route, series.columns.t], ["off", null, []]);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
