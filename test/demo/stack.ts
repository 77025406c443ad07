// The whole local stack of `make demo`, in one process on 127.0.0.1: the control plane (embedded
// file store in a temp dir, a demo write token, the dashboard, the OTLP span receiver), the local
// proxy running the built filter in pull mode in front of the simulated LLM server (an engine with
// a queue, a KV cache and a GPU, exporting vLLM's metrics), a simulated dcgm-exporter following that
// GPU, the metrics pipeline scraping all three, Prometheus as its remote-write target evaluating the
// alert rules when installed (the dashboard's alert list reads its rules API), and a load generator. main.ts and the dashboard's browser test both
// start it.
import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../control-plane/src/app.js";
import { ContentKeyRing } from "../../control-plane/src/content/keys.js";
import { createFilterApp } from "../../control-plane/src/filters/app.js";
import { jsonLineAudit } from "../../control-plane/src/policy/audit.js";
import { listenOn } from "../../control-plane/src/listen.js";
import { TraceStore } from "../../control-plane/src/traces/store.js";
import { parseTokens } from "../../control-plane/src/api/auth.js";
import { createMetrics } from "../../control-plane/src/api/metrics.js";
import { DashboardSeries } from "../../control-plane/src/dashboard/series.js";
import { alertsSection } from "../../control-plane/src/dashboard/alerts-config.js";
import { alertsOption, sloOption } from "../../control-plane/src/compose/dashboard.js";
import { startPipeline, withDefaults, type RunningPipeline } from "../../control-plane/src/pipeline/index.js";
import type { Clock } from "../../control-plane/src/remote-write/retry.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";
import type { HostClock } from "../host/clock.js";
import { startLocalProxy, type LocalProxy, type TickTimers } from "../host/local-proxy.js";
import type { LogEntry } from "../host/vm.js";
import { PrometheusInstance } from "../support/prometheus.js";
import { demoRuleFile, demoRuleSources, readsKeepFiringFor } from "./alert-rules.js";
import { startDcgmSim, type DcgmLabelSpelling, type DcgmSim, type GpuThrottle } from "./dcgm-sim.js";
import { Engine, realClock, type EngineClock, type EngineParams } from "./engine.js";
import { scenarioNamed, type Scenario } from "./scenarios.js";
import { startLlmUpstream, type LlmUpstream } from "./llm-upstream.js";
import { startLoad, type Load } from "./load.js";
import { VllmMetrics } from "./vllm-metrics.js";
import { DEMO_LORA_LOAD, DEMO_LORA_MODULES, DEMO_MAX_LORAS, loraRuleSource } from "./lora.js";
import { VllmSpanExporter } from "./vllm-spans.js";

/** The simulated workload: namespace, pod and labels the policy selects and the GPUs map to. */
export const DEMO_NAMESPACE = "demo";
export const DEMO_POD = "llm-sim-0";
export const DEMO_APP = "llm-sim";
export const DEMO_NODE = "demo-gpu-node";
/** The policy seeded through the REST API at start. */
export const DEMO_POLICY = "demo-sampling";

/**
 * Histogram buckets (ms and µs) Istio is told to use for the filter's stats (sidecar.istio.io/
 * statsHistogramBuckets, docs/filter.md): about 25% apart from 10 ms to 60 s, so an interpolated percentile
 * is within a quarter of the true one; the µs range serves tokentrace_llm_tpot_us.
 */
export const DEMO_HISTOGRAM_BUCKETS = [
  1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 100, 125, 150, 200, 250, 300, 400, 500, 600, 750, 1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 7500, 10000, 12500,
  15000, 20000, 25000, 30000, 40000, 60000, 100000, 150000, 200000, 300000, 500000, 1000000, 2500000,
];

/** Routes of the local proxy (VirtualService http route names). */
export const DEMO_ROUTES = [
  { prefix: "/v1/chat/completions", name: "chat" },
  { prefix: "/v1/completions", name: "completions" },
  { prefix: "/v1/embeddings", name: "embeddings" },
  { prefix: "/v1/models", name: "models" },
];

/** One time for every part: the pipeline's, the engine's, the proxy's and the load's (the soak bench's FakeClock). */
export type DemoClock = Clock & EngineClock & HostClock & TickTimers;

/** Options of the stack; ports 0 = ephemeral. */
export interface DemoStackOptions {
  wasm: string;
  proxyPort?: number;
  adminPort?: number;
  upstreamPort?: number;
  controlPlanePort?: number;
  dcgmPort?: number;
  /** A SCENARIOS name (scenarios.ts); default "normal". */
  scenario?: string;
  /** Engine settings over the scenario's (tests make it fast). */
  engine?: Partial<EngineParams>;
  errorRate: number;
  /** Extra filter configuration merged over the pull-mode one (JSON object text), "" for none. */
  pluginConfig?: string;
  /** Scrape interval of the pipeline, ms; the filter polls its policy at this interval too, at least every 1000 ms (its minimum). */
  scrapeIntervalMs?: number;
  /** "auto": Prometheus when the `prometheus` binary is on PATH; "off": never. */
  prometheus?: "auto" | "off";
  /** Requests per second of the load generator (default the scenario's); 0 = no load. */
  loadRps?: number;
  /** dcgm-exporter's collect interval, ms (default 1000 in the demo; upstream's default is 30000). */
  dcgmCollectIntervalMs?: number;
  /** How the simulated dcgm-exporter spells its pod labels (dcgm-sim.ts); default "default". */
  dcgmLabels?: DcgmLabelSpelling;
  /** traces.linkTemplate of the control plane (default none). */
  traceLinkTemplate?: string;
  /** The write token; default a random one. */
  token?: string;
  /** The control plane's api.reads: "token" makes reads need the token too (pull-mode filters then get 401). Default "public". */
  reads?: "public" | "token";
  /** Filter log lines and control-plane records. */
  onFilterLog?: (entry: LogEntry) => void;
  log?: (record: object) => void;
  /**
   * "scheduled" (default): a scenario's throttle starts after its delay. "manual": only when
   * `startThrottle` is called (a test starts it once the baseline it is compared with is recorded).
   */
  throttleStart?: "scheduled" | "manual";
  /** LoRA on (lora.ts): the server loads two adapters, the load sends a quarter of its completions to each, Prometheus records per adapter. Default off. */
  lora?: boolean;
  /** Simulated time for every part (default each part's real clock); the caller moves it. */
  clock?: DemoClock;
  /** A remote-write receiver of the caller's, used when Prometheus is not running. */
  sinkUrl?: string;
}

/** A running stack. */
export interface DemoStack {
  token: string;
  controlPlaneUrl: string;
  /** The filter-facing listener: policy pulls and the span receiver. */
  filtersUrl: string;
  dashboardUrl: string;
  proxy: LocalProxy;
  upstream: LlmUpstream;
  engine: Engine;
  scenario: Scenario;
  dcgm: DcgmSim;
  traces: TraceStore;
  pipeline: RunningPipeline;
  dashboard: DashboardSeries;
  store: FilePolicyStore;
  prometheus: PrometheusInstance | undefined;
  /** Why Prometheus is not running, when it is not. */
  prometheusNote: string | undefined;
  load: Load | undefined;
  /** How often the filter polls its policy, ms. */
  pollIntervalMs: number;
  /** Whether the proxy's filter accepted its start-up configuration. */
  filterConfigured: boolean;
  /** Starts the scenario's throttle now (no-op without one, or once started). */
  startThrottle(): void;
  close(): Promise<void>;
}

/** The proxy's cluster name for the control plane (policy pulls and span export). */
export const CONTROL_PLANE_CLUSTER = "control-plane";

/** The model the simulated server serves (vLLM's model_name; the load asks for it by name). */
export const DEMO_MODEL = "tokentrace-sim-1";
/**
 * The pipeline's rate window in the demo (percentiles, ratios and rates of the model server): 30 s,
 * where production uses 5 min, so a scenario's signals show within a minute.
 */
export const DEMO_RATE_WINDOW_MS = 30_000;

/** The policy seeded at start (the dashboard's editor changes it); its spans go to the control plane's receiver. */
export function seedPolicy(): object {
  return {
    name: DEMO_POLICY,
    target: { namespace: DEMO_NAMESPACE, selector: { matchLabels: { app: DEMO_APP } } },
    pluginConfig: {
      sampling: { defaultRate: 0.1, routes: [{ routeName: "chat", rate: 0.25 }], force: [{ header: "x-debug-trace" }] },
      spans: { cluster: CONTROL_PLANE_CLUSTER, path: "/v1/traces", serviceName: "llm-sim-sidecar", batchSize: 8, flushIntervalMs: 1000 },
    },
  };
}

/** The pipeline's one remote-write target: Prometheus's receiver, or the caller's sink, or none. */
function sinkTargets(prometheusUrl: string | undefined, sinkUrl: string | undefined, intervalMs: number): { name: string; url: string; batchSendDeadlineMs: number; flushOnStopMs: number }[] {
  const [name, url] = prometheusUrl !== undefined ? ["prometheus", prometheusUrl] : ["sink", sinkUrl];
  return url === undefined ? [] : [{ name, url, batchSendDeadlineMs: intervalMs, flushOnStopMs: 1000 }];
}

/** `prometheus --version`'s text, or undefined when it is not installed. */
function prometheusVersion(): string | undefined {
  const run = spawnSync("prometheus", ["--version"], { encoding: "utf8" });
  return run.status === 0 ? `${run.stdout}${run.stderr}` : undefined;
}

/** Starts everything; on a failure part-way, what started is stopped before the error is thrown. */
export async function startDemoStack(opts: DemoStackOptions): Promise<DemoStack> {
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const close of closers.reverse()) {
      try {
        await close();
      } catch {
        // keep stopping the rest
      }
    }
    closers.length = 0;
  };
  try {
    return await start(opts, closers, closeAll);
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function start(opts: DemoStackOptions, closers: (() => Promise<void>)[], closeAll: () => Promise<void>): Promise<DemoStack> {
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-demo-"));
  closers.push(async () => rmSync(dir, { recursive: true, force: true }));
  const intervalMs = opts.scrapeIntervalMs ?? 2000;
  const token = opts.token ?? `demo-${randomBytes(12).toString("hex")}`;
  const scenario = scenarioNamed(opts.scenario ?? "normal");

  // Prometheus first: the control plane's alert list reads its rules API (alerts.prometheusUrl).
  let prometheus: PrometheusInstance | undefined;
  let prometheusNote: string | undefined;
  const version = opts.prometheus === "off" ? undefined : prometheusVersion();
  if (opts.prometheus === "off") prometheusNote = "Prometheus disabled";
  else if (version === undefined) prometheusNote = "prometheus is not installed (make test-deps installs it): the pipeline runs without a remote-write target";
  else {
    prometheus = await PrometheusInstance.start({ rules: demoRuleFile("5s", [...demoRuleSources(), ...(opts.lora ? [loraRuleSource()] : [])], undefined, readsKeepFiringFor(version)) });
    const running = prometheus;
    closers.push(() => running.destroy());
  }

  // Control plane: the same app `make run` serves, with the dashboard fed by the pipeline below.
  const store = new FilePolicyStore({ path: join(dir, "policies.json"), audit: jsonLineAudit((line) => log(JSON.parse(line) as object)), log });
  closers.push(() => store.close());
  const metrics = createMetrics(false);
  const dashboard = new DashboardSeries();
  const traces = new TraceStore(10_000);
  const tokens = parseTokens(`demo:${token}`, "demo", /,/);
  if (tokens.errors.length > 0) throw new Error(tokens.errors.join("; "));
  const app = createApp({
    store,
    tokens: tokens.tokens,
    reads: opts.reads ?? "public",
    bodyLimitBytes: 262144,
    metrics,
    overrides: () => undefined,
    readiness: () => ({ store: store.readiness() }),
    log,
    dashboard,
    traces: { store: traces, linkTemplate: opts.traceLinkTemplate ?? "" },
    // The alert list and the SLO view read the demo's Prometheus, as main.ts composes them.
    ...(prometheus ? alertsOption({ ...alertsSection.defaults, prometheusUrl: prometheus.url }, "", metrics) : {}),
    ...(prometheus ? sloOption({ ...alertsSection.defaults, prometheusUrl: prometheus.url }, "", metrics) : {}),
  });
  // The filter-facing listener (policy pulls, spans) on loopback, where `filters.auth: none` is allowed.
  const filterApp = createFilterApp({
    auth: "none",
    trustDomain: "cluster.local",
    tokens: [],
    store,
    overrides: () => undefined,
    metrics,
    keys: new ContentKeyRing(""),
    traces: { store: traces, maxBodyBytes: 4 * 1024 * 1024 },
    log,
  });
  const filterServer: Server = await listenOn(filterApp, 0, "127.0.0.1", "the demo's filter-facing listener");
  closers.push(
    () =>
      new Promise<void>((r) => {
        filterServer.close(() => r());
        filterServer.closeAllConnections();
      }),
  );
  const filtersUrl = `http://127.0.0.1:${(filterServer.address() as AddressInfo).port}`;
  const server: Server = await listenOn(app, opts.controlPlanePort ?? 0, "127.0.0.1", "TOKENTRACE_DEMO_CONTROL_PLANE_PORT");
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  const controlPlaneUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const seeded = await fetch(`${controlPlaneUrl}/v1/policies`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(seedPolicy()) });
  if (seeded.status !== 201) throw new Error(`seeding the demo policy failed: ${seeded.status} ${await seeded.text()}`);

  const clock = opts.clock;
  const wallMs = clock ? () => clock.now() : Date.now;
  const engine = new Engine({ ...scenario.engine, ...opts.engine }, clock);
  closers.push(async () => engine.stop());
  const vllmMetrics = new VllmMetrics(engine, DEMO_MODEL, wallMs(), { wallMs, ...(opts.lora ? { lora: { maxLoras: DEMO_MAX_LORAS } } : {}) });
  // The model server's own spans (vLLM's --otlp-traces-endpoint) go to the same receiver as the filter's.
  const vllmSpans = new VllmSpanExporter({ url: `${filtersUrl}/v1/traces`, ...(clock ? { timers: clock } : {}) });
  const upstream = await startLlmUpstream({
    wallMs,
    spans: vllmSpans,
    port: opts.upstreamPort ?? 0,
    model: DEMO_MODEL,
    engine,
    metrics: vllmMetrics,
    addedPrompt: () => ({ prefix: { id: `tenant-${Math.floor(Math.random() * scenario.tenants)}`, tokens: scenario.systemPromptTokens }, contextTokens: scenario.contextTokens }),
    ...(scenario.outputTokens !== undefined ? { outputTokens: () => scenario.outputTokens! } : {}),
    errorRate: opts.errorRate,
    ...(opts.lora ? { loraModules: DEMO_LORA_MODULES } : {}),
  });
  closers.push(() => upstream.close());
  closers.push(() => vllmSpans.close());

  // The filter's minimum poll interval is 1000 ms (filter/config.schema.json).
  const pollIntervalMs = Math.max(1000, intervalMs);
  const extra = opts.pluginConfig ? (JSON.parse(opts.pluginConfig) as Record<string, unknown>) : {};
  const pluginConfig = {
    // Until the first poll answers: sample nothing. The pulled policy then replaces all but policySource.
    sampling: { defaultRate: 0 },
    ...extra,
    policySource: { cluster: CONTROL_PLANE_CLUSTER, workload: `${DEMO_NAMESPACE}.${DEMO_POD}`, labels: { app: DEMO_APP }, intervalMs: pollIntervalMs },
  };
  const proxy = await startLocalProxy({
    ...(clock ? { clock, timers: clock } : {}),
    wasm: opts.wasm,
    pluginConfig: JSON.stringify(pluginConfig),
    upstream: upstream.url,
    routes: DEMO_ROUTES,
    clusters: { [CONTROL_PLANE_CLUSTER]: filtersUrl },
    listenPort: opts.proxyPort ?? 0,
    adminPort: opts.adminPort ?? 0,
    statTags: [...FILTER_STAT_TAGS],
    vm: { histogramBuckets: DEMO_HISTOGRAM_BUCKETS, ...(opts.onFilterLog ? { onLog: opts.onFilterLog } : {}) },
  });
  closers.push(() => proxy.close());

  let load: Load | undefined;
  // A scenario's throttling starts after its delay: the exporter reports the reasons, the engine slows.
  let throttle: GpuThrottle = { reasons: 0, slowdown: 1 };
  const startThrottle = (): void => {
    if (!scenario.throttle || throttle.slowdown !== 1) return;
    const { reasons, slowdown } = scenario.throttle;
    throttle = { reasons, slowdown };
    engine.setParams({ gpuSlowdown: slowdown });
  };
  if (scenario.throttle && opts.throttleStart !== "manual") {
    const timers = clock ?? realClock;
    const timer = timers.setTimeout(startThrottle, scenario.throttle.afterMs);
    closers.push(async () => timers.clearTimeout(timer));
  }
  // The exporter reads the engine's GPU time on the engine's clock.
  const dcgm = await startDcgmSim({
    ...(clock ? { nowMs: () => clock.now() } : {}),
    port: opts.dcgmPort ?? 0,
    namespace: DEMO_NAMESPACE,
    pod: DEMO_POD,
    hostname: DEMO_NODE,
    gpuCount: scenario.gpus ?? 1,
    ...(scenario.strayProcess ? { strayProcess: scenario.strayProcess } : {}),
    gpuActivity: () => engine.state().gpu,
    extraCounters: scenario.dcgmCounters ?? [],
    throttle: () => throttle,
    collectIntervalMs: opts.dcgmCollectIntervalMs ?? 1000,
    labelSpelling: opts.dcgmLabels ?? "default",
  });
  closers.push(() => dcgm.close());

  const pipeline = await startPipeline(
    withDefaults({
      scrape: {
        intervalMs,
        timeoutMs: Math.min(intervalMs, 5000),
        spreadStart: false,
        static: [
          { url: `${proxy.adminUrl}/stats/prometheus`, kind: "envoy", namespace: DEMO_NAMESPACE, pod: DEMO_POD, node: DEMO_NODE },
          { url: dcgm.metricsUrl, kind: "dcgm", node: DEMO_NODE },
          // vLLM serves its metrics on its API port.
          { url: `${upstream.url}/metrics`, kind: "vllm", namespace: DEMO_NAMESPACE, pod: DEMO_POD, node: DEMO_NODE },
        ],
      },
      join: { rateWindowMs: DEMO_RATE_WINDOW_MS },
      remoteWrite: { queueDir: join(dir, "remote-write"), targets: sinkTargets(prometheus?.writeUrl, opts.sinkUrl, intervalMs) },
    }),
    {
      registry: metrics.registry,
      ...(clock ? { clock } : {}),
      onBatch: (series, result) => dashboard.observe(series, result),
      // As control-plane/src/main.ts composes it: the GPU section lists exporters labelled other than their default way.
      onExporterLabels: (url, notes) => dashboard.gpu.noteExporterLabels(url, notes),
      log: (msg) => log({ msg: "pipeline", detail: msg }),
    },
  );
  closers.push(() => pipeline.stop());

  const rps = opts.loadRps ?? scenario.loadRps;
  if (rps > 0) {
    const running = startLoad({ url: proxy.url, rps, maxInFlight: scenario.maxInFlight, ...(clock ? { timers: clock, nowMs: () => clock.now() } : {}), ...(opts.lora ? { adapters: DEMO_LORA_LOAD } : {}) });
    load = running;
    closers.push(() => running.stop());
  }

  return {
    token,
    controlPlaneUrl,
    filtersUrl,
    dashboardUrl: `${controlPlaneUrl}/dashboard`,
    proxy,
    upstream,
    engine,
    scenario,
    dcgm,
    traces,
    pipeline,
    dashboard,
    store,
    prometheus,
    prometheusNote,
    load,
    pollIntervalMs,
    filterConfigured: proxy.vm.configureAccepted,
    startThrottle,
    close: closeAll,
  };
}
