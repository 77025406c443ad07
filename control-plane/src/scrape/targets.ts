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

function hasIstioSidecar(pod: V1Pod): boolean {
  if (pod.metadata?.annotations?.["sidecar.istio.io/status"] !== undefined) return true;
  // Native sidecars (Kubernetes >= 1.28) run istio-proxy as a restartable init container.
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some((c) => c.name === "istio-proxy");
}

function isDcgmExporter(pod: V1Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  if (labels["app.kubernetes.io/name"] === "dcgm-exporter" || labels["app"] === "nvidia-dcgm-exporter" || labels["app"] === "dcgm-exporter") return true;
  return (pod.spec?.containers ?? []).some((c) => c.name === "nvidia-dcgm-exporter" || c.name === "dcgm-exporter");
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
  if (rules.envoy && hasIstioSidecar(pod)) {
    const url = `http://${host}:${ENVOY_PORT}/stats/prometheus`;
    out.push({ id: targetId("envoy", url, ns, name), kind: "envoy", url, ...base, ...withNode });
  }
  if (rules.dcgm && isDcgmExporter(pod)) {
    const url = `http://${host}:${DCGM_PORT}/metrics`;
    out.push({ id: targetId("dcgm", url, ns, name), kind: "dcgm", url, ...base, ...withNode });
  }
  const vllmPorts = pod.metadata?.annotations?.[VLLM_PORT_ANNOTATION];
  if (rules.vllm && vllmPorts !== undefined && /^\d{1,5}(,\d{1,5})*$/.test(vllmPorts)) {
    for (const port of new Set(vllmPorts.split(","))) {
      const url = `http://${host}:${port}/metrics`;
      out.push({ id: targetId("vllm", url, ns, name), kind: "vllm", url, ...base, ...withNode });
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
