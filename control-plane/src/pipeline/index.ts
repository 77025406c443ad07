// The metrics pipeline: scrape (static targets and Kubernetes pods) -> join (pod and GPU identity,
// derived series) -> staleness and cardinality cap -> remote write (durable queue per target).
import { join as joinPath } from "node:path";
import type { Registry } from "prom-client";
import type { KubeConfig } from "@kubernetes/client-node";
import { Scraper, type ScrapeResult } from "../scrape/scraper.js";
import { staticTargets, type ScrapeTarget } from "../scrape/targets.js";
import { KubernetesPodSource, PodTargetDiscovery, type PodSource } from "../scrape/discovery.js";
import { Joiner, WindowBudget, windowBudgetBytes, type JoinedBatch } from "../join/joiner.js";
import { labelNoteMessage, type ExporterLabelNote } from "../join/gpu-index.js";
import type { Enriched } from "../join/enrich.js";
import { RemoteWriter } from "../remote-write/writer.js";
import { NOMINAL_KEY_CHARS } from "../remote-write/series-registry.js";
import { createRemoteWriteMetrics, type RemoteWriteMetrics } from "../remote-write/metrics.js";
import type { WriteSeries } from "../remote-write/series.js";
import { monotonicOf, systemClock, type Clock } from "../remote-write/retry.js";
import type { Transport } from "../remote-write/transport.js";
import type { RemoteWriteTargetConfig } from "../remote-write/queue-manager.js";
import { hostname } from "node:os";
import { createPipelineMetrics, type PipelineMetrics } from "./metrics.js";
import { ClientNodeMemberLeaseApi, LeaseMembership, memberLeaseName, type MemberLeaseApi } from "./membership.js";
import { clientNodeLeaseReader, Handover, type MemberLeaseReader } from "./handover.js";
import { SeriesGate } from "./series-gate.js";
import { WaypointScrapes } from "./waypoints.js";
import type { PodIpIndex } from "../scrape/pod-ips.js";
import { ModelLists } from "../engine/model-list.js";
import { boundedCall } from "../k8s/bounded-call.js";
import { unshardedDiscovery, validatePipelineConfig, type PipelineConfig } from "./config.js";

export { DEFAULT_PIPELINE_CONFIG, REMOTE_WRITE_TARGET_DEFAULTS, withDefaults, validatePipelineConfig, unshardedDiscovery, type PipelineConfig, type PipelineConfigInput, type ConfigError, type RemoteWriteTarget } from "./config.js";

/** What the pipeline takes from its host process. */
export interface PipelineDeps {
  /** Self-metrics go here (never the global registry). */
  registry: Registry;
  clock?: Clock;
  /** Needed when scrape.kubernetes.enabled and no podSource is given. */
  kubeConfig?: KubeConfig;
  /** Overrides the Kubernetes pod source (tests, or running outside a cluster). */
  podSource?: PodSource;
  /** Overrides the HTTP transport per remote-write target (tests). */
  transportFor?: (target: RemoteWriteTargetConfig) => Transport;
  /** Overrides the Lease API sharding membership uses (tests). */
  memberLeaseApi?: MemberLeaseApi;
  /** Overrides how hand-overs read a member's Lease (default: client-node with kubeConfig). */
  readMemberLease?: MemberLeaseReader;
  /** Called with each joined batch before it is queued (diagnostics and tests). */
  onBatch?: (series: WriteSeries[], result: ScrapeResult) => void;
  /** Called when a dcgm-exporter's label spellings other than its defaults change (none: back to them, or the exporter went). */
  onExporterLabels?: (url: string, notes: ReadonlySet<ExporterLabelNote>) => void;
  log?: (msg: string) => void;
}

/** A running pipeline. */
export interface RunningPipeline {
  /** The config it runs with. */
  readonly config: PipelineConfig;
  /** Stops scraping, flushes remote write for a bounded time; queued data stays on disk. */
  stop(): Promise<void>;
  registry: Registry;
  metrics: PipelineMetrics & { remoteWrite: RemoteWriteMetrics };
  scraper: Scraper;
  writer: RemoteWriter;
  joiner: Joiner;
  /** vLLM targets' model lists (LoRA adapter -> base model). */
  modelLists: ModelLists;
  gate: SeriesGate;
  /** The targets scraped now. */
  targets(): ScrapeTarget[];
  /** The live replicas when sharding (sorted), else undefined. */
  members(): string[] | undefined;
}

/**
 * What this replica left behind in its member Lease, read before it joins. A Lease renewed within
 * `liveForMs` is still counted live by the others (a quick restart): the replica resumes its slots.
 * An older one was counted out, and its slots taken over: it is deleted (only while unchanged), so
 * the join starts a new Lease whose creationTimestamp all replicas time the hand-back from.
 */
async function resumeOrRenewLease(api: MemberLeaseApi, namespace: string, identity: string, clock: Clock, liveForMs: number, timeoutMs: number, log?: (msg: string) => void): Promise<boolean> {
  const name = memberLeaseName(identity);
  const nowMs = clock.now();
  const sleep = (ms: number, signal?: AbortSignal): Promise<void> => clock.sleep(ms, signal);
  const prior = await boundedCall(sleep, timeoutMs, (signal) => api.get(namespace, name, signal));
  if (!prior.ok || prior.value.holderIdentity !== identity) return false;
  const age = nowMs - prior.value.renewTimeMs;
  if (age >= 0 && age < liveForMs) return true;
  const deleted = await boundedCall(sleep, timeoutMs, (signal) => api.delete(namespace, name, prior.value.resourceVersion, signal));
  if (!deleted.ok && deleted.code !== 404) log?.(`sharding: replacing the expired lease ${name}: ${deleted.code} ${deleted.message}`);
  return false;
}

/**
 * What the join's rate windows may hold: one window series for each series the pipeline may ship
 * (join.maxSeries, of NOMINAL_KEY_CHARS characters of labels), each with the points the shortest
 * scrape interval configured puts in max(join.rateWindowMs, lookback).
 */
export function joinWindowBytes(config: Pick<PipelineConfig, "join" | "scrape">): number {
  return windowBudgetBytes(config.join.maxSeries, NOMINAL_KEY_CHARS, config.join.rateWindowMs, shortestIntervalMs(config));
}

/** The shortest scrape interval configured (scrape.intervalMs, or a static target's own). */
export function shortestIntervalMs(config: Pick<PipelineConfig, "scrape">): number {
  return Math.min(config.scrape.intervalMs, ...config.scrape.static.map((t) => t.intervalMs ?? config.scrape.intervalMs));
}

/** Validates `config` (throws with every {field, reason} when invalid) and starts the pipeline. */
export async function startPipeline(config: PipelineConfig, deps: PipelineDeps): Promise<RunningPipeline> {
  const errors = validatePipelineConfig(config);
  const unsharded = errors.length === 0 ? unshardedDiscovery(config) : undefined;
  if (unsharded !== undefined) errors.push(unsharded);
  if (errors.length > 0) throw new Error(`invalid pipeline config: ${errors.map((e) => `${e.field}: ${e.reason}`).join("; ")}`);
  const clock = deps.clock ?? systemClock;
  const metrics = createPipelineMetrics(deps.registry);
  const rwMetrics = createRemoteWriteMetrics(deps.registry);
  const writer = new RemoteWriter(
    config.remoteWrite.targets.map((t) => ({ ...t, queueDir: joinPath(config.remoteWrite.queueDir, t.name) })),
    { clock, metrics: rwMetrics, log: (record) => deps.log?.(`remote write: ${JSON.stringify(record)}`), ...(deps.transportFor ? { transportFor: deps.transportFor } : {}) },
  );
  // vLLM's adapter -> base model relation, asked apart from the scrape (a slow or failing model list never delays one).
  const modelLists = new ModelLists({ clock, onFailure: (reason) => metrics.modelListFailures.inc({ reason }), onDropped: (n) => metrics.loraAdaptersDropped.inc(n) });
  const joiner = new Joiner({
    adapterParents: (id) => modelLists.parentsOf(id),
    onLoraAdaptersDropped: (n) => metrics.loraAdaptersDropped.inc(n),
    forward: config.join.forward,
    identityWaitMs: config.join.gpuIdentityWaitMs,
    rateWindowMs: config.join.rateWindowMs,
    windowBudget: new WindowBudget(joinWindowBytes(config), (n) => metrics.seriesDropped.inc({ reason: "window_budget" }, n)),
    genai: config.join.genaiMetrics ? { providerName: config.join.genaiProviderName } : false,
    onIdentityTimeout: () => metrics.identityTimeouts.inc(),
    onExporterLabels: (target, notes) => {
      for (const note of notes) deps.log?.(labelNoteMessage(note, target.url));
      countSpellings();
      deps.onExporterLabels?.(target.url, notes);
    },
  });
  function countSpellings(): void {
    const counts = joiner.exporterLabelNoteCounts();
    for (const spelling of ["old_namespace", "honor_labels_renamed"] as const) metrics.dcgmLabelSpellings.set({ spelling }, counts.get(spelling) ?? 0);
  }
  const gate = new SeriesGate(writer.registry, config.join.maxSeries, (reason) => metrics.seriesDropped.inc({ reason }));

  // A target's report (up, scrape_duration_seconds) and its scraped series are two sources for
  // staleness: the report ships at once, the series may be held until the pod's GPU identity is known.
  const reportSource = (id: string): string => `${id}#report`;
  const ship = (source: string, series: WriteSeries[], ts: number, enriched?: Enriched): void => {
    writer.writeGated(gate.pass(source, series, ts, enriched));
    metrics.activeSeries.set(gate.activeSeries);
  };
  const shipBatches = (batches: JoinedBatch[]): void => {
    for (const b of batches) {
      deps.onBatch?.([...b.report, ...b.series], b.result);
      // A failed scrape has no series: everything its target reported last goes stale, as in Prometheus.
      ship(b.result.target.id, b.series, b.result.timestampMs, b.enriched);
    }
    metrics.heldPods.set(joiner.pendingPods);
  };

  // Sharding: this replica scrapes only its share, each target in the window the hand-over gives
  // it (handover.ts); until the first membership answer, nothing.
  let handover: Handover | undefined;
  let podIps: PodIpIndex | undefined;
  const waypoints = new WaypointScrapes({
    joiner,
    resolve: (ip) => podIps?.resolve(ip),
    slotOf: (t, atMs) => scraper.slotAtOrBefore(t, atMs),
    owns: (t, atMs) => !config.sharding.enabled || (handover?.ownsAt(t, atMs) ?? false),
    shipReport: (r, report) => ship(reportSource(r.target.id), report, r.timestampMs),
    shipBatches,
    endSource: (t, ts) => {
      if (ts === undefined) {
        gate.forgetSource(t.id);
        writer.writeGated([]);
      } else writer.writeGated(gate.removeSource(t.id, ts));
      metrics.activeSeries.set(gate.activeSeries);
    },
    count: (outcome, series) => metrics.waypointSeries.inc({ outcome }, series),
  });

  const onResult = (r: ScrapeResult): void => {
    const kind = r.target.kind;
    metrics.scrapeDuration.observe({ kind }, r.durationMs / 1000);
    if (!r.ok) metrics.scrapeFailures.inc({ kind, reason: r.error ?? "unknown" });
    if (r.parseErrors.length > 0) metrics.parseErrors.inc({ kind }, r.parseErrors.length);
    if (r.target.waypoint) return waypoints.onResult(r);
    if (r.ok && kind === "vllm") void modelLists.refresh(r.target);
    const out = joiner.joinScrape(r);
    ship(reportSource(r.target.id), out.report, r.timestampMs);
    shipBatches(out.batches);
  };

  const scraper = new Scraper({ clock, concurrency: config.scrape.concurrency, maxBodyBytes: config.scrape.maxBodyBytes, spreadStart: config.scrape.spreadStart, onResult });
  const fixed = staticTargets(config.scrape.static, config.scrape);
  let discovered: ScrapeTarget[] = [];
  const identity = config.sharding.identity || process.env.POD_NAME || hostname();
  let stopping = false;
  const apply = (): void => {
    if (stopping) return;
    const existing = [...fixed, ...discovered];
    const sharded = existing.filter((t) => !t.waypoint);
    const { targets: assigned, windows } = !config.sharding.enabled ? { targets: sharded, windows: undefined } : handover ? handover.assign(sharded) : { targets: [], windows: undefined };
    // Every member scrapes every waypoint and keeps its share of the series (waypoints.ts).
    const member = !config.sharding.enabled || (handover?.members?.includes(identity) ?? false);
    const all = member ? [...assigned, ...existing.filter((t) => t.waypoint)] : assigned;
    const present = new Set(existing.map((t) => t.id));
    for (const removed of scraper.setTargets(all, windows)) {
      if (removed.waypoint) waypoints.removed(removed, present.has(removed.id) ? undefined : clock.now());
      const released = joiner.removeTarget(removed);
      modelLists.forget(removed.id);
      if (removed.kind === "dcgm") countSpellings();
      const now = clock.now();
      if (present.has(removed.id)) {
        // Handed to another replica, which goes on writing its series: no staleness markers.
        gate.forgetSource(removed.id);
        gate.forgetSource(reportSource(removed.id));
        writer.writeGated([]);
      } else {
        writer.writeGated([...gate.removeSource(removed.id, now), ...gate.removeSource(reportSource(removed.id), now)]);
      }
      metrics.activeSeries.set(gate.activeSeries);
      shipBatches(released);
    }
    shipBatches(joiner.setTargets(all));
    for (const kind of ["envoy", "dcgm", "vllm", "static"] as const) metrics.targets.set({ kind }, all.filter((t) => t.kind === kind).length);
  };

  let podSource: PodSource | undefined;
  const k = config.scrape.kubernetes;
  if (k.enabled || deps.podSource) {
    podSource = deps.podSource;
    if (!podSource) {
      if (!deps.kubeConfig) throw new Error("invalid pipeline config: scrape.kubernetes.enabled: needs a kubeConfig");
      podSource = new KubernetesPodSource({
        kubeConfig: deps.kubeConfig,
        clock,
        ...(k.namespace ? { namespace: k.namespace } : {}),
        ...(k.labelSelector ? { labelSelector: k.labelSelector } : {}),
        onError: (err) => deps.log?.(`pod discovery: ${(err as Error).message ?? String(err)}`),
      });
    }
    const discovery = new PodTargetDiscovery(
      { envoy: k.envoy, dcgm: k.dcgm, vllm: k.vllm, intervalMs: config.scrape.intervalMs, timeoutMs: config.scrape.timeoutMs },
      (targets) => {
        discovered = targets;
        apply();
      },
    );
    podIps = discovery.podIps;
    await podSource.start(discovery);
  }
  let membership: LeaseMembership | undefined;
  if (config.sharding.enabled) {
    const api = deps.memberLeaseApi ?? (deps.kubeConfig ? new ClientNodeMemberLeaseApi(deps.kubeConfig) : undefined);
    if (!api) throw new Error("invalid pipeline config: sharding.enabled: needs a kubeConfig");
    let started = false;
    const monotonicMs = monotonicOf(clock);
    // Hand-overs are timed on the scrape clock (wall, as scrape timestamps are): a monotonic instant
    // from membership is converted at the moment it is read (offset = wall now - monotonic now).
    const wallOf = (monoMs: number | undefined): number | undefined => (monoMs === undefined ? undefined : monoMs + (clock.now() - monotonicMs()));
    const created = new LeaseMembership({
      api,
      namespace: config.sharding.namespace,
      identity,
      leaseDurationMs: config.sharding.leaseDurationMs,
      clock,
      monotonicMs,
      onError: (message) => deps.log?.(`sharding: ${message}`),
      onChange: (members) => {
        current.setMembers(members);
        metrics.shardMembers.set(members.length);
        if (started) apply();
      },
    });
    membership = created;
    const readLease: MemberLeaseReader =
      deps.readMemberLease ?? (deps.kubeConfig ? clientNodeLeaseReader(deps.kubeConfig, config.sharding.namespace, clock, Math.max(1, Math.floor(created.periodMs / 2))) : async () => undefined);
    const { leaseDurationMs } = config.sharding;
    const resumed = await resumeOrRenewLease(api, config.sharding.namespace, identity, clock, leaseDurationMs - created.periodMs, created.renewDeadlineMs, deps.log);
    const current = new Handover({ self: identity, periodMs: created.periodMs, leaseDurationMs, clock, readLease, resumed, stoppedBy: (member) => wallOf(created.stoppedByMs(member)), onChange: () => started && apply() });
    handover = current;
    await membership.start();
    started = true;
  }
  apply();
  writer.start();
  scraper.start();

  return {
    config,
    registry: deps.registry,
    metrics: { ...metrics, remoteWrite: rwMetrics },
    scraper,
    writer,
    joiner,
    modelLists,
    gate,
    targets: () => scraper.targets,
    members: () => (handover?.members ? [...handover.members] : undefined),
    async stop(): Promise<void> {
      stopping = true;
      handover?.stop();
      // Scraping ends before the member Lease is released: from then on a survivor may scrape
      // this replica's targets, and two replicas must never scrape one target at once.
      await scraper.stop();
      await membership?.stop();
      await podSource?.stop();
      await writer.stop();
    },
  };
}
