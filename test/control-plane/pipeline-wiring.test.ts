// The control plane starts the metrics pipeline when `pipeline.enabled`, shares its /metrics
// registry with it, and stops it on shutdown; disabled (the default), the pipeline does not run.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig, type Config } from "../../control-plane/src/config.js";
import { startControlPlane } from "../../control-plane/src/main.js";

function configWith(pipeline: Config["pipeline"]): Config {
  const dir = mkdtempSync(join(tmpdir(), "tt-wiring-"));
  return {
    ...defaultConfig,
    listen: { host: "127.0.0.1", port: 0 },
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
      assert.deepEqual(logs.map((r) => (r as { msg: string }).msg), ["no API tokens configured: writes are refused until api.tokensFile or TOKENTRACE_API_TOKENS provides one", "listening"]);
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
