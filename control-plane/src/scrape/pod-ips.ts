// Which pod holds an IP, from the pods discovery sees: a waypoint's stats name the pod a request
// went to by its IP (the filter's `pod_ip`), and the join needs that pod's namespace, name and node.
import type { V1Pod } from "@kubernetes/client-node";

/** A pod an IP resolves to. */
export interface PodAtIp {
  namespace: string;
  pod: string;
  node?: string;
}

/** Longest IP text kept as a key (an IPv6 address with a zone is under 64 characters). */
const MAX_IP_LENGTH = 64;

/**
 * IP -> pod, for Running pods with their own IP. A host-network pod shares its node's IP with every
 * other host-network pod there, so it is left out: its IP names no single pod. Two pods claiming
 * one IP (the informer delivering a new pod before the delete of the old one that had the IP) are
 * both kept, and the IP resolves to none of them until one goes.
 */
export class PodIpIndex {
  private readonly byIp = new Map<string, Map<string, PodAtIp>>();
  private readonly ipsOfPod = new Map<string, string[]>();

  /** Pods indexed (for diagnostics and tests). */
  get size(): number {
    return this.ipsOfPod.size;
  }

  /** Records `pod`'s current IPs (both families on a dual-stack pod), or forgets them when it is not Running or is going. */
  upsert(pod: V1Pod): void {
    const key = keyOf(pod);
    const name = pod.metadata?.name;
    const ips = [...new Set([pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((p) => p.ip)])].filter((ip): ip is string => typeof ip === "string" && ip !== "" && ip.length <= MAX_IP_LENGTH).slice(0, 2);
    const usable = name && ips.length > 0 && pod.status?.phase === "Running" && !pod.metadata?.deletionTimestamp && pod.spec?.hostNetwork !== true;
    this.drop(key);
    if (!usable) return;
    const node = pod.spec?.nodeName;
    const at: PodAtIp = { namespace: pod.metadata?.namespace ?? "default", pod: name, ...(node ? { node } : {}) };
    for (const ip of ips) {
      let holders = this.byIp.get(ip);
      if (!holders) this.byIp.set(ip, (holders = new Map()));
      holders.set(key, at);
    }
    this.ipsOfPod.set(key, ips);
  }

  /** Forgets a deleted pod. */
  remove(pod: V1Pod): void {
    this.drop(keyOf(pod));
  }

  /** The one pod holding `ip`, or undefined (unknown, or claimed by two). */
  resolve(ip: string): PodAtIp | undefined {
    const holders = this.byIp.get(ip);
    if (!holders || holders.size !== 1) return undefined;
    return holders.values().next().value;
  }

  private drop(key: string): void {
    const ips = this.ipsOfPod.get(key);
    if (ips === undefined) return;
    this.ipsOfPod.delete(key);
    for (const ip of ips) {
      const holders = this.byIp.get(ip);
      holders?.delete(key);
      if (holders?.size === 0) this.byIp.delete(ip);
    }
  }
}

const keyOf = (pod: V1Pod): string => `${pod.metadata?.namespace ?? "default"}/${pod.metadata?.name ?? ""}`;
