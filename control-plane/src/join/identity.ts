// The identity stage: which GPUs each pod uses, settled once per pod and then kept while the pod's
// targets live, so a filter series never changes labels mid-life. A pod's scrapes are held (the
// newest one per target, not shipped) until its identity is known or known to be absent: known as
// soon as a dcgm-exporter maps the pod; known-absent once every dcgm-exporter that could map it
// (same node, or node unknown) has answered a scrape that started after the pod was first seen; or,
// when those exporters keep failing, after `identityWaitMs` (counted: the one case where a later
// restart may label the pod's series differently). The filter's series are counters and
// histograms, so a held scrape that a newer one replaces loses nothing a rate() needs.
import type { Labels } from "../scrape/sample.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import type { WriteSeries } from "../remote-write/series.js";
import { GpuIndex, type ExporterLabelNote } from "./gpu-index.js";

/** A pod's settled GPU identity (sticky while its targets live). */
export interface PodIdentity {
  /** "namespace/pod". */
  key: string;
  /** What the pod's forwarded series get: namespace, pod and the GPU labels (or the node's hostname). */
  labels: Labels;
  gpuKeys: string[];
}

/** A scrape leaving the identity stage, with its pod's settled identity (none for dcgm-exporter and pod-less targets). */
export interface Admitted {
  result: ScrapeResult;
  /** `up` and `scrape_duration_seconds` of that scrape (already shipped when it was held). */
  report: WriteSeries[];
  pod: PodIdentity | undefined;
}

/** What derivations may read of the identity stage. */
export interface IdentityView {
  readonly index: GpuIndex;
  /** The settled identity of a pod, if settled. */
  identityOf(podKey: string): PodIdentity | undefined;
  /** Pods whose settled identity includes a GPU. */
  podsWithGpu(gpuKey: string): ReadonlySet<string> | undefined;
}

/** Identity stage settings. */
export interface IdentityOptions {
  identityWaitMs: number;
  onIdentityTimeout?: (() => void) | undefined;
  /** Called when a dcgm-exporter's label spellings (other than its defaults) change, first scrape included. */
  onExporterLabels?: ((target: ScrapeTarget, notes: ReadonlySet<ExporterLabelNote>) => void) | undefined;
}

interface PodState {
  namespace: string;
  pod: string;
  node?: string;
  /** First scrape time of any of its targets while unresolved. */
  firstSeenMs: number;
  identity?: PodIdentity;
  /** Newest held scrape per target id, with the report already shipped for it. */
  held: Map<string, { result: ScrapeResult; report: WriteSeries[] }>;
}

interface ExporterState {
  node?: string;
  /** Start time of its latest successful scrape. */
  lastOkMs?: number;
  /** Its label spellings other than the default at its latest scrape, sorted and joined. */
  labelNotes?: string;
}

/** "namespace/pod" of a target that belongs to a pod. */
export const podKeyOf = (t: ScrapeTarget): string | undefined => (t.namespace && t.pod ? `${t.namespace}/${t.pod}` : undefined);

/**
 * A pod's series source: the pod, or the pod as a waypoint saw it (a pod reached through two waypoint
 * replicas has two sources, each with its own counters, never mixed in one rate).
 */
export const sourceKeyOf = (t: ScrapeTarget, podKey: string): string => (t.viaWaypoint === undefined ? podKey : `${podKey}\xff${t.viaWaypoint}`);

/** The labels naming a derived series' pod: namespace and pod, and the waypoint it was seen through, if any. */
export function podLabelsOf(t: ScrapeTarget): Labels {
  const labels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
  if (t.viaWaypoint !== undefined) labels.push("waypoint", t.viaWaypoint);
  return labels;
}

/** Holds each pod's scrapes until its GPU identity is settled; keeps the GPU index of every dcgm-exporter. */
export class IdentityStage implements IdentityView {
  readonly index = new GpuIndex();
  private readonly exporters = new Map<string, ExporterState>();
  private readonly pods = new Map<string, PodState>();
  /** GPU key -> pods whose settled identity includes it. */
  private readonly podsByGpu = new Map<string, Set<string>>();

  constructor(private readonly options: IdentityOptions) {}

  /** Pods whose scrapes are held waiting for their GPU identity. */
  get pendingPods(): number {
    let n = 0;
    for (const p of this.pods.values()) if (!p.identity) n++;
    return n;
  }

  /** How many dcgm-exporters' latest scrape used each label spelling other than the default. */
  exporterLabelNoteCounts(): Map<ExporterLabelNote, number> {
    const out = new Map<ExporterLabelNote, number>();
    for (const e of this.exporters.values()) {
      if (!e.labelNotes) continue;
      for (const n of e.labelNotes.split(",") as ExporterLabelNote[]) out.set(n, (out.get(n) ?? 0) + 1);
    }
    return out;
  }

  identityOf(podKey: string): PodIdentity | undefined {
    return this.pods.get(podKey)?.identity;
  }

  podsWithGpu(gpuKey: string): ReadonlySet<string> | undefined {
    return this.podsByGpu.get(gpuKey);
  }

  /** Learns the dcgm-exporters that could map pods (before their first scrape); returns scrapes this released. */
  setTargets(targets: readonly ScrapeTarget[]): Admitted[] {
    for (const t of targets) {
      if (t.kind !== "dcgm" || this.exporters.has(t.id)) continue;
      this.exporters.set(t.id, t.node === undefined ? {} : { node: t.node });
    }
    return this.resolvePending(undefined);
  }

  /** Forgets a target that went away; returns scrapes its going released (an exporter no longer awaited). */
  removeTarget(t: ScrapeTarget): Admitted[] {
    if (t.kind === "dcgm") {
      const gone = this.exporters.get(t.id);
      this.exporters.delete(t.id);
      // Its spellings leave with it: whoever shows them is told there are none.
      if (gone?.labelNotes) this.options.onExporterLabels?.(t, new Set());
      this.index.removeExporter(t.id);
      return this.resolvePending(undefined);
    }
    const podKey = podKeyOf(t);
    // A target of the pod went: the pod was deleted or restarted, so its identity is settled anew.
    if (podKey) this.forgetIdentity(podKey);
    return [];
  }

  /**
   * A successful scrape enters: a dcgm-exporter's updates the GPU index. Returns the scrape if it
   * passes now (dcgm-exporter, pod-less, or its pod settled), undefined if it is held.
   */
  admit(r: ScrapeResult, report: WriteSeries[]): Admitted | undefined {
    const t = r.target;
    const ts = r.timestampMs;
    if (t.kind === "dcgm") {
      const exporter = this.exporters.get(t.id) ?? {};
      if (t.node !== undefined) exporter.node = t.node;
      exporter.lastOkMs = ts;
      this.exporters.set(t.id, exporter);
      const notes = this.index.setExporter(t.id, r.samples).labelNotes;
      const text = [...notes].sort().join(",");
      const changed = text !== (exporter.labelNotes ?? "");
      exporter.labelNotes = text;
      if (changed) this.options.onExporterLabels?.(t, notes);
      return { result: r, report, pod: undefined };
    }
    const podKey = podKeyOf(t);
    if (!podKey) return { result: r, report, pod: undefined };
    let state = this.pods.get(podKey);
    if (!state) {
      state = { namespace: t.namespace!, pod: t.pod!, firstSeenMs: ts, held: new Map() };
      this.pods.set(podKey, state);
    }
    if (t.node !== undefined) state.node = t.node;
    if (state.identity) return { result: r, report, pod: state.identity };
    state.held.set(t.id, { result: r, report });
    return undefined;
  }

  /**
   * Held scrapes released by what `r` told: a dcgm-exporter's scrape may settle any pending pod (its
   * time lets the wait run out); a held pod scrape may settle its own pod. In time order per pod.
   */
  release(r: ScrapeResult): Admitted[] {
    const t = r.target;
    if (t.kind === "dcgm") return this.resolvePending(r.timestampMs);
    const podKey = podKeyOf(t);
    const state = podKey ? this.pods.get(podKey) : undefined;
    return podKey && state && !state.identity ? this.resolve(podKey, state, r.timestampMs) : [];
  }

  private forgetIdentity(podKey: string): void {
    const state = this.pods.get(podKey);
    if (!state) return;
    for (const key of state.identity?.gpuKeys ?? []) this.podsByGpu.get(key)?.delete(podKey);
    this.pods.delete(podKey);
  }

  /** Tries to settle every pending pod's identity; `now` (a scrape time) lets the wait run out. */
  private resolvePending(now: number | undefined): Admitted[] {
    const out: Admitted[] = [];
    for (const [podKey, state] of this.pods) if (!state.identity) out.push(...this.resolve(podKey, state, now));
    return out;
  }

  private resolve(podKey: string, state: PodState, now: number | undefined): Admitted[] {
    const mapped = (this.index.podGpus.get(podKey)?.size ?? 0) > 0;
    if (!mapped && !this.everyExporterAnswered(state) && !this.waitedOut(state, now)) return [];
    const { gpus, attribution } = this.index.gpusOfPod(state.namespace, state.pod, state.node);
    const labels: Labels = ["namespace", state.namespace, "pod", state.pod];
    if (gpus.length === 0) {
      if (state.node) labels.push("hostname", state.node);
    } else {
      // Several GPUs per pod: one series per filter series still, the GPUs listed in index order.
      labels.push(
        "gpu", gpus.map((g) => g.gpu).join(","),
        "gpu_uuid", gpus.map((g) => g.key).join(","),
        "gpu_model", [...new Set(gpus.map((g) => g.modelName))].join(","),
        "hostname", [...new Set(gpus.map((g) => g.hostname))].join(","),
        "gpu_count", String(gpus.length),
        "gpu_attribution", attribution,
      );
    }
    const identity: PodIdentity = { key: podKey, labels, gpuKeys: gpus.map((g) => g.key) };
    state.identity = identity;
    for (const key of identity.gpuKeys) {
      let set = this.podsByGpu.get(key);
      if (!set) this.podsByGpu.set(key, (set = new Set()));
      set.add(podKey);
    }
    const held = [...state.held.values()].sort((a, b) => a.result.timestampMs - b.result.timestampMs);
    state.held.clear();
    return held.map(({ result, report }) => ({ result, report, pod: identity }));
  }

  /** Whether every exporter that could map the pod has answered since the pod was first seen. */
  private everyExporterAnswered(state: PodState): boolean {
    for (const e of this.exporters.values()) {
      const couldMap = e.node === undefined || state.node === undefined || e.node === state.node;
      if (couldMap && (e.lastOkMs === undefined || e.lastOkMs < state.firstSeenMs)) return false;
    }
    return true;
  }

  private waitedOut(state: PodState, now: number | undefined): boolean {
    if (now === undefined || now - state.firstSeenMs < this.options.identityWaitMs) return false;
    this.options.onIdentityTimeout?.();
    return true;
  }
}
