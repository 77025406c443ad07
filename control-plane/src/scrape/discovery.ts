// Pod discovery: a PodSource reports pod adds, updates and deletes; `PodTargetDiscovery` turns them
// into the current target set. The Kubernetes source is @kubernetes/client-node's list+watch
// informer (resourceVersion, re-list on 410 Gone, handled by the client); an error restarts it
// after a capped backoff on an injectable clock.
import { CoreV1Api, makeInformer, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import type { Clock } from "../remote-write/retry.js";
import { targetsForPod, type PodTargetRules, type ScrapeTarget } from "./targets.js";
import { PodIpIndex } from "./pod-ips.js";

/** Pod events, whatever produces them. */
export interface PodSource {
  start(handler: PodEventHandler): Promise<void>;
  stop(): Promise<void>;
}

/** Receives pod events. */
export interface PodEventHandler {
  upsert(pod: V1Pod): void;
  remove(pod: V1Pod): void;
}

/** Options of the Kubernetes pod source. */
export interface KubernetesPodSourceOptions {
  kubeConfig: KubeConfig;
  /** Watch one namespace, or all when undefined. */
  namespace?: string;
  labelSelector?: string;
  clock: Clock;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  onError?: (err: unknown) => void;
}

/** Pods from the Kubernetes API through client-node's informer. */
export class KubernetesPodSource implements PodSource {
  private informer: ReturnType<typeof makeInformer<V1Pod>> | undefined;
  private stopped = false;
  private failures = 0;
  private readonly stopSignal = new AbortController();

  constructor(private readonly opts: KubernetesPodSourceOptions) {}

  async start(handler: PodEventHandler): Promise<void> {
    const { kubeConfig, namespace, labelSelector } = this.opts;
    const api = kubeConfig.makeApiClient(CoreV1Api);
    const path = namespace ? `/api/v1/namespaces/${namespace}/pods` : "/api/v1/pods";
    const list = namespace
      ? () => api.listNamespacedPod({ namespace, ...(labelSelector ? { labelSelector } : {}) })
      : () => api.listPodForAllNamespaces(labelSelector ? { labelSelector } : {});
    const informer = makeInformer<V1Pod>(kubeConfig, path, list, labelSelector);
    informer.on("add", (p) => {
      this.failures = 0;
      handler.upsert(p);
    });
    informer.on("update", (p) => handler.upsert(p));
    informer.on("delete", (p) => handler.remove(p));
    informer.on("error", (err) => {
      this.opts.onError?.(err);
      void this.restartLater();
    });
    this.informer = informer;
    await informer.start();
  }

  private async restartLater(): Promise<void> {
    if (this.stopped || !this.informer) return;
    const min = this.opts.minBackoffMs ?? 500;
    const max = this.opts.maxBackoffMs ?? 30_000;
    const delay = Math.min(max, min * 2 ** Math.min(this.failures++, 20));
    await this.opts.clock.sleep(delay, this.stopSignal.signal);
    if (this.stopped) return;
    await this.informer.start().catch((err: unknown) => {
      this.opts.onError?.(err);
      void this.restartLater();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    await this.informer?.stop();
  }
}

/** An in-memory pod source for tests and for running without a cluster. */
export class InMemoryPodSource implements PodSource {
  private handler: PodEventHandler | undefined;
  constructor(private readonly initial: V1Pod[] = []) {}
  async start(handler: PodEventHandler): Promise<void> {
    this.handler = handler;
    for (const p of this.initial) handler.upsert(p);
  }
  async stop(): Promise<void> {
    this.handler = undefined;
  }
  upsert(pod: V1Pod): void {
    this.handler?.upsert(pod);
  }
  remove(pod: V1Pod): void {
    this.handler?.remove(pod);
  }
}

/** Keeps the targets of every known pod and reports the whole set whenever it changes. */
export class PodTargetDiscovery implements PodEventHandler {
  private readonly byPod = new Map<string, ScrapeTarget[]>();
  /** Every Running pod's IP, scraped or not (a waypoint's destination pods need no target of their own). */
  readonly podIps = new PodIpIndex();

  constructor(private readonly rules: PodTargetRules, private readonly onChange: (targets: ScrapeTarget[]) => void) {}

  upsert(pod: V1Pod): void {
    const key = `${pod.metadata?.namespace ?? "default"}/${pod.metadata?.name ?? ""}`;
    this.podIps.upsert(pod);
    const next = targetsForPod(pod, this.rules);
    const prev = this.byPod.get(key) ?? [];
    if (JSON.stringify(prev) === JSON.stringify(next)) return;
    if (next.length === 0) this.byPod.delete(key);
    else this.byPod.set(key, next);
    this.onChange(this.targets());
  }

  remove(pod: V1Pod): void {
    const key = `${pod.metadata?.namespace ?? "default"}/${pod.metadata?.name ?? ""}`;
    this.podIps.remove(pod);
    if (this.byPod.delete(key)) this.onChange(this.targets());
  }

  /** Every discovered target. */
  targets(): ScrapeTarget[] {
    return [...this.byPod.values()].flat();
  }
}
