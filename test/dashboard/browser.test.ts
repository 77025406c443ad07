// The dashboard in a real browser: headless Debian Chromium (driven by playwright-core) against the
// demo stack started in this process on ephemeral ports (real filter.wasm on the emulated Envoy
// host, simulated LLM server and dcgm-exporter, the real pipeline and control plane). The charts
// must hold data points, the policy editor must show field errors and save through the REST API,
// and a screenshot is kept under test-results/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import { DEMO_POLICY, startDemoStack } from "../demo/stack.js";

const CHROMIUM = "/usr/bin/chromium";

// The few DOM shapes the page callbacks use (the project's tsconfig has no DOM lib; these callbacks run in Chromium).
interface El {
  value: string;
  className: string;
  textContent: string | null;
  dataset: Record<string, string | undefined>;
}
interface Win {
  document: { getElementById(id: string): El | null };
  tokentraceDashboard: { charts: Record<string, { data: (number | null)[][]; series: { label?: string }[] }> };
}
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const resultsDir = fileURLToPath(new URL("../../test-results/", import.meta.url));

/** Polls `check` on real servers until it holds (no fixed sleeps; bounded). */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("dashboard in headless Chromium against the demo stack (emulated Envoy, simulated LLM and GPU): charts hold data, the editor saves a policy through the API", { timeout: 90_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run \`make test-deps\` (installs Debian chromium)`);
  const wasm = requireArtifact(FILTER_WASM);
  const stack = await startDemoStack({ wasm, ttftMs: 20, tokensPerSecond: 400, errorRate: 0, scrapeIntervalMs: 500, prometheus: "off", loadRps: 25 });
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1400, height: 900 } });
  try {
    assert.equal(stack.filterConfigured, true, "the filter accepted its pull-mode configuration");
    // Three intervals of the chat route (the first scrape only sets the baseline).
    await until("three dashboard points for the chat route", () => stack.dashboard.points("chat").length >= 3);

    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    const response = await page.goto(stack.dashboardUrl);
    assert.equal(response?.status(), 200);
    assert.equal(await page.title(), "tokentrace dashboard");

    // Every chart holds points: the page sets data-points to the non-null values it gave uPlot.
    for (const id of ["chart-latency", "chart-tokens", "chart-gpu", "chart-sampling"]) {
      await page.waitForFunction((el) => Number((globalThis as unknown as Win).document.getElementById(el)?.dataset.points ?? "0") > 0, id, { timeout: 10_000 });
    }
    const held = await page.evaluate(() => {
      const charts = (globalThis as unknown as Win).tokentraceDashboard.charts;
      const out: Record<string, Record<string, number>> = {};
      for (const [name, chart] of Object.entries(charts)) {
        out[name] = {};
        chart.series.forEach((s, i) => {
          if (i > 0) out[name]![s.label ?? String(i)] = chart.data[i]!.filter((v) => v !== null && v !== undefined).length;
        });
      }
      return out;
    });
    assert.deepEqual(Object.keys(held).sort(), ["gpu", "latency", "sampling", "tokens"]);
    assert.deepEqual(Object.keys(held.latency!), ["ttft P50", "ttft P95", "ttft P99", "decode P50", "decode P95", "decode P99", "total P50", "total P95", "total P99"]);
    for (const [chart, series] of Object.entries(held)) {
      for (const [label, n] of Object.entries(series)) assert.ok(n >= 1, `${chart} / ${label} holds no data point: ${JSON.stringify(held)}`);
    }
    // The values behind the charts: the pulled policy samples chat at 0.25, the simulated GPU works.
    const series = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/series?route=chat`)).json()) as { pod: string; columns: Record<string, (number | null)[]> };
    assert.equal(series.pod, "demo/llm-sim-0");
    const sum = (k: string): number => series.columns[k]!.reduce<number>((a, v) => a + (v ?? 0), 0);
    assert.ok(sum("sampledPerSecond") > 0 && sum("targetSampledPerSecond") > 0 && sum("outputTokensPerSecond") > 0, JSON.stringify(series.columns));
    for (const v of series.columns.gpuUtilizationPercent!) assert.ok(v !== null && v >= 3 && v <= 100, `GPU utilisation ${v}`);
    for (const v of series.columns.gpuPowerWatts!) assert.ok(v !== null && v >= 70 && v <= 700, `GPU power ${v}`);
    assert.equal(await page.inputValue("#route"), "chat");
    assert.deepEqual(await page.locator("#route option").allTextContents(), ["chat", "completions", "embeddings"]);

    // The policy editor: loaded from the API with its version.
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-editor")?.value.includes("demo-sampling") === true);
    const original = JSON.parse(await page.inputValue("#policy-editor")) as { pluginConfig: { sampling: { defaultRate: number } } };
    assert.equal(original.pluginConfig.sampling.defaultRate, 0.1);
    assert.equal(await page.textContent("#policy-version"), "version 1, by demo");

    // An invalid rate: the API's field and reason are shown, nothing changes.
    await page.fill("#token", stack.token);
    await page.fill("#policy-editor", JSON.stringify({ ...original, pluginConfig: { ...original.pluginConfig, sampling: { ...original.pluginConfig.sampling, defaultRate: 2 } } }, null, 2));
    await page.click("#save");
    await page.waitForSelector("#policy-errors li");
    assert.equal(await page.textContent("#policy-result"), "400 invalid policy");
    const fields = await page.locator("#policy-errors li").evaluateAll((lis) => lis.map((li) => (li as unknown as El).dataset.field));
    assert.ok(fields.includes("pluginConfig.sampling.defaultRate"), `fields shown: ${JSON.stringify(fields)}`);

    // A valid edit is saved with If-Match and is what the API returns afterwards.
    await page.fill("#policy-editor", JSON.stringify({ ...original, pluginConfig: { ...original.pluginConfig, sampling: { ...original.pluginConfig.sampling, defaultRate: 0.5 } } }, null, 2));
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-result")?.textContent?.startsWith("saved"));
    assert.equal(await page.textContent("#policy-result"), "saved: version 2");
    assert.equal(await page.locator("#policy-errors li").count(), 0);
    const after = await fetch(`${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY}`);
    assert.equal(after.headers.get("etag"), '"2"');
    const record = (await after.json()) as { version: string; updatedBy: string; policy: { pluginConfig: { sampling: { defaultRate: number; routes: unknown } } } };
    assert.equal(record.updatedBy, "demo");
    assert.equal(record.policy.pluginConfig.sampling.defaultRate, 0.5);
    assert.deepEqual(record.policy.pluginConfig.sampling.routes, [{ routeName: "chat", rate: 0.25 }]);

    // Someone else changes the policy: the editor's save now carries a stale If-Match and shows the 412.
    const patched = await fetch(`${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY}`, { method: "PATCH", headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/merge-patch+json" }, body: JSON.stringify({ pluginConfig: { sampling: { defaultRate: 0.4 } } }) });
    assert.equal(patched.status, 200);
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-result")?.textContent?.startsWith("412"));
    assert.equal(await page.textContent("#policy-result"), "412 precondition failed");
    assert.deepEqual(await page.locator("#policy-errors li").evaluateAll((lis) => lis.map((li) => (li as unknown as El).dataset.field)), ["if-match"]);
    await page.click("#reload");
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-version")?.textContent === "version 3, by demo");
    assert.equal((JSON.parse(await page.inputValue("#policy-editor")) as typeof original).pluginConfig.sampling.defaultRate, 0.4);

    // The filter pulls the new policy: its policy-update counter moves past the first policy.
    await until("the filter to apply policy version 2", () => (stack.proxy.vm.stats.value("tokentrace_policy_updates_total", {}) ?? 0) >= 2);

    mkdirSync(resultsDir, { recursive: true });
    const shot = join(resultsDir, "dashboard.png");
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 10_000, "the screenshot has content");
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
    await stack.close();
  }
});

test("dashboard in headless Chromium with api.reads = token (emulated Envoy, simulated LLM and GPU): refused until a token is typed, then charts and policies load with it", { timeout: 90_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run \`make test-deps\` (installs Debian chromium)`);
  const wasm = requireArtifact(FILTER_WASM);
  const stack = await startDemoStack({ wasm, ttftMs: 20, tokensPerSecond: 400, errorRate: 0, scrapeIntervalMs: 500, prometheus: "off", loadRps: 25, reads: "token" });
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1400, height: 900 } });
  try {
    await until("two dashboard points for the chat route", () => stack.dashboard.points("chat").length >= 2);
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    assert.equal((await page.goto(stack.dashboardUrl))?.status(), 200);

    // Without a token: both reads are refused, and the page says so instead of drawing nothing.
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("status")?.className === "error");
    assert.match((await page.textContent("#status")) ?? "", /token/i);
    await page.waitForFunction(() => ((globalThis as unknown as Win).document.getElementById("policy-result")?.textContent ?? "") !== "");
    assert.match((await page.textContent("#policy-result")) ?? "", /token/i);
    assert.equal(await page.getAttribute("#chart-latency", "data-points"), "0");

    // With the token typed: the series and the policy load.
    await page.fill("#token", stack.token);
    await page.dispatchEvent("#token", "change");
    await page.waitForFunction(() => Number((globalThis as unknown as Win).document.getElementById("chart-latency")?.dataset.points ?? "0") > 0, undefined, { timeout: 10_000 });
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-editor")?.value.includes("demo-sampling") === true);
    assert.equal(await page.textContent("#policy-version"), "version 1, by demo");
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
    await stack.close();
  }
});
