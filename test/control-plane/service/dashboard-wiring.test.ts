// `make run`'s control plane serves the dashboard, and with the pipeline enabled its series come
// from the pipeline's scrapes (here of a static Envoy-format target whose counters move).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../control-plane/src/config.js";
import { DEFAULT_LIMITS } from "../../../control-plane/src/dashboard/series.js";
import { startControlPlane } from "../../../control-plane/src/main.js";

test("the control plane serves /dashboard and fills /v1/dashboard/series from its pipeline's scrapes", async () => {
  let scrapes = 0;
  // Each scrape: 4 more chat requests and 40 more output tokens.
  const target = createServer((_req, res) => {
    scrapes++;
    res.end(`tokentrace_requests_total{route="chat",status_class="2xx"} ${scrapes * 4}\ntokentrace_llm_output_tokens_total{route="chat",model="m"} ${scrapes * 40}\n`);
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/stats/prometheus`;
  const dir = mkdtempSync(join(tmpdir(), "tt-dashboard-"));
  const logs: Record<string, unknown>[] = [];
  const running = await startControlPlane(
    {
      ...defaultConfig,
      listen: { host: "127.0.0.1", port: 0 },
      filters: { ...defaultConfig.filters, port: 0 },
      store: { mode: "embedded", path: join(dir, "policies.json") },
      adaptive: { ...defaultConfig.adaptive, enabled: false },
      pipeline: { enabled: true, scrape: { intervalMs: 100, timeoutMs: 100, spreadStart: false, static: [{ url, kind: "envoy", namespace: "llm", pod: "chat-0" }] } },
    },
    { log: (r) => logs.push(r as Record<string, unknown>) },
  );
  try {
    // Start-up says, once, what every part the pipeline feeds may hold, from this config.
    const budgetLines = logs.filter((l) => l.msg === "memory budgets");
    assert.equal(budgetLines.length, 1, JSON.stringify(logs));
    const budgets = budgetLines[0] as { totalBytes: number; parts: Record<string, { bytes: number; from: string }> };
    assert.deepEqual(Object.keys(budgets.parts), ["pipeline.series", "pipeline.joinWindows", "dashboard.history", "dashboard.engineSignals", "dashboard.gpuHealth", "dashboard.loraAdapters", "log.repeats"]);
    assert.equal(budgets.parts["dashboard.history"]!.bytes, DEFAULT_LIMITS.maxBytes);
    assert.match(budgets.parts["pipeline.joinWindows"]!.from, /3002 points: join\.rateWindowMs 300000 at the shortest scrape interval, 100 ms/);
    assert.equal(budgets.totalBytes, Object.values(budgets.parts).reduce((n, p) => n + p.bytes, 0));
    const page = await fetch(`${running.url}/dashboard`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script src="\/dashboard\/app\.js"><\/script>/);
    type Body = { routes: { namespace: string; route: string }[]; pods: string[]; sampling: unknown; columns: Record<string, (number | null)[]> };
    let body: Body = { routes: [], pods: [], sampling: null, columns: {} };
    const withData = (b: Body): (number | null)[] => (b.columns.requestsPerSecond ?? []).filter((v) => v !== null);
    const deadline = Date.now() + 10_000;
    while (withData(body).length < 2) {
      assert.ok(Date.now() < deadline, `no points after 10 s: ${JSON.stringify(body)}`);
      await new Promise((r) => setTimeout(r, 50));
      body = (await (await fetch(`${running.url}/v1/dashboard/series?range=300`)).json()) as Body;
    }
    assert.deepEqual(body.routes, [{ namespace: "llm", route: "chat" }]);
    assert.deepEqual(body.pods, ["chat-0"]);
    // Rates from real wall-clock intervals: 4 requests and 40 tokens per ~100 ms scrape.
    for (const v of withData(body)) assert.ok(v! > 4 && v! < 80, `requests/s ${v}`);
    // 10 tokens per request; each rate is rounded to 3 decimals on its own.
    body.columns.outputTokensPerSecond!.forEach((v, i) => {
      const rps = body.columns.requestsPerSecond![i]!;
      if (rps !== null) assert.ok(Math.abs(v! - rps * 10) <= 0.005 * 11, `tokens/s ${v} against requests/s ${rps}`);
    });
    assert.equal(body.sampling, null, "no policy targets namespace llm");
    assert.ok(body.columns.adaptiveTargetTracesPerSecond!.every((v) => v === null));
  } finally {
    await running.stop();
    await new Promise<void>((resolve) => target.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
});

test("make run's defaults (pipeline off): the page is served with policies, and the log line and status say how to turn the pipeline on", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tt-dashboard-"));
  const logs: Record<string, unknown>[] = [];
  const running = await startControlPlane(
    { ...defaultConfig, listen: { host: "127.0.0.1", port: 0 }, store: { mode: "embedded", path: join(dir, "policies.json") }, adaptive: { ...defaultConfig.adaptive, enabled: false } },
    { log: (r) => logs.push(r as Record<string, unknown>) },
  );
  try {
    const line = logs.find((l) => l.msg === "dashboard");
    assert.ok(line, JSON.stringify(logs));
    assert.equal(line.url, `${running.url}/dashboard`);
    assert.match(String(line.pipeline), /^off: .*TOKENTRACE_PIPELINE_ENABLED=true/);
    assert.equal(line.historyMaxBytes, DEFAULT_LIMITS.maxBytes, "the dashboard history's byte budget, printed at start-up");
    // Nothing feeds the dashboard: its budgets are not counted; the log's repeat limiter's is.
    const budgets = logs.find((l) => l.msg === "memory budgets") as { totalBytes: number; parts: Record<string, { bytes: number }> } | undefined;
    assert.ok(budgets, JSON.stringify(logs));
    assert.deepEqual(Object.keys(budgets.parts), ["log.repeats"]);
    assert.equal(budgets.totalBytes, budgets.parts["log.repeats"]!.bytes);
    const status = (await (await fetch(`${running.url}/v1/dashboard/status`)).json()) as { pipeline: { enabled: boolean; hint: string } };
    assert.equal(status.pipeline.enabled, false);
    assert.match(await (await fetch(`${running.url}/dashboard`)).text(), /id="create-form"/);
    assert.equal((await fetch(`${running.url}/v1/traces`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status, 404, "the span receiver is off by default");
  } finally {
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the control plane on a taken port: start-up fails naming the port and listen.port (TOKENTRACE_LISTEN_PORT)", async () => {
  const holder = createServer(() => undefined);
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const port = (holder.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), "tt-dashboard-"));
  try {
    await assert.rejects(
      startControlPlane({ ...defaultConfig, listen: { host: "127.0.0.1", port }, filters: { ...defaultConfig.filters, port: 0 }, store: { mode: "embedded", path: join(dir, "policies.json") }, adaptive: { ...defaultConfig.adaptive, enabled: false } }, { log: () => undefined }),
      { message: `port ${port} on 127.0.0.1 is already in use: set listen.port (TOKENTRACE_LISTEN_PORT) to another port (0 picks a free one)` },
    );
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
});
