// The whole pipeline's cost beside Prometheus in agent mode (Debian's prometheus 2.42,
// `--enable-feature=agent`): both scrape the same synthetic fleet (Envoy sidecars with the filter's
// series, vLLM, dcgm-exporter: ~55k series) on the same interval, and remote-write to the same local
// sink, at the same time, for the same window. Per process: CPU-seconds (utime + stime from
// /proc/<pid>/stat) per 1M samples the sink received in the window, and peak RSS (VmHWM). For the
// pipeline also its disk queue's bytes per sample. The window starts after both have shipped for a
// while, so start-up is not counted. The pipeline runs compiled, as the image runs the control plane
// (`make dist`: tsc's JavaScript under plain node; under tsx, its loader thread and transpiling
// raised the fleet's peak RSS from about 300 to 365 MiB). Two shapes: the fleet (many small
// targets) and one large target (one sidecar of ~50k series). Each repeats REPEATS times internally
// and reports the median, so `runs` is 1. A fleet round runs until every rate window is full (#29's
// RSS bar is on the fleet, and a minute in the windows hold a fifth of their points); the large
// target's rounds, which carry no RSS bar, run 40 s.
// Heap per series is measured apart, in steady state: the pipeline alone on a simulated clock
// (pipeline-child.ts), scraping the same fleet until every rate window is full and has turned over
// (max(join.rateWindowMs, the 5 min lookback) of 5 s scrapes), in about as long as those scrapes take.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../support/prometheus.js";
import { startFleet, type Fleet, type FleetShape } from "./support/synthetic-fleet.js";
import { LOOKBACK_MS } from "../../control-plane/src/promql/series-window.js";
import { withDefaults } from "../../control-plane/src/pipeline/index.js";
import { startSink } from "./support/remote-write-sink.js";
import { compiledPipelineChild, shippedRuntime } from "./support/shipped-child.js";
import type { ChildConfig, ChildReport } from "./support/pipeline-child.js";
import { median } from "./measure.js";
import type { BenchRow } from "./table.js";

export const runs = 1;
const REPEATS = Number(process.env.PIPELINE_AGENT_REPEATS ?? "3");
/** One shape only, by name (e.g. PIPELINE_AGENT_SHAPE=fleet); both when unset. */
const ONLY_SHAPE = process.env.PIPELINE_AGENT_SHAPE;
const INTERVAL_MS = 5000;
const WARMUP_MS = 20_000;
/** Every shape's rounds this long, when set (PIPELINE_AGENT_WINDOW_S=40: the fleet's peak a minute in, a quicker run). */
const WINDOW_OVERRIDE_MS = process.env.PIPELINE_AGENT_WINDOW_S === undefined ? undefined : Number(process.env.PIPELINE_AGENT_WINDOW_S) * 1000;
/** The measured part of a round that fills every rate window (5 min) after the warm-up, with a scrape to spare. */
const FULL_WINDOW_ROUND_MS = 330_000;
const SHAPES: { name: string; shape: FleetShape; windowMs: number }[] = [
  { name: "fleet", shape: { nodes: 6, podsPerNode: 6, routes: 4, models: 2, gpusPerNode: 8 }, windowMs: WINDOW_OVERRIDE_MS ?? FULL_WINDOW_ROUND_MS },
  // One sidecar of 170 routes x 2 models (~50k series) beside its pod's vLLM and its node's dcgm-exporter.
  { name: "one large target", shape: { nodes: 1, podsPerNode: 1, routes: 170, models: 2, gpusPerNode: 8 }, windowMs: WINDOW_OVERRIDE_MS ?? 40_000 },
];
/** Scrape intervals until every rate window is full and has turned over once. */
const FULL_WINDOW_INTERVALS = Math.ceil(Math.max(withDefaults({}).join.rateWindowMs, LOOKBACK_MS) / INTERVAL_MS) + 4;

const SHIPPED = shippedRuntime();
const NODE_OPTIONS = SHIPPED.nodeOptions;

const clockTicks = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

/** CPU seconds (user + system) a process has used. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** Peak resident set size of a process, bytes. */
function peakRssBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0) * 1024;
}


function prometheusConfig(fleet: Fleet, sinkUrl: string): string {
  const host = new URL(fleet.base).host;
  const targets = fleet.endpoints.map((e) => `      - targets: ["${host}"]\n        labels: {__metrics_path__: "${e.path}", kind: "${e.kind}", namespace: "${e.namespace}", pod: "${e.pod}"}`);
  return [
    "global:",
    `  scrape_interval: ${INTERVAL_MS / 1000}s`,
    `  scrape_timeout: ${Math.min(INTERVAL_MS, 10_000) / 1000}s`,
    "scrape_configs:",
    "  - job_name: fleet",
    "    static_configs:",
    ...targets,
    "remote_write:",
    `  - url: ${sinkUrl}/prom`,
    "",
  ].join("\n");
}

async function until(cond: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null ? Promise.resolve() : new Promise((r) => p.once("exit", () => r()));
}

interface Round { oursCpuPerM: number; promCpuPerM: number; oursRss: number; promRss: number; queueBytesPerSample: number; oursRate: number; promRate: number }

let childScript: string | undefined;
/** The pipeline child with `config` (compiled on first use), its runtime as shipped. */
function spawnPipeline(config: ChildConfig): ChildProcess {
  childScript ??= compiledPipelineChild();
  return spawn(process.execPath, [...NODE_OPTIONS, childScript, JSON.stringify(config)], { env: { ...process.env, ...SHIPPED.env }, stdio: ["ignore", "ignore", "inherit", "ipc"] });
}

function fleetTargets(fleet: Fleet): ChildConfig["targets"] {
  return fleet.endpoints.map((e) => ({ url: fleet.base + e.path, kind: e.kind, ...(e.kind === "dcgm" ? {} : { namespace: e.namespace, pod: e.pod }), node: e.node }));
}

/** The report of the same process with no target at all (modules, registries): what does not grow with series. */
async function idleReport(dir: string): Promise<ChildReport> {
  const config = { targets: [], sinkUrl: "http://127.0.0.1:9/", queueDir: join(dir, "idle-queue"), intervalMs: INTERVAL_MS, observers: false };
  const child = spawnPipeline(config);
  const messages: unknown[] = [];
  child.on("message", (m) => messages.push(m));
  try {
    await until(() => messages.includes("started"), "the idle pipeline to start", 60_000);
    child.send("report");
    await until(() => messages.length > 1, "the idle pipeline's report", 30_000);
    return messages[messages.length - 1] as ChildReport;
  } finally {
    child.kill("SIGKILL");
    await exited(child);
  }
}

async function round(shape: FleetShape, windowMs: number): Promise<Round> {
  const fleet = await startFleet(shape);
  const sink = await startSink();
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-agent-bench-"));
  const promPort = await freePort();
  writeFileSync(join(dir, "prometheus.yml"), prometheusConfig(fleet, sink.url));
  const prom = spawn("prometheus", [
    "--enable-feature=agent", `--config.file=${join(dir, "prometheus.yml")}`, `--storage.agent.path=${join(dir, "agent")}`,
    `--web.listen-address=127.0.0.1:${promPort}`, "--log.level=warn",
  ], { stdio: ["ignore", "ignore", "inherit"] });
  const childConfig = { targets: fleetTargets(fleet), sinkUrl: `${sink.url}/tokentrace`, queueDir: join(dir, "queue"), intervalMs: INTERVAL_MS };
  const ours = spawnPipeline(childConfig);
  const messages: unknown[] = [];
  ours.on("message", (m) => messages.push(m));
  try {
    await until(() => messages.includes("started"), "the pipeline to start", 60_000);
    await until(() => (sink.received.get("/prom") ?? 0) > 0 && (sink.received.get("/tokentrace") ?? 0) > 0, "both to ship", 60_000);
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const start = { ours: cpuSeconds(ours.pid!), prom: cpuSeconds(prom.pid!), oursN: sink.received.get("/tokentrace")!, promN: sink.received.get("/prom")!, at: Date.now() };
    await new Promise((r) => setTimeout(r, windowMs));
    const end = { ours: cpuSeconds(ours.pid!), prom: cpuSeconds(prom.pid!), oursN: sink.received.get("/tokentrace")!, promN: sink.received.get("/prom")!, at: Date.now() };
    ours.send("report");
    await until(() => messages.length > 1, "the pipeline's report", 30_000);
    const report = messages[messages.length - 1] as ChildReport;
    const seconds = (end.at - start.at) / 1000;
    return {
      oursCpuPerM: ((end.ours - start.ours) / (end.oursN - start.oursN)) * 1e6,
      promCpuPerM: ((end.prom - start.prom) / (end.promN - start.promN)) * 1e6,
      oursRss: peakRssBytes(ours.pid!),
      promRss: peakRssBytes(prom.pid!),
      queueBytesPerSample: report.queueAppendedBytes / report.queueAppendedSamples,
      oursRate: (end.oursN - start.oursN) / seconds,
      promRate: (end.promN - start.promN) / seconds,
    };
  } finally {
    ours.kill("SIGKILL");
    prom.kill("SIGTERM");
    await Promise.all([exited(ours), exited(prom)]);
    await sink.close();
    await fleet.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The pipeline's heap in steady state, from the simulated full-window run. */
interface SteadyHeap { growthPerSeries: number; withBuffersPerSeries: number; heapPerSeries: number; activeSeries: number; windowShare: number; peakRss: number }

/**
 * The pipeline alone (no dashboard, no sampler) on a simulated clock, FULL_WINDOW_INTERVALS scrapes
 * of the shape's fleet: its heap after GC per admitted series, less an idle pipeline's.
 */
async function steadyHeap(shape: FleetShape): Promise<SteadyHeap> {
  const fleet = await startFleet(shape);
  const sink = await startSink();
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-agent-bench-"));
  const idle = await idleReport(dir);
  const config: ChildConfig = { targets: fleetTargets(fleet), sinkUrl: `${sink.url}/tokentrace`, queueDir: join(dir, "queue"), intervalMs: INTERVAL_MS, simulated: true, observers: false };
  const child = spawnPipeline(config);
  const messages: unknown[] = [];
  child.on("message", (m) => messages.push(m));
  try {
    await until(() => messages.includes("started"), "the pipeline to start", 60_000);
    child.send({ advance: FULL_WINDOW_INTERVALS });
    const advanced = (): boolean => {
      if (child.exitCode !== null) throw new Error(`the pipeline exited (${child.exitCode}) before a full window of simulated scrapes`);
      return messages.some((m) => typeof m === "object" && m !== null && "advanced" in m);
    };
    await until(advanced, "a full window of simulated scrapes", 30 * 60_000);
    child.send("report");
    await until(() => messages.some((m) => typeof m === "object" && m !== null && "heapUsedBytes" in m), "the pipeline's report", 30_000);
    const report = messages.find((m) => typeof m === "object" && m !== null && "heapUsedBytes" in m) as ChildReport;
    return {
      growthPerSeries: (report.heapUsedBytes - idle.heapUsedBytes) / report.activeSeries,
      withBuffersPerSeries: (report.heapUsedBytes + report.arrayBuffersBytes - idle.heapUsedBytes - idle.arrayBuffersBytes) / report.activeSeries,
      heapPerSeries: report.heapUsedBytes / report.activeSeries,
      activeSeries: report.activeSeries,
      windowShare: report.windowBytes / (report.heapUsedBytes - idle.heapUsedBytes),
      peakRss: peakRssBytes(child.pid!),
    };
  } finally {
    child.kill("SIGKILL");
    await exited(child);
    await sink.close();
    await fleet.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function shapeRows(name: string, shape: FleetShape, windowMs: number): Promise<BenchRow[]> {
  const rounds: Round[] = [];
  for (let i = 0; i < REPEATS; i++) {
    rounds.push(await round(shape, windowMs));
    console.error(`  pipeline-agent ${name} round ${i + 1}/${REPEATS}: ${JSON.stringify(rounds[rounds.length - 1])}`);
  }
  const steady = await steadyHeap(shape);
  console.error(`  pipeline-agent ${name} full window: ${JSON.stringify(steady)}`);
  const m = (f: (r: Round) => number): number => median(rounds.map(f));
  const fleet = name === "fleet";
  const what = `${name}, ${REPEATS} rounds of ${windowMs / 1000} s, ${INTERVAL_MS / 1000} s interval, ~${Math.round(steady.activeSeries / 1000)}k series shipped; the pipeline with the shipped ${[...Object.entries(SHIPPED.env).map(([k, v]) => `${k}=${v}`), ...NODE_OPTIONS].join(" ")}`;
  return [
    {
      figure: `pipeline CPU-seconds per 1M samples shipped, beside Prometheus 2.42 agent on the same targets and sink (${what})`,
      value: m((r) => r.oursCpuPerM),
      unit: "CPU-s",
      baseline: { name: "prometheus agent", value: m((r) => r.promCpuPerM) },
      ratio: { value: m((r) => r.oursCpuPerM / r.promCpuPerM), of: "ours/agent CPU per sample", better: "lower" },
      // #29's bar, on both shapes (a guard of 3.6 here printed PASS beside a ratio that misses it).
      bar: { on: "ratio" as const, max: 1.2 },
    },
    {
      // #29's bar, on the fleet, read once every rate window is full: a round PIPELINE_AGENT_WINDOW_S shortened only reports.
      figure: `pipeline peak RSS beside Prometheus agent (${name}, ${Math.round((WARMUP_MS + windowMs) / 1000)} s after both shipped)`,
      value: Math.round(m((r) => r.oursRss) / 1024 / 1024),
      unit: "MiB",
      baseline: { name: "prometheus agent", value: Math.round(m((r) => r.promRss) / 1024 / 1024) },
      ratio: { value: m((r) => r.oursRss / r.promRss), of: "ours/agent peak RSS", better: "lower" },
      ...(fleet && windowMs >= FULL_WINDOW_ROUND_MS ? { bar: { on: "ratio" as const, max: 1.5 } } : {}),
    },
    // What grows with the series once every window is full: the heap after GC less the same
    // process's heap with no target (modules and registries, about 33 MB compiled, do not grow with series).
    {
      figure: `pipeline heap per active series, steady state (${name}, the pipeline alone after ${FULL_WINDOW_INTERVALS} simulated 5 s scrapes, every rate window full; heap after GC less an idle pipeline's, / admitted series; the windows' estimate ${(100 * steady.windowShare).toFixed(0)}% of it)`,
      value: Math.round(steady.growthPerSeries),
      unit: "bytes",
      bar: { on: "value" as const, max: 1024 },
    },
    // The sender's copies of the labels and the queue's buffers are array buffers, outside V8's heap.
    { figure: `pipeline heap and array buffers per active series, steady state (${name}, less an idle pipeline's)`, value: Math.round(steady.withBuffersPerSeries), unit: "bytes" },
    { figure: `pipeline whole heap per active series, steady state (${name}, modules included)`, value: Math.round(steady.heapPerSeries), unit: "bytes" },
    // The rounds' peak comes a minute in, with a fifth of each window held; this one holds them full.
    // Its scrapes run back to back on the simulated clock, and it has no dashboard or sampler.
    { figure: `pipeline peak RSS through the full-window run (${name}, the pipeline alone, simulated clock)`, value: Math.round(steady.peakRss / 1024 / 1024), unit: "MiB" },
    { figure: `pipeline disk queue bytes per sample appended (${name})`, value: Number(m((r) => r.queueBytesPerSample).toFixed(1)), unit: "bytes", ...(fleet ? { bar: { on: "value" as const, max: 40 } } : {}) },
    { figure: `samples per second shipped in the window (pipeline, ${name})`, value: Math.round(m((r) => r.oursRate)), unit: "samples/s", baseline: { name: "prometheus agent", value: Math.round(m((r) => r.promRate)) } },
  ];
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const shapes = SHAPES.filter((s) => ONLY_SHAPE === undefined || s.name === ONLY_SHAPE);
  if (shapes.length === 0) throw new Error(`PIPELINE_AGENT_SHAPE=${ONLY_SHAPE}: no such shape (${SHAPES.map((s) => s.name).join(", ")})`);
  for (const { name, shape, windowMs } of shapes) rows.push(...(await shapeRows(name, shape, windowMs)));
  return rows;
}
