// The dashboard's first paint with 15 minutes of data (issue #25's bars: under 1 s, and under 200 KB
// of JSON per refresh), in headless Chromium, beside the same page over a pipeline with no data yet.
// The data is the demo's own: the joined batches the pipeline hands the dashboard (the filter's
// stats from the real .wasm, the simulated vLLM's and dcgm-exporter's) are recorded for a few
// scrapes, then replayed as 450 scrapes 2 s apart (15 minutes) with counters carried forward, into
// the app the control plane serves. First paint: from navigation start until every chart of the
// first screen (a 1500x1000 viewport) holds its points, as a user sees it; the whole page beside it
// (the page's clock, performance.now(), read by a MutationObserver installed before any script).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_MISSING } from "../support/chromium.js";
import { createApp } from "../../control-plane/src/app.js";
import { createMetrics } from "../../control-plane/src/api/metrics.js";
import { DashboardSeries, type BatchSource } from "../../control-plane/src/dashboard/series.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import type { WriteSeries } from "../../control-plane/src/remote-write/series.js";
import { seedPolicy, startDemoStack } from "../demo/stack.js";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import type { BenchRow } from "./table.js";

export const runs = 5;

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const INTERVAL_MS = 2000;
const SCRAPES = 450;
const RECORD_MS = 14_000;

interface Recorded {
  series: WriteSeries[];
  source: BatchSource;
}

let recorded: Map<string, Recorded[]> | undefined;

/** The demo's joined batches per target, a few scrapes of each (recorded once per process). */
async function record(): Promise<Map<string, Recorded[]>> {
  if (recorded) return recorded;
  const stack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), errorRate: 0.01, prometheus: "off", scrapeIntervalMs: INTERVAL_MS });
  const byTarget = new Map<string, Recorded[]>();
  const observe = stack.dashboard.observe.bind(stack.dashboard);
  stack.dashboard.observe = (series, source) => {
    const copy = JSON.parse(JSON.stringify({ series, source: { target: source.target, timestampMs: source.timestampMs } })) as Recorded;
    const list = byTarget.get(source.target.id) ?? [];
    list.push(copy);
    byTarget.set(source.target.id, list);
    observe(series, source);
  };
  try {
    await new Promise((r) => setTimeout(r, RECORD_MS));
  } finally {
    await stack.close();
  }
  if (![...byTarget.values()].some((l) => l[0]?.source.target.kind === "envoy" && l.length >= 3)) throw new Error("the demo produced fewer than 3 sidecar scrapes to replay");
  recorded = byTarget;
  return byTarget;
}

const isCounter = (name: string): boolean => /(_total|_bucket|_count|_sum)$/.test(name);
const keyOf = (labels: string[]): string => labels.join("\u0000");
const nameOf = (labels: string[]): string => labels[labels.indexOf("__name__") + 1] ?? "";

/**
 * `scrapes` scrapes per target ending now, the recorded ones over and over, counters carried forward
 * so they only grow. A counter the first scrapes lack (a status class or a bucket no call had reached
 * yet) is replayed as 0 until it appears: absent then present again each cycle, it read as a reset,
 * and the page drew its whole value as one step's increase (a sawtooth that grew with every cycle).
 */
function replay(byTarget: Map<string, Recorded[]>, scrapes: number): DashboardSeries {
  const d = new DashboardSeries();
  const endMs = Date.now();
  const targets = [...byTarget.values()].map((list) => {
    const labels = new Map<string, string[]>();
    for (const r of list) for (const s of r.series) if (!labels.has(keyOf(s.labels))) labels.set(keyOf(s.labels), s.labels);
    const scraped = list.map((r) => new Map(r.series.map((s) => [keyOf(s.labels), s.samples.at(-1)?.value ?? 0])));
    const n = list.length;
    // One cycle adds what the recording added, plus one mean step, so the join of two cycles is a step too.
    const carry = new Map([...labels.keys()].map((key) => [key, ((scraped[n - 1]!.get(key) ?? 0) - (scraped[0]!.get(key) ?? 0)) * (n > 1 ? n / (n - 1) : 1)]));
    return { target: list[0]!.source.target, labels, scraped, carry };
  });
  for (let k = 0; k < scrapes; k++) {
    const ts = endMs - (scrapes - 1 - k) * INTERVAL_MS;
    for (const t of targets) {
      const n = t.scraped.length;
      const cycle = Math.floor(k / n);
      const values = t.scraped[k % n]!;
      const batch: WriteSeries[] = [];
      for (const [key, labels] of t.labels) {
        const counter = isCounter(nameOf(labels));
        const v = values.get(key);
        if (v === undefined && !counter) continue;
        batch.push({ labels, samples: [{ value: counter ? (v ?? 0) + cycle * t.carry.get(key)! : v!, timestampMs: ts }] });
      }
      d.observe(batch, { target: t.target, timestampMs: ts });
    }
  }
  return d;
}

async function serve(dashboard: DashboardSeries): Promise<{ url: string; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-paint-"));
  const store = new FilePolicyStore({ path: join(dir, "policies.json"), fsync: false });
  const created = await store.create(seedPolicy(), { by: "bench" });
  if (!created.ok) throw new Error("the demo policy was refused");
  const app = createApp({ store, tokens: [], reads: "public", bodyLimitBytes: 65536, metrics: createMetrics(), overrides: () => undefined, readiness: () => ({}), log: () => undefined, dashboard });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Paint {
  /** ms from navigation start until every chart of the first screen (the 1500x1000 viewport) held its points. */
  firstScreenMs: number;
  /** ms until every chart of the page held its points. */
  wholePageMs: number;
  /** ms until the page showed its first answer (the status line left "loading…"). */
  firstAnswerMs: number;
  jsonBytes: number;
  charts: number;
}

type Doc = { document: { querySelectorAll(s: string): ArrayLike<{ id: string; dataset: Record<string, string | undefined>; getBoundingClientRect(): { top: number } }> }; innerHeight: number };
type Marks = { drawn: Record<string, number>; answered?: number };

/** Records in the page, from its first script on, when each chart first held points and when the status line first changed. */
function watchDraws(): void {
  const g = globalThis as unknown as { __paint: Marks; MutationObserver: new (cb: (records: { target: unknown; type: string }[]) => void) => { observe(n: unknown, o: object): void }; document: unknown; performance: { now(): number } };
  const marks: Marks = { drawn: {} };
  g.__paint = marks;
  new g.MutationObserver((records) => {
    for (const r of records) {
      const el = r.target as { id?: string; dataset?: Record<string, string | undefined>; parentElement?: { id?: string; textContent?: string } | null; textContent?: string };
      if (r.type === "attributes" && el.id && Number(el.dataset?.points ?? "0") > 0 && marks.drawn[el.id] === undefined) marks.drawn[el.id] = g.performance.now();
      const status = el.id === "status" ? el : el.parentElement?.id === "status" ? el.parentElement : undefined;
      if (status && marks.answered === undefined && !["", "loading…"].includes((status as { textContent?: string }).textContent ?? "")) marks.answered = g.performance.now();
    }
  }).observe(g.document, { subtree: true, attributes: true, attributeFilter: ["data-points"], childList: true, characterData: true });
}

/**
 * Opens the page in a fresh browser, waits until `drawn` charts hold points (undefined: until the
 * network is idle, to count them), and reads when the first screen, the whole page and the first
 * answer were shown, and the JSON bytes of that first refresh.
 */
async function paint(url: string, drawn?: number): Promise<Paint> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    await page.addInitScript(watchDraws);
    // One refresh: the first answer of each API path (the page polls again every few seconds).
    const bodies = new Map<string, Promise<number>>();
    page.on("response", (r) => {
      const path = new URL(r.url()).pathname;
      if (path.startsWith("/v1/") && !bodies.has(path)) bodies.set(path, r.body().then((b) => b.length, () => 0));
    });
    await page.goto(`${url}/dashboard`);
    if (drawn === undefined) await page.waitForLoadState("networkidle");
    else {
      await page.waitForFunction((want) => Object.keys((globalThis as unknown as { __paint: Marks }).__paint.drawn).length >= want, drawn, { timeout: 30_000 });
      await page.waitForLoadState("networkidle");
    }
    await page.waitForFunction(() => (globalThis as unknown as { __paint: Marks }).__paint.answered !== undefined, undefined, { timeout: 30_000 });
    // The first screen is read from where the charts stand once all are drawn (sections above them are filled by then).
    const m = await page.evaluate(() => {
      const g = globalThis as unknown as Doc & { __paint: Marks };
      const onScreen = Array.from(g.document.querySelectorAll(".chart")).filter((c) => c.getBoundingClientRect().top < g.innerHeight).map((c) => c.id);
      return { marks: g.__paint, onScreen };
    });
    const times = (ids: string[]): number => Math.max(0, ...ids.map((id) => m.marks.drawn[id] ?? Number.POSITIVE_INFINITY));
    const jsonBytes = (await Promise.all(bodies.values())).reduce((a, b) => a + b, 0);
    const drawnIds = Object.keys(m.marks.drawn);
    return {
      firstScreenMs: times(m.onScreen),
      wholePageMs: times(drawnIds),
      firstAnswerMs: m.marks.answered ?? Number.NaN,
      jsonBytes,
      charts: drawnIds.length,
    };
  } finally {
    await browser.close();
  }
}

export async function run(): Promise<BenchRow[]> {
  if (!existsSync(CHROMIUM)) throw new Error(CHROMIUM_MISSING);
  const byTarget = await record();
  const full = await serve(replay(byTarget, SCRAPES));
  const empty = await serve(new DashboardSeries());
  try {
    // A first visit of each counts the charts that draw (a panel without data, e.g. throttling on a
    // GPU that never throttled, draws none); then each is timed, back to back.
    const fullCharts = (await paint(full.url)).charts;
    if (fullCharts < 12) throw new Error(`only ${fullCharts} charts drew the replayed data`);
    const base = await paint(empty.url);
    const with15 = await paint(full.url, fullCharts);
    if (!Number.isFinite(with15.firstScreenMs)) throw new Error("a chart of the first screen never drew");
    console.error(
      `dashboard paint: 15 min of data: first screen ${with15.firstScreenMs.toFixed(0)} ms, whole page ${with15.wholePageMs.toFixed(0)} ms (${with15.charts} charts), first answer ${with15.firstAnswerMs.toFixed(0)} ms, ${with15.jsonBytes} B of JSON; no data: first answer ${base.firstAnswerMs.toFixed(0)} ms (${base.jsonBytes} B)`,
    );
    const empty1 = { name: "no data yet (first answer shown)", value: base.firstAnswerMs };
    return [
      { figure: "dashboard first screen drawn, 15 min of the demo's data (headless Chromium, 1500x1000)", value: with15.firstScreenMs, unit: "ms", baseline: empty1, ratio: { value: with15.firstScreenMs / base.firstAnswerMs, of: "data/empty", better: "lower" }, bar: { on: "value", max: 1000 } },
      { figure: "dashboard whole page drawn, 15 min of the demo's data (headless Chromium)", value: with15.wholePageMs, unit: "ms", baseline: empty1, ratio: { value: with15.wholePageMs / base.firstAnswerMs, of: "data/empty", better: "lower" } },
      { figure: "dashboard JSON per refresh, 15 min of the demo's data", value: with15.jsonBytes / 1000, unit: "KB", baseline: { name: "no data yet", value: base.jsonBytes / 1000 }, bar: { on: "value", max: 200 } },
    ];
  } finally {
    await full.close();
    await empty.close();
  }
}
