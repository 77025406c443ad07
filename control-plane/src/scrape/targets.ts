// Scrape targets: the static list (the embedded default) and the ones Kubernetes pods imply.
import type { V1Pod } from "@kubernetes/client-node";

/** What a target exposes, which decides how the join treats its series. */
export type TargetKind = "envoy" | "dcgm" | "vllm" | "static";

/** One endpoint to scrape. */
export interface ScrapeTarget {
  /** Unique and stable: kind, URL and pod together (see `targetId`). */
  id: string;
  kind: TargetKind;
  url: string;
  intervalMs: number;
  timeoutMs: number;
  /** The pod the series belong to (Envoy and vLLM scrapes are per pod: identity comes from here). */
  namespace?: string;
  pod?: string;
  /** The node the pod runs on (dcgm-exporter's node, for the node-level fallback). */
  node?: string;
  /**
   * Read through Istio's metrics merging (pilot-agent's status port): the answer also holds the
   * agent's and Envoy's series, which the scrape sets apart (see `merged.ts`).
   */
  merged?: true;
  /**
   * An Istio waypoint's Envoy: its series belong to the pods it sent requests to (the filter's
   * `pod_ip` label), not to the waypoint pod, so the pipeline splits them by destination pod
   * (join/waypoint-split.ts) and every replica scrapes it (pipeline/index.ts).
   */
  waypoint?: true;
  /**
   * Set on the per-destination part of a waypoint's scrape: the waypoint pod ("namespace/pod") the
   * series came through. Its `namespace`, `pod` and `node` are the destination pod's.
   */
  viaWaypoint?: string;
}

/**
 * A target's identity: kind, URL and pod. Two targets differing in any of them are scraped,
 * reported (`up`) and staled apart, as Prometheus tells targets apart by labels and URL
 * (scrape/target.go, Target.hash).
 */
export function targetId(kind: TargetKind, url: string, namespace?: string, pod?: string): string {
  return `${kind}|${url}|${namespace ?? ""}/${pod ?? ""}`;
}

/** A static target as configured. */
export interface StaticTargetConfig {
  url: string;
  kind: TargetKind;
  namespace?: string;
  pod?: string;
  node?: string;
  intervalMs?: number;
  timeoutMs?: number;
}

/** How pods become targets. */
export interface PodTargetRules {
  /** Scrape Istio sidecars (`:15090/stats/prometheus`). */
  envoy: boolean;
  /** Scrape dcgm-exporter pods (`:9400/metrics`). */
  dcgm: boolean;
  /** Scrape model servers (vLLM, SGLang, TGI): pods annotated `tokentrace.io/vllm-metrics-port`. */
  vllm: boolean;
  intervalMs: number;
  timeoutMs: number;
}

/**
 * The annotation that opts a model-server pod (vLLM, SGLang or TGI) into engine scraping; its value
 * is the metrics port, or several comma-separated for a pod running several servers (one per model).
 */
export const VLLM_PORT_ANNOTATION = "tokentrace.io/vllm-metrics-port";
const ENVOY_PORT = 15090;
const DCGM_PORT = 9400;
/** The istio-proxy container's env var holding the scrape configuration the injector moved there. */
const ISTIO_PROMETHEUS_ANNOTATIONS = "ISTIO_PROMETHEUS_ANNOTATIONS";
/** Longest ISTIO_PROMETHEUS_ANNOTATIONS read (it comes from the pod spec, so from outside the process). */
const MAX_MERGE_CONFIG_BYTES = 4096;

function hasIstioSidecar(pod: V1Pod): boolean {
  if (pod.metadata?.annotations?.["sidecar.istio.io/status"] !== undefined) return true;
  // Native sidecars (Kubernetes >= 1.28) run istio-proxy as a restartable init container.
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some((c) => c.name === "istio-proxy");
}

/**
 * An Istio waypoint's pod. Istio's gateway deployment controller renders waypoints from the
 * `waypoint` template with the label gateway.istio.io/managed = "istio.io-mesh-controller" (istio/istio
 * 86c9f01f manifests/charts/istio-control/istio-discovery/files/waypoint.yaml, the pod template's
 * labels; the value is pkg/config/constants/constants.go ManagedGatewayMeshControllerLabel, set as
 * the mesh controller's ControllerLabel in pilot/pkg/config/kube/gatewaycommon/classinfo.go), the
 * label istiod itself reads to tell a waypoint (pilot/pkg/serviceregistry/ambient/ambientindex.go).
 */
export function isIstioWaypoint(pod: V1Pod): boolean {
  return pod.metadata?.labels?.[WAYPOINT_MANAGED_LABEL] === WAYPOINT_MANAGED_VALUE;
}
/** The label and value Istio puts on every waypoint pod it deploys (see `isIstioWaypoint`). */
export const WAYPOINT_MANAGED_LABEL = "gateway.istio.io/managed";
export const WAYPOINT_MANAGED_VALUE = "istio.io-mesh-controller";

function isDcgmExporter(pod: V1Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  if (labels["app.kubernetes.io/name"] === "dcgm-exporter" || labels["app"] === "nvidia-dcgm-exporter" || labels["app"] === "dcgm-exporter") return true;
  return (pod.spec?.containers ?? []).some((c) => c.name === "nvidia-dcgm-exporter" || c.name === "dcgm-exporter");
}

/**
 * Istio's metrics merging on a pod: pilot-agent's endpoint and the application ports it reads.
 * The injector moves the pod's prometheus.io annotations into the sidecar's
 * ISTIO_PROMETHEUS_ANNOTATIONS and points them at the agent's status port (istio/istio 86c9f01f
 * pkg/kube/inject/webhook.go applyPrometheusMerge); the agent reads `targets`, else `port` (default
 * 80) (pilot/cmd/pilot-agent/status/server.go NewServer) over the pod's localhost, which STRICT mTLS
 * does not touch, while the status port is excluded from inbound capture.
 */
export function istioMetricsMerge(pod: V1Pod): { port: number; path: string; appPorts: Set<number> } | undefined {
  const proxy = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((c) => c.name === "istio-proxy");
  const raw = proxy?.env?.find((e) => e.name === ISTIO_PROMETHEUS_ANNOTATIONS)?.value;
  if (raw === undefined || raw.length > MAX_MERGE_CONFIG_BYTES) return undefined;
  let config: { scrape?: unknown; port?: unknown; targets?: unknown };
  try {
    config = JSON.parse(raw) as typeof config;
  } catch {
    return undefined;
  }
  if (typeof config !== "object" || config === null || config.scrape === "false") return undefined;
  const appPorts = new Set<number>();
  const portOf = (value: unknown): number | undefined => (typeof value === "string" && /^\d{1,5}$/.test(value) && Number(value) >= 1 && Number(value) <= 65535 ? Number(value) : undefined);
  if (Array.isArray(config.targets) && config.targets.length > 0) {
    for (const t of config.targets.slice(0, 64) as { port?: unknown }[]) {
      const port = portOf(t?.port);
      if (port !== undefined) appPorts.add(port);
    }
  } else {
    const port = portOf(config.port === undefined || config.port === "" ? "80" : config.port);
    if (port !== undefined) appPorts.add(port);
  }
  // Where Prometheus would scrape the pod now: the rewritten annotations (the agent's status port).
  const annotations = pod.metadata?.annotations ?? {};
  const port = portOf(annotations["prometheus.io/port"] ?? "15020");
  const path = annotations["prometheus.io/path"] ?? "/stats/prometheus";
  if (port === undefined || !/^\/[\x21-\x7e]{0,255}$/.test(path) || path.includes("?") || path.includes("#")) return undefined;
  return { port, path, appPorts };
}

/** The targets one pod implies (none until it is Running with an IP). */
export function targetsForPod(pod: V1Pod, rules: PodTargetRules): ScrapeTarget[] {
  const ns = pod.metadata?.namespace ?? "default";
  const name = pod.metadata?.name;
  const ip = pod.status?.podIP;
  if (!name || !ip || pod.status?.phase !== "Running" || pod.metadata?.deletionTimestamp) return [];
  const host = ip.includes(":") ? `[${ip}]` : ip;
  const base = { intervalMs: rules.intervalMs, timeoutMs: rules.timeoutMs, namespace: ns, pod: name };
  const node = pod.spec?.nodeName;
  const withNode = node ? { node } : {};
  const out: ScrapeTarget[] = [];
  // A waypoint runs istio-proxy as a plain container serving Envoy's stats on 15090, named
  // http-envoy-prom, as a sidecar does (waypoint.yaml, container istio-proxy's ports); its 15020
  // is pilot-agent's merged endpoint, which adds the agent's series to Envoy's.
  const waypoint = isIstioWaypoint(pod);
  if (rules.envoy && (waypoint || hasIstioSidecar(pod))) {
    const url = `http://${host}:${ENVOY_PORT}/stats/prometheus`;
    out.push({ id: targetId("envoy", url, ns, name), kind: "envoy", url, ...base, ...withNode, ...(waypoint ? { waypoint: true as const } : {}) });
  }
  if (rules.dcgm && isDcgmExporter(pod)) {
    const url = `http://${host}:${DCGM_PORT}/metrics`;
    out.push({ id: targetId("dcgm", url, ns, name), kind: "dcgm", url, ...base, ...withNode });
  }
  const vllmPorts = pod.metadata?.annotations?.[VLLM_PORT_ANNOTATION];
  if (rules.vllm && vllmPorts !== undefined && /^\d{1,5}(,\d{1,5})*$/.test(vllmPorts)) {
    // A sidecar's application ports are captured (and refuse plaintext under STRICT mTLS): the
    // engine ports metrics merging covers are read through pilot-agent, in one scrape.
    const merge = hasIstioSidecar(pod) ? istioMetricsMerge(pod) : undefined;
    let merged = false;
    for (const port of new Set(vllmPorts.split(","))) {
      if (merge?.appPorts.has(Number(port))) {
        merged = true;
        continue;
      }
      const url = `http://${host}:${port}/metrics`;
      out.push({ id: targetId("vllm", url, ns, name), kind: "vllm", url, ...base, ...withNode });
    }
    if (merge !== undefined && merged) {
      const url = `http://${host}:${merge.port}${merge.path}`;
      out.push({ id: targetId("vllm", url, ns, name), kind: "vllm", url, ...base, ...withNode, merged: true });
    }
  }
  return out;
}

/** Static targets with defaults filled in. */
export function staticTargets(configs: StaticTargetConfig[], defaults: { intervalMs: number; timeoutMs: number }): ScrapeTarget[] {
  return configs.map((c) => {
    const t: ScrapeTarget = { id: targetId(c.kind, c.url, c.namespace, c.pod), kind: c.kind, url: c.url, intervalMs: c.intervalMs ?? defaults.intervalMs, timeoutMs: c.timeoutMs ?? defaults.timeoutMs };
    if (c.namespace !== undefined) t.namespace = c.namespace;
    if (c.pod !== undefined) t.pod = c.pod;
    if (c.node !== undefined) t.node = c.node;
    return t;
  });
}
