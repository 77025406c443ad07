// `make demo`: the simulated OpenAI-compatible server behind the local proxy running build/filter.wasm.
// Ports and the simulation come from the environment (defaults below); SIGINT/SIGTERM stop it cleanly.
import { fileURLToPath } from "node:url";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";
import { startLocalProxy } from "../host/local-proxy.js";
import { startLlmUpstream } from "./llm-upstream.js";

/** Demo settings: environment variable, then default. */
export interface DemoConfig {
  proxyPort: number;
  adminPort: number;
  upstreamPort: number;
  ttftMs: number;
  tokensPerSecond: number;
  errorRate: number;
  pluginConfig: string;
  wasm: string;
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
  return {
    proxyPort: numberFromEnv("TOKENTRACE_DEMO_PORT", 10000, 0, 65535),
    adminPort: numberFromEnv("TOKENTRACE_DEMO_ADMIN_PORT", 15090, 0, 65535),
    upstreamPort: numberFromEnv("TOKENTRACE_DEMO_UPSTREAM_PORT", 0, 0, 65535),
    ttftMs: numberFromEnv("TOKENTRACE_DEMO_TTFT_MS", 250, 0, 60000),
    tokensPerSecond: numberFromEnv("TOKENTRACE_DEMO_TOKENS_PER_SECOND", 40, 0, 100000),
    errorRate: numberFromEnv("TOKENTRACE_DEMO_ERROR_RATE", 0.02, 0, 1),
    pluginConfig: process.env.TOKENTRACE_DEMO_PLUGIN_CONFIG ?? "",
    wasm: process.env.TOKENTRACE_DEMO_WASM ?? fileURLToPath(new URL("../../build/filter.wasm", import.meta.url)),
  };
}

const LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "critical"];

const ROUTES = [
  { prefix: "/v1/chat/completions", name: "chat" },
  { prefix: "/v1/completions", name: "completions" },
  { prefix: "/v1/embeddings", name: "embeddings" },
  { prefix: "/v1/models", name: "models" },
];

async function main(): Promise<void> {
  const cfg = demoConfig();
  const upstream = await startLlmUpstream({ port: cfg.upstreamPort, ttftMs: cfg.ttftMs, tokensPerSecond: cfg.tokensPerSecond, errorRate: cfg.errorRate });
  const proxy = await startLocalProxy({
    wasm: cfg.wasm,
    pluginConfig: cfg.pluginConfig,
    upstream: upstream.url,
    routes: ROUTES,
    listenPort: cfg.proxyPort,
    adminPort: cfg.adminPort,
    // The extraStatTags Istio needs for the filter's catalogue, so the stats show labels.
    statTags: [...FILTER_STAT_TAGS],
    // The filter's log lines go to stderr the way Envoy prints "wasm log" lines.
    vm: { onLog: (e) => console.error(`[wasm ${LEVEL_NAMES[e.level] ?? e.level}] ${e.message}`) },
  });
  const body = (stream: boolean): string =>
    JSON.stringify({ model: "tokentrace-sim-1", ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}), messages: [{ role: "user", content: "Say hello" }] });
  console.log(`tokentrace demo: ${cfg.wasm} in front of a simulated OpenAI-compatible server`);
  console.log(`  proxy:    ${proxy.url}`);
  console.log(`  stats:    ${proxy.adminUrl}/stats/prometheus`);
  console.log(`  upstream: ${upstream.url} (direct, without the filter)`);
  console.log(`  filter configuration ${proxy.vm.configureAccepted ? "accepted" : "REJECTED (see the log above)"}`);
  console.log("");
  console.log("Try:");
  console.log(`  curl -sS ${proxy.url}/v1/chat/completions -H 'content-type: application/json' -d '${body(false)}'`);
  console.log(`  curl -sSN ${proxy.url}/v1/chat/completions -H 'content-type: application/json' -d '${body(true)}'`);
  console.log(`  curl -sS ${proxy.adminUrl}/stats/prometheus`);
  console.log("Ctrl-C stops it.");

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping`);
    void Promise.all([proxy.close(), upstream.close()]).then(
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

main().catch((e: unknown) => {
  const msg = e instanceof Error ? e.message : String(e);
  const hint = /EADDRINUSE/.test(msg) ? " (a port is taken: set TOKENTRACE_DEMO_PORT / TOKENTRACE_DEMO_ADMIN_PORT, 0 picks a free one)" : "";
  console.error(`demo failed to start: ${msg}${hint}`);
  process.exit(1);
});
