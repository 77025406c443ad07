// Kubernetes mode. The SamplingPolicy objects are the record (nothing about policies on pod disk)
// and ControllerRevisions their history; one leader among the replicas (a Lease) reconciles
// WasmPlugins, adapts rates and writes status, while every replica serves the API.
import { hostname } from "node:os";
import type { ReadinessCheck } from "../app.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import { Backoff } from "../k8s/backoff.js";
import { ClientNodeCustomObjectApi } from "../k8s/client.js";
import type { KubernetesConfig } from "../k8s/config.js";
import { ClientNodeRevisionApi, PolicyHistory } from "../k8s/history.js";
import { LeaderElector } from "../k8s/leader-election.js";
import { ClientNodeLeaseApi } from "../k8s/lease-client.js";
import { PolicyStatusWriter } from "../k8s/policy-status.js";
import { KubernetesPolicyStore, samplingPolicyGroup, samplingPolicyPlural, samplingPolicyVersion, type SamplingPolicyObject } from "../k8s/policy-store.js";
import { startKubernetesSync, type KubernetesSync } from "../k8s/sync.js";
import { contentModuleProblems } from "../k8s/wasmplugin.js";
import { namespaceCheck, type PolicyCheck } from "../policy/admission.js";
import type { AuditSink } from "../policy/audit.js";
import type { OverrideSource } from "../policy/effective.js";
import type { Runtime } from "./runtime.js";

/** The cluster-backed policy record. */
export interface ClusterPolicies {
  store: KubernetesPolicyStore;
  history: PolicyHistory;
}

function samplingPolicyApi(runtime: Runtime): ClientNodeCustomObjectApi<SamplingPolicyObject> {
  return new ClientNodeCustomObjectApi<SamplingPolicyObject>(runtime.kubeConfig(), { group: samplingPolicyGroup, version: samplingPolicyVersion, plural: samplingPolicyPlural });
}

/** Opens and starts the SamplingPolicy store and its history (first, so adaptive sampling can seed from it). */
export function openClusterPolicies(config: Pick<KubernetesConfig, "namespace" | "historyNamespace" | "backoff" | "contentWasmPlugin">, runtime: Runtime, audit: AuditSink): ClusterPolicies {
  const namespace = config.namespace === "" ? undefined : config.namespace;
  const inNamespace = namespace === undefined ? undefined : namespaceCheck(namespace);
  // A policy this deployment could not apply is refused: another namespace, or capture without a content module.
  const check: PolicyCheck = (policy) => [...(inNamespace?.(policy) ?? []), ...contentModuleProblems(policy.pluginConfig, config.contentWasmPlugin)];
  const store: KubernetesPolicyStore = new KubernetesPolicyStore({
    api: samplingPolicyApi(runtime),
    namespace,
    backoff: new Backoff(config.backoff.initialMs, config.backoff.maxMs),
    delay: runtime.delay,
    now: runtime.now,
    audit,
    check,
    log: runtime.log,
    // Read only once the store serves, after start() below.
    history: (name) => history.read(name),
  });
  // Every replica records history (revision names come from the objects, so they converge).
  const history: PolicyHistory = new PolicyHistory({ api: new ClientNodeRevisionApi(runtime.kubeConfig()), namespace, historyNamespace: config.historyNamespace, store, now: runtime.now, audit, log: runtime.log });
  history.start();
  store.start();
  return { store, history };
}

/** What the leader-driven part needs. */
export interface ClusterControlDeps {
  config: KubernetesConfig;
  runtime: Runtime;
  policies: KubernetesPolicyStore;
  /** The rates and live thresholds every replica serves (the leader publishes them in status). */
  overrides: OverrideSource;
  metrics: ControlPlaneMetrics;
  /** This replica became leader: what it adapted in an earlier term may since have been replaced by another leader's. */
  onStartedLeading: () => void;
}

/** Leader election, the WasmPlugin sync and the status writer, running. */
export interface ClusterControl {
  /** Absent when leader election is off (every replica then acts). */
  elector: LeaderElector | undefined;
  sync: KubernetesSync;
  statusWriter: PolicyStatusWriter;
  /** True unless leader election runs and this replica does not hold the Lease. */
  leading(): boolean;
  /** Adaptive sampling changed a policy's rates: reconcile, and (the leader) publish them in status. */
  adaptiveChanged(): void;
  /** The `kubernetes` and `leader` readiness checks. */
  readiness(): Record<string, ReadinessCheck>;
}

function electorFor(config: KubernetesConfig["leaderElection"], runtime: Runtime, hooks: { started: () => void; stopped: () => void }): LeaderElector {
  return new LeaderElector({
    api: new ClientNodeLeaseApi(runtime.kubeConfig()),
    settings: {
      namespace: config.namespace,
      leaseName: config.leaseName,
      identity: config.identity === "" ? hostname() : config.identity,
      leaseDurationMs: config.leaseDurationSeconds * 1000,
      renewDeadlineMs: config.renewDeadlineSeconds * 1000,
      retryPeriodMs: config.retryPeriodSeconds * 1000,
    },
    now: runtime.nowMs,
    monotonicMs: runtime.monotonicMs,
    delay: runtime.delay,
    onStartedLeading: hooks.started,
    onStoppedLeading: hooks.stopped,
    onNewLeader: (identity) => runtime.log({ msg: "leader", lease: `${config.namespace}/${config.leaseName}`, holder: identity === "" ? "none" : identity }),
    log: runtime.log,
  });
}

/** Starts the election (when enabled), the WasmPlugin sync and the leader's periodic status writes. */
export function startClusterControl(deps: ClusterControlDeps): ClusterControl {
  const { config, runtime, policies, overrides } = deps;
  // The elector calls back only once started, after the sync below exists.
  const elector = config.leaderElection.enabled
    ? electorFor(config.leaderElection, runtime, {
        started: () => {
          deps.onStartedLeading();
          running.leadershipChanged();
        },
        stopped: () => running.leadershipChanged(),
      })
    : undefined;
  const leading = (): boolean => elector === undefined || elector.isLeader();
  const running = startKubernetesSync({
    config,
    store: policies,
    overrides,
    metrics: deps.metrics,
    kubeConfig: runtime.kubeConfig(),
    delay: runtime.delay,
    now: runtime.nowMs,
    log: runtime.log,
    ...(elector === undefined ? {} : { isLeader: () => elector.isLeader() }),
  });
  elector?.start();
  runtime.ticker.every("resync", config.resyncSeconds * 1000, () => running.resync());
  runtime.ticker.every("reconcile-lag", 1000, () => running.reconciler.lagSeconds());
  const statusWriter = new PolicyStatusWriter({ api: samplingPolicyApi(runtime), store: policies, wasmPlugins: () => running.informer.cache, overrides, now: runtime.now, log: runtime.log });
  // Only the leader writes status, so replicas never fight over it.
  runtime.ticker.every("policy-status", 2000, () => (leading() && policies.informer.hasSynced ? statusWriter.sync() : undefined));
  return {
    elector,
    sync: running,
    statusWriter,
    leading,
    adaptiveChanged: () => {
      running.resync();
      // Followers serve the rates from the status the leader writes.
      if (leading()) void statusWriter.sync();
    },
    readiness: () => ({
      kubernetes: running.readiness(),
      // Followers are ready: they serve reads, pulls and writes; only reconciling waits for the lease.
      ...(elector === undefined ? {} : { leader: { ok: true, detail: elector.isLeader() ? "leading" : `following ${elector.leader === "" ? "(no leader yet)" : elector.leader}` } }),
    }),
  };
}
