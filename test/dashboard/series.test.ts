// The dashboard's data: points from joined pipeline batches (quantiles from histogram deltas,
// rates from counter deltas, the pod's GPU state) and the JSON endpoint that serves them with the
// sampled-trace target of the policy in force at each point.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { dashboardRoutes } from "../../control-plane/src/dashboard/routes.js";
import { DashboardSeries, histogramQuantile } from "../../control-plane/src/dashboard/series.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import { errorHandler } from "../../control-plane/src/api/errors.js";
import type { WriteSeries } from "../../control-plane/src/remote-write/series.js";

const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
const target = { id: "envoy/demo/llm-sim-0", kind: "envoy", namespace: "demo", pod: "llm-sim-0" };

const s = (name: string, labels: Record<string, string>, value: number, ts: number): WriteSeries => ({
  labels: [...Object.entries(labels).flat(), "__name__", name],
  samples: [{ value, timestampMs: ts }],
});

/** One Envoy scrape of the pod as the join emits it: cumulative buckets per model, counters, GPU state. */
function batch(ts: number, c: { ttft: number[]; dur: number[]; ok: number; err: number; sampled: number; out: number }): WriteSeries[] {
  const bounds = ["100", "250", "500", "1000", "+Inf"];
  const out: WriteSeries[] = [];
  bounds.forEach((le, i) => {
    // Two models on one route: the page sums them (the second one is idle here).
    out.push(s("tokentrace_llm_ttft_ms_bucket", { route: "chat", model: "a", le }, c.ttft[i]!, ts));
    out.push(s("tokentrace_llm_ttft_ms_bucket", { route: "chat", model: "b", le }, 0, ts));
    out.push(s("tokentrace_llm_duration_ms_bucket", { route: "chat", model: "a", le }, c.dur[i]!, ts));
  });
  out.push(s("tokentrace_requests_total", { route: "chat", status_class: "2xx" }, c.ok, ts));
  out.push(s("tokentrace_requests_total", { route: "chat", status_class: "5xx" }, c.err, ts));
  out.push(s("tokentrace_traces_sampled_total", { route: "chat" }, c.sampled, ts));
  out.push(s("tokentrace_llm_output_tokens_total", { route: "chat", model: "a" }, c.out, ts));
  out.push(s("tokentrace_pod_gpu_utilization_percent", { namespace: "demo", pod: "llm-sim-0", gpu: "0" }, 40, ts));
  out.push(s("tokentrace_pod_gpu_utilization_percent", { namespace: "demo", pod: "llm-sim-0", gpu: "1" }, 60, ts));
  out.push(s("tokentrace_pod_gpu_power_watts", { namespace: "demo", pod: "llm-sim-0", gpu: "0" }, 300, ts));
  out.push(s("tokentrace_pod_gpu_power_watts", { namespace: "demo", pod: "llm-sim-0", gpu: "1" }, 200, ts));
  return out;
}

test("histogramQuantile interpolates inside the bucket like Prometheus, keeps the last finite bound for +Inf, null when empty", () => {
  const h = new Map([[100, 2], [250, 8], [500, 10], [Infinity, 10]]);
  assert.equal(histogramQuantile(0.5, h), 175);
  assert.equal(histogramQuantile(0.95, h), 437.5);
  assert.equal(histogramQuantile(0.1, h), 50);
  assert.equal(histogramQuantile(0.99, new Map([[100, 1], [Infinity, 10]])), 100);
  assert.equal(histogramQuantile(0.5, new Map([[100, 0], [Infinity, 0]])), null);
});

test("a point per route per scrape interval: TTFT, decode, total quantiles from bucket deltas, rates from counter deltas, GPU state of the pod", () => {
  const d = new DashboardSeries();
  d.observe(batch(T0, { ttft: [5, 5, 5, 5, 5], dur: [0, 0, 5, 5, 5], ok: 10, err: 0, sampled: 2, out: 100 }), { target, timestampMs: T0 });
  assert.deepEqual(d.routes(), [], "the first scrape only sets the baseline");
  d.observe(batch(T0 + 2000, { ttft: [7, 13, 15, 15, 15], dur: [0, 0, 9, 15, 15], ok: 20, err: 1, sampled: 5, out: 300 }), { target, timestampMs: T0 + 2000 });
  d.observe([s("DCGM_FI_DEV_GPU_UTIL", { gpu: "0" }, 99, T0 + 2100)], { target: { id: "http://dcgm", kind: "dcgm" }, timestampMs: T0 + 2100 });
  assert.deepEqual(d.routes(), ["chat"]);
  assert.deepEqual(d.points("chat"), [
    {
      timestampMs: T0 + 2000,
      namespace: "demo",
      pod: "llm-sim-0",
      ttftMs: [175, 437.5, 487.5],
      totalMs: [583.333, 958.333, 991.667],
      decodeMs: [408.333, 520.833, 504.167],
      requestsPerSecond: 5.5,
      sampledPerSecond: 1.5,
      outputTokensPerSecond: 100,
      gpuUtilizationPercent: 50,
      gpuPowerWatts: 500,
    },
  ]);
});

test("a counter reset reads as a restart from zero, and the window keeps the newest maxPoints", () => {
  const d = new DashboardSeries({ maxPoints: 2, maxRoutes: 4 });
  const c = (ok: number) => ({ ttft: [0, 0, 0, 0, 0], dur: [0, 0, 0, 0, 0], ok, err: 0, sampled: 0, out: 0 });
  [100, 110, 4, 10].forEach((ok, i) => d.observe(batch(T0 + i * 1000, c(ok)), { target, timestampMs: T0 + i * 1000 }));
  assert.deepEqual(d.points("chat").map((p) => [p.timestampMs - T0, p.requestsPerSecond, p.ttftMs[0]]), [[2000, 4, null], [3000, 6, null]]);
});

test("GET /v1/dashboard/series: columns for uPlot, the target from the policy in force at each point, 404 naming the route", async () => {
  const times = [new Date(T0 - 60_000), new Date(T0 + 5000)];
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-series-")), "policies.json"), now: () => times.shift()! });
  const policy = { name: "demo-sampling", target: { namespace: "demo", selector: { matchLabels: { app: "llm-sim" } } }, pluginConfig: { sampling: { defaultRate: 0.1, routes: [{ routeName: "chat", rate: 0.25 }] } } };
  assert.equal((await store.create(policy, { by: "test" })).ok, true);
  // From T0 + 5 s the policy aims at 2 sampled traces per second (adaptive).
  assert.equal((await store.put(policy.name, { ...policy, adaptive: { targetTracesPerSecond: 2 } }, { by: "test" })).ok, true);
  const d = new DashboardSeries();
  const counters = (ok: number) => ({ ttft: [1, 1, 1, 1, 1], dur: [1, 1, 1, 1, 1], ok, err: 0, sampled: 0, out: 0 });
  [0, 2000, 6000].forEach((dt, i) => d.observe(batch(T0 + dt, counters(10 + i * 8)), { target, timestampMs: T0 + dt }));

  const app = express();
  app.use(dashboardRoutes({ store, tokens: [], reads: "public", dashboard: d }));
  app.use(errorHandler(() => undefined));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const body = (await (await fetch(`${url}/v1/dashboard/series`)).json()) as { source: string; routes: string[]; route: string; pod: string; quantiles: number[]; columns: Record<string, (number | null)[]> };
    assert.equal(body.source, "pipeline");
    assert.deepEqual([body.routes, body.route, body.pod, body.quantiles], [["chat"], "chat", "demo/llm-sim-0", [0.5, 0.95, 0.99]]);
    assert.deepEqual(body.columns.t, [(T0 + 2000) / 1000, (T0 + 6000) / 1000]);
    assert.deepEqual(body.columns.requestsPerSecond, [4, 2]);
    assert.deepEqual(body.columns.targetSampledPerSecond, [1, 2], "0.25 x 4 rps before the change, the adaptive target after");
    assert.deepEqual(body.columns.ttftP50, [null, null], "no LLM call in those intervals");
    assert.deepEqual(body.columns.gpuPowerWatts, [500, 500]);

    const missing = await fetch(`${url}/v1/dashboard/series?route=nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "no data for this route", details: [{ field: "route", reason: 'no points for "nope"; routes with data: chat' }] });

    const page = await fetch(`${url}/dashboard`);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    const lib = await fetch(`${url}/dashboard/vendor/uPlot.iife.min.js`);
    assert.equal(lib.status, 200);
    assert.match(await lib.text(), /uPlot/);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
