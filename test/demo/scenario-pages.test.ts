// Each demo scenario's story on the dashboard, checked in headless Chromium (#25 item 7 and its bar:
// "each demo scenario's story visible on the page within 90 s, checked in a real browser"): the
// whole stack of `make demo` with the scenario (real filter.wasm on the emulated Envoy host, the
// simulated engine and dcgm-exporter, the real pipeline, Debian's Prometheus evaluating the rule
// files with their `for` shortened), the page opened as a user would, and within 90 s of the stack's
// start the panels that tell the story show its values (read from the charts the page drew) and its
// Alerts section lists the scenario's alert, marked on the charts. `make test` runs one scenario
// (kv-cache-pressure, the walk-through's); `make demo-pages` (TOKENTRACE_DEMO_PAGES=all) runs all seven,
// one after the other in one browser: each needs its stack to itself for a minute and more.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { chromium, type Browser, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../support/chromium.js";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import { SCENARIOS } from "./scenarios.js";
import { startDemoStack, DEMO_MODEL, DEMO_POD, type DemoStack } from "./stack.js";

/** The issue's bar: the story on the page this long after the stack's start. */
const STORY_WITHIN_MS = 90_000;

/** Where a value is read on the page: a chart found by a CSS selector, and one of its series by label. */
interface Reading {
  /** What the reader sees, for messages. */
  what: string;
  /** The chart element (a `.chart` div charts.js fills). */
  chart: string;
  /** The series' label in the chart's legend (charts.js keeps it in plot.series[i].label). */
  series: string;
  /** Whether the latest value shown tells the story. */
  holds: (v: number) => boolean;
}

/** One scenario's story as the page tells it. */
interface PageStory {
  scenario: string;
  /** The alert the Alerts section lists (firing), or null: none of STORY_ALERTS may show. */
  alert: string | null;
  readings: Reading[];
}

const ENGINE = `#engine-panels .chart[data-model="${DEMO_MODEL}"]`;
/** The model's cause panel of KV-cache usage (engine.js). */
const KV_CAUSE = `.chart[id^="chart-cause-"][data-panel="kv"][data-model="${DEMO_MODEL}"]`;
const GPU_GROUP = `#gpu-panels .gpu-group[data-pod="${DEMO_POD}"]`;
/** The alerts a scenario's story is about: on `normal` none of them shows. */
const STORY_ALERTS = [
  "TokentraceTTFTHighGPUIdle",
  "TokentraceTTFTHighGPUSaturated",
  "TokentraceGPUBusyKVCacheMissSpecRejected",
  "TokentraceGPUBusyKVCacheMiss",
  "TokentraceGPUBusySpecRejected",
  "TokentraceKVCacheMissSpecRejected",
  "TokentraceGPUBusyButStarved",
  "TokentraceGPUThrottledTTFTRise",
  "TokentraceGPUStraggler",
];

// What docs/demo.md's table says each scenario shows on the dashboard, on the panels the page has.
const STORIES: PageStory[] = [
  {
    scenario: "normal",
    alert: null,
    readings: [
      { what: "TTFT P95 under 500 ms", chart: "#chart-ttft", series: "P95", holds: (v) => v < 500 },
      { what: "prefix-cache hits over 92%", chart: ENGINE, series: "prefix-cache hit ratio", holds: (v) => v > 0.92 },
      { what: "speculative acceptance over 80%", chart: ENGINE, series: "speculative acceptance", holds: (v) => v > 0.8 },
    ],
  },
  {
    scenario: "gpu-saturated",
    alert: "TokentraceTTFTHighGPUSaturated",
    readings: [
      { what: "TTFT P95 over 2 s", chart: "#chart-ttft", series: "P95", holds: (v) => v > 2000 },
      { what: "GPU over 90% busy", chart: "#chart-gpu-util", series: "GPU utilisation", holds: (v) => v > 90 },
    ],
  },
  {
    scenario: "slow-model",
    alert: "TokentraceTTFTHighGPUIdle",
    readings: [
      { what: "TTFT P95 over 2 s", chart: "#chart-ttft", series: "P95", holds: (v) => v > 2000 },
      { what: "GPU under 40% busy", chart: "#chart-gpu-util", series: "GPU utilisation", holds: (v) => v < 40 },
    ],
  },
  {
    scenario: "kv-cache-pressure",
    alert: "TokentraceGPUBusyKVCacheMissSpecRejected",
    readings: [
      { what: "the model's GPU over 85% busy", chart: ENGINE, series: "GPU utilisation", holds: (v) => v > 0.85 },
      { what: "prefix-cache hits under 92%", chart: ENGINE, series: "prefix-cache hit ratio", holds: (v) => v < 0.92 },
      { what: "speculative acceptance under 80%", chart: ENGINE, series: "speculative acceptance", holds: (v) => v < 0.8 },
      { what: "the KV cache over 85% used", chart: KV_CAUSE, series: "KV-cache usage", holds: (v) => v > 0.85 },
    ],
  },
  {
    scenario: "gpu-starved",
    alert: "TokentraceGPUBusyButStarved",
    readings: [
      { what: "GPU over 90% busy", chart: "#chart-gpu-util", series: "GPU utilisation", holds: (v) => v > 90 },
      { what: "activity per busy second under its 0.3 threshold", chart: `${GPU_GROUP} .chart[id$="-starved"]`, series: "activity per busy second (least active GPU)", holds: (v) => v < 0.3 },
    ],
  },
  {
    scenario: "gpu-thermal",
    alert: "TokentraceGPUThrottledTTFTRise",
    readings: [
      { what: "thermal throttling on", chart: `${GPU_GROUP} .chart[id$="-throttle"]`, series: "thermal", holds: (v) => v === 1 },
      { what: "the GPU at 88 °C", chart: `${GPU_GROUP} .chart[id$="-temperature"]`, series: "GPU temperature", holds: (v) => v === 88 },
    ],
  },
  {
    scenario: "gpu-straggler",
    alert: "TokentraceGPUStraggler",
    readings: [
      // The spread panel shows utilisation as a share of 100% (gpu.js): 20 points is 0.2.
      { what: "the cards' utilisation spread past its 20-point threshold", chart: `${GPU_GROUP} .chart[id$="-spread"]`, series: "utilisation spread", holds: (v) => v > 0.2 },
      { what: "their memory spread past its 10% threshold", chart: `${GPU_GROUP} .chart[id$="-spread"]`, series: "memory spread", holds: (v) => v > 0.1 },
    ],
  },
];

// The few DOM shapes the page callbacks use (the project's tsconfig has no DOM lib; they run in Chromium).
interface El {
  id: string;
  textContent: string | null;
  cells: ArrayLike<El>;
  className: string;
  dataset: Record<string, string | undefined>;
  querySelectorAll(sel: string): ArrayLike<El>;
}
interface Chart {
  plot: { data: (number | null)[][]; series: { label?: string }[] };
}
interface Win {
  document: { querySelector(sel: string): El | null; querySelectorAll(sel: string): ArrayLike<El> };
  tokentraceDashboard: { charts: Record<string, Chart> };
}

/** The latest value each reading's chart shows, null while the chart or its series has none. */
async function latest(page: Page, readings: readonly Reading[]): Promise<(number | null)[]> {
  return page.evaluate(
    (rs) =>
      rs.map(({ chart, series }) => {
        const w = globalThis as unknown as Win;
        const el = w.document.querySelector(chart);
        const plot = el ? w.tokentraceDashboard.charts[el.id]?.plot : undefined;
        const i = plot ? plot.series.findIndex((s) => s.label === series) : -1;
        if (!plot || i < 1) return null;
        const values = plot.data[i]!.filter((v): v is number => v !== null);
        return values.length > 0 ? values[values.length - 1]! : null;
      }),
    readings.map(({ chart, series }) => ({ chart, series })),
  );
}

/** The Alerts section's rows (name, state, and the summary and description cell's text) and, per alert, the charts that carry its mark. */
async function alertSection(page: Page): Promise<{ rows: [string, string, string][]; marks: Record<string, string[]> }> {
  return page.evaluate(() => {
    const d = (globalThis as unknown as Win).document;
    const rows = Array.from(d.querySelectorAll("#alert-table tbody tr")).map((tr): [string, string, string] => [tr.dataset.alert ?? "", tr.className, tr.cells[3]?.textContent ?? ""]);
    const marks: Record<string, string[]> = {};
    for (const chart of Array.from(d.querySelectorAll(".chart"))) {
      for (const m of Array.from(chart.querySelectorAll(".alert-mark"))) (marks[m.dataset.alert ?? ""] ??= []).push(chart.id);
    }
    return { rows, marks };
  });
}

/** What one scenario's page showed, and when (ms after the stack's start). */
interface Seen {
  storyAtMs: number | null;
  /** When the alert was first listed firing with its mark on the TTFT chart, and the charts marked then. */
  alertAtMs: number | null;
  alertMarks: string[];
  /** The alert's summary and description as the section showed them then. */
  alertText: string;
  /** Every alert the section listed at any poll. */
  listed: Set<string>;
  values: (number | null)[];
  rows: [string, string, string][];
  marks: Record<string, string[]>;
}

/** Starts the scenario's stack, opens its page and polls it until the story and the alert show, or 90 s pass. */
async function watch(browser: Browser, story: PageStory): Promise<Seen> {
  const stack: DemoStack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), scenario: story.scenario, errorRate: 0, scrapeIntervalMs: 1000, prometheus: "auto" });
  const started = Date.now();
  const context = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  try {
    assert.ok(stack.prometheus, "the demo's Prometheus runs");
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    // The route of the scenario's load and the page's shortest range: the story is the last minute.
    assert.equal((await page.goto(`${stack.dashboardUrl}?route=chat&range=300`))?.status(), 200);
    const seen: Seen = { storyAtMs: null, alertAtMs: null, alertMarks: [], alertText: "", listed: new Set(), values: [], rows: [], marks: {} };
    for (;;) {
      const elapsed = Date.now() - started;
      seen.values = await latest(page, story.readings);
      Object.assign(seen, await alertSection(page));
      for (const [name] of seen.rows) seen.listed.add(name);
      if (seen.storyAtMs === null && seen.values.every((v, i) => v !== null && story.readings[i]!.holds(v))) seen.storyAtMs = elapsed;
      if (story.alert !== null && seen.alertAtMs === null && seen.rows.some(([name, state]) => name === story.alert && state === "firing") && (seen.marks[story.alert] ?? []).includes("chart-ttft")) {
        seen.alertAtMs = elapsed;
        seen.alertMarks = seen.marks[story.alert] ?? [];
        seen.alertText = seen.rows.find(([name]) => name === story.alert)![2];
      }
      const done = seen.storyAtMs !== null && (story.alert === null ? elapsed > 60_000 : seen.alertAtMs !== null);
      if (done || elapsed > STORY_WITHIN_MS) break;
      await page.waitForTimeout(1000);
    }
    assert.deepEqual(errors, [], "no error on the page");
    return seen;
  } finally {
    await context.close();
    await stack.close();
  }
}

/** Checks what `watch` saw against the story; the message says what the page showed. */
function judge(story: PageStory, seen: Seen): void {
  const shown = `last seen: ${story.readings.map((r, i) => `${r.what}: ${seen.values[i]}`).join("; ")}; alerts ${JSON.stringify(seen.rows)}, marks ${JSON.stringify(seen.marks)}`;
  assert.ok(seen.storyAtMs !== null && seen.storyAtMs <= STORY_WITHIN_MS, `${story.scenario}: the panels tell the story within 90 s (${shown})`);
  if (story.alert === null) {
    assert.deepEqual([...seen.listed].filter((name) => STORY_ALERTS.includes(name)), [], `${story.scenario}: no story alert listed at any time (${shown})`);
    return;
  }
  assert.ok(seen.alertAtMs !== null && seen.alertAtMs <= STORY_WITHIN_MS, `${story.scenario}: ${story.alert} firing in the Alerts section and marked on the charts within 90 s (${shown})`);
  // Its summary names the workload (the route, or the model and pod) and says what held.
  assert.match(seen.alertText, /demo|tokentrace-sim-1|llm-sim-0/, `${story.scenario}: ${story.alert}'s summary shown`);
  for (const chart of ["chart-ttft", "chart-gpu-util", "chart-requests"]) assert.ok(seen.alertMarks.includes(chart), `${story.scenario}: ${story.alert}'s start marked on ${chart} (${JSON.stringify(seen.alertMarks)})`);
}

/** TOKENTRACE_DEMO_PAGES: "all", or scenario names separated by commas; unset, the walk-through's scenario. */
const pages = process.env.TOKENTRACE_DEMO_PAGES ?? "kv-cache-pressure";
const selected = pages === "all" ? STORIES : STORIES.filter((s) => pages.split(",").includes(s.scenario));

test("scenario pages: a page story for every demo scenario, each expecting the scenario's own alert", () => {
  assert.deepEqual(
    STORIES.map((s) => [s.scenario, s.alert]),
    [...SCENARIOS.values()].map((s) => [s.name, s.alert]),
  );
});

test("scenario pages: TOKENTRACE_DEMO_PAGES names scenarios that exist", () => {
  assert.ok(selected.length > 0 && selected.length === (pages === "all" ? STORIES.length : pages.split(",").length), `TOKENTRACE_DEMO_PAGES=${pages}: use all or names of ${STORIES.map((s) => s.scenario).join(", ")}`);
});

test(`scenario pages in headless Chromium (${selected.map((s) => s.scenario).join(", ")}): within 90 s of the demo stack's start the panels tell the scenario's story and the Alerts section lists its alert firing, marked on the charts`, { timeout: selected.length * 150_000 }, async (t) => {
  assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
  assert.equal(spawnSync("prometheus", ["--version"], { stdio: "ignore" }).status, 0, "prometheus is missing: run `make test-deps`");
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    // Every scenario runs, then each is judged: one slow story does not hide the others' figures.
    const failures: string[] = [];
    for (const story of selected) {
      const seen = await watch(browser, story);
      t.diagnostic(`${story.scenario}: story on the page at ${seen.storyAtMs} ms, ${story.alert ?? "no alert"} firing and marked at ${seen.alertAtMs} ms after the stack's start`);
      try {
        judge(story, seen);
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
    assert.deepEqual(failures, []);
  } finally {
    await browser.close();
  }
});
