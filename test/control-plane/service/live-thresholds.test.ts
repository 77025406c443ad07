// The control plane computes live tail-keep thresholds on its own schedule from the filters'
// duration histograms it scrapes (the metrics pipeline) and serves them in the pull response's
// spans.keep.live (embedded mode), which the real filter.wasm accepts; the dashboard's keep panel
// (GET /v1/dashboard/keep) shows the same thresholds with how they are computed, beside the
// scraped keep reasons.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig, type Config } from "../../../control-plane/src/config.js";
import { startControlPlane } from "../../../control-plane/src/main.js";
import { loadFilter } from "../../filter/support.js";
import { call, ciToken, samplePolicy } from "../helpers.js";

/** Bucket bounds every 100 ms to 1 s; each scrape adds 100 calls spread evenly over them (P95: 950 ms). */
const BOUNDS = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000];

function configFor(targetUrl: string, liveEnabled: boolean): Config {
  const dir = mkdtempSync(join(tmpdir(), "tt-live-"));
  return {
    ...defaultConfig,
    listen: { host: "127.0.0.1", port: 0 },
    filters: { ...defaultConfig.filters, port: 0 },
    api: { ...defaultConfig.api, tokens: `ci:${ciToken}` },
    store: { mode: "embedded", path: join(dir, "policies.json") },
    adaptive: { ...defaultConfig.adaptive, enabled: false, liveThresholds: { ...defaultConfig.adaptive.liveThresholds, enabled: liveEnabled, intervalSeconds: 1 } },
    pipeline: { enabled: true, scrape: { intervalMs: 200, timeoutMs: 200, static: [{ url: targetUrl, kind: "envoy", namespace: "llm", pod: "chat-0" }] } },
  };
}

/** What the dashboard's keep panel reads (the part checked here). */
interface KeepPanel {
  route: string | null;
  thresholds: unknown;
  columns: { keptSlowPerSecond: (number | null)[] };
}

async function run(liveEnabled: boolean, check: (live: unknown, config: unknown, panel: KeepPanel) => Promise<void>, checkMetrics?: (text: string) => void | Promise<void>): Promise<void> {
  let scrapes = 0;
  const target = createServer((_req, res) => {
    scrapes++;
    const lines = BOUNDS.map((le, i) => `tokentrace_llm_duration_ms_bucket{route="chat",model="llama",le="${le}"} ${scrapes * 10 * (i + 1)}`);
    res.end([...lines, `tokentrace_llm_duration_ms_bucket{route="chat",model="llama",le="+Inf"} ${scrapes * 100}`, `tokentrace_spans_kept_total{route="chat",keep_reason="slow"} ${scrapes * 5}`, ""].join("\n"));
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  const running = await startControlPlane(configFor(`http://127.0.0.1:${(target.address() as AddressInfo).port}/stats/prometheus`, liveEnabled), { log: () => undefined }).catch(async (error: unknown) => {
    await new Promise<void>((resolve) => target.close(() => resolve()));
    throw error;
  });
  try {
    const policy = samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: 0.01 }, spans: { cluster: "otel", keep: { errors: true } } } });
    assert.equal((await call(running.url, "POST", "/v1/policies", { token: ciToken, body: policy })).status, 201);
    const served = async (): Promise<{ config: { spans: { keep: { live?: unknown } } } }> =>
      (await call(running.url, "GET", "/v1/filters/llm.chat-0/config?labels=app=chat")).body as { config: { spans: { keep: { live?: unknown } } } };
    // Polls the served config until thresholds appear or a few scheduler steps have passed.
    const deadline = Date.now() + 6_000;
    let body = await served();
    while (body.config.spans.keep.live === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      body = await served();
    }
    // The panel's newest point counts intervals that ended by its step: poll until one has (bounded).
    const keepPanel = async (): Promise<KeepPanel> => (await call(running.url, "GET", "/v1/dashboard/keep?route=chat&namespace=llm&range=300")).body as KeepPanel;
    let panel = await keepPanel();
    while (!panel.columns.keptSlowPerSecond.some((v) => v !== null) && Date.now() < deadline + 6_000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      panel = await keepPanel();
    }
    await check(body.config.spans.keep.live, body.config, panel);
    await checkMetrics?.(await (await fetch(`${running.url}/metrics`)).text());
  } finally {
    await running.stop();
    await new Promise<void>((resolve) => target.close(() => resolve()));
  }
}

describe("live tail-keep thresholds in the pull response (embedded mode, the pipeline scraping a sidecar)", () => {
  it("serves each (route, model)'s P95 x margin from the scraped histograms, which the filter takes", async () => {
    await run(true, async (live, config, panel) => {
      // P95 950 ms x margin 0.85 = 807.5, rounded.
      assert.deepEqual(live, [{ route: "chat", model: "llama", durationMs: 808 }]);
      assert.equal(panel.route, "chat");
      assert.deepEqual(panel.thresholds, {
        policy: "chat",
        tailKeep: true,
        errors: true,
        budgetTracesPerSecond: null,
        live: [{ model: "llama", durationMs: 808, ttftMs: null }],
        liveFrom: "computed by this replica (the leader)",
        staticMs: null,
        staticFrom: null,
        settings: { quantile: 0.95, margin: 0.85, floorMs: 1, ceilingMs: 3_600_000, intervalSeconds: 1, windowSeconds: 60 },
      });
      assert.ok(panel.columns.keptSlowPerSecond.some((v) => v !== null && v > 0), "the scraped keep reasons reach the panel");
      const vm = await loadFilter({ config });
      assert.equal(vm.configureAccepted, true);
    }, async (metrics) => {
      assert.ok(metrics.includes('tokentrace_control_plane_live_threshold_updates_total{policy="chat"} 1\n'), metrics);
      assert.ok(metrics.includes('tokentrace_control_plane_live_threshold_overflow_pairs{policy="chat"} 0\n'));
    });
  });

  it("serves none with adaptive.liveThresholds.enabled false", async () => {
    await run(false, async (live, _config, panel) => {
      assert.equal(live, undefined);
      assert.deepEqual(panel.thresholds, { policy: "chat", tailKeep: true, errors: true, budgetTracesPerSecond: null, live: [], liveFrom: null, staticMs: null, staticFrom: null, settings: null });
    });
  });
});
