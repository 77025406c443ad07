// The control plane starts the metrics pipeline when `pipeline.enabled`, shares its /metrics
// registry with it, and stops it on shutdown; disabled (the default), the pipeline does not run.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig, type Config } from "../../../control-plane/src/config.js";
import { startControlPlane } from "../../../control-plane/src/main.js";
import { call, ciToken, samplePolicy } from "../helpers.js";

function configWith(pipeline: Config["pipeline"]): Config {
  const dir = mkdtempSync(join(tmpdir(), "tt-wiring-"));
  return {
    ...defaultConfig,
    listen: { host: "127.0.0.1", port: 0 },
    filters: { ...defaultConfig.filters, port: 0 },
    store: { mode: "embedded", path: join(dir, "policies.json") },
    adaptive: { ...defaultConfig.adaptive, enabled: false },
    pipeline,
  };
}

describe("pipeline wiring", () => {
  it("starts the pipeline with its static targets and exports its metrics on the control plane's /metrics", async () => {
    const target = createServer((_req, res) => res.end("tokentrace_requests_total 1\n"));
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/stats/prometheus`;
    const logs: object[] = [];
    const running = await startControlPlane(configWith({ enabled: true, scrape: { static: [{ url: targetUrl, kind: "envoy" }] } }), { log: (r) => logs.push(r) });
    try {
      const text = await (await fetch(`${running.url}/metrics`)).text();
      assert.ok(text.includes('tokentrace_scrape_targets{kind="envoy"} 1\n'), text.split("\n").filter((l) => l.startsWith("tokentrace_scrape_targets")).join("\n"));
      assert.ok(text.includes("# TYPE tokentrace_control_plane_api_requests_total counter"));
      assert.deepEqual(logs.map((r) => (r as { msg: string }).msg), ["no API tokens configured: writes are refused until api.tokensFile or TOKENTRACE_API_TOKENS provides one", "listening", "dashboard", "memory budgets"]);
    } finally {
      await running.stop();
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
  });

  it("feeds adaptive sampling from its own scrapes when no Prometheus is configured: 50 req/s at rate 0.5 for a 1 trace/s target lowers the rate", async () => {
    // A sidecar whose request counter grows 50 per second of wall time (read at each scrape).
    const started = Date.now();
    const target = createServer((_req, res) => {
      const n = Math.floor(((Date.now() - started) / 1000) * 50);
      res.end(`tokentrace_requests_total{route="chat",status_class="2xx"} ${n}\n`);
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/stats/prometheus`;
    const base = configWith({ enabled: true, scrape: { intervalMs: 200, timeoutMs: 200, static: [{ url: targetUrl, kind: "envoy", namespace: "llm", pod: "chat-0" }] } });
    const config: Config = { ...base, api: { ...base.api, tokens: `ci:${ciToken}` }, adaptive: { ...base.adaptive, enabled: true, intervalSeconds: 1, minPushIntervalSeconds: 0 } };
    const running = await startControlPlane(config, { log: () => undefined }).catch(async (error: unknown) => {
      await new Promise<void>((resolve) => target.close(() => resolve()));
      throw error;
    });
    try {
      const policy = samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: 0.5 } }, adaptive: { targetTracesPerSecond: 1 } });
      assert.equal((await call(running.url, "POST", "/v1/policies", { token: ciToken, body: policy })).status, 201);
      const rate = async (): Promise<number> => {
        const res = await call(running.url, "GET", "/v1/filters/llm.chat-0/config?labels=app=chat");
        return (res.body as { config: { sampling: { defaultRate: number } } }).config.sampling.defaultRate;
      };
      assert.equal(await rate(), 0.5);
      const deadline = Date.now() + 20_000;
      let now = await rate();
      while (now === 0.5 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        now = await rate();
      }
      // About 1 trace/s out of ~50 req/s: immediate decrease towards 0.02 (smoothing and the floor allow some room).
      assert.ok(now > 0 && now < 0.1, `adapted defaultRate ${now}`);
    } finally {
      await running.stop();
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
  });

  it("does not run the pipeline by default", async () => {
    const running = await startControlPlane(configWith({ enabled: false }), { log: () => undefined });
    try {
      const text = await (await fetch(`${running.url}/metrics`)).text();
      assert.equal(text.includes("tokentrace_scrape_targets"), false);
    } finally {
      await running.stop();
    }
  });
});
