// The keep-reasons panel's data: the filter's tokentrace_spans_kept_total and
// tokentrace_spans_budget_dropped_total (by keep_reason, in the Istio tag-extracted form the
// sidecar's /stats/prometheus prints) go through DashboardSeries as the pipeline hands them over,
// and GET /v1/dashboard/keep answers their rates per reason exactly (summed per pod, then added
// across pods) beside the tail-keep thresholds the route's filters are served: the live ones from
// the control plane's overrides, their floor and ceiling, and the static fallback. What a route
// keeps in memory is bounded: eight numbers per interval (the filter's four reasons, kept and
// dropped), on at most maxRoutes routes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { dashboardRoutes } from "../../../control-plane/src/dashboard/routes.js";
import type { LiveThresholdView } from "../../../control-plane/src/dashboard/keep-route.js";
import { DashboardSeries, DEFAULT_LIMITS } from "../../../control-plane/src/dashboard/series.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import type { RateOverrides } from "../../../control-plane/src/policy/effective.js";
import { errorHandler } from "../../../control-plane/src/api/errors.js";
import { demoTarget, sidecarBatch } from "./sidecar-batch.js";

const T0 = Date.UTC(2026, 11, 4, 12, 0, 0);

/** Cumulative counters of one pod's route "chat": spans kept by reason, and dropped for the budget by reason. */
interface Keeps {
  head: number;
  forced: number;
  slow: number;
  error: number;
  droppedSlow: number;
  droppedError: number;
}

/** The sidecar's stats: chat's keep counters (plus a reason the filter never writes), embed's requests only. */
function statsText(k: Keeps): string {
  return [
    "# TYPE tokentrace_requests_total counter",
    `tokentrace_requests_total{route="chat",status_class="2xx"} ${k.head * 10}`,
    `tokentrace_requests_total{route="embed",status_class="2xx"} ${k.head}`,
    "# TYPE tokentrace_spans_kept_total counter",
    ...(["head", "forced", "slow", "error"] as const).map((r) => `tokentrace_spans_kept_total{route="chat",keep_reason="${r}"} ${k[r]}`),
    `tokentrace_spans_kept_total{route="chat",keep_reason="bogus"} ${k.head * 1000}`,
    "# TYPE tokentrace_spans_budget_dropped_total counter",
    `tokentrace_spans_budget_dropped_total{route="chat",keep_reason="slow"} ${k.droppedSlow}`,
    `tokentrace_spans_budget_dropped_total{route="chat",keep_reason="error"} ${k.droppedError}`,
    "",
  ].join("\n");
}

const none: Keeps = { head: 0, forced: 0, slow: 0, error: 0, droppedSlow: 0, droppedError: 0 };

/** Pod p0 scraped every 2 s, p1 once after 4 s. */
function feed(d: DashboardSeries): void {
  const scrape = (pod: string, dt: number, k: Keeps) => d.observe(sidecarBatch(statsText(k), T0 + dt), { target: demoTarget(pod), timestampMs: T0 + dt });
  scrape("p0", 0, none);
  scrape("p1", 0, none);
  scrape("p0", 2000, { head: 4, forced: 2, slow: 6, error: 2, droppedSlow: 4, droppedError: 0 });
  scrape("p0", 4000, { head: 8, forced: 2, slow: 10, error: 4, droppedSlow: 6, droppedError: 2 });
  scrape("p1", 4000, { head: 4, forced: 0, slow: 8, error: 0, droppedSlow: 0, droppedError: 0 });
}

async function serve(deps: Omit<Parameters<typeof dashboardRoutes>[0], "tokens" | "reads">): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.use(dashboardRoutes({ tokens: [], reads: "public", ...deps }));
  app.use(errorHandler(() => undefined));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const KEEP_POLICY = {
  name: "demo-keep",
  target: { namespace: "demo", selector: { matchLabels: { app: "llm-sim" } } },
  pluginConfig: { sampling: { defaultRate: 0.1 }, spans: { cluster: "otel", keep: { errors: true, slowerThanMs: 5000, routes: [{ routeName: "chat", slowerThanMs: 2000 }], budget: { tracesPerSecond: 5 } } } },
};

type KeepBody = { pipeline: string; namespace: string | null; route: string | null; rangeSeconds: number; stepSeconds: number; windowSeconds: number; reasons: string[]; series: string[]; thresholds: unknown; columns: Record<string, (number | null)[]> };

test("GET /v1/dashboard/keep: kept spans per reason and budget drops as rates (per pod, then added), beside the live thresholds served for the route and each model, their bounds and the static fallback", async () => {
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-keep-")), "policies.json") });
  assert.equal((await store.create(KEEP_POLICY, { by: "test" })).ok, true);
  const d = new DashboardSeries();
  feed(d);
  // The live thresholds as the leader's scheduler (or the policy's status, on a follower) supplies them.
  const keepLive = [
    { route: "chat", model: "m2", durationMs: 900, ttftMs: 150 },
    { route: "chat", model: "m1", durationMs: 808 },
    { route: "embed", durationMs: 323 },
  ];
  const overrides = (name: string): RateOverrides | undefined => (name === "demo-keep" ? { routeRates: new Map(), keepLive } : undefined);
  let leading = true;
  const liveThresholds: LiveThresholdView = { enabled: true, quantile: 0.95, margin: 0.85, floorMs: 1, ceilingMs: 3_600_000, intervalSeconds: 10, windowSeconds: 60, leading: () => leading };
  const { url, close } = await serve({ store, dashboard: d, overrides, liveThresholds, now: () => T0 + 4000 });
  try {
    const res = await fetch(`${url}/v1/dashboard/keep?route=chat&namespace=demo&range=300`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as KeepBody;
    assert.deepEqual([body.pipeline, body.namespace, body.route, body.rangeSeconds, body.stepSeconds, body.windowSeconds], ["on", "demo", "chat", 300, 2, 8]);
    assert.deepEqual(body.reasons, ["head", "forced", "slow", "error"]);
    assert.deepEqual(body.series, ["keptHeadPerSecond", "keptForcedPerSecond", "keptSlowPerSecond", "keptErrorPerSecond", "budgetDroppedPerSecond"]);
    assert.deepEqual(Object.keys(body.columns), ["t", ...body.series], "no column for a reason the filter does not write");
    assert.equal(body.columns.t!.length, 150);
    assert.deepEqual(body.columns.t!.slice(-3), [T0 / 1000, T0 / 1000 + 2, T0 / 1000 + 4]);
    // At T0 + 2 s: p0's first interval (2 s). At T0 + 4 s: p0 over 4 s plus p1 over 4 s.
    // head 8/4 + 4/4 = 3; forced 2/4 = 0.5; slow 10/4 + 8/4 = 4.5; error 4/4 = 1; drops (6 + 2)/4 = 2.
    const last3 = (name: string) => body.columns[name]!.slice(-3);
    assert.deepEqual(last3("keptHeadPerSecond"), [null, 2, 3]);
    assert.deepEqual(last3("keptForcedPerSecond"), [null, 1, 0.5]);
    assert.deepEqual(last3("keptSlowPerSecond"), [null, 3, 4.5]);
    assert.deepEqual(last3("keptErrorPerSecond"), [null, 1, 1]);
    assert.deepEqual(last3("budgetDroppedPerSecond"), [null, 2, 2]);
    const settings = { quantile: 0.95, margin: 0.85, floorMs: 1, ceilingMs: 3_600_000, intervalSeconds: 10, windowSeconds: 60 };
    assert.deepEqual(body.thresholds, {
      policy: "demo-keep",
      tailKeep: true,
      errors: true,
      budgetTracesPerSecond: 5,
      live: [
        { model: "m1", durationMs: 808, ttftMs: null },
        { model: "m2", durationMs: 900, ttftMs: 150 },
      ],
      liveFrom: "computed by this replica (the leader)",
      staticMs: 2000,
      staticFrom: "route rule",
      settings,
    });

    // A follower serves the leader's thresholds (read from the policy's status) and says so.
    leading = false;
    const embed = (await (await fetch(`${url}/v1/dashboard/keep?route=embed&range=300`)).json()) as KeepBody;
    assert.deepEqual(embed.thresholds, {
      policy: "demo-keep",
      tailKeep: true,
      errors: true,
      budgetTracesPerSecond: 5,
      live: [{ model: null, durationMs: 323, ttftMs: null }],
      liveFrom: "computed by the leader (read from the policy's status)",
      staticMs: 5000,
      staticFrom: "slowerThanMs",
      settings,
    });
    assert.deepEqual(embed.columns.keptHeadPerSecond!.slice(-3), [null, 0, 0], "embed was scraped and kept nothing: 0, not a gap");

    const bad = await fetch(`${url}/v1/dashboard/keep?range=60`);
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: "invalid query", details: [{ field: "range", reason: 'must be one of 300, 900, 1800, 3600 (seconds), got "60"' }] });
    const missing = await fetch(`${url}/v1/dashboard/keep?route=nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "no data for this route", details: [{ field: "route", reason: 'no points for "nope"; routes with data: demo/chat, demo/embed' }] });
    assert.equal((await fetch(`${url}/dashboard/keep.js`)).status, 200, "the panel's script is served");
  } finally {
    await close();
  }
});

test("GET /v1/dashboard/keep: a hand-written live wins and is named as the policy's; without tail keep or without a policy the thresholds say so", async () => {
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-keep-")), "policies.json") });
  const handWritten = { ...KEEP_POLICY, pluginConfig: { ...KEEP_POLICY.pluginConfig, spans: { cluster: "otel", keep: { slowerThanMs: 3000, live: [{ route: "chat", durationMs: 1500 }] } } } };
  assert.equal((await store.create(handWritten, { by: "test" })).ok, true);
  const d = new DashboardSeries();
  feed(d);
  const liveThresholds: LiveThresholdView = { enabled: true, quantile: 0.95, margin: 0.85, floorMs: 1, ceilingMs: 3_600_000, intervalSeconds: 10, windowSeconds: 60, leading: () => true };
  const { url, close } = await serve({ store, dashboard: d, liveThresholds, overrides: () => ({ routeRates: new Map(), keepLive: [{ route: "chat", durationMs: 999 }] }), now: () => T0 + 4000 });
  try {
    const own = (await (await fetch(`${url}/v1/dashboard/keep?route=chat`)).json()) as KeepBody;
    assert.deepEqual(own.thresholds, {
      policy: "demo-keep",
      tailKeep: true,
      errors: false,
      budgetTracesPerSecond: null,
      live: [{ model: null, durationMs: 1500, ttftMs: null }],
      liveFrom: "the policy's own spans.keep.live",
      staticMs: 3000,
      staticFrom: "slowerThanMs",
      settings: null,
    });
    assert.equal((await store.put("demo-keep", { ...KEEP_POLICY, pluginConfig: { sampling: { defaultRate: 0.1 } } }, { by: "test" })).ok, true);
    const off = (await (await fetch(`${url}/v1/dashboard/keep?route=chat`)).json()) as KeepBody;
    assert.deepEqual(off.thresholds, { policy: "demo-keep", tailKeep: false, errors: false, budgetTracesPerSecond: null, live: [], liveFrom: null, staticMs: null, staticFrom: null, settings: null });
    assert.equal((await store.delete("demo-keep", { by: "test" })).ok, true);
    const orphan = (await (await fetch(`${url}/v1/dashboard/keep?route=chat&range=300`)).json()) as KeepBody;
    assert.equal(orphan.thresholds, null);
    assert.deepEqual(orphan.columns.keptSlowPerSecond!.slice(-1), [4.5], "the rates do not depend on a policy");
  } finally {
    await close();
  }
});

test("what a route's keep counters hold is bounded: eight numbers per interval (the filter's four reasons, kept and dropped; a sidecar's other label values are ignored), on at most maxRoutes routes of at most maxIntervalsPerRoute intervals", () => {
  const limits = { ...DEFAULT_LIMITS, maxRoutes: 3, maxIntervalsPerRoute: 4 };
  const d = new DashboardSeries(limits);
  const text = (n: number): string => {
    const lines = ["# TYPE tokentrace_spans_kept_total counter"];
    for (let r = 0; r < 10; r++) {
      for (const reason of ["head", "forced", "slow", "error"]) lines.push(`tokentrace_spans_kept_total{route="r${r}",keep_reason="${reason}"} ${n}`);
      // 50 reasons the filter never writes (a bug or a hostile sidecar) on every route.
      for (let b = 0; b < 50; b++) lines.push(`tokentrace_spans_kept_total{route="r${r}",keep_reason="x${b}"} ${n}`, `tokentrace_spans_budget_dropped_total{route="r${r}",keep_reason="y${b}"} ${n}`);
      lines.push(`tokentrace_spans_budget_dropped_total{route="r${r}",keep_reason="slow"} ${n}`);
    }
    return `${lines.join("\n")}\n`;
  };
  for (let k = 0; k < 10; k++) d.observe(sidecarBatch(text(k * 3), T0 + k * 1000), { target: demoTarget("p0"), timestampMs: T0 + k * 1000 });
  const routes = d.routes();
  assert.equal(routes.length, 3, "routes past maxRoutes are not kept");
  for (const key of routes) {
    const intervals = d.intervals(key);
    assert.equal(intervals.length, 4);
    for (const i of intervals) {
      // Kept by head, forced, slow, error; then dropped for the budget by the same four (slow only here).
      assert.deepEqual(i.counts.keeps, [3, 3, 3, 3, 0, 0, 3, 0]);
    }
  }
});
