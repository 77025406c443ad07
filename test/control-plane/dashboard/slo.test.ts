// The dashboard's SLO view (control-plane/src/dashboard/slo.ts, GET /v1/dashboard/slo) against a real
// Prometheus (Debian's 2.42) that evaluates the SLO groups of istio/observability/prometheus-rules.yaml
// every second over the sidecar's series, received by remote write: per route and model the objective
// in force, goodput, budget left and the fast and slow burn, worst first; bounded in rows, bytes and
// time (typed failures); one set of queries per cache period; "needs Prometheus" without one; and the
// page's SLO section in a real browser (headless Debian Chromium) over the real control plane.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../../support/chromium.js";
import { parse, stringify } from "yaml";
import { encodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { snappyCompress } from "../../../control-plane/src/remote-write/snappy.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { PrometheusSloReader, sloQueries, type SloReaderOptions, type SloRow } from "../../../control-plane/src/dashboard/slo.js";
import { SLO_OFF_HINT, sloRoutes, type SloSource } from "../../../control-plane/src/dashboard/slo-route.js";
import { createMetrics, metricNames } from "../../../control-plane/src/api/metrics.js";
import { sloOption } from "../../../control-plane/src/compose/dashboard.js";
import { alertsSection } from "../../../control-plane/src/dashboard/alerts-config.js";
import { PrometheusInstance } from "../../support/prometheus.js";
import { startTestApp } from "../helpers.js";

const RULES = new URL("../../../istio/observability/prometheus-rules.yaml", import.meta.url);
const SLO_GROUPS = ["tokentrace.slo-objectives", "tokentrace.slo"];

/** Streamed requests a minute per route and model, and how many came within 1000 and 2500 ms (the override asks 99.5% within 1000 ms of chat-premium's llama). */
const TTFT = [
  { route: "chat", model: "m-a", total: 100, within1000: 90, within2500: 96 },
  { route: "chat", model: "m-b", total: 200, within1000: 199, within2500: 199 },
  { route: "chat-premium", model: "llama-3.1-8b-instruct", total: 100, within1000: 98, within2500: 100 },
];
/** Requests a minute per route by status class (errors objective 99.9%; batch-embeddings 99%). */
const REQUESTS: { route: string; perClass: Record<string, number> }[] = [
  { route: "chat", perClass: { "2xx": 196, "5xx": 2, none: 2 } },
  { route: "batch-embeddings", perClass: { "2xx": 98, "5xx": 2 } },
  { route: "search", perClass: { "2xx": 70, "4xx": 30 } },
];

/** Ten minutes of counters, one sample every 15 s up to `endMs`, as the pipeline's remote write sends them. */
function history(endMs: number): WriteSeries[] {
  const steps = 40;
  const counter = (name: string, labels: Record<string, string>, perMinute: number): WriteSeries => ({
    labels: Object.entries({ __name__: name, namespace: "llm", pod: "vllm-0", ...labels }).sort(([a], [b]) => (a < b ? -1 : 1)).flat(),
    samples: Array.from({ length: steps + 1 }, (_, i) => ({ timestampMs: endMs - (steps - i) * 15_000, value: (i * perMinute) / 4 })),
  });
  return [
    ...TTFT.flatMap((t) => {
      const l = { route: t.route, model: t.model };
      return [
        counter("tokentrace_llm_ttft_ms_bucket", { ...l, le: "1000" }, t.within1000),
        counter("tokentrace_llm_ttft_ms_bucket", { ...l, le: "2500" }, t.within2500),
        counter("tokentrace_llm_ttft_ms_bucket", { ...l, le: "+Inf" }, t.total),
        counter("tokentrace_llm_ttft_ms_count", l, t.total),
      ];
    }),
    ...REQUESTS.flatMap((r) => Object.entries(r.perClass).map(([status_class, n]) => counter("tokentrace_requests_total", { route: r.route, status_class }, n))),
  ];
}

/** Figures rounded to 1e-9 (Prometheus's float arithmetic leaves 4.000000000000001). */
const rounded = (rows: SloRow[]): SloRow[] =>
  rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "number" ? Math.round(v * 1e9) / 1e9 : v])) as unknown as SloRow);
const row = (namespace: string, route: string, model: string | undefined, objective: number, goodput: number): SloRow => {
  const burn = Math.round(((1 - goodput) / (1 - objective)) * 1e9) / 1e9;
  return { namespace, route, ...(model === undefined ? {} : { model }), objective, goodput, budgetLeft: Math.round((1 - burn) * 1e9) / 1e9, burnFast: burn, burnSlow: burn };
};
/** Worst fast burn first (constant traffic: slow burn the same), then by name. */
const TTFT_ROWS = [row("llm", "chat", "m-a", 0.99, 0.96), row("llm", "chat-premium", "llama-3.1-8b-instruct", 0.995, 0.98), row("llm", "chat", "m-b", 0.99, 0.995)];
const ERROR_ROWS = [row("llm", "chat", undefined, 0.999, 0.98), row("llm", "batch-embeddings", undefined, 0.99, 0.98), row("llm", "search", undefined, 0.999, 1)];

let prom: PrometheusInstance;
/** Every query the readers made of the real Prometheus. */
const asked: string[] = [];
const countingFetch: typeof fetch = (input, init) => {
  asked.push(new URL(String(input)).searchParams.get("query") ?? "");
  return fetch(input, init);
};
const options = (over: Partial<SloReaderOptions> = {}): SloReaderOptions => ({ url: prom.url, timeoutMs: 5000, maxBytes: 1 << 20, maxRows: 100, cacheMs: 0, fetch: countingFetch, ...over });

before(async () => {
  const groups = (parse(readFileSync(RULES, "utf8")) as { spec: { groups: { name: string }[] } }).spec.groups.filter((g) => SLO_GROUPS.includes(g.name));
  assert.deepEqual(groups.map((g) => g.name), SLO_GROUPS);
  const deadline = Date.now() + 30_000;
  const until = async (what: string, done: () => Promise<boolean>): Promise<void> => {
    while (!(await done())) {
      assert.ok(Date.now() < deadline, `${what} within 30 s: ${prom.log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const count = async (q: string): Promise<number> => (await prom.query(q, Date.now() / 1000)).length;
  // The objectives alone first, and the history written before the SLO records are evaluated at all:
  // every evaluation of the records then sees the objectives and the whole history (an evaluation split
  // by the write, or run before the objectives exist, would count fewer good events in its 1h window).
  prom = await PrometheusInstance.start({ rules: stringify({ groups: groups.slice(0, 1) }), evaluationInterval: "1s" });
  await until("the objectives", async () => (await count("tokentrace:slo_objective:parameter")) === 4);
  const res = await fetch(prom.writeUrl, {
    method: "POST",
    headers: { "content-encoding": "snappy", "content-type": "application/x-protobuf", "x-prometheus-remote-write-version": "0.1.0" },
    body: snappyCompress(encodeWriteRequestV1(history(Date.now() - 1000))),
  });
  assert.equal(res.status, 204, await res.text());
  writeFileSync(join(prom.dataDir, "rules.yml"), stringify({ groups }));
  await prom.restart();
  // The rules run every second: wait for the last records of the chain (burn over 1d reads goodput over 1d, which reads the 5m rates).
  await until("the SLO records", async () => (await count("namespace_route:tokentrace_slo_errors_burn_rate:rate1d")) === REQUESTS.length && (await count("namespace_route_model:tokentrace_slo_ttft_burn_rate:rate1d")) === TTFT.length);
});
after(async () => prom?.destroy());

describe("the SLO view from a real Prometheus evaluating prometheus-rules.yaml's SLO groups", () => {
  it("reads each route's (and model's) objective in force, goodput over 1h, budget left over 30 days and burn over 1h and 1d, worst first, with one instant query per figure", async () => {
    asked.length = 0;
    const r = await new PrometheusSloReader(options()).read();
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual({ ttft: rounded(r.ttft), errors: rounded(r.errors), truncated: r.truncated }, { ttft: TTFT_ROWS, errors: ERROR_ROWS, truncated: 0 });
    // The figures themselves, so the check cannot pass on two wrong answers that agree.
    assert.deepEqual(TTFT_ROWS.map((x) => [x.burnFast, x.budgetLeft]), [[4, -3], [4, -3], [0.5, 0.5]]);
    assert.deepEqual(ERROR_ROWS.map((x) => [x.burnFast, x.budgetLeft]), [[20, -19], [2, -1], [0, 1]]);
    assert.deepEqual(asked.sort(), sloQueries().map((q) => q.query).sort());
    assert.deepEqual(sloQueries().filter((q) => q.sli === "ttft").map((q) => q.query), [
      "namespace_route_model:tokentrace_slo_ttft_objective:ratio",
      "namespace_route_model:tokentrace_slo_ttft_goodput:ratio_rate1h",
      "namespace_route_model:tokentrace_slo_ttft_error_budget_remaining:ratio_rate30d",
      "namespace_route_model:tokentrace_slo_ttft_burn_rate:rate1h",
      "namespace_route_model:tokentrace_slo_ttft_burn_rate:rate1d",
    ]);
  });

  it("keeps at most maxRows rows per SLI (the worst) and counts the rest", async () => {
    const r = await new PrometheusSloReader(options({ maxRows: 1 })).read();
    assert.ok(r.ok);
    assert.deepEqual([rounded(r.ttft), rounded(r.errors), r.truncated], [[TTFT_ROWS[0]], [ERROR_ROWS[0]], 4]);
  });

  it("refuses an answer over maxBytes, a Prometheus that does not answer within timeoutMs, one not listening, an error answer, a non-JSON one and a non-vector one, each as a typed, counted failure", async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    try {
      const failures: string[] = [];
      const read = async (over: Partial<SloReaderOptions>): Promise<unknown> => {
        const r = await new PrometheusSloReader(options(over), (reason) => failures.push(reason)).read();
        return r.ok ? "ok" : [r.reason, r.detail];
      };
      assert.deepEqual(await read({ maxBytes: 200 }), ["too_large", "answer over 200 bytes"]);
      assert.deepEqual(await read({ url: silentUrl, timeoutMs: 300 }), ["timeout", "no answer within 300 ms"]);
      assert.equal(((await read({ url: closedUrl })) as string[])[0], "unreachable");
      // Prometheus's error body (web/api/v1/api.go respondError) while shutting down, a server that is not
      // Prometheus, and a JSON answer that is not an instant vector.
      for (const [status, body] of [[503, '{"status":"error","errorType":"unavailable","error":"shutting down"}'], [404, "<html>not found</html>"], [200, '{"status":"success","data":{"resultType":"matrix","result":[]}}']] as const) {
        const other = createServer((_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(body));
        await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
        try {
          failures.push(JSON.stringify(await read({ url: `http://127.0.0.1:${(other.address() as AddressInfo).port}` })));
        } finally {
          await new Promise<void>((resolve) => other.close(() => resolve()));
        }
      }
      assert.deepEqual(failures, [
        "too_large", "timeout", "unreachable",
        "error_status", '["error_status","HTTP 503: shutting down"]',
        "http_status", '["http_status","HTTP 404: not JSON"]',
        "invalid", '["invalid","not an instant-vector query answer (data.result[].value)"]',
      ]);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("the control plane's reader: none without a Prometheus; else the alerts' Prometheus and bounds, its failed reads counted by reason", async () => {
    const metrics = createMetrics();
    assert.deepEqual(sloOption(alertsSection.defaults, "", metrics), {});
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { slo } = sloOption({ ...alertsSection.defaults, prometheusUrl: closedUrl }, prom.url, metrics);
    assert.equal(slo!.queryUrl, `${closedUrl}/api/v1/query`, "alerts.prometheusUrl before adaptive.prometheus.url");
    assert.equal((await slo!.read()).ok, false);
    assert.match(await metrics.registry.metrics(), new RegExp(`^${metricNames.sloReadFailures}\\{reason="unreachable"\\} 1$`, "m"));
    const fromAdaptive = sloOption(alertsSection.defaults, prom.url, metrics).slo!;
    assert.equal(fromAdaptive.queryUrl, `${prom.url}/api/v1/query`);
    assert.equal((await fromAdaptive.read()).ok, true);
  });

  it("asks Prometheus once per cacheMs however many pages read", async () => {
    let nowMs = 1_000_000;
    const reader = new PrometheusSloReader(options({ cacheMs: 2000, now: () => nowMs }));
    asked.length = 0;
    await Promise.all([reader.read(), reader.read(), reader.read()]);
    nowMs += 1999;
    await reader.read();
    assert.equal(asked.length, sloQueries().length);
    nowMs += 1;
    await reader.read();
    assert.equal(asked.length, 2 * sloQueries().length);
  });

  it("GET /v1/dashboard/slo: the rows from Prometheus, or what to configure without one", async () => {
    const serve = async (slo: SloSource | undefined): Promise<unknown> => {
      const app = express();
      const router = express.Router();
      sloRoutes(router, { slo, read: (_req, _res, next) => next() });
      app.use(router);
      const server = app.listen(0, "127.0.0.1");
      await new Promise((r) => server.once("listening", r));
      try {
        const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/dashboard/slo`);
        assert.equal(res.headers.get("cache-control"), "no-store");
        return await res.json();
      } finally {
        await new Promise((r) => server.close(r));
      }
    };
    const windows = { goodput: "1h", budget: "30d", burnFast: { window: "1h", threshold: 14.4 }, burnSlow: { window: "1d", threshold: 3 } };
    assert.deepEqual(await serve(undefined), { source: "none", available: false, hint: SLO_OFF_HINT, windows, ttft: [], errors: [], truncated: 0 });
    assert.match(SLO_OFF_HINT, /needs Prometheus/);
    const body = (await serve(new PrometheusSloReader(options({ now: () => Date.UTC(2026, 11, 5, 8, 0, 0) })))) as { ttft: SloRow[]; errors: SloRow[] } & Record<string, unknown>;
    assert.deepEqual({ ...body, ttft: rounded(body.ttft), errors: rounded(body.errors) }, { source: "prometheus", from: `${prom.url}/api/v1/query`, available: true, readAt: "2026-12-05T08:00:00.000Z", windows, ttft: TTFT_ROWS, errors: ERROR_ROWS, truncated: 0 });
  });

  it("the page's SLO section (real Chromium, real control plane): each objective worst first, a burn past its alert's threshold and an overspent budget marked; without Prometheus, what to configure", { timeout: 60_000 }, async () => {
    assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
    const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
    const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const apps = [await startTestApp({ slo: new PrometheusSloReader(options()) }), await startTestApp()];
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`${apps[0]!.url}/dashboard`);
      await page.waitForSelector("#slo-table[data-rows='6']");
      const table = await page.locator("#slo-table tbody tr").evaluateAll((rows) => rows.map((tr) => [...(tr as unknown as { cells: { textContent: string; className: string }[] }).cells].map((c) => (c.className === "bad" ? `${c.textContent}!` : c.textContent))));
      assert.deepEqual(table, [
        ["TTFT", "llm/chat", "m-a", "99.00%", "96.00%!", "-300.00%!", "4.00x", "4.00x!"],
        ["TTFT", "llm/chat-premium", "llama-3.1-8b-instruct", "99.50%", "98.00%!", "-300.00%!", "4.00x", "4.00x!"],
        ["TTFT", "llm/chat", "m-b", "99.00%", "99.50%", "50.00%", "0.50x", "0.50x"],
        ["errors", "llm/chat", "all", "99.90%", "98.00%!", "-1900.00%!", "20.00x!", "20.00x!"],
        ["errors", "llm/batch-embeddings", "all", "99.00%", "98.00%!", "-100.00%!", "2.00x", "2.00x"],
        ["errors", "llm/search", "all", "99.90%", "100.00%", "100.00%", "0.00x", "0.00x"],
      ]);
      assert.deepEqual(await page.locator("#slo-table thead th").allTextContents(), ["SLI", "route", "model", "objective", "goodput", "budget left", "burn 1h (page > 14.4)", "burn 1d (ticket > 3)"]);
      assert.match((await page.textContent("#slo-note")) ?? "", /^6 objectives, worst burn first; goodput over 1h, budget over 30d; from http:\/\/127\.0\.0\.1:\d+\/api\/v1\/query at /);
      await page.goto(`${apps[1]!.url}/dashboard`);
      await page.waitForFunction(() => ((globalThis as unknown as { document: { getElementById(id: string): { textContent: string | null } | null } }).document.getElementById("slo-note")?.textContent ?? "") !== "");
      assert.equal(await page.textContent("#slo-note"), SLO_OFF_HINT);
      assert.equal(await page.getAttribute("#slo-table", "data-rows"), "0");
    } finally {
      await context.close();
      for (const app of apps) await app.close();
      rmSync(userDataDir, { recursive: true, force: true });
    }
  });
});
