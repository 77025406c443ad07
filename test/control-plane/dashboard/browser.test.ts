// The dashboard in a real browser: headless Debian Chromium (driven by playwright-core) against the
// demo stack started in this process on ephemeral ports (real filter.wasm on the emulated Envoy
// host, the simulated engine and dcgm-exporter, the real pipeline, span receiver and control
// plane). Deterministic by construction: it waits for the filter to run the pulled policy, then
// sends its own force-sampled requests, and waits on conditions of the data, never on time alone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../../support/chromium.js";
import { FILTER_WASM, requireArtifact } from "../../filter/support.js";
import { DEMO_POLICY, startDemoStack, type DemoStack, type DemoStackOptions } from "../../demo/stack.js";
import { demoTarget, lengthClassText, sidecarBatch, type ClassBuckets } from "./sidecar-batch.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { advance, fixture as engineFixture } from "../../support/engine-scrapes.js";


// The few DOM shapes the page callbacks use (the project's tsconfig has no DOM lib; these callbacks run in Chromium).
interface El {
  value: string;
  className: string;
  textContent: string | null;
  dataset: Record<string, string | undefined>;
  querySelectorAll(sel: string): ArrayLike<El>;
}
interface Chart {
  plot: { data: (number | null)[][]; series: { label?: string; scale?: string }[]; axes: { scale?: string; _values?: string[] | null }[] };
}
interface Win {
  document: { getElementById(id: string): El | null; querySelectorAll(sel: string): ArrayLike<El> };
  tokentraceDashboard: { charts: Record<string, Chart> };
}
const resultsDir = fileURLToPath(new URL("../../../test-results/", import.meta.url));
const PANELS = ["chart-requests", "chart-errors", "chart-tokens", "chart-ttft", "chart-decode", "chart-duration", "chart-gpu-util", "chart-gpu-power", "chart-sampling"];
// A fast engine: the test host is shared, so the demo's own timings are not what is under test here.
const FAST = { hostOverheadMs: 1, stepBaseMs: 2, decodeMsPerSeq: 0.1, prefillMsPerToken: 0.001 };

/** Polls `check` on real servers until it holds (bounded). */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Sends `n` streaming chat requests through the proxy, force-sampled, with the given token trace id. */
async function sendChat(stack: DemoStack, n: number, tokenTraceId?: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${stack.proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-debug-trace": "1", ...(tokenTraceId ? { "x-token-trace-id": tokenTraceId } : {}) },
      body: JSON.stringify({ model: "tokentrace-sim-1", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hello" }] }),
    });
    await res.text();
    assert.equal(res.status, 200);
  }
}

async function start(reads: "public" | "token", extra: Partial<DemoStackOptions> = {}): Promise<DemoStack> {
  const stack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), engine: FAST, errorRate: 0, scrapeIntervalMs: 500, prometheus: "off", loadRps: 10, reads, dcgmCollectIntervalMs: 250, ...extra });
  assert.equal(stack.filterConfigured, true, "the filter accepted its pull-mode configuration");
  // Pull-mode filters send no token, so with reads = token they keep their start-up configuration.
  if (reads === "public") await until("the filter to run the pulled policy", () => (stack.proxy.vm.stats.value("tokentrace_policy_updates_total", {}) ?? 0) >= 1);
  return stack;
}

async function openPage(userDataDir: string): Promise<{ page: Page; close: () => Promise<void>; errors: string[] }> {
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1500, height: 1000 } });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  return { page, close: () => context.close(), errors };
}

const text = async (page: Page, sel: string): Promise<string> => (await page.textContent(sel)) ?? "";

/** What the page draws in one cause panel. */
interface CausePanel {
  id: string;
  model: string | undefined;
  panel: string | undefined;
  nonNull: Record<string, number>;
  xTicks: number;
  yLabels: string[];
}

/** Runs in the page: every cause panel's series (by legend label) with how many points each draws. */
function causePanelsInPage(): CausePanel[] {
  const w = globalThis as unknown as Win;
  return Object.entries(w.tokentraceDashboard.charts)
    .filter(([id]) => id.startsWith("chart-cause-"))
    .map(([id, c]) => ({
      id,
      model: w.document.getElementById(id)?.dataset.model,
      panel: w.document.getElementById(id)?.dataset.panel,
      nonNull: Object.fromEntries(c.plot.series.slice(1).map((s, i) => [s.label, c.plot.data[i + 1]!.filter((v) => v !== null && v !== undefined).length])),
      xTicks: c.plot.axes[0]!._values?.length ?? 0,
      yLabels: c.plot.axes[1]!._values ?? [],
    }));
}

const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const QWEN3 = "Qwen/Qwen3-30B-A3B";

/** A model-server target of the demo's namespace, for fixture scrapes the test joins itself. */
const fixtureEngine = (pod: string, port: number): ScrapeTarget => ({ id: `vllm|http://${pod}:${port}/metrics`, kind: "vllm", url: `http://${pod}:${port}/metrics`, intervalMs: 2000, timeoutMs: 1000, namespace: "demo", pod, node: "fixture-node" });

test("dashboard in headless Chromium against the demo stack (emulated Envoy, simulated engine and GPU, LoRA adapters): golden signals hold data with monotone percentiles, one crosshair, each adapter's calls under its base model, traces fill and the lookup finds our request, the editor survives a 412", { timeout: 150_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
  const stack = await start("public", { lora: true });
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const { page, close, errors } = await openPage(userDataDir);
  try {
    // Our own sampled traffic after the policy is in force, so every panel has something to show.
    await sendChat(stack, 5);
    await until("three points with chat requests", async () => {
      const body = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/series?route=chat&range=300`)).json()) as { columns: Record<string, (number | null)[]> };
      return body.columns.sampledPerSecond!.some((v) => v !== null && v > 0) && body.columns.ttftP50!.filter((v) => v !== null).length >= 3;
    });
    const decodeExported = /^tokentrace_llm_decode_ms_bucket/m.test(await (await fetch(`${stack.proxy.adminUrl}/stats/prometheus`)).text());

    const requested: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/v1/")) requested.push(r.url().slice(r.url().indexOf("/v1/")));
    });
    assert.equal((await page.goto(stack.dashboardUrl))?.status(), 200);
    assert.equal(await page.title(), "tokentrace dashboard");
    // index.html asks the panels' first answers while the scripts load; each script takes the one
    // of its path rather than asking again (the first poll, 2 s on, asks with the route in the address).
    const byLoad = requested.slice();
    for (const path of ["/v1/dashboard/series?range=900", "/v1/dashboard/models?range=900", "/v1/dashboard/engine-causes?range=900", "/v1/dashboard/gpus?range=900", "/v1/dashboard/keep?range=900", "/v1/dashboard/status"]) {
      assert.equal(byLoad.filter((u) => u === path).length, 1, `${path} asked once by the load event: ${JSON.stringify(byLoad)}`);
    }
    await until("the address to name the route shown", async () => (await page.evaluate(() => (globalThis as unknown as { location: { search: string } }).location.search)).includes("route=chat"), 10_000);
    const expected = PANELS.filter((p) => p !== "chart-decode" || decodeExported);
    const emptyPanels = (): Promise<string[]> => page.evaluate((ids) => ids.filter((el) => Number((globalThis as unknown as Win).document.getElementById(el)?.dataset.points ?? "0") === 0), expected);
    await until("every panel to hold data", async () => (await emptyPanels()).length === 0, 15_000).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}: still empty ${JSON.stringify(await emptyPanels())}`);
    });
    if (!decodeExported) assert.match(await text(page, '[data-caption-for="chart-decode"]'), /no tokentrace_llm_decode_ms/, "the decode panel says why it is empty");
    // One engine SLO panel per model the simulated vLLM server reports, its three signals drawn beside their thresholds.
    const engineSignals = (): Promise<{ model: string | undefined; labels: (string | undefined)[]; nonNull: number[] }[]> =>
      page.evaluate(() => {
        const w = globalThis as unknown as Win;
        return Object.entries(w.tokentraceDashboard.charts)
          .filter(([id]) => id.startsWith("chart-engine-"))
          .map(([id, c]) => ({ model: w.document.getElementById(id)?.dataset.model, labels: c.plot.series.slice(1).map((s) => s.label), nonNull: c.plot.data.slice(1, 4).map((col) => col.filter((v) => v !== null && v !== undefined).length) }));
      });
    await until("the engine panel to hold the three signals", async () => (await engineSignals()).some((e) => e.nonNull.every((n) => n > 0)), 15_000);
    const engine = await engineSignals();
    assert.deepEqual(engine.map((e) => e.model), ["tokentrace-sim-1"], "one panel for the one model");
    assert.deepEqual(engine[0]!.labels, ["GPU utilisation", "prefix-cache hit ratio", "speculative acceptance", "GPU utilisation alert threshold", "prefix-cache hit ratio alert threshold", "speculative acceptance alert threshold"]);
    assert.match(await text(page, "#engine-panels figcaption"), /^tokentrace-sim-1 \(demo\): engine SLO signals$/);
    // Under it, the LoRA adapters table: per adapter its calls as the sidecar saw them over 5 minutes (requests/s, tokens/s in and out, P99 TTFT and duration), then where it runs.
    const adapterRows = (): Promise<string[][]> => page.locator("#engine-panels table.adapters tr[data-adapter]").evaluateAll((trs) => trs.map((tr) => Array.from((tr as unknown as El).querySelectorAll("td")).map((td) => td.textContent ?? "")));
    await until("both adapters' calls in the LoRA table", async () => (await adapterRows()).length === 2 && (await adapterRows()).every((r) => r[1] !== "-" && r[3] !== "-" && r[4] !== "-"), 15_000).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(await adapterRows())}`);
    });
    assert.deepEqual(await page.locator("#engine-panels table.adapters th").allTextContents(), ["LoRA adapter", "requests/s", "tokens/s in / out", "TTFT P99", "duration P99", "running on", "waiting on", "loaded on"]);
    assert.equal(await text(page, "#engine-panels table.adapters caption"), "LoRA adapters: their calls over the last 5 min on the pods that load them, and where they run now");
    const rows = await adapterRows();
    assert.deepEqual(rows.map((r) => [r[0], r[7]]), [["chat-de", "llm-sim-0"], ["sql-lora", "llm-sim-0"]]);
    for (const r of rows) {
      assert.match(r[1]!, /^\d+(\.\d+)?k?$/, `requests/s ${JSON.stringify(r)}`);
      assert.match(r[2]!, /^\d+(\.\d+)?k? \/ \d+(\.\d+)?k?$/, `tokens/s ${JSON.stringify(r)}`);
      for (const cell of [r[3]!, r[4]!]) assert.match(cell, /^\d+(\.\d+)? (ms|s)$/, `P99 ${JSON.stringify(r)}`);
    }
    // sql-lora's calls carry the rows retrieved for their question: several times chat-de's prompt tokens a call.
    const rate = (cell: string): number => Number(/^[\d.]+/.exec(cell)![0]) * (/^[\d.]+k/.test(cell) ? 1000 : 1);
    const perCall = (r: string[]): number => rate(r[2]!) / rate(r[1]!);
    assert.ok(perCall(rows[1]!) > 3 * perCall(rows[0]!), `sql-lora ${rows[1]![2]} tokens/s in at ${rows[1]![1]} calls/s, chat-de ${rows[0]![2]} at ${rows[0]![1]}`);
    // The cause panels: one group for the model, its queue, KV cache, preemptions, TPOT and P99-split
    // panels with the simulated vLLM's points, the sidecar's TTFT P99 beside the engine's phases, and
    // axes that scale (latencies labelled in ms or s, more than one time tick). The simulated vLLM
    // writes its waiting reasons, as vLLM does on every engine, but no cache tier (no KV connector
    // here) and no per-request figure (test/demo/vllm-metrics.ts): the cache panel is empty and says
    // what it needs (fixture scrapes fill it further down).
    const CAUSES = ["queue", "kv", "preemptions", "tpot", "phases", "hits", "wait"];
    const DEMO_EMPTY = ["hits"];
    const causePanels = (): Promise<CausePanel[]> => page.evaluate(causePanelsInPage);
    await until("the cause panels to hold the engine's signals and the sidecar's TTFT", async () => (await causePanels()).length === CAUSES.length && (await causePanels()).every((p) => DEMO_EMPTY.includes(p.panel ?? "") || Object.values(p.nonNull).filter((n) => n > 0).length >= (p.id.endsWith("kv") ? 2 : p.id.endsWith("phases") ? 4 : 1)), 15_000).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(await causePanels())}`);
    });
    const causes = await causePanels();
    assert.deepEqual(causes.map((c) => [c.id, c.model]), CAUSES.map((suffix) => [`chart-cause-0-${suffix}`, "tokentrace-sim-1"]), "one group of cause panels for the one model");
    assert.deepEqual(Object.keys(causes[4]!.nonNull), ["queue P99", "prefill P99", "decode P99", "TTFT P99 (sidecar)"]);
    assert.deepEqual(causes[5]!.nonNull, { "external cache (KV connector)": 0, "prompt tokens computed per request (right axis)": 0 }, "no cache tier of the simulated vLLM");
    const wait = causes[6]!.nonNull;
    assert.deepEqual(Object.keys(wait), ["waiting (capacity)", "waiting (deferred)", "preemptions per request (right axis)"], "vLLM's two reasons, then the per-request figure");
    assert.ok(wait["waiting (capacity)"]! > 0 && wait["waiting (deferred)"]! > 0 && wait["preemptions per request (right axis)"] === 0, JSON.stringify(wait));
    const captionOf = (model: string, panel: string): Promise<string> =>
      page.evaluate(
        ([m, p]) => {
          const figures = Array.from((globalThis as unknown as Win).document.querySelectorAll("#causes-panels figure"));
          const figure = figures.find((f) => f.querySelectorAll(".chart")[0]?.dataset.model === m && f.querySelectorAll(".chart")[0]?.dataset.panel === p);
          return figure?.querySelectorAll("figcaption")[0]?.textContent ?? "";
        },
        [model, panel] as const,
      );
    assert.match(await captionOf("tokentrace-sim-1", "hits"), /No data in this range: needs SGLang's sglang:cached_tokens_total by cache_source .*--enable-hierarchical-cache.* or vLLM's vllm:external_prefix_cache_queries_total/);
    // With data the caption reads the panel (the empty one's "needs" is checked on SGLang's model below).
    assert.match(await captionOf("tokentrace-sim-1", "wait"), /^Why requests wait: waiting requests by vLLM's reason .*capacity: .*deferred: /);
    for (const c of causes) assert.ok(c.xTicks > 1, `${c.id}: ${c.xTicks} time ticks`);
    for (const c of causes.filter((x) => x.id.endsWith("tpot") || x.id.endsWith("phases"))) for (const label of c.yLabels) assert.match(label, /^\d+(\.\d+)? (ms|s)$/, `${c.id} axis label ${label}`);
    assert.equal(await text(page, "#causes-panels h3"), "tokentrace-sim-1 (demo) on llm-sim-0");
    // Units that scale, as the page formats them; input and output tokens on axes of their own.
    assert.deepEqual(
      await page.evaluate(() => {
        const { formatAxis } = (globalThis as unknown as { tokentraceCharts: { formatAxis(v: number, unit: string): string } }).tokentraceCharts;
        return [formatAxis(1200, "ms"), formatAxis(250, "ms"), formatAxis(10_000, "ms"), formatAxis(1500, "/s"), formatAxis(2_500_000, "/s"), formatAxis(0.5, "ratio")];
      }),
      ["1.2 s", "250 ms", "10 s", "1.5k", "2.5M", "50 %"],
    );
    assert.deepEqual(await page.evaluate(() => (globalThis as unknown as Win).tokentraceDashboard.charts["chart-tokens"]!.plot.axes.map((a) => a.scale)), ["x", "y", "y2"]);
    // The GPU health family: one group for the demo's pod, its panels with data, each caption saying what it needs dcgm-exporter to export.
    const gpuPanels = (): Promise<{ id: string; pod: string | undefined; nonNull: number }[]> =>
      page.evaluate(() => {
        const w = globalThis as unknown as Win;
        return Object.entries(w.tokentraceDashboard.charts)
          .filter(([id]) => id.startsWith("chart-gpuhealth-"))
          .map(([id, c]) => ({ id, pod: w.document.getElementById(id)?.dataset.pod, nonNull: c.plot.data[1]!.filter((v) => v !== null && v !== undefined).length }));
      });
    await until("the GPU health panels to hold data", async () => (await gpuPanels()).filter((g) => g.nonNull > 0).length >= 2, 15_000);
    const gpu = await gpuPanels();
    assert.deepEqual(gpu.map((g) => [g.id, g.pod]), ["activity", "starved", "throttle", "temperature"].map((suffix) => [`chart-gpuhealth-0-${suffix}`, "llm-sim-0"]), "one GPU: no straggler panel");
    const gpuCaptions = await page.locator("#gpu-panels figcaption").allTextContents();
    assert.match(gpuCaptions[0]!, /DCGM_FI_PROF_GR_ENGINE_ACTIVE: SM_ACTIVE not exported/, "the stock exporter's SM activity is named for what it is");
    assert.match(gpuCaptions[2]!, /Needs: DCGM_FI_DEV_CLOCKS_EVENT_REASONS/);
    assert.match(await text(page, "#gpu-panels h3"), /^llm-sim-0 \(demo\): 1 GPU$/);
    // The keep-reasons panel: the route's exported spans by why (here all head-sampled: the demo policy has no tail keep).
    const keepHeld = (): Promise<number> => page.evaluate(() => (globalThis as unknown as Win).tokentraceDashboard.charts["chart-keep"]?.plot.data[1]?.filter((v) => v !== null && v > 0).length ?? 0);
    await until("the keep-reasons panel to hold head-kept spans", async () => (await keepHeld()) > 0, 15_000);
    assert.deepEqual(await page.evaluate(() => (globalThis as unknown as Win).tokentraceDashboard.charts["chart-keep"]!.plot.series.slice(1).map((s) => s.label)), ["head (sampled)", "forced", "slow (tail keep)", "error (tail keep)", "dropped for the budget"]);
    assert.equal(await text(page, "#keep-note"), "Policy demo-sampling has no tail keep (spans.keep): only sampled and forced requests are exported.");
    assert.equal(await page.inputValue("#route"), "demo\u0000chat");
    assert.deepEqual(await page.locator("#route option").allTextContents(), ["chat (demo)", "completions (demo)", "embeddings (demo)"]);
    // Latency by length class of the route: rows from the filter's own labels, the why in one line.
    const classRows = (table: string): Promise<(string | undefined)[]> => page.locator(`#${table} tbody tr`).evaluateAll((trs) => trs.map((tr) => (tr as unknown as El).dataset.lengthClass));
    await until("the length-class tables to hold the chat route's classes", async () => (await classRows("length-class-input")).length > 0 && (await classRows("length-class-output")).length > 0, 15_000);
    for (const cls of [...(await classRows("length-class-input")), ...(await classRows("length-class-output"))]) assert.match(cls ?? "", /^(le\d+|gt\d+|unknown)$/);
    assert.match(await text(page, "#length-classes-note"), /^A P99 of 20% long prompts and a P99 of a slow engine look the same; per length class they do not\.$/);
    assert.equal(await text(page, "#length-classes-caption"), "Latency by length class, all models (over the last 15 min)");

    // Percentiles are monotone at every point of every latency panel, as drawn.
    const latency = await page.evaluate(() => {
      const charts = (globalThis as unknown as Win).tokentraceDashboard.charts;
      return ["chart-ttft", "chart-decode", "chart-duration"].map((id) => ({ id, labels: charts[id]!.plot.series.slice(1).map((s) => s.label), data: charts[id]!.plot.data.slice(1) }));
    });
    for (const { id, labels, data } of latency) {
      assert.deepEqual(labels, ["P50", "P95", "P99"], id);
      data[0]!.forEach((p50, k) => {
        if (p50 === null) return;
        assert.ok(p50 <= data[1]![k]! && data[1]![k]! <= data[2]![k]!, `${id} at ${k}: ${p50} ${data[1]![k]} ${data[2]![k]}`);
      });
    }
    // Legends show last, mean and max without hovering.
    const legend = await page.locator("#chart-ttft table.legend tbody tr").first().locator("td").allTextContents();
    assert.equal(legend[0], "P50");
    for (const cell of legend.slice(2)) assert.match(cell, /^\d+(\.\d+)? m?s$/, `legend ${JSON.stringify(legend)}`);
    // One crosshair: hovering one panel moves every panel's cursor to the same time.
    const box = (await page.locator("#chart-ttft .u-over").boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
    const cursorTimes = await page.locator("table.legend thead th:nth-child(2)").allTextContents();
    assert.equal(cursorTimes.length, PANELS.length + causes.length + engine.length + gpu.length + 1, "the route's panels, the cause panels, the engine panel, the GPU panels and the keep-reasons panel");
    assert.match(cursorTimes[0]!, /^\d\d:\d\d:\d\d$/);
    assert.deepEqual(new Set(cursorTimes).size, 1, `cursor times ${JSON.stringify(cursorTimes)}`);
    // The time range picker: 5 minutes (at this scrape interval, one point a second) instead of 15.
    const { stepSeconds } = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/series?route=chat&range=300`)).json()) as { stepSeconds: number };
    await page.selectOption("#range", "300");
    await page.waitForFunction((n) => (globalThis as unknown as Win).tokentraceDashboard.charts["chart-ttft"]!.plot.data[0]!.length === n, 300 / stepSeconds);
    // More than one time tick on a 5-minute range too (uPlot's own steps go from 1 to 5 minutes).
    assert.ok((await page.evaluate(() => (globalThis as unknown as Win).tokentraceDashboard.charts["chart-ttft"]!.plot.axes[0]!._values?.length ?? 0)) > 1, "time ticks at 5 minutes");
    assert.match(await text(page, '[data-caption-for="chart-sampling"]'), /^Sampled traces\/s \(mean over 60 s\); policy demo-sampling: 25 % \(route rule\), no adaptive target$/);

    // Traces: the list fills with sampled calls of the route, and the lookup finds the request we send now.
    await page.waitForFunction(() => Number((globalThis as unknown as Win).document.getElementById("trace-table")?.dataset.rows ?? "0") > 0, undefined, { timeout: 15_000 });
    const tokenTraceId = `browser-${randomBytes(6).toString("hex")}`;
    await sendChat(stack, 1, tokenTraceId);
    // The proxy's span and the simulated vLLM's own llm_request span, its child.
    await until("our spans at the receiver", () => stack.traces.lookup(tokenTraceId).length === 2);
    await page.fill("#trace-id", tokenTraceId);
    await page.click('#trace-lookup button[type="submit"]');
    await page.waitForSelector(`#trace-table tbody tr[data-token-trace-id="${tokenTraceId}"]`, { timeout: 10_000 });
    assert.equal(await page.locator("#trace-table tbody tr").count(), 1);
    const row = await page.locator("#trace-table tbody tr").first().locator("td").allTextContents();
    assert.equal(row[1], "tokentrace-sim-1");
    assert.equal(row[2], "200");
    assert.equal(row[6], tokenTraceId);
    assert.equal(row[7], stack.traces.lookup(tokenTraceId)[0]!.traceId);
    // ... and by its W3C trace id.
    await page.fill("#trace-id", row[7]!);
    await page.click('#trace-lookup button[type="submit"]');
    await page.waitForFunction((id) => (globalThis as unknown as Win).document.getElementById("trace-result")?.textContent === `1 call(s) for ${id}, 2 span(s) in the trace`, row[7]!);
    // A click on the call opens the trace as a waterfall: the proxy's span with its first-chunk mark,
    // the model server's span under it split into queue, prefill and decode.
    await page.locator("#trace-table tbody tr").first().locator("td").first().click();
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("trace-waterfall")?.dataset.spans === "2", undefined, { timeout: 10_000 });
    assert.deepEqual(await page.locator("#trace-waterfall .waterfall-row").evaluateAll((rows) => rows.map((r) => (r as unknown as El).dataset.spanName)), ["chat tokentrace-sim-1", "llm_request"]);
    assert.deepEqual(await page.locator("#trace-waterfall .waterfall-row").nth(1).locator(".waterfall-phase").evaluateAll((els) => els.map((e) => (e as unknown as El).dataset.phase)), ["queue", "prefill", "decode"]);
    assert.equal(await page.locator('#trace-waterfall .waterfall-row >> nth=0 >> [data-mark="ttft"]').count(), 1);
    assert.match(await text(page, "#trace-waterfall .waterfall-row:nth-of-type(3) .waterfall-note"), /^\d+(\.\d+)? ms · queue [\d.]+ ms · prefill [\d.]+ ms · decode [\d.]+ ms$/);
    // A click on a point of the TTFT chart lists the calls of that point's window at or above the percentile clicked.
    // The chart sits above the traces section the page scrolled to: bring it into view before reading its box.
    await page.locator("#chart-ttft").scrollIntoViewIfNeeded();
    const ttftBox = (await page.locator("#chart-ttft .u-over").boundingBox())!;
    // The newest point with a P50, where the chart draws it.
    const point = await page.evaluate(() => {
      const plot = (globalThis as unknown as Win).tokentraceDashboard.charts["chart-ttft"]!.plot as unknown as { data: (number | null)[][]; valToPos(v: number, scale: string): number };
      let k = plot.data[1]!.length - 1;
      while (k > 0 && plot.data[1]![k] === null) k--;
      return { x: plot.valToPos(plot.data[0]![k]!, "x"), y: plot.valToPos(plot.data[1]![k]!, "y") };
    });
    const windowRequest = page.waitForRequest((r) => r.url().includes("/v1/dashboard/traces?") && r.url().includes("minTtftMs="));
    // The newest point sits on the plot's right edge, one pixel outside the box: click just inside it (the cursor snaps to it).
    await page.mouse.click(ttftBox.x + Math.min(point.x, ttftBox.width - 2), ttftBox.y + point.y);
    const asked = new URL((await windowRequest).url()).searchParams;
    assert.equal(asked.get("route"), "chat");
    // The percentile line nearest the click is the one picked (a refresh may rescale the chart between
    // reading the point and the click, so which line is not fixed); its value at the window's end is the threshold.
    const windowText = await text(page, "#trace-window-text");
    const picked = /\((P\d\d) of that window\)$/.exec(windowText)?.[1];
    assert.ok(picked !== undefined, `the window names the percentile clicked: ${windowText}`);
    const valueAtClick = await page.evaluate(
      ([toMs, label]) => {
        const plot = (globalThis as unknown as Win).tokentraceDashboard.charts["chart-ttft"]!.plot as unknown as { data: (number | null)[][]; series: { label?: string }[] };
        const k = plot.data[0]!.findIndex((t) => t !== null && t * 1000 === toMs);
        const i = plot.series.findIndex((s) => s.label === label);
        return k < 0 || i < 1 ? null : plot.data[i]![k]!;
      },
      [Number(asked.get("toMs")), picked] as const,
    );
    assert.ok(valueAtClick !== null, "the window asked for ends at a point of the chart, on a line it draws");
    assert.equal(asked.get("minTtftMs"), String(Math.floor(valueAtClick)), `the ${picked} line's value is the threshold`);
    const { windowSeconds } = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/series?route=chat&range=300`)).json()) as { windowSeconds: number };
    assert.equal(Number(asked.get("toMs")) - Number(asked.get("fromMs")), windowSeconds * 1000, "the chart's window");
    assert.match(windowText, /^calls started \d\d:\d\d:\d\d–\d\d:\d\d:\d\d with TTFT ≥ [\d.]+ (ms|s) \(P\d\d of that window\)$/);
    await page.click("#trace-window-clear");
    assert.equal(await page.locator("#trace-window").isHidden(), true);

    // The editor: field errors from the API, then a save with If-Match.
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-editor")?.value.includes("demo-sampling") === true);
    assert.deepEqual(await page.locator("#policy-list tbody tr").evaluateAll((trs) => trs.map((tr) => (tr as unknown as El).dataset.policy)), ["demo-sampling"]);
    const original = JSON.parse(await page.inputValue("#policy-editor")) as { pluginConfig: { sampling: { defaultRate: number } } };
    const withRate = (rate: number): string => JSON.stringify({ ...original, pluginConfig: { ...original.pluginConfig, sampling: { ...original.pluginConfig.sampling, defaultRate: rate } } }, null, 2);
    await page.fill("#token", stack.token);
    await page.fill("#policy-editor", withRate(2));
    await page.click("#save");
    await page.waitForSelector("#policy-errors li");
    assert.equal(await text(page, "#policy-result"), "400 invalid policy");
    await page.fill("#policy-editor", withRate(0.5));
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-result")?.textContent === "saved: version 2");

    // Someone else saves: our next save gets 412, our edit stays, the diff shows both sides, and we may save over theirs.
    const patched = await fetch(`${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY}`, { method: "PATCH", headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/merge-patch+json" }, body: JSON.stringify({ pluginConfig: { sampling: { defaultRate: 0.4 } } }) });
    assert.equal(patched.status, 200);
    const myEdit = withRate(0.05);
    await page.fill("#policy-editor", myEdit);
    await page.click("#save");
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-result")?.textContent?.startsWith("412") === true);
    assert.match(await text(page, "#policy-result"), /^412 precondition failed: version 3 \(by demo\) was saved since you loaded this policy\. Your edit is kept/);
    assert.equal(await page.inputValue("#policy-editor"), myEdit, "the edit survives the 412");
    const diff = await page.locator("#policy-diff span.del, #policy-diff span.add").allTextContents();
    assert.deepEqual(diff.map((l) => l.replace(/\s+/g, " ").trim()), ['- "defaultRate": 0.4,', '+ "defaultRate": 0.05,']);
    await page.click("#overwrite");
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-result")?.textContent === "saved: version 4");
    const after = (await (await fetch(`${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY}`)).json()) as { policy: { pluginConfig: { sampling: { defaultRate: number } } } };
    assert.equal(after.policy.pluginConfig.sampling.defaultRate, 0.05);

    // The create form.
    await page.click("#policy-create summary");
    await page.fill("#create-name", "second");
    await page.fill("#create-namespace", "llm");
    await page.fill("#create-app", "vllm");
    await page.fill("#create-adaptive", "2");
    await page.click('#create-form button[type="submit"]');
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-result")?.textContent?.startsWith("created") || (globalThis as unknown as Win).document.getElementById("policy-result")?.className === "error");
    assert.match(await text(page, "#policy-result"), /^created: second version \d+$/, JSON.stringify(await page.locator("#policy-errors li").allTextContents()));
    assert.deepEqual(await page.locator("#policy-list tbody tr").evaluateAll((trs) => trs.map((tr) => (tr as unknown as El).dataset.policy)), ["demo-sampling", "second"]);

    // Tail keep without live thresholds of its own: the demo's control plane computes none (its app has no adaptive sampling), and the panel says so.
    const computed = await fetch(`${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY}`, { method: "PATCH", headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/merge-patch+json" }, body: JSON.stringify({ pluginConfig: { spans: { keep: { errors: true, slowerThanMs: 5000 } } } }) });
    assert.equal(computed.status, 200, await computed.text());
    const staticNote = "Policy demo-sampling: tail keep keeps errors and requests slower than the threshold for their route and model; static 5000 ms (slowerThanMs) where no live entry applies; no live thresholds (this control plane computes none: adaptive.liveThresholds or the metrics pipeline is off).";
    await page.waitForFunction((note) => (globalThis as unknown as Win).document.getElementById("keep-note")?.textContent === note, staticNote, { timeout: 10_000 });
    // Tail keep with live thresholds of its own: the keep panel's table shows what /v1/dashboard/keep serves.
    const keep = await fetch(`${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY}`, { method: "PATCH", headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/merge-patch+json" }, body: JSON.stringify({ pluginConfig: { spans: { keep: { errors: true, slowerThanMs: 5000, live: [{ route: "chat", model: "tokentrace-sim-1", durationMs: 1234, ttftMs: 321 }] } } } }) });
    assert.equal(keep.status, 200, await keep.text());
    const served = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/keep?route=chat&namespace=demo`)).json()) as { thresholds: { live: { model: string; durationMs: number; ttftMs: number }[] } };
    assert.deepEqual(served.thresholds.live, [{ model: "tokentrace-sim-1", durationMs: 1234, ttftMs: 321 }]);
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("keep-thresholds")?.dataset.rows === "1", undefined, { timeout: 10_000 });
    assert.deepEqual(await page.locator("#keep-thresholds tbody tr td").allTextContents(), ["tokentrace-sim-1", "1234 ms", "321 ms", "–"]);
    assert.equal(await text(page, "#keep-note"), "Policy demo-sampling: tail keep keeps errors and requests slower than the threshold for their route and model; static 5000 ms (slowerThanMs) where no live entry applies; live thresholds the policy's own spans.keep.live.");

    mkdirSync(resultsDir, { recursive: true });
    const shot = join(resultsDir, "dashboard.png");
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 10_000, "the screenshot has content");

    // The view lives in the address, so a shared link opens the same route and range.
    assert.match(page.url(), /[?&]range=300(&|$)/);
    await page.goto(`${stack.dashboardUrl}?route=completions&namespace=demo&range=1800`);
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("route")?.value === "demo\u0000completions");
    assert.equal(await page.inputValue("#range"), "1800");

    // Latency by length class from a fixture batch: every class of the filter's defaults on both
    // sides, printed in no order, drawn in the order of their boundaries with their own percentiles.
    const fixture = (n: number): { ttft: ClassBuckets; decode: ClassBuckets; duration: ClassBuckets } => {
      const c = (v: number[]): number[] => v.map((x) => x * n);
      return {
        ttft: { unknown: c([1, 1, 1, 1, 1, 1]), gt8192: c([0, 0, 0, 0, 2, 2]), le8192: c([0, 0, 0, 3, 3, 3]), le512: c([8, 10, 10, 10, 10, 10]), le2048: c([0, 0, 5, 5, 5, 5]) },
        decode: { le256: c([0, 6, 6, 6, 6, 6]), le64: c([5, 5, 5, 5, 5, 5]) },
        duration: { gt1024: c([0, 0, 0, 0, 0, 2]), unknown: c([1, 1, 1, 1, 1, 1]), le1024: c([0, 0, 0, 0, 4, 4]), le64: c([0, 0, 5, 5, 5, 5]), le256: c([0, 0, 0, 3, 6, 6]) },
      };
    };
    for (const [k, at] of [Date.now() - 2000, Date.now() - 1000].entries()) stack.dashboard.observe(sidecarBatch(lengthClassText("lengths", "fixture-model", fixture(k)), at), { target: demoTarget("fixture-0"), timestampMs: at });
    await page.goto(`${stack.dashboardUrl}?route=lengths&namespace=demo&range=300`);
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("length-class-output")?.dataset.rows === "5", undefined, { timeout: 10_000 });
    assert.deepEqual(await classRows("length-class-input"), ["le512", "le2048", "le8192", "gt8192", "unknown"]);
    assert.deepEqual(await classRows("length-class-output"), ["le64", "le256", "le1024", "gt1024", "unknown"]);
    // 2 of 21 streamed calls, their P50 and P99 in (500, 1000] ms; the short prompts' P99 under 100 ms.
    assert.deepEqual(await page.locator('#length-class-input tr[data-length-class="gt8192"] td').allTextContents(), ["gt8192", "2", "9.5 %", "750 ms", "995 ms"]);
    assert.deepEqual(await page.locator('#length-class-input tr[data-length-class="le512"] td').allTextContents(), ["le512", "10", "47.6 %", "31.3 ms", "97.5 ms"]);
    // Duration P50 and P99, then decode P99 (streams only: none for the classes without decode).
    assert.deepEqual(await page.locator('#length-class-output tr[data-length-class="le256"] td').allTextContents(), ["le256", "6", "33.3 %", "500 ms", "990 ms", "99.5 ms"]);
    assert.deepEqual(await page.locator('#length-class-output tr[data-length-class="gt1024"] td').allTextContents(), ["gt1024", "2", "11.1 %", "1.00 s", "1.00 s", "–"]);

    // Where the cache hits and why requests wait, from fixture scrapes through the real join: a vLLM
    // with a KV connector (waiting by reason, the external cache, per-request figures) and an SGLang
    // whose host tier appears after its device tier (the panel is made again with the new series).
    const vllmTarget = fixtureEngine("fixture-vllm-0", 8000);
    const sglTarget = fixtureEngine("fixture-sgl-0", 30000);
    const joiner = new Joiner({ rateWindowMs: 30_000 });
    joiner.setTargets([vllmTarget, sglTarget]);
    const sglText = engineFixture("sglang-priority.prom");
    const deviceOnly = sglText.split("\n").filter((line) => !line.includes('cache_source="host"')).join("\n");
    assert.notEqual(deviceOnly, sglText);
    // A minute of 2 s scrapes up to 2 s ago: the host tier's rate has a whole 30 s window by the end.
    const base = Date.now() - 60_000;
    const feed = (from: number, to: number, sgl: string): void => {
      for (let k = from; k <= to; k++) {
        for (const [t, scrape] of [[vllmTarget, advance(engineFixture("vllm-waiting-by-reason-external-cache.prom"), k)], [sglTarget, advance(sgl, k, 0.25)]] as const) {
          const p = parseText(scrape);
          const timestampMs = base + k * 2000;
          stack.dashboard.observe(joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }), { target: t, timestampMs });
        }
      }
    };
    const fixturePanel = async (model: string, suffix: string): Promise<CausePanel | undefined> => (await causePanels()).find((p) => p.model === model && p.panel === suffix);
    const held = (p: CausePanel | undefined): string[] => Object.entries(p?.nonNull ?? {}).filter(([, n]) => n > 0).map(([label]) => label);
    feed(0, 3, deviceOnly);
    await until("the SGLang model's device tier", async () => held(await fixturePanel(QWEN3, "hits")).includes("hits from device"), 15_000);
    assert.deepEqual(Object.keys((await fixturePanel(QWEN3, "hits"))!.nonNull), ["hits from device", "external cache (KV connector)", "prompt tokens computed per request (right axis)"]);
    feed(4, 29, sglText);
    await until("the host tier beside it", async () => held(await fixturePanel(QWEN3, "hits")).includes("hits from host"), 15_000).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(await causePanels())}`);
    });
    await until("the vLLM model's reasons and external cache", async () => held(await fixturePanel(LLAMA, "wait")).length === 3 && held(await fixturePanel(LLAMA, "hits")).length === 2, 15_000).catch(async (e: unknown) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(await causePanels())}`);
    });
    assert.deepEqual(held(await fixturePanel(QWEN3, "hits")), ["hits from device", "hits from host"], "SGLang's tiers, no external cache nor per-request figures");
    assert.deepEqual(held(await fixturePanel(LLAMA, "hits")), ["external cache (KV connector)", "prompt tokens computed per request (right axis)"]);
    assert.deepEqual(held(await fixturePanel(LLAMA, "wait")), ["waiting (capacity)", "waiting (deferred)", "preemptions per request (right axis)"]);
    // The newest values as drawn: the share of prompt tokens per tier, waiting requests per reason; tokens per request on the right axis.
    const lastDrawn = (model: string, suffix: string): Promise<Record<string, number | null>> =>
      page.evaluate(
        ([m, sfx]) => {
          const w = globalThis as unknown as Win;
          const id = Object.keys(w.tokentraceDashboard.charts).find((k) => w.document.getElementById(k)?.dataset.model === m && w.document.getElementById(k)?.dataset.panel === sfx)!;
          const plot = w.tokentraceDashboard.charts[id]!.plot;
          return Object.fromEntries(plot.series.slice(1).map((s, i) => [s.label, plot.data[i + 1]!.filter((v) => v !== null).at(-1) ?? null]));
        },
        [model, suffix] as const,
      );
    assert.deepEqual(await lastDrawn(QWEN3, "hits"), { "hits from device": 0.625, "hits from host": 0.225, "external cache (KV connector)": null, "prompt tokens computed per request (right axis)": null });
    assert.deepEqual(await lastDrawn(LLAMA, "wait"), { "waiting (capacity)": 6, "waiting (deferred)": 3, "preemptions per request (right axis)": 0.08 });
    assert.deepEqual(await lastDrawn(LLAMA, "hits"), { "external cache (KV connector)": 0.25, "prompt tokens computed per request (right axis)": 280 });
    const axes = await page.evaluate((m) => {
      const w = globalThis as unknown as Win;
      const id = Object.keys(w.tokentraceDashboard.charts).find((k) => w.document.getElementById(k)?.dataset.model === m && w.document.getElementById(k)?.dataset.panel === "hits")!;
      return w.tokentraceDashboard.charts[id]!.plot.axes.slice(1).map((a) => ({ scale: a.scale, last: a._values?.at(-1) }));
    }, LLAMA);
    assert.deepEqual(axes.map((a) => a.scale), ["y", "y2"], "shares on the left, tokens on the right");
    assert.match(axes[0]!.last ?? "", / %$/, `left axis ${JSON.stringify(axes)}`);
    assert.match(axes[1]!.last ?? "", /^\d+$/, `right axis in tokens ${JSON.stringify(axes)}`);
    assert.doesNotMatch(await captionOf(LLAMA, "wait"), /No data/);
    assert.match(await captionOf(QWEN3, "wait"), /No data in this range: needs vllm:num_requests_waiting_by_reason/, "SGLang has no waiting reasons");
    assert.deepEqual(errors, []);
  } finally {
    await close();
    rmSync(userDataDir, { recursive: true, force: true });
    await stack.close();
  }
});

test("dashboard in headless Chromium with api.reads = token (emulated Envoy, simulated engine and GPU): refused until a token is typed, then charts and policies load with it", { timeout: 90_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
  const stack = await start("token");
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const { page, close, errors } = await openPage(userDataDir);
  try {
    await sendChat(stack, 3);
    await until("chat points", () => stack.dashboard.intervals({ namespace: "demo", route: "chat" }).length >= 2);
    assert.equal((await page.goto(stack.dashboardUrl))?.status(), 200);
    // Without a token: reads are refused, and the page says so instead of drawing nothing.
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("status")?.className === "error");
    assert.match(await text(page, "#status"), /token/i);
    await page.waitForFunction(() => ((globalThis as unknown as Win).document.getElementById("policy-result")?.textContent ?? "") !== "");
    assert.match(await text(page, "#policy-result"), /token/i);
    assert.equal(await page.getAttribute("#chart-ttft", "data-points"), "0");
    // With the token typed: the series and the policy load.
    await page.fill("#token", stack.token);
    await page.dispatchEvent("#token", "change");
    await page.waitForFunction(() => Number((globalThis as unknown as Win).document.getElementById("chart-requests")?.dataset.points ?? "0") > 0, undefined, { timeout: 15_000 });
    await page.waitForFunction(() => (globalThis as unknown as Win).document.getElementById("policy-editor")?.value.includes("demo-sampling") === true);
    assert.equal(await text(page, "#policy-version"), "version 1, by demo");
    assert.deepEqual(errors, []);
  } finally {
    await close();
    rmSync(userDataDir, { recursive: true, force: true });
    await stack.close();
  }
});
