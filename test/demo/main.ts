// `make demo`: the whole local stack (stack.ts) on 127.0.0.1 in one process, with a one-line load
// progress display. Ports and the simulation come from the environment (defaults below);
// SIGINT/SIGTERM stop everything cleanly.
import { fileURLToPath } from "node:url";
import { firingAlerts } from "./alert-rules.js";
import { formatProgress } from "./load.js";
import { SCENARIOS, scenarioNamed } from "./scenarios.js";
import { alertsPageUrl } from "./prometheus-alerts-page.js";
import { PortsTakenError, startFailure, takenPorts } from "./start-failure.js";
import { DEMO_MODEL, DEMO_POLICY, startDemoStack } from "./stack.js";
import { DEMO_LORA_MODULES } from "./lora.js";
import { DCGM_LABEL_SPELLINGS, type DcgmLabelSpelling } from "./dcgm-sim.js";

/** Demo settings: environment variable, then default. */
export interface DemoConfig {
  proxyPort: number;
  adminPort: number;
  upstreamPort: number;
  controlPlanePort: number;
  dcgmPort: number;
  scenario: string;
  errorRate: number;
  /** undefined: the scenario's rate. */
  loadRps: number | undefined;
  traceLinkTemplate: string;
  scrapeIntervalMs: number;
  prometheus: "auto" | "off";
  pluginConfig: string;
  wasm: string;
  /** TOKENTRACE_DEMO_LORA=on: the server loads two LoRA adapters and the load uses them (lora.ts). */
  lora: boolean;
  /** TOKENTRACE_DEMO_DCGM_LABELS: how the simulated dcgm-exporter spells its pod labels (dcgm-sim.ts). */
  dcgmLabels: DcgmLabelSpelling;
}

function numberFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || v > max) throw new Error(`${name}=${JSON.stringify(raw)} is not a number in [${min}, ${max}]`);
  return v;
}

/** Reads the demo settings, naming the variable and value on a bad one. */
export function demoConfig(): DemoConfig {
  const prom = process.env.TOKENTRACE_DEMO_PROMETHEUS ?? "auto";
  if (prom !== "auto" && prom !== "off") throw new Error(`TOKENTRACE_DEMO_PROMETHEUS=${JSON.stringify(prom)} must be auto or off`);
  const lora = process.env.TOKENTRACE_DEMO_LORA || "off";
  if (lora !== "on" && lora !== "off") throw new Error(`TOKENTRACE_DEMO_LORA=${JSON.stringify(lora)} must be on or off`);
  const rawDcgmLabels = process.env.TOKENTRACE_DEMO_DCGM_LABELS || "default";
  const dcgmLabels = DCGM_LABEL_SPELLINGS.find((s) => s === rawDcgmLabels);
  if (!dcgmLabels) throw new Error(`TOKENTRACE_DEMO_DCGM_LABELS=${JSON.stringify(rawDcgmLabels)} must be one of ${DCGM_LABEL_SPELLINGS.join(", ")}`);
  return {
    proxyPort: numberFromEnv("TOKENTRACE_DEMO_PORT", 10000, 0, 65535),
    adminPort: numberFromEnv("TOKENTRACE_DEMO_ADMIN_PORT", 15090, 0, 65535),
    upstreamPort: numberFromEnv("TOKENTRACE_DEMO_UPSTREAM_PORT", 0, 0, 65535),
    controlPlanePort: numberFromEnv("TOKENTRACE_DEMO_CONTROL_PLANE_PORT", 8080, 0, 65535),
    dcgmPort: numberFromEnv("TOKENTRACE_DEMO_DCGM_PORT", 9400, 0, 65535),
    scenario: scenarioNamed(process.env.TOKENTRACE_DEMO_SCENARIO || "normal").name,
    errorRate: numberFromEnv("TOKENTRACE_DEMO_ERROR_RATE", 0.02, 0, 1),
    loadRps: process.env.TOKENTRACE_DEMO_LOAD_RPS ? numberFromEnv("TOKENTRACE_DEMO_LOAD_RPS", 0, 0, 1000) : undefined,
    traceLinkTemplate: process.env.TOKENTRACE_DEMO_TRACE_LINK_TEMPLATE ?? "",
    scrapeIntervalMs: numberFromEnv("TOKENTRACE_DEMO_SCRAPE_INTERVAL_MS", 2000, 100, 60000),
    prometheus: prom,
    pluginConfig: process.env.TOKENTRACE_DEMO_PLUGIN_CONFIG ?? "",
    wasm: process.env.TOKENTRACE_DEMO_WASM ?? fileURLToPath(new URL("../../build/filter.wasm", import.meta.url)),
    lora: lora === "on",
    dcgmLabels,
  };
}

const LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "critical"];

async function main(): Promise<void> {
  const cfg = demoConfig();
  started = cfg;
  const taken = await takenPorts(cfg);
  if (taken.length > 0) throw new PortsTakenError(taken);
  // Progress redraws one line on a terminal; other lines clear it first so they do not interleave.
  const tty = process.stdout.isTTY === true;
  const clearLine = (): void => {
    if (tty) process.stdout.write("\r\x1b[2K");
  };
  const stack = await startDemoStack({
    wasm: cfg.wasm,
    proxyPort: cfg.proxyPort,
    adminPort: cfg.adminPort,
    upstreamPort: cfg.upstreamPort,
    controlPlanePort: cfg.controlPlanePort,
    dcgmPort: cfg.dcgmPort,
    scenario: cfg.scenario,
    errorRate: cfg.errorRate,
    ...(cfg.loadRps !== undefined ? { loadRps: cfg.loadRps } : {}),
    traceLinkTemplate: cfg.traceLinkTemplate,
    scrapeIntervalMs: cfg.scrapeIntervalMs,
    prometheus: cfg.prometheus,
    pluginConfig: cfg.pluginConfig,
    lora: cfg.lora,
    dcgmLabels: cfg.dcgmLabels,
    // The filter's log lines go to stderr the way Envoy prints "wasm log" lines.
    onFilterLog: (e) => {
      clearLine();
      console.error(`[wasm ${LEVEL_NAMES[e.level] ?? e.level}] ${e.message}`);
    },
    log: (record) => {
      const r = record as { level?: string; msg?: string };
      if (r.level === "warn" || r.level === "error" || r.msg === "audit") {
        clearLine();
        console.error(JSON.stringify(record));
      }
    },
  });
  const body = (stream: boolean): string =>
    JSON.stringify({ model: "tokentrace-sim-1", ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}), messages: [{ role: "user", content: "Say hello" }] });
  console.log(`tokentrace demo: ${cfg.wasm} in front of a simulated OpenAI-compatible server`);
  console.log(`  scenario:      ${stack.scenario.name}: ${stack.scenario.story}`);
  if (stack.scenario.alert) console.log(`                 expect alert ${stack.scenario.alert} within a minute${stack.prometheus ? "" : " (needs Prometheus)"}`);
  console.log(`                 others: ${[...SCENARIOS.keys()].filter((n) => n !== stack.scenario.name).map((n) => `TOKENTRACE_DEMO_SCENARIO=${n}`).join(", ")}`);
  if (cfg.lora) console.log(`  LoRA:          adapters ${DEMO_LORA_MODULES.map((m) => m.name).join(", ")} of ${DEMO_MODEL}, a quarter of the completions each (docs/demo-lora.md)`);
  console.log(`  dashboard:     ${stack.dashboardUrl}`);
  console.log(`  proxy:         ${stack.proxy.url}`);
  console.log(`  stats:         ${stack.proxy.adminUrl}/stats/prometheus`);
  console.log(`  control plane: ${stack.controlPlaneUrl}/v1/policies (API), ${stack.controlPlaneUrl}/metrics`);
  console.log(`  dcgm-exporter: ${stack.dcgm.metricsUrl} (simulated${cfg.dcgmLabels === "default" ? "" : `, pod labels spelled ${cfg.dcgmLabels}: docs/gpu.md, The GPU section is empty`})`);
  console.log(`  upstream:      ${stack.upstream.url} (direct, without the filter; vLLM's metrics at ${stack.upstream.url}/metrics)`);
  console.log(`  traces:        ${stack.filtersUrl}/v1/traces (OTLP/HTTP receiver on the filter-facing listener; the filter pulls its policy and exports sampled LLM calls there)`);
  console.log(stack.prometheus ? `  prometheus:    ${stack.prometheus.url} (remote-write target, evaluates istio/observability/prometheus-rules.yaml; alerts at ${await alertsPageUrl(stack.prometheus.url)})` : `  prometheus:    not started: ${stack.prometheusNote}`);
  console.log(`  write token:   ${stack.token} (demo only; the dashboard's policy editor asks for it)`);
  console.log(`  filter configuration ${stack.filterConfigured ? "accepted" : "REJECTED (see the log above)"}; policy ${DEMO_POLICY} pulled every ${stack.pollIntervalMs} ms`);
  console.log("");
  console.log("Try:");
  console.log(`  curl -sS ${stack.proxy.url}/v1/chat/completions -H 'content-type: application/json' -d '${body(false)}'`);
  console.log(`  curl -sSN ${stack.proxy.url}/v1/chat/completions -H 'content-type: application/json' -d '${body(true)}'`);
  console.log(`  curl -sS ${stack.proxy.adminUrl}/stats/prometheus`);
  console.log(`  curl -sS ${stack.proxy.url}/v1/chat/completions -H 'x-token-trace-id: my-first-trace' -H 'x-debug-trace: 1' -H 'content-type: application/json' -d '${body(false)}'   # then find my-first-trace on the dashboard`);
  console.log(`  curl -sS -X PATCH ${stack.controlPlaneUrl}/v1/policies/${DEMO_POLICY} -H 'authorization: Bearer ${stack.token}' -H 'content-type: application/merge-patch+json' -d '{"pluginConfig":{"sampling":{"routes":[{"routeName":"chat","rate":1}]}}}'   # chat: sample every request`);
  console.log("Ctrl-C stops it.");

  // Alerts firing in the demo's Prometheus, refreshed every few seconds, shown on the progress line.
  let alerts = "";
  const alertTimer = stack.prometheus
    ? setInterval(() => {
        void firingAlerts(stack.prometheus!.url).then(
          (names) => (alerts = names.length > 0 ? `, alerts firing: ${names.join(" ")}` : ", no alert firing"),
          () => undefined,
        );
      }, 5000)
    : undefined;
  const line = (): string => {
    const e = stack.engine.state();
    return `${formatProgress(stack.load!.progress())}, server queue ${e.waiting}, batch ${e.running}, KV cache ${Math.round(e.kvCacheUsage * 100)}%${alerts}`;
  };
  const progress = stack.load
    ? setInterval(() => {
        if (tty) process.stdout.write(`\r\x1b[2K${line()}`);
      }, 500)
    : undefined;
  // Without a terminal (CI, tests, a pipe) the progress goes out as a plain line every 10 s.
  const plainProgress = stack.load && !tty ? setInterval(() => console.log(line()), 10_000) : undefined;

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    if (progress) clearInterval(progress);
    if (alertTimer) clearInterval(alertTimer);
    if (plainProgress) clearInterval(plainProgress);
    clearLine();
    console.log(`${signal}: stopping`);
    void stack.close().then(
      () => {
        console.log("stopped");
        process.exit(0);
      },
      (e: unknown) => {
        console.error(`error while stopping: ${e instanceof Error ? e.message : String(e)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

let started: DemoConfig | undefined;
main().catch((e: unknown) => {
  console.error(startFailure(e, started));
  process.exit(1);
});
