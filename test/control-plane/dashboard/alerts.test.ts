// The dashboard's alert reader (control-plane/src/dashboard/alerts.ts) against a real HTTP server on
// 127.0.0.1 answering GET /api/v1/rules?type=alert as Prometheus 2.42 does
// (test/support/prometheus-rules-api.ts): the firing and pending alerts with their annotations,
// ordered and bounded; oversize, slow, invalid and failing answers as typed, counted failures;
// one query per cache period however many pages ask; and GET /v1/dashboard/alerts over all three
// states (alerts, unavailable, no Prometheus).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { alertsOfRulesAnswer, boundedText, PrometheusAlertsReader, type AlertsFailure, type AlertsReaderOptions } from "../../../control-plane/src/dashboard/alerts.js";
import { ALERTS_OFF_HINT } from "../../../control-plane/src/dashboard/alerts-route.js";
import { dashboardRoutes } from "../../../control-plane/src/dashboard/routes.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { alertingRule, recordingRule, rulesAnswer, sendJson, startRulesApi } from "../../support/prometheus-rules-api.js";

const T0 = Date.UTC(2026, 11, 5, 3, 0, 0);

/** The demo's two groups as Prometheus 2.42 lists them: a firing critical alert, a pending warning, an older firing info, an inactive rule, a recording rule. */
const DEMO_ANSWER = rulesAnswer([
  {
    name: "tokentrace.slo-thresholds",
    file: "/tmp/rules.yml",
    interval: 5,
    rules: [recordingRule("tokentrace:slo_threshold:parameter", "vector(85)")],
  },
  {
    name: "tokentrace.engine-slo",
    file: "/tmp/rules.yml",
    interval: 5,
    rules: [
      alertingRule({
        name: "TokentraceGPUBusyKVCacheMissSpecRejected",
        query: "x > 1",
        duration: 10,
        labels: { severity: "critical" },
        annotations: { summary: "{{ $labels.model }} busy", runbook: "1. look" },
        alerts: [
          {
            labels: { alertname: "TokentraceGPUBusyKVCacheMissSpecRejected", model: "tokentrace-sim-1", namespace: "demo", pod: "llm-sim-0", severity: "critical" },
            annotations: { description: "All three SLO signals at once.", runbook: "1. look", summary: "tokentrace-sim-1 on demo/llm-sim-0: GPUs 91.2% busy" },
            state: "firing",
            activeAt: "2026-12-05T03:00:40.523627967Z",
            value: "9.12e+01",
          },
        ],
      }),
      alertingRule({
        name: "TokentraceGPUBusyKVCacheMiss",
        query: "y > 1",
        duration: 15,
        labels: { severity: "warning" },
        alerts: [
          {
            labels: { alertname: "TokentraceGPUBusyKVCacheMiss", model: "m", severity: "warning" },
            annotations: { summary: "pending one", runbook_url: "https://runbooks.example/kv" },
            state: "pending",
            activeAt: "2026-12-05T03:00:55Z",
            value: "8.6e+01",
          },
        ],
      }),
      alertingRule({
        name: "TokentraceKVCacheMissSpecRejected",
        query: "z",
        duration: 30,
        labels: { severity: "info" },
        alerts: [{ labels: { alertname: "TokentraceKVCacheMissSpecRejected", severity: "info" }, annotations: { runbook_url: "javascript:alert(1)" }, state: "firing", activeAt: "2026-12-05T02:59:00Z", value: "NaN" }],
      }),
      alertingRule({ name: "TokentraceGPUBusySpecRejected", query: "w", duration: 15, alerts: [] }),
    ],
  },
]);

const options = (url: string, over: Partial<AlertsReaderOptions> = {}): AlertsReaderOptions => ({ url, timeoutMs: 1000, maxBytes: 65536, maxAlerts: 100, cacheMs: 2000, now: () => T0, ...over });

test("a Prometheus 2.42 rules answer becomes the firing then pending alerts, firing by severity, with annotations, for, value and labels; inactive and recording rules are left out, and a runbook_url that is not http(s) is dropped", async () => {
  const server = await startRulesApi((req, res) => {
    assert.equal(req.url, "/api/v1/rules?type=alert");
    sendJson(res, 200, DEMO_ANSWER);
  });
  try {
    const failures: AlertsFailure[] = [];
    const read = await new PrometheusAlertsReader(options(server.url), (r) => failures.push(r)).read();
    assert.deepEqual(failures, []);
    assert.equal(read.ok, true);
    assert.ok(read.ok);
    assert.deepEqual(
      read.alerts.map((a) => ({ ...a, labels: { ...a.labels } })),
      [
        {
          name: "TokentraceGPUBusyKVCacheMissSpecRejected",
          state: "firing",
          severity: "critical",
          activeAt: "2026-12-05T03:00:40.523Z",
          activeAtMs: Date.UTC(2026, 11, 5, 3, 0, 40, 523),
          forSeconds: 10,
          value: 91.2,
          summary: "tokentrace-sim-1 on demo/llm-sim-0: GPUs 91.2% busy",
          description: "All three SLO signals at once.",
          runbookUrl: null,
          runbook: "1. look",
          labels: { model: "tokentrace-sim-1", namespace: "demo", pod: "llm-sim-0" },
        },
        {
          name: "TokentraceKVCacheMissSpecRejected",
          state: "firing",
          severity: "info",
          activeAt: "2026-12-05T02:59:00.000Z",
          activeAtMs: Date.UTC(2026, 11, 5, 2, 59, 0),
          forSeconds: 30,
          value: null,
          summary: null,
          description: null,
          runbookUrl: null,
          runbook: null,
          labels: {},
        },
        {
          name: "TokentraceGPUBusyKVCacheMiss",
          state: "pending",
          severity: "warning",
          activeAt: "2026-12-05T03:00:55.000Z",
          activeAtMs: Date.UTC(2026, 11, 5, 3, 0, 55),
          forSeconds: 15,
          value: 86,
          summary: "pending one",
          description: null,
          runbookUrl: "https://runbooks.example/kv",
          runbook: null,
          labels: { model: "m" },
        },
      ],
    );
    assert.equal(read.truncated, 0);
  } finally {
    await server.close();
  }
});

test("maxAlerts keeps the first alerts in order and counts the rest; annotation values are cut to 2 KiB on a character boundary", async () => {
  const many = rulesAnswer([
    {
      name: "g",
      file: "f",
      interval: 5,
      rules: [
        alertingRule({
          name: "Many",
          query: "q",
          duration: 0,
          alerts: Array.from({ length: 5 }, (_, i) => ({ labels: { alertname: "Many", pod: `p${i}` }, annotations: { summary: "é".repeat(3000) }, state: "firing" as const, activeAt: new Date(T0 + i * 1000).toISOString(), value: "1e+00" })),
        }),
      ],
    },
  ]);
  const server = await startRulesApi((_req, res) => sendJson(res, 200, many));
  try {
    const read = await new PrometheusAlertsReader(options(server.url, { maxAlerts: 2 })).read();
    assert.ok(read.ok);
    assert.deepEqual(read.alerts.map((a) => a.labels.pod), ["p0", "p1"]);
    assert.equal(read.truncated, 3);
    const summary = read.alerts[0]!.summary!;
    assert.equal(Buffer.byteLength(summary), 2047, "1022 two-byte characters and three dots");
    assert.ok(summary.endsWith("é..."));
  } finally {
    await server.close();
  }
  assert.equal(boundedText("abc", 3), "abc");
  assert.equal(boundedText("abcd", 3), "...");
});

for (const [name, handler, reason, detail] of [
  ["an answer over maxBytes with its content-length", (res) => sendJson(res, 200, { status: "success", data: { groups: [], pad: "x".repeat(2000) } }), "too_large", "answer over 1024 bytes"],
  [
    "an answer over maxBytes sent in chunks without a length",
    (res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`{"status":"success","data":{"groups":[],"pad":"${"x".repeat(800)}`);
      res.end(`${"x".repeat(800)}"}}`);
    },
    "too_large",
    "answer over 1024 bytes",
  ],
  [
    "a body that is not JSON",
    (res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{\"status\":\"succ");
    },
    "invalid",
    "HTTP 200: not JSON",
  ],
  ["JSON that is not a rules answer", (res) => sendJson(res, 200, { status: "success", data: { result: [] } }), "invalid", "not a rules API answer (data.groups[].rules[])"],
  ["Prometheus's error envelope (respondError)", (res) => sendJson(res, 400, { status: "error", errorType: "bad_data", error: 'invalid parameter "type": not supported value "alert"' }), "error_status", 'HTTP 400: invalid parameter "type": not supported value "alert"'],
  [
    "a proxy's HTML 502",
    (res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html>bad gateway</html>");
    },
    "http_status",
    "HTTP 502: not JSON",
  ],
] as const satisfies readonly [string, (res: import("node:http").ServerResponse) => void, AlertsFailure, string][]) {
  test(`${name}: a failed read (${reason}), counted once, never thrown`, async () => {
    const server = await startRulesApi((_req, res) => handler(res));
    try {
      const failures: AlertsFailure[] = [];
      const read = await new PrometheusAlertsReader(options(server.url, { maxBytes: 1024 }), (r) => failures.push(r)).read();
      assert.deepEqual(read, { ok: false, reason, detail, readAtMs: T0 });
      assert.deepEqual(failures, [reason]);
    } finally {
      await server.close();
    }
  });
}

test("a server that never answers (or stalls in the body) fails as timeout after timeoutMs; a closed port as unreachable", async () => {
  const held: import("node:http").ServerResponse[] = [];
  const silent = await startRulesApi((_req, res) => held.push(res));
  const stalling = await startRulesApi((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"status":"success",');
  });
  try {
    for (const server of [silent, stalling]) {
      const started = performance.now();
      const read = await new PrometheusAlertsReader(options(server.url, { timeoutMs: 200 })).read();
      const tookMs = performance.now() - started;
      assert.deepEqual(read, { ok: false, reason: "timeout", detail: "no answer within 200 ms", readAtMs: T0 });
      assert.ok(tookMs >= 190 && tookMs < 1500, `took ${tookMs} ms`);
    }
  } finally {
    await silent.close();
    await stalling.close();
  }
  const closed = await startRulesApi(() => undefined);
  const url = closed.url;
  await closed.close();
  const read = await new PrometheusAlertsReader(options(url)).read();
  assert.equal(read.ok, false);
  assert.equal(!read.ok && read.reason, "unreachable");
});

test("reads are shared: concurrent callers and callers within cacheMs get one query's answer; the next query after cacheMs, on the injected clock", async () => {
  const server = await startRulesApi((_req, res) => setTimeout(() => sendJson(res, 200, DEMO_ANSWER), 20));
  try {
    let now = T0;
    const reader = new PrometheusAlertsReader(options(server.url, { cacheMs: 2000, now: () => now }));
    const [a, b, c] = await Promise.all([reader.read(), reader.read(), reader.read()]);
    assert.equal(server.requests(), 1);
    assert.equal(a, b);
    assert.equal(b, c);
    now = T0 + 1999;
    assert.equal(await reader.read(), a);
    assert.equal(server.requests(), 1);
    now = T0 + 2000;
    const d = await reader.read();
    assert.notEqual(d, a);
    assert.equal(server.requests(), 2);
    assert.equal(d.readAtMs, T0 + 2000);
  } finally {
    await server.close();
  }
});

test("alertsOfRulesAnswer: not a success envelope, or groups without rules, is null", () => {
  assert.equal(alertsOfRulesAnswer({ status: "error" }), null);
  assert.equal(alertsOfRulesAnswer({ status: "success", data: { groups: [{ name: "g" }] } }), null);
  assert.deepEqual(alertsOfRulesAnswer({ status: "success", data: { groups: [] } }), []);
});

async function serveDashboard(alerts: PrometheusAlertsReader | undefined): Promise<{ url: string; close: () => Promise<void> }> {
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-alerts-")), "policies.json") });
  const app = express();
  app.use(dashboardRoutes({ store, tokens: [], reads: "public", ...(alerts ? { alerts } : {}) }));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test("GET /v1/dashboard/alerts: the alerts with where they come from; 200 with available false and the reason when Prometheus fails; the hint when none is configured", async () => {
  const prom = await startRulesApi((_req, res) => sendJson(res, 200, DEMO_ANSWER));
  const broken = await startRulesApi((_req, res) => sendJson(res, 503, { status: "error", errorType: "unavailable", error: "shutting down" }));
  const withAlerts = await serveDashboard(new PrometheusAlertsReader(options(prom.url)));
  const failing = await serveDashboard(new PrometheusAlertsReader(options(broken.url)));
  const none = await serveDashboard(undefined);
  try {
    const ok = await fetch(`${withAlerts.url}/v1/dashboard/alerts`);
    assert.equal(ok.status, 200);
    const okBody = (await ok.json()) as { source: string; from: string; available: boolean; readAt: string; alerts: { name: string; state: string }[]; truncated: number };
    assert.deepEqual(
      { ...okBody, alerts: okBody.alerts.map((a) => `${a.name} ${a.state}`) },
      { source: "prometheus", from: `${prom.url}/api/v1/rules?type=alert`, available: true, readAt: "2026-12-05T03:00:00.000Z", alerts: ["TokentraceGPUBusyKVCacheMissSpecRejected firing", "TokentraceKVCacheMissSpecRejected firing", "TokentraceGPUBusyKVCacheMiss pending"], truncated: 0 },
    );
    const bad = await fetch(`${failing.url}/v1/dashboard/alerts`);
    assert.equal(bad.status, 200);
    assert.deepEqual(await bad.json(), { source: "prometheus", from: `${broken.url}/api/v1/rules?type=alert`, available: false, reason: "error_status", detail: "HTTP 503: shutting down", readAt: "2026-12-05T03:00:00.000Z", alerts: [], truncated: 0 });
    assert.deepEqual(await (await fetch(`${none.url}/v1/dashboard/alerts`)).json(), { source: "none", available: false, hint: ALERTS_OFF_HINT, alerts: [], truncated: 0 });
    const page = await (await fetch(`${none.url}/dashboard/alerts.js`)).text();
    assert.match(page, /v1\/dashboard\/alerts/, "the page's script reads the endpoint");
  } finally {
    await Promise.all([prom.close(), broken.close(), withAlerts.close(), failing.close(), none.close()]);
  }
});
