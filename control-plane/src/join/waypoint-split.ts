// A waypoint's scrape, split by destination pod. On an ambient waypoint the filter labels its stats
// with the IP of the pod each request went to (`pod_ip`, filter/telemetry/metrics.ts TAG_POD_IP);
// each pod's series become a scrape of their own whose target is that pod (namespace, pod, node),
// so the join settles that pod's GPUs for them exactly as for a sidecar's scrape. The series keep
// the waypoint pod they came through as the label `waypoint`, so a pod's sidecar series and its
// waypoint series never share a label set. Series whose `pod_ip` resolves to no single known pod
// (`other`, a pod not discovered, one gone) stay with the waypoint's own target, joined to nothing.
import type { ParsedSample } from "../scrape/sample.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { PodAtIp } from "../scrape/pod-ips.js";
import type { ScrapeTarget } from "../scrape/targets.js";

/** The filter's destination-pod label (filter/telemetry/metrics.ts TAG_POD_IP). */
export const POD_IP_LABEL = "pod_ip";
/** The label naming the waypoint pod ("namespace/pod") on a destination pod's series. */
export const WAYPOINT_LABEL = "waypoint";
/**
 * Distinct `pod_ip` values kept per waypoint scrape: the filter's own cap on stats.maxDestinationPods
 * (filter/config/config.ts, 0..1024) plus its `other`. More can only come from something else
 * answering on the waypoint's port; they are dropped and counted.
 */
export const MAX_DESTINATIONS_PER_WAYPOINT = 1025;

/** One part of a waypoint's scrape. */
export interface WaypointPart {
  result: ScrapeResult;
  /** True for a destination pod's part; false for the waypoint's own (series without a resolvable pod_ip). */
  resolved: boolean;
}

/** What a waypoint's scrape split into. */
export interface WaypointSplit {
  /** The waypoint's own part first (always there: it carries the scrape's report), then one per destination pod, in pod order. */
  parts: WaypointPart[];
  /** Series of the waypoint's own part that carry a `pod_ip` resolving to no single pod. */
  unresolvedSeries: number;
  /** Series past MAX_DESTINATIONS_PER_WAYPOINT distinct pod_ip values. */
  droppedSeries: number;
}

/** The target of a destination pod's part: the pod itself, seen through `waypoint`. */
export function destinationTarget(waypoint: ScrapeTarget, pod: PodAtIp): ScrapeTarget {
  const via = `${waypoint.namespace ?? ""}/${waypoint.pod ?? ""}`;
  const t: ScrapeTarget = { id: `${waypoint.id}>${pod.namespace}/${pod.pod}`, kind: waypoint.kind, url: waypoint.url, intervalMs: waypoint.intervalMs, timeoutMs: waypoint.timeoutMs, namespace: pod.namespace, pod: pod.pod, viaWaypoint: via };
  if (pod.node !== undefined) t.node = pod.node;
  return t;
}

/** Splits a successful scrape of waypoint target `r.target` by the pod each series' `pod_ip` resolves to. */
export function splitWaypointScrape(r: ScrapeResult, resolve: (ip: string) => PodAtIp | undefined): WaypointSplit {
  const own: ParsedSample[] = [];
  const byPod = new Map<string, { target: ScrapeTarget; samples: ParsedSample[] }>();
  const podOfIp = new Map<string, string | undefined>();
  const via = `${r.target.namespace ?? ""}/${r.target.pod ?? ""}`;
  let unresolvedSeries = 0;
  let droppedSeries = 0;
  for (const s of r.samples) {
    const at = indexOfLabel(s, POD_IP_LABEL);
    if (at < 0) {
      own.push(s);
      continue;
    }
    const ip = s.labels[at + 1]!;
    let podKey = podOfIp.get(ip);
    if (podKey === undefined && !podOfIp.has(ip)) {
      if (podOfIp.size >= MAX_DESTINATIONS_PER_WAYPOINT) {
        droppedSeries++;
        continue;
      }
      const pod = resolve(ip);
      podKey = pod === undefined ? undefined : `${pod.namespace}/${pod.pod}`;
      podOfIp.set(ip, podKey);
      if (pod !== undefined && podKey !== undefined && !byPod.has(podKey)) byPod.set(podKey, { target: destinationTarget(r.target, pod), samples: [] });
    }
    if (podKey === undefined) {
      unresolvedSeries++;
      own.push(s);
      continue;
    }
    // The pod is the target now: its IP would only repeat it (and change when the pod is replaced).
    const labels = [...s.labels.slice(0, at), ...s.labels.slice(at + 2), WAYPOINT_LABEL, via];
    byPod.get(podKey)!.samples.push({ ...s, labels });
  }
  const part = (target: ScrapeTarget, samples: ParsedSample[]): ScrapeResult => ({ ...r, target, samples });
  const parts: WaypointPart[] = [{ result: part(r.target, own), resolved: false }];
  for (const key of [...byPod.keys()].sort()) {
    const p = byPod.get(key)!;
    parts.push({ result: part(p.target, p.samples), resolved: true });
  }
  return { parts, unresolvedSeries, droppedSeries };
}

function indexOfLabel(s: ParsedSample, name: string): number {
  for (let i = 0; i < s.labels.length; i += 2) if (s.labels[i] === name) return i;
  return -1;
}
