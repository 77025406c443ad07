// Entry point of the control plane: load and validate the configuration, open the policy store,
// start the API (and in Kubernetes mode the WasmPlugin sync), run adaptive sampling and, when
// enabled, the metrics pipeline, and shut down gracefully on SIGTERM/SIGINT. Logs are JSON lines on stdout; config errors go to stderr
// with exit code 2.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { KubeConfig } from "@kubernetes/client-node";
import { AdaptiveSampler } from "./adaptive/sampler.js";
import { PipelineRateSource } from "./adaptive/pipeline-rates.js";
import { PrometheusRateSource } from "./adaptive/prometheus.js";
import { noRates, type RateSource } from "./adaptive/rates.js";
import { createApp, type ReadinessCheck } from "./app.js";
import { loadTokens } from "./api/auth.js";
import { createMetrics } from "./api/metrics.js";
import { loadConfig, type Config } from "./config.js";
import { DashboardSeries } from "./dashboard/series.js";
import { Backoff, realDelay, type Delay } from "./k8s/backoff.js";
import { startKubernetesSync, type KubernetesSync } from "./k8s/sync.js";
import { ClientNodeLeaseApi } from "./k8s/lease-client.js";
import { LeaderElector } from "./k8s/leader-election.js";
import { pipelineConfigOf } from "./pipeline/config.js";
import { startPipeline, type RunningPipeline } from "./pipeline/index.js";
import { namespaceCheck } from "./policy/admission.js";
import { jsonLineAudit } from "./policy/audit.js";
import { FilePolicyStore } from "./policy/file-store.js";
import { TraceStore } from "./traces/store.js";
import { listenOn } from "./listen.js";
import type { PolicyRepository } from "./policy/repository.js";
import { ClientNodeCustomObjectApi } from "./k8s/client.js";
import { ClientNodeRevisionApi, PolicyHistory } from "./k8s/history.js";
import { KubernetesPolicyStore, samplingPolicyGroup, samplingPolicyPlural, samplingPolicyVersion, type SamplingPolicyObject } from "./k8s/policy-store.js";
import { PolicyStatusWriter } from "./k8s/policy-status.js";
import type { OverrideSource } from "./policy/effective.js";
import { IntervalTicker, type Ticker } from "./ticker.js";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

function stdoutLog(record: object): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: "info", ...record })}\n`);
}

/** A running control plane. */
export interface RunningControlPlane {
  url: string;
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

/** What a caller (a test) may inject; everything defaults to the real thing. */
export interface ControlPlaneOptions {
  rates?: RateSource;
  log?: (record: object) => void;
  auditLine?: (line: string) => void;
  /** Periodic tasks (adaptive steps, resyncs, status writes). */
  ticker?: Ticker;
  /** Milliseconds clock for adaptive sampling, Kubernetes timings and status times. */
  now?: () => number;
  /** Waits of backoffs and leader election; with `now`, also the metrics pipeline's clock. */
  delay?: Delay;
}

/** Starts everything from a validated config; throws only for start-up failures (bad store file, bad tokens). */
export async function startControlPlane(
  config: Config,
  options: ControlPlaneOptions = {},
): Promise<RunningControlPlane> {
  const log = options.log ?? stdoutLog;
  const ticker = options.ticker ?? new IntervalTicker();
  const nowMs = options.now ?? Date.now;
  const now = (): Date => new Date(nowMs());
  const delay = options.delay ?? realDelay;
  const rates = options.rates;
  const tokens = loadTokens(config.api.tokensFile, config.api.tokens);
  if (tokens.errors.length > 0) throw new Error(tokens.errors.join("; "));
  if (tokens.tokens.length === 0) log({ level: "warn", msg: "no API tokens configured: writes are refused until api.tokensFile or TOKENTRACE_API_TOKENS provides one" });

  let kubeConfigCache: KubeConfig | undefined;
  const kubeConfig = (): KubeConfig => {
    if (kubeConfigCache === undefined) {
      kubeConfigCache = new KubeConfig();
      if (config.kubernetes.kubeconfig !== "") kubeConfigCache.loadFromFile(config.kubernetes.kubeconfig);
      else kubeConfigCache.loadFromDefault();
    }
    return kubeConfigCache;
  };

  const audit = jsonLineAudit(options.auditLine ?? ((line) => process.stdout.write(line)));
  const check = config.store.mode === "kubernetes" && config.kubernetes.namespace !== "" ? namespaceCheck(config.kubernetes.namespace) : undefined;
  // Kubernetes mode: the SamplingPolicy objects are the record (nothing about policies on pod
  // disk), history is ControllerRevisions; embedded mode: the journaled file store.
  let clusterStore: KubernetesPolicyStore | undefined;
  let history: PolicyHistory | undefined;
  let fileStore: FilePolicyStore | undefined;
  if (config.store.mode === "kubernetes") {
    const namespace = config.kubernetes.namespace === "" ? undefined : config.kubernetes.namespace;
    const samplingPolicies = new ClientNodeCustomObjectApi<SamplingPolicyObject>(kubeConfig(), { group: samplingPolicyGroup, version: samplingPolicyVersion, plural: samplingPolicyPlural });
    clusterStore = new KubernetesPolicyStore({
      api: samplingPolicies,
      namespace,
      backoff: new Backoff(config.kubernetes.backoff.initialMs, config.kubernetes.backoff.maxMs),
      delay,
      now,
      audit,
      check,
      log,
      history: (name) => history?.read(name) ?? Promise.resolve(undefined),
    });
    // Every replica records history (revision names come from the objects, so they converge).
    history = new PolicyHistory({ api: new ClientNodeRevisionApi(kubeConfig()), namespace, store: clusterStore, now, audit, log });
    history.start();
    clusterStore.start();
  } else {
    fileStore = new FilePolicyStore({ path: config.store.path, audit, log, check });
  }
  const store: PolicyRepository = clusterStore ?? (fileStore as FilePolicyStore);
  const metrics = createMetrics(true);
  let sync: KubernetesSync | undefined;

  const namespaceOf = (name: string): string | undefined => store.get(name)?.policy.target.namespace;
  const pipelineConfig = config.pipeline.enabled ? pipelineConfigOf(config.pipeline) : undefined;
  if (pipelineConfig !== undefined && !pipelineConfig.ok) throw new Error(pipelineConfig.errors.join("; "));
  // Without a Prometheus to ask, adaptive sampling learns rates from the pipeline's own scrapes:
  // a rate counts for three scrape intervals, and at least two adaptive steps.
  const pipelineRates =
    pipelineConfig?.ok && config.adaptive.prometheus.url === ""
      ? new PipelineRateSource({
          namespaceOf,
          now: nowMs,
          maxAgeMs: Math.max(3 * pipelineConfig.config.scrape.intervalMs, 2 * config.adaptive.intervalSeconds * 1000),
        })
      : undefined;
  let statusWriter: PolicyStatusWriter | undefined;
  const sampler = new AdaptiveSampler({
    source: rates ?? pipelineRates ?? rateSourceFor(config, namespaceOf),
    policies: () => store.list(),
    now: nowMs,
    minPushIntervalMs: config.adaptive.minPushIntervalSeconds * 1000,
    onChange: (name) => {
      metrics.adaptiveUpdates.inc({ policy: name });
      sync?.resync();
      // Followers serve the rates from the status the leader writes.
      if (leading()) void statusWriter?.sync();
    },
    onError: (name, error) => log({ level: "warn", msg: "adaptive sampling could not read rates", policy: name, error: String(error) }),
    // A new leader continues from the rates the previous one published (status.adaptive).
    seed: (record) => clusterStore?.publishedOverrides(record.policy.name),
  });
  // With leader election only the leader adapts rates (and writes them); the others follow.
  let elector: LeaderElector | undefined;
  const leading = (): boolean => elector === undefined || elector.isLeader();
  if (config.adaptive.enabled) {
    ticker.every("adaptive", config.adaptive.intervalSeconds * 1000, () => (leading() ? sampler.step() : undefined));
  }
  // The rates every replica serves: the leader's own, else those it published in the policy's
  // status (a follower, or a new leader before its first adaptive step).
  const overrides: OverrideSource = (name) => {
    const published = clusterStore?.publishedOverrides(name);
    return leading() ? (sampler.overrides(name) ?? published) : published;
  };

  if (config.store.mode === "kubernetes") {
    const election = config.kubernetes.leaderElection;
    if (election.enabled) {
      elector = new LeaderElector({
        api: new ClientNodeLeaseApi(kubeConfig()),
        settings: {
          namespace: election.namespace,
          leaseName: election.leaseName,
          identity: election.identity === "" ? hostname() : election.identity,
          leaseDurationMs: election.leaseDurationSeconds * 1000,
          renewDeadlineMs: election.renewDeadlineSeconds * 1000,
          retryPeriodMs: election.retryPeriodSeconds * 1000,
        },
        now: nowMs,
        delay,
        onStartedLeading: () => {
          // What this replica adapted in an earlier term may since have been replaced by another leader's.
          sampler.reset();
          sync?.leadershipChanged();
        },
        onStoppedLeading: () => sync?.leadershipChanged(),
        onNewLeader: (identity) => log({ msg: "leader", lease: `${election.namespace}/${election.leaseName}`, holder: identity === "" ? "none" : identity }),
        log,
      });
    }
    const leader = elector;
    sync = startKubernetesSync({
      config: config.kubernetes,
      store,
      overrides,
      metrics,
      kubeConfig: kubeConfig(),
      delay,
      now: nowMs,
      log,
      ...(leader === undefined ? {} : { isLeader: () => leader.isLeader() }),
    });
    leader?.start();
    const running = sync;
    ticker.every("resync", config.kubernetes.resyncSeconds * 1000, () => running.resync());
    ticker.every("reconcile-lag", 1000, () => running.reconciler.lagSeconds());
    if (clusterStore !== undefined) {
      const policies = clusterStore;
      statusWriter = new PolicyStatusWriter({
        api: new ClientNodeCustomObjectApi<SamplingPolicyObject>(kubeConfig(), { group: samplingPolicyGroup, version: samplingPolicyVersion, plural: samplingPolicyPlural }),
        store: policies,
        wasmPlugins: () => running.informer.cache,
        overrides,
        now,
        log,
      });
      const writer = statusWriter;
      // Only the leader writes status, so replicas never fight over it.
      ticker.every("policy-status", 2000, () => (leading() && policies.informer.hasSynced ? writer.sync() : undefined));
    }
  }

  // The metrics pipeline (scrape -> join -> remote write), when enabled; its self-metrics share /metrics.
  let pipeline: RunningPipeline | undefined;
  // The dashboard's series come from the pipeline's joined batches (empty while it is off).
  const dashboard = new DashboardSeries();
  if (pipelineConfig?.ok) {
    pipeline = await startPipeline(pipelineConfig.config, {
      registry: metrics.registry,
      clock: { now: nowMs, sleep: delay },
      ...(pipelineConfig.config.scrape.kubernetes.enabled || pipelineConfig.config.sharding.enabled ? { kubeConfig: kubeConfig() } : {}),
      log: (message) => log({ msg: "pipeline", detail: message }),
      onBatch: (series, result) => {
        dashboard.observe(series, result);
        pipelineRates?.observe(series, result);
      },
    });
  }

  const app = createApp({
    store,
    tokens: tokens.tokens,
    reads: config.api.reads,
    bodyLimitBytes: config.api.bodyLimitBytes,
    metrics,
    overrides,
    readiness: () => {
      const checks: Record<string, ReadinessCheck> = { store: store.readiness() };
      if (sync !== undefined) checks.kubernetes = sync.readiness();
      // Followers are ready: they serve reads, pulls and writes; only reconciling waits for the lease.
      if (elector !== undefined) checks.leader = { ok: true, detail: elector.isLeader() ? "leading" : `following ${elector.leader === "" ? "(no leader yet)" : elector.leader}` };
      return checks;
    },
    log,
    ...(pipeline ? { dashboard } : {}),
    ...(config.traces.enabled ? { traces: { store: new TraceStore(config.traces.maxSpans), maxBodyBytes: config.traces.maxBodyBytes, linkTemplate: config.traces.linkTemplate } } : {}),
  });
  const server: Server = await listenOn(app, config.listen.port, config.listen.host, "listen.port (TOKENTRACE_LISTEN_PORT)");
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.listen.host}:${port}`;
  log({ msg: "listening", url, mode: config.store.mode, version: manifest.version });
  log({
    msg: "dashboard",
    url: `${url}/dashboard`,
    pipeline: pipeline ? "on" : "off: charts stay empty; set TOKENTRACE_PIPELINE_ENABLED=true with scrape targets (pipeline.scrape in the config), or run make demo",
    traces: config.traces.enabled ? `receiving OTLP/HTTP (JSON or protobuf) at ${url}/v1/traces` : "off (TOKENTRACE_TRACES_ENABLED=true turns the span receiver on)",
  });

  const policies = clusterStore;
  const recorder = history;
  const writer = statusWriter;
  const running = sync;
  return {
    url,
    ...(pipeline === undefined ? {} : { pipeline }),
    ...(policies !== undefined && recorder !== undefined && writer !== undefined && running !== undefined
      ? { kubernetes: { store: policies, history: recorder, sync: running, writeStatus: () => writer.sync(), isLeader: leading } }
      : {}),
    async stop() {
      ticker.stop();
      history?.stop();
      // Step down and release the Lease first, so a successor takes over while we drain; likewise
      // the pipeline stops scraping and releases its member Lease, so its shard moves at once.
      await elector?.stop();
      await pipeline?.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections become idle when their in-flight response ends; close them then
      // rather than waiting for the keep-alive timeout. Past the grace time, close everything.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      const grace = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
      grace.unref();
      await closed;
      clearInterval(sweep);
      clearTimeout(grace);
      await sync?.stop();
      await clusterStore?.stop();
      await fileStore?.close();
    },
  };
}

/** The rate source the config asks for. */
function rateSourceFor(config: Config, namespaceOf: (policy: string) => string | undefined): RateSource {
  const prometheus = config.adaptive.prometheus;
  return prometheus.url === "" ? noRates : new PrometheusRateSource({ url: prometheus.url, query: prometheus.query, namespaceOf });
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
