// The "Errors by model" table's data: the filter's tokentrace_llm_requests_total (error_type on
// failed calls only, in the Istio tag-extracted form the sidecar's /stats/prometheus prints) goes
// through DashboardSeries as the pipeline hands it over, and GET /v1/dashboard/errors answers per
// route and model the failed share and the failures per second by error_type over the range,
// exactly (rates summed per pod, then added across pods). What an interval keeps of the failures is
// bounded: at most 8 error types and _OTHER per model, as the filter labels them, nothing when none failed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../../support/chromium.js";
import { modelErrors } from "../../../control-plane/src/dashboard/errors-window.js";
import { DashboardSeries, DEFAULT_LIMITS, intervalBytes, MAX_ERROR_TYPES } from "../../../control-plane/src/dashboard/series.js";
import { demoTarget, sidecarBatch } from "./sidecar-batch.js";
import { serveDashboard } from "./serve-dashboard.js";

type Doc = { getElementById(id: string): { dataset: Record<string, string | undefined> } | null };

const T0 = Date.UTC(2026, 11, 5, 12, 0, 0);

/** Cumulative LLM calls of one pod's route "chat": llama's (none fail), mistral's successes, 429s (streamed and not) and 500s. */
interface Calls {
  llama: number;
  mistralOk: number;
  mistral429Stream: number;
  mistral429: number;
  mistral500: number;
}

function statsText(c: Calls): string {
  const l = (labels: string, v: number) => `tokentrace_llm_requests_total{route="chat",${labels}} ${v}`;
  return [
    "# TYPE tokentrace_requests_total counter",
    `tokentrace_requests_total{route="chat",status_class="2xx"} ${c.llama + c.mistralOk}`,
    "# TYPE tokentrace_llm_requests_total counter",
    l('model="llama",stream="true",finish_reason="stop",status_class="2xx"', c.llama),
    l('model="mistral",stream="true",finish_reason="stop",status_class="2xx"', c.mistralOk),
    l('model="mistral",stream="true",finish_reason="none",status_class="4xx",error_type="429"', c.mistral429Stream),
    l('model="mistral",stream="false",finish_reason="none",status_class="4xx",error_type="429"', c.mistral429),
    l('model="mistral",stream="true",finish_reason="none",status_class="5xx",error_type="500"', c.mistral500),
    "",
  ].join("\n");
}


/**
 * Pod p0 over 10 s: llama 100 calls; mistral 40, of which 12 are 429s (8 streamed, 4 not) and 8 are 500s.
 * Pod p1 over 5 s: llama 10 calls; mistral 10, of which 4 are 429s and 1 a 500.
 */
function feed(d: DashboardSeries): void {
  const scrape = (pod: string, dt: number, c: Calls) => d.observe(sidecarBatch(statsText(c), T0 + dt), { target: demoTarget(pod), timestampMs: T0 + dt });
  scrape("p0", 0, { llama: 50, mistralOk: 7, mistral429Stream: 3, mistral429: 0, mistral500: 1 });
  scrape("p1", 5000, { llama: 0, mistralOk: 0, mistral429Stream: 0, mistral429: 0, mistral500: 0 });
  scrape("p0", 10_000, { llama: 150, mistralOk: 27, mistral429Stream: 11, mistral429: 4, mistral500: 9 });
  scrape("p1", 10_000, { llama: 10, mistralOk: 5, mistral429Stream: 4, mistral429: 0, mistral500: 1 });
}

const MISTRAL = {
  model: "mistral",
  calls: 50,
  failed: 25,
  failedShare: 0.5,
  callsPerSecond: 6,
  failuresPerSecond: 3,
  // 429: 12 / 10 s on p0 plus 4 / 5 s on p1; 500: 8 / 10 s plus 1 / 5 s.
  errorTypes: [
    { errorType: "429", failed: 16, perSecond: 2 },
    { errorType: "500", failed: 9, perSecond: 1 },
  ],
};
const LLAMA = { model: "llama", calls: 110, failed: 0, failedShare: 0, callsPerSecond: 12, failuresPerSecond: 0, errorTypes: [] };

test("modelErrors: two models on one route, one failing with 429s and 500s: calls, failed share and failures per second by error_type, per pod then added", () => {
  const d = new DashboardSeries();
  feed(d);
  const intervals = d.intervals({ namespace: "demo", route: "chat" });
  assert.equal(intervals.length, 2);
  // An interval keeps only the types that failed in it, and nothing for a model without a failure.
  assert.equal(intervals[0]!.counts.models.get("llama")!.errors, null);
  assert.deepEqual(intervals[0]!.counts.models.get("mistral")!.errors, { types: ["429", "500"], counts: [12, 8] });
  assert.deepEqual(modelErrors(intervals, { nowMs: T0 + 10_000, rangeMs: 300_000 }), [MISTRAL, LLAMA]);
  // Intervals that ended before the range are not counted.
  assert.deepEqual(modelErrors(intervals, { nowMs: T0 + 310_000, rangeMs: 300_000 }), []);
});

test("error types are bounded per model as the filter labels them: 8, then _OTHER (also for a value longer than 32 characters); the type lists are shared", () => {
  const d = new DashboardSeries();
  const long = "x".repeat(33);
  const types = [long, ...Array.from({ length: 11 }, (_, i) => String(400 + i))];
  const text = (k: number) => `${types.map((t) => `tokentrace_llm_requests_total{route="chat",model="m",error_type="${t}"} ${k}`).join("\n")}\ntokentrace_llm_requests_total{route="chat",model="m"} ${k}\n`;
  for (let k = 0; k <= 2; k++) d.observe(sidecarBatch(text(k), T0 + k * 2000), { target: demoTarget("p0"), timestampMs: T0 + k * 2000 });
  const [first, second] = d.intervals({ namespace: "demo", route: "chat" });
  const errors = first!.counts.models.get("m")!.errors!;
  assert.equal(MAX_ERROR_TYPES, 8);
  // The first 8 named types in the order scraped (400..407), the long one and 408..410 as _OTHER.
  assert.deepEqual(errors.types, ["400", "401", "402", "403", "404", "405", "406", "407", "_OTHER"]);
  assert.deepEqual(errors.counts, [1, 1, 1, 1, 1, 1, 1, 1, 4]);
  assert.equal(second!.counts.models.get("m")!.errors!.types, errors.types, "one list for intervals with the same types");
  // intervalBytes counts what the failures add, so the byte budget bounds them.
  const without = { ...first!, counts: { ...first!.counts, models: new Map([["m", { ...first!.counts.models.get("m")!, errors: null }]]) } };
  assert.equal(intervalBytes(first!) - intervalBytes(without), 100 + 8 * 9);
  assert.deepEqual(modelErrors([first!, second!], { nowMs: T0 + 4000, rangeMs: 300_000 })[0], {
    model: "m",
    calls: 26,
    failed: 24,
    failedShare: 0.9231,
    callsPerSecond: 6.5,
    failuresPerSecond: 6,
    errorTypes: [{ errorType: "_OTHER", failed: 8, perSecond: 2 }, ...["400", "401", "402", "403", "404", "405", "406", "407"].map((errorType) => ({ errorType, failed: 2, perSecond: 0.5 }))],
  });
});


test("GET /v1/dashboard/errors: per route and model the failed share and failures per second by error_type, worst first; a bad range is a 400, an unknown route a 404", async () => {
  const d = new DashboardSeries({ ...DEFAULT_LIMITS });
  feed(d);
  const { url, close } = await serveDashboard(d, T0 + 10_000);
  try {
    const res = await fetch(`${url}/v1/dashboard/errors?range=300`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      source: "pipeline",
      pipeline: "on",
      namespace: null,
      route: null,
      rangeSeconds: 300,
      rows: [
        { namespace: "demo", route: "chat", ...MISTRAL },
        { namespace: "demo", route: "chat", ...LLAMA },
      ],
      truncated: 0,
    });
    const one = (await (await fetch(`${url}/v1/dashboard/errors?route=chat&namespace=demo`)).json()) as { route: string; rows: unknown[] };
    assert.equal(one.route, "chat");
    assert.equal(one.rows.length, 2);
    const elsewhere = (await (await fetch(`${url}/v1/dashboard/errors?namespace=other`)).json()) as { rows: unknown[] };
    assert.deepEqual(elsewhere.rows, []);
    const bad = await fetch(`${url}/v1/dashboard/errors?range=60`);
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { details: { field: string }[] }).details[0]!.field, "range");
    const missing = await fetch(`${url}/v1/dashboard/errors?route=nope`);
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as { details: { reason: string }[] }).details[0]!.reason, /routes with data: demo\/chat/);
  } finally {
    await close();
  }
  const off = await serveDashboard(undefined, T0);
  try {
    assert.deepEqual(await (await fetch(`${off.url}/v1/dashboard/errors`)).json(), { source: "pipeline", pipeline: "off", namespace: null, route: null, rangeSeconds: 900, rows: [], truncated: 0 });
  } finally {
    await off.close();
  }
});

test("the page's Errors by model table shows the failing model first with its failed share and error types, names as text (real Chromium)", { timeout: 60_000 }, async () => {
  assert.ok(existsSync(CHROMIUM), CHROMIUM_MISSING);
  const d = new DashboardSeries();
  feed(d);
  // A model name that would be markup if inserted as HTML.
  const evil = '<img src=x onerror="globalThis.pwned=1">';
  const scrape = (dt: number, k: number) => {
    const text = `tokentrace_llm_requests_total{route="chat",model="${evil.replace(/"/g, '\\"')}",error_type="503"} ${k}\n`;
    d.observe(sidecarBatch(text, T0 + dt), { target: demoTarget("p2"), timestampMs: T0 + dt });
  };
  scrape(0, 0);
  scrape(10_000, 1);
  const { url, close } = await serveDashboard(d, T0 + 10_000);
  const userDataDir = mkdtempSync(join(tmpdir(), "tokentrace-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${url}/dashboard?range=300`);
    await page.waitForFunction(() => (globalThis as unknown as { document: Doc }).document.getElementById("model-errors-table")?.dataset.rows === "3");
    const rows = await page.$$eval("#model-errors-table tbody tr", (trs) => trs.map((tr) => Array.from((tr as unknown as { cells: ArrayLike<{ textContent: string }> }).cells, (c) => c.textContent)));
    assert.deepEqual(rows, [
      ["chat (demo)", "mistral", "6", "50.00%", "3", "429 2/s, 500 1/s"],
      ["chat (demo)", evil, "0.1", "100.00%", "0.1", "503 0.1/s"],
      ["chat (demo)", "llama", "12", "0.00%", "0", "–"],
    ]);
    assert.equal(await page.isHidden("#model-errors"), false);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined, "a label value is text, never markup");
  } finally {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
    await close();
  }
});
