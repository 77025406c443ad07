// Kubernetes mode wiring: informer + reconciler over the policy store and adaptive overrides.
// The file store stays the record of policies and history; the reconciler makes the cluster's
// WasmPlugins (what Istio delivers to the filters over ECDS) follow it.
import type { KubeConfig } from "@kubernetes/client-node";
import type { ReadinessCheck } from "../app.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import { configVersion, effectiveConfig, type OverrideSource } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import { Backoff, type Delay } from "./backoff.js";
import type { KubernetesConfig } from "./config.js";
import { ClientNodeWasmPluginApi, type WasmPluginApi } from "./wasmplugin-client.js";
import { WasmPluginInformer } from "./informer.js";
import { WasmPluginReconciler } from "./reconciler.js";
import { validatePolicy } from "../policy/validate.js";
import { desiredWasmPlugin, keyOf, ownedSelector, policyAnnotation, type WasmPlugin } from "./wasmplugin.js";

/** What Kubernetes mode needs. */
export interface KubernetesSyncDeps {
  config: Pick<KubernetesConfig, "namespace" | "wasmPlugin" | "backoff"> & Partial<Pick<KubernetesConfig, "contentWasmPlugin">>;
  store: PolicyRepository;
  overrides: OverrideSource;
  metrics: ControlPlaneMetrics;
  /** Either a ready API (tests may wrap one) or a KubeConfig to build the client-node one from. */
  api?: WasmPluginApi;
  kubeConfig?: KubeConfig;
  delay: Delay;
  now: () => number;
  random?: () => number;
  log?: (record: object) => void;
  /**
   * Whether this replica is the leader (holds the Lease); only the leader adopts and writes.
   * Defaults to always (one replica). Call {@link KubernetesSync.leadershipChanged} when it flips.
   */
  isLeader?: () => boolean;
}

/** The running sync. */
export interface KubernetesSync {
  informer: WasmPluginInformer;
  reconciler: WasmPluginReconciler;
  readiness(): ReadinessCheck;
  /** Compare everything again (policy or override change, periodic resync). */
  resync(): void;
  /** Leadership was gained or lost: start (adopting first, once) or stop writing. */
  leadershipChanged(): void;
  stop(): Promise<void>;
}

/** Desired WasmPlugins for every policy the sync manages. */
export function desiredState(deps: Pick<KubernetesSyncDeps, "config" | "store" | "overrides">): Map<string, WasmPlugin> {
  const out = new Map<string, WasmPlugin>();
  for (const record of deps.store.list()) {
    if (deps.config.namespace !== "" && record.policy.target.namespace !== deps.config.namespace) continue;
    const config = effectiveConfig(record.policy, deps.overrides(record.policy.name));
    const object = desiredWasmPlugin(record, config, configVersion(record.policy.name, config), deps.config.wasmPlugin, deps.config.contentWasmPlugin);
    out.set(keyOf(object.metadata.namespace, object.metadata.name), object);
  }
  return out;
}

/** Who imported policies found only in the cluster, in audit lines and history. */
export const importPrincipal = "kubernetes-import";

/**
 * Adds to the store every policy carried by an owned WasmPlugin that the store has never known
 * (no history): the cluster is the source of truth when the control plane lost its disk.
 * Policies the store knows it deleted are not re-imported; the reconciler removes them.
 */
export async function adoptFromCluster(store: PolicyRepository, objects: Iterable<WasmPlugin>, log?: (record: object) => void): Promise<string[]> {
  const adopted: string[] = [];
  for (const object of objects) {
    const text = object.metadata.annotations?.[policyAnnotation];
    if (text === undefined) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      continue;
    }
    const result = validatePolicy(parsed);
    if (!result.ok) {
      log?.({ level: "warn", msg: "owned WasmPlugin carries an invalid policy; it will be removed", wasmplugin: keyOf(object.metadata.namespace, object.metadata.name) });
      continue;
    }
    if ((await store.history(result.policy.name)) !== undefined) continue;
    const written = await store.create(result.policy, { by: importPrincipal });
    if (written.ok) adopted.push(result.policy.name);
  }
  if (adopted.length > 0) log?.({ msg: "adopted policies from WasmPlugins", policies: adopted });
  return adopted;
}

/** Starts the informer and the reconciler, and subscribes to policy changes. */
export function startKubernetesSync(deps: KubernetesSyncDeps): KubernetesSync {
  const api = deps.api ?? new ClientNodeWasmPluginApi(deps.kubeConfig as KubeConfig);
  const isLeader = deps.isLeader ?? (() => true);
  const backoff = { initialMs: deps.config.backoff.initialMs, maxMs: deps.config.backoff.maxMs, random: deps.random };
  let adoption: "pending" | "running" | "done" = "pending";
  const informer = new WasmPluginInformer({
    api,
    namespace: deps.config.namespace === "" ? undefined : deps.config.namespace,
    labelSelector: ownedSelector,
    backoff: new Backoff(backoff.initialMs, backoff.maxMs, deps.random),
    delay: deps.delay,
    onChange: (key) => reconciler.enqueue(key),
    now: deps.now,
    onSynced: () => {
      if (!isLeader()) return;
      if (adoption === "done") reconciler.enqueueAll();
      else if (adoption === "pending") adopt();
    },
    log: deps.log,
  });
  const reconciler = new WasmPluginReconciler({
    api,
    informer,
    desired: () => desiredState(deps),
    metrics: deps.metrics,
    delay: deps.delay,
    backoff,
    now: deps.now,
    log: deps.log,
    canWrite: () => informer.hasSynced && adoption === "done",
    active: isLeader,
  });
  // Until adoption finished, owned WasmPlugins unknown to the store would look like orphans, so
  // the reconciler does not write; a failed adoption (store write error) is retried, never skipped.
  const adopt = (): void => {
    adoption = "running";
    adoptFromCluster(deps.store, [...informer.cache.values()], deps.log).then(
      () => {
        adoption = "done";
        reconciler.enqueueAll();
        reconciler.poke();
      },
      (error: unknown) => {
        adoption = "pending";
        deps.log?.({ level: "error", msg: "adopting policies failed; retrying", error: String(error) });
        void deps.delay(deps.config.backoff.maxMs).then(() => (adoption === "pending" && isLeader() ? adopt() : undefined));
      },
    );
  };
  const unsubscribe = deps.store.onChange(() => reconciler.enqueueAll());
  informer.start();
  reconciler.start();
  return {
    informer,
    reconciler,
    readiness: () => reconciler.readiness(),
    resync: () => reconciler.enqueueAll(),
    leadershipChanged() {
      if (!isLeader()) {
        reconciler.deactivate();
        return;
      }
      if (!informer.hasSynced) return; // onSynced starts the work
      if (adoption === "pending") adopt();
      else if (adoption === "done") reconciler.activate();
    },
    async stop() {
      unsubscribe();
      await informer.stop();
      await reconciler.stop();
    },
  };
}
