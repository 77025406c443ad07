// The demo's stories, end to end: each scenario runs the whole stack (real filter.wasm on the emulated
// Envoy host, the simulated engine and dcgm-exporter, the real pipeline) with real Prometheus
// evaluating istio/observability/prometheus-rules.yaml, and within a minute the dashboard's series
// show the story and the matching alert fires, and only that one of the pair.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import { demoRuleFile, firingAlerts } from "./alert-rules.js";
import { startDemoStack, type DemoStack } from "./stack.js";

const LATENCY_ALERTS = ["TokentraceTTFTHighGPUIdle", "TokentraceTTFTHighGPUSaturated"];

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const lastValues = (cols: Record<string, (number | null)[]>, key: string): number[] => (cols[key] ?? []).filter((v): v is number => v !== null);

test("demoRuleFile: every group of the PrometheusRule, evaluated every 5 s, with `for` dropped and the expressions unchanged", () => {
  const text = demoRuleFile("5s");
  assert.doesNotMatch(text, /^\s+for:/m);
  assert.match(text, /interval: 5s/);
  assert.match(text, /alert: TokentraceTTFTHighGPUIdle/);
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-rules-"));
  try {
    writeFileSync(join(dir, "rules.yml"), text);
    const check = spawnSync("promtool", ["check", "rules", join(dir, "rules.yml")], { encoding: "utf8" });
    assert.equal(check.status, 0, check.stderr + check.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const [scenario, alert, gpuText, gpu] of [
  ["gpu-saturated", "TokentraceTTFTHighGPUSaturated", "over 90%", (u: number) => u > 90],
  ["slow-model", "TokentraceTTFTHighGPUIdle", "under 40%", (u: number) => u < 40],
] as const) {
  test(`demo scenario ${scenario} (emulated Envoy, simulated engine and dcgm-exporter, real Prometheus): within a minute TTFT P95 > 2 s with the GPU ${gpuText}, and ${alert} fires`, { timeout: 150_000 }, async () => {
    assert.equal(spawnSync("prometheus", ["--version"], { stdio: "ignore" }).status, 0, "prometheus is missing: run `make test-deps`");
    const stack: DemoStack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), scenario, errorRate: 0, scrapeIntervalMs: 1000, prometheus: "auto" });
    try {
      assert.ok(stack.prometheus);
      const started = Date.now();
      await until(
        `${alert} to fire`,
        async () => (await firingAlerts(stack.prometheus!.url)).includes(alert),
        90_000,
      );
      const tookMs = Date.now() - started;
      assert.ok(tookMs < 75_000, `fired after ${tookMs} ms`);
      const firing = await firingAlerts(stack.prometheus.url);
      assert.deepEqual(firing.filter((a) => LATENCY_ALERTS.includes(a)), [alert], "only the matching one of the pair");
      // The dashboard's windows are seconds, the rule's 5 min: its latest point shows the same story.
      let cols: Record<string, (number | null)[]> = {};
      await until(
        "the dashboard's TTFT P95 over 2 s",
        async () => {
          cols = ((await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/series?route=chat&range=300`)).json()) as { columns: typeof cols }).columns;
          return (lastValues(cols, "ttftP95").at(-1) ?? 0) > 2000;
        },
        Math.max(5000, 75_000 - (Date.now() - started)),
      );
      const util = lastValues(cols, "gpuUtilizationPercent").at(-1)!;
      assert.ok(gpu(util), `GPU utilisation ${util} % on the dashboard`);
    } finally {
      await stack.close();
    }
  });
}
