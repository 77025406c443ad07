// Entry point of the control plane: load and validate the configuration, compose the parts (the
// policy store of the mode, adaptive sampling, Kubernetes sync, the pipeline, traces, the
// dashboard; each wired in compose/), serve the API, and shut down gracefully on SIGTERM/SIGINT
// in a fixed order. Logs are JSON lines on stdout; config errors go to stderr with exit code 2,
// start-up failures with exit code 1.
import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { createApp } from "./app.js";
import { applyScopes, loadTokens } from "./api/auth.js";
import { createMetrics } from "./api/metrics.js";
import { wireAdaptiveSampling } from "./compose/adaptive.js";
import { alertsOption, dashboardLine, dashboardOption, dashboardSeries, sloOption } from "./compose/dashboard.js";
import { openEmbeddedPolicies } from "./compose/embedded.js";
import { memoryBudgetLine, memoryBudgets, memoryLimitWarning } from "./compose/memory-budgets.js";
import { openClusterPolicies, startClusterControl, type ClusterControl } from "./compose/kubernetes.js";
import { enabledPipelineConfig, startPipelinePart } from "./compose/pipeline.js";
import { runtimeOf, stdoutLog, type ControlPlaneOptions } from "./compose/runtime.js";
import { startFilterListener } from "./compose/filters.js";
import { tracesPart, tracesStatus } from "./compose/traces.js";
import { processMemoryLimit } from "./traces/memory-budget.js";
import { loadConfig, type Config } from "./config.js";
import type { KubernetesSync } from "./k8s/sync.js";
import type { PolicyHistory } from "./k8s/history.js";
import type { KubernetesPolicyStore } from "./k8s/policy-store.js";
import type { RunningPipeline } from "./pipeline/index.js";
import { jsonLineAudit } from "./policy/audit.js";
import type { FilePolicyStore } from "./policy/file-store.js";
import type { PolicyRepository } from "./policy/repository.js";
import { listenOn } from "./listen.js";

export type { ControlPlaneOptions } from "./compose/runtime.js";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

/** A running control plane. */
export interface RunningControlPlane {
  url: string;
  /** The filter-facing listener (policy pulls, the span receiver, the content key). */
  filtersUrl: string;
  /** Kubernetes mode's parts, for readiness probes of tests (undefined in embedded mode). */
  kubernetes?: {
    store: KubernetesPolicyStore;
    history: PolicyHistory;
    /** The WasmPlugin informer and reconciler. */
    sync: KubernetesSync;
    /** One status pass (what the leader's status timer runs); resolves when written. */
    writeStatus(): Promise<void>;
    isLeader(): boolean;
  };
  /** The metrics pipeline when enabled (its targets, queues and shard members, for tests and probes). */
  pipeline?: RunningPipeline;
  /** Stops accepting requests, lets in-flight ones finish (up to the grace time), stops the sync. */
  stop(): Promise<void>;
}

/**
 * Starts everything from a validated config; throws only for start-up failures (bad store file,
 * bad tokens). Each mode and each optional part is wired in control-plane/src/compose/.
 */
export async function startControlPlane(config: Config, options: ControlPlaneOptions = {}): Promise<RunningControlPlane> {
  const runtime = runtimeOf(options, config.kubernetes.kubeconfig);
  const { log, ticker } = runtime;
  const tokens = loadTokens(config.api.tokensFile, config.api.tokens);
  tokens.errors.push(...applyScopes(tokens.tokens, config.api.scopes));
  if (tokens.errors.length > 0) throw new Error(tokens.errors.join("; "));
  if (tokens.tokens.length === 0) log({ level: "warn", msg: "no API tokens configured: writes are refused until api.tokensFile or TOKENTRACE_API_TOKENS provides one" });
  const audit = jsonLineAudit(options.auditLine ?? ((line) => process.stdout.write(line)));
  const cluster = config.store.mode === "kubernetes" ? openClusterPolicies(config.kubernetes, runtime, audit) : undefined;
  const fileStore = cluster === undefined ? openEmbeddedPolicies(config.store, runtime, audit) : undefined;
  const store: PolicyRepository = cluster?.store ?? (fileStore as FilePolicyStore);
  const metrics = createMetrics(true);
  const pipelineConfig = enabledPipelineConfig(config.pipeline);

  // With leader election only the leader adapts rates (and writes them); the others follow.
  let control: ClusterControl | undefined;
  const leading = (): boolean => control?.leading() ?? true;
  const adaptive = wireAdaptiveSampling({
    config: config.adaptive,
    runtime,
    store,
    metrics,
    rates: options.rates,
    pipelineScrapeIntervalMs: pipelineConfig?.scrape.intervalMs,
    leading,
    published: (name) => cluster?.store.publishedOverrides(name),
    onChange: () => control?.adaptiveChanged(),
    kubernetes: cluster !== undefined,
    ...(options.windows === undefined ? {} : { windows: options.windows }),
  });
  if (cluster !== undefined) {
    control = startClusterControl({ config: config.kubernetes, runtime, policies: cluster.store, overrides: adaptive.overrides, metrics, onStartedLeading: () => {
      adaptive.sampler.reset();
      adaptive.live.reset();
    } });
  }

  const dashboard = dashboardSeries();
  const pipeline =
    pipelineConfig === undefined
      ? undefined
      : await startPipelinePart(
          pipelineConfig,
          runtime,
          metrics.registry,
          (series, result) => {
            dashboard.observe(series, result);
            adaptive.pipelineRates?.observe(series, result);
            adaptive.pipelineHistograms?.observe(series, result);
          },
          (url, notes) => dashboard.gpu.noteExporterLabels(url, notes),
        );

  const traces = tracesPart(config.traces);
  const filters = await startFilterListener({ config: config.filters, http: config.http, content: config.content, runtime, store, overrides: adaptive.overrides, metrics, traces });
  const app = createApp({
    store,
    tokens: tokens.tokens,
    reads: config.api.reads,
    bodyLimitBytes: config.api.bodyLimitBytes,
    metrics,
    overrides: adaptive.overrides,
    liveThresholds: adaptive.liveView,
    readiness: () => ({ store: store.readiness(), ...control?.readiness() }),
    log,
    ...dashboardOption(dashboard, pipeline !== undefined),
    ...(traces !== undefined ? { traces: traces.api } : {}),
    ...alertsOption(config.alerts, config.adaptive.prometheus.url, metrics),
    ...sloOption(config.alerts, config.adaptive.prometheus.url, metrics),
    contentKeys: filters.keys,
  });
  let server: Server;
  try {
    server = await listenOn(app, config.listen.port, config.listen.host, "listen.port (TOKENTRACE_LISTEN_PORT)", config.http);
  } catch (error) {
    filters.stop();
    await drain(filters.server, 0);
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.listen.host}:${port}`;
  log({ msg: "listening", url, filters: filters.url, filtersAuth: config.filters.auth, mode: config.store.mode, version: manifest.version });
  log(dashboardLine(url, pipeline !== undefined, dashboard.maxBytes, tracesStatus(traces, filters.url)));
  // What every part may hold over time (the dashboard is fed only by the pipeline).
  const budgets = memoryBudgets({ ...(pipelineConfig === undefined ? {} : { pipeline: pipelineConfig, dashboard }), ...(traces === undefined ? {} : { traces: traces.api.store }) });
  log(memoryBudgetLine(budgets));
  const overLimit = memoryLimitWarning(budgets, processMemoryLimit());
  if (overLimit !== undefined) log(overLimit);

  const running = control;
  return {
    url,
    filtersUrl: filters.url,
    ...(pipeline === undefined ? {} : { pipeline }),
    ...(cluster !== undefined && running !== undefined
      ? { kubernetes: { store: cluster.store, history: cluster.history, sync: running.sync, writeStatus: () => running.statusWriter.sync(), isLeader: leading } }
      : {}),
    async stop() {
      ticker.stop();
      cluster?.history.stop();
      // Step down and release the Lease first, so a successor takes over while we drain; likewise
      // the pipeline stops scraping and releases its member Lease, so its shard moves at once.
      await running?.elector?.stop();
      await pipeline?.stop();
      await Promise.all([drain(server, config.shutdownGraceMs), drain(filters.server, config.shutdownGraceMs)]);
      filters.stop();
      await running?.sync.stop();
      await cluster?.store.stop();
      await fileStore?.close();
    },
  };
}

/** Closes the server once in-flight requests end, or closes every connection after `graceMs`. */
async function drain(server: Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive connections become idle when their in-flight response ends; close them then
  // rather than waiting for the keep-alive timeout. Past the grace time, close everything.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  server.closeIdleConnections();
  const grace = setTimeout(() => server.closeAllConnections(), graceMs);
  grace.unref();
  await closed;
  clearInterval(sweep);
  clearTimeout(grace);
}

async function main(): Promise<void> {
  const loaded = loadConfig(process.argv.slice(2), process.env);
  if (!loaded.ok) {
    for (const error of loaded.errors) process.stderr.write(`config error: ${error}\n`);
    process.exit(2);
  }
  let running: RunningControlPlane;
  try {
    running = await startControlPlane(loaded.config);
  } catch (error) {
    process.stderr.write(`start-up failed: ${(error as Error).message}\n`);
    process.exit(1);
  }
  const log = stdoutLog;
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log({ msg: "shutting down", signal });
    running.stop().then(
      () => {
        log({ msg: "stopped" });
        process.exit(0);
      },
      (error: unknown) => {
        log({ level: "error", msg: "shutdown failed", error: String(error) });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

// Run only as the entry point, so tests can import startControlPlane.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
