// The dashboard's GPU health panels per pod, from the pipeline's joined batches (the series remote
// write ships and the Grafana row "GPU health and efficiency" queries), kept for the last hour: from
// each sidecar scrape's batch the pod's GPU state (utilisation beside SM, tensor and DRAM activity,
// activity per busy second, the spread across its cards) and which GPUs it uses; from each
// dcgm-exporter scrape's batch each GPU's health (throttle reasons, temperature, XIDs, memory errors).
// At each step of a range a pod's value is its newest point within the lookback (an instant selector
// at that step); throttling and temperature are the worst of the pod's GPUs.
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import * as C from "../join/catalogue.js";
import { labelNoteMessage, type ExporterLabelNote } from "../join/gpu-index.js";
import { ownCopy } from "../scrape/name-pool.js";

/**
 * The thresholds of the GPU alerts (tokentrace:gpu_threshold:parameter in
 * istio/observability/gpu-health-rules.yaml), drawn dashed on the panels.
 */
export const GPU_THRESHOLDS = {
  busyUtilizationPercent: 80,
  starvedActivityRatio: { sm_active: 0.5, tensor_dram: 0.3 },
  stragglerUtilizationSpreadPercent: 20,
  stragglerMemorySpreadRatio: 0.1,
} as const;

/** What each panel needs dcgm-exporter to export (its default counters file is NVIDIA/dcgm-exporter d5e5f51 etc/default-counters.csv). */
export const GPU_PANEL_NEEDS = {
  activity: "utilisation, tensor and DRAM activity come with dcgm-exporter's default counters; SM activity there is DCGM_FI_PROF_GR_ENGINE_ACTIVE until DCGM_FI_PROF_SM_ACTIVE is added to its counters file; SM occupancy needs DCGM_FI_PROF_SM_OCCUPANCY added",
  starved: "the default counters (judged on the tensor pipe and DRAM); with DCGM_FI_PROF_SM_ACTIVE added, on SM activity",
  stragglers: "the default counters, and a pod with two or more GPUs",
  throttling: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before dcgm-exporter 4.0.0) or DCGM_EXP_CLOCK_EVENTS_COUNT added to the counters file; temperature comes with the default counters",
  errors: "XIDs and row remapping come with the default counters; double-bit ECC counts and retired pages need their fields added",
} as const;

/** The columns of one pod's panels. */
export const GPU_COLUMNS = [
  "utilization",
  "smActive",
  "tensorActive",
  "dramActive",
  "smOccupancy",
  "activityWhileBusy",
  "utilizationSpreadPercent",
  "memorySpreadRatio",
  "thermalThrottled",
  "powerThrottled",
  "temperatureC",
] as const;
export type GpuColumn = (typeof GPU_COLUMNS)[number];

const THERMAL = new Set(["sw_thermal", "hw_thermal", "hw_slowdown"]);
const POWER = new Set(["power_cap", "hw_power_brake", "hw_slowdown"]);

/** One pod's GPU state at one sidecar scrape (means over its GPUs, the lowest activity per busy second). */
interface PodPoint {
  tMs: number;
  values: Partial<Record<GpuColumn, number>>;
  /** The pod's GPUs (sorted), the same array as the previous point's while they do not change. */
  gpus: readonly string[];
  /** podPointBytes of this point. */
  bytes: number;
}

/** One GPU's health at one exporter scrape. */
interface GpuPoint {
  tMs: number;
  thermal?: number;
  power?: number;
  temperatureC?: number;
}

/** A GPU's current problems, as the alerts name them. */
interface GpuNow {
  gpu: string;
  hostname: string;
  xids: { xid: string; xidClass: string }[];
  volatileDbe?: number;
  retiredPagesPending?: number;
  rowRemapFailed?: number;
}

/** The scrape a batch came from (a subset of the pipeline's ScrapeResult). */
export interface GpuBatchSource {
  target: { kind: string; namespace?: string; pod?: string; id: string };
  timestampMs: number;
}

export interface GpuPanelLimits {
  retentionMs: number;
  maxPods: number;
  maxGpus: number;
  maxPointsPerKey: number;
  /** What every pod's and GPU's points may hold together, estimated (podPointBytes, GPU_POINT_BYTES); the oldest go first. */
  maxBytes: number;
}

// An hour of 15 s scrapes of the most the counts allow, 64 pods with 8 GPUs each (240 points of 360
// bytes per pod, 240 of 150 per GPU), is 24 MB; at 2 s scrapes 32 MiB holds their last 11 minutes,
// or an hour of 8 such pods (the oldest points go first).
export const DEFAULT_GPU_LIMITS: GpuPanelLimits = { retentionMs: 3_600_000, maxPods: 64, maxGpus: 512, maxPointsPerKey: 8_000, maxBytes: 32 * 1024 * 1024 };

// What V8 (Node 20, x64, pointer compression) takes for a point, rounded up from a heap measurement
// (test/control-plane/dashboard/gpu-health-memory.test.ts checks the estimate stays above what the
// heap grows by): a pod point's object, its values' object with their boxed doubles, and its slot;
// its list of GPUs (shared with the pod's previous point while the pod keeps its GPUs: a new list's
// header, a slot per GPU and each UUID's copy); a GPU point's object and its boxed doubles.
const POD_POINT_BYTES = 360;
const GPU_LIST_BYTES = 40;
const GPU_NAME_BYTES = 100;
const GPU_POINT_BYTES = 150;
// A GPU's current state (held once per GPU, replaced at every exporter scrape): its object, its
// names and up to MAX_XIDS XIDs.
const GPU_NOW_BYTES = 300;
const XID_BYTES = 120;

/** XIDs kept per GPU (the newest scrape's; a GPU with more lists the first ones). */
export const MAX_XIDS = 16;

/** The estimated heap bytes of a pod point whose GPU list is `gpus` long, or shared with the point before it (`shared`). */
export function podPointBytes(gpus: number, shared: boolean): number {
  return POD_POINT_BYTES + (shared ? 0 : GPU_LIST_BYTES + gpus * (4 + GPU_NAME_BYTES));
}

const pointBytes = (p: PodPoint | GpuPoint): number => ("bytes" in p ? p.bytes : GPU_POINT_BYTES);

/** A pod with GPU data, with what its figures were measured on. */
export interface GpuPodKey {
  namespace: string;
  pod: string;
}

const podKeyOf = (k: GpuPodKey): string => `${k.namespace}\u0000${k.pod}`;
const mean = (v: number[]): number | undefined => (v.length > 0 ? v.reduce((a, b) => a + b, 0) / v.length : undefined);

/** dcgm-exporters whose label spellings the page lists at most (the self-metric tokentrace_join_dcgm_label_spellings counts them all). */
export const MAX_EXPORTER_NOTES = 32;

/** A dcgm-exporter that labels pods other than its default way, and what to do about it. */
export interface ExporterNoteRow {
  url: string;
  spelling: ExporterLabelNote;
  message: string;
}

/** Collects the GPU health panels' points from joined batches, bounded by `limits`. */
export class GpuHealthPanels {
  private readonly pods = new Map<string, { key: GpuPodKey; points: PodPoint[]; smSource?: string; basis?: string; gpuCount: number }>();
  private readonly gpus = new Map<string, { points: GpuPoint[]; now: GpuNow }>();

  /** Exporter URL -> its spellings other than the default, while it has any. */
  private readonly exporterNotes = new Map<string, ExporterLabelNote[]>();
  /** The estimated bytes of every point and every GPU's current state held. */
  private heldBytes = 0;
  private readonly limits: GpuPanelLimits;

  constructor(limits: Partial<GpuPanelLimits> = {}) {
    this.limits = { ...DEFAULT_GPU_LIMITS, ...limits };
  }

  /** What the points may hold together (limits.maxBytes). */
  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  /** The estimated bytes held (at most limits.maxBytes once a batch is taken). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** A dcgm-exporter's label spellings other than its defaults changed (none: back to them, or it went away). */
  noteExporterLabels(url: string, notes: ReadonlySet<ExporterLabelNote>): void {
    if (notes.size === 0) {
      this.exporterNotes.delete(url);
      return;
    }
    if (!this.exporterNotes.has(url) && this.exporterNotes.size >= MAX_EXPORTER_NOTES) return;
    this.exporterNotes.set(url, [...notes].sort());
  }

  /** What the page says about exporters labelled other than their default way, by URL. */
  exporterNoteRows(): ExporterNoteRow[] {
    return [...this.exporterNotes]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([url, notes]) => notes.map((spelling) => ({ url, spelling, message: labelNoteMessage(spelling, url) })));
  }

  /** Takes one joined batch: a sidecar's for its pod's GPU state, a dcgm-exporter's for GPU health. */
  observe(series: readonly WriteSeries[], source: GpuBatchSource): void {
    const kind = source.target.kind;
    const pod = kind === "envoy" || kind === "static" ? source.target.pod : undefined;
    if (kind !== "dcgm" && (!source.target.namespace || !pod)) return;
    // Those gone first, so a new pod or GPU may take the place of one whose points all expired.
    this.expire(source.timestampMs);
    if (kind === "dcgm") this.observeHealth(series, source.timestampMs);
    else this.observePod(series, { namespace: source.target.namespace!, pod: pod! }, source.timestampMs);
    this.trimToBudget();
  }

  private observePod(series: readonly WriteSeries[], key: GpuPodKey, tMs: number): void {
    const lists: Partial<Record<GpuColumn, number[]>> = {};
    const push = (c: GpuColumn, v: number): void => {
      (lists[c] ??= []).push(v);
    };
    const gpus = new Set<string>();
    let smSource: string | undefined;
    let basis: string | undefined;
    for (const s of series) {
      // The join writes its own series name first (forwarded ones carry it last): one comparison per forwarded series.
      if (s.labels[0] !== "__name__") continue;
      const name = s.labels[1]!;
      if (!name.startsWith("tokentrace_pod_gpu_")) continue;
      const sample = s.samples[s.samples.length - 1];
      if (!sample || sample.stale || !Number.isFinite(sample.value)) continue;
      const v = sample.value;
      switch (name) {
        case C.POD_GPU_INFO: {
          const uuid = labelValue(s.labels, "gpu_uuid");
          if (uuid) gpus.add(uuid);
          break;
        }
        case C.POD_GPU_UTILIZATION: push("utilization", v / 100); break;
        case C.POD_GPU_SM_ACTIVE: push("smActive", v); smSource = labelValue(s.labels, "source"); break;
        case C.POD_GPU_TENSOR_ACTIVE: push("tensorActive", v); break;
        case C.POD_GPU_DRAM_ACTIVE: push("dramActive", v); break;
        case C.POD_GPU_SM_OCCUPANCY: push("smOccupancy", v); break;
        case C.POD_GPU_ACTIVITY_WHILE_BUSY: push("activityWhileBusy", v); basis = labelValue(s.labels, "basis"); break;
        case C.POD_GPU_UTILIZATION_SPREAD: push("utilizationSpreadPercent", v); break;
        case C.POD_GPU_MEMORY_USED_SPREAD: push("memorySpreadRatio", v); break;
      }
    }
    if (gpus.size === 0) return;
    let entry = this.pods.get(podKeyOf(key));
    if (!entry) {
      if (this.pods.size >= this.limits.maxPods) return;
      this.pods.set(podKeyOf(key), (entry = { key: { namespace: ownCopy(key.namespace), pod: ownCopy(key.pod) }, points: [], gpuCount: 0 }));
    }
    const values: Partial<Record<GpuColumn, number>> = {};
    for (const [c, list] of Object.entries(lists) as [GpuColumn, number[]][]) {
      // The least active GPU is the starved one; the rest are means over the pod's GPUs.
      values[c] = c === "activityWhileBusy" ? Math.min(...list) : mean(list)!;
    }
    const sorted = [...gpus].sort();
    const previous = entry.points[entry.points.length - 1]?.gpus;
    const shared = previous !== undefined && previous.length === sorted.length && previous.every((g, i) => g === sorted[i]);
    const point: PodPoint = { tMs, values, gpus: shared ? previous : sorted.map(ownCopy), bytes: podPointBytes(sorted.length, shared) };
    entry.points.push(point);
    this.heldBytes += point.bytes;
    entry.gpuCount = gpus.size;
    if (smSource && smSource !== entry.smSource) entry.smSource = ownCopy(smSource);
    if (basis && basis !== entry.basis) entry.basis = ownCopy(basis);
    this.trim(entry.points, tMs);
  }

  private observeHealth(series: readonly WriteSeries[], tMs: number): void {
    const byGpu = new Map<string, { point: GpuPoint; now: GpuNow }>();
    const of = (s: WriteSeries): { point: GpuPoint; now: GpuNow } | undefined => {
      const uuid = labelValue(s.labels, "gpu_uuid");
      if (!uuid) return undefined;
      let e = byGpu.get(uuid);
      if (!e) byGpu.set(uuid, (e = { point: { tMs }, now: { gpu: labelValue(s.labels, "gpu") ?? "", hostname: labelValue(s.labels, "hostname") ?? "", xids: [] } }));
      return e;
    };
    for (const s of series) {
      if (s.labels[0] !== "__name__" || !s.labels[1]!.startsWith("tokentrace_gpu_")) continue;
      const sample = s.samples[s.samples.length - 1];
      if (!sample || sample.stale || !Number.isFinite(sample.value)) continue;
      const e = of(s);
      if (!e) continue;
      const v = sample.value;
      switch (s.labels[1]) {
        case C.GPU_CLOCK_EVENT_ACTIVE: {
          const reason = labelValue(s.labels, "reason") ?? "";
          if (THERMAL.has(reason)) e.point.thermal = Math.max(e.point.thermal ?? 0, v);
          if (POWER.has(reason)) e.point.power = Math.max(e.point.power ?? 0, v);
          break;
        }
        case C.GPU_TEMPERATURE:
          if (labelValue(s.labels, "sensor") === "gpu") e.point.temperatureC = v;
          break;
        case C.GPU_XID_ERRORS:
          if (v > 0 && e.now.xids.length < MAX_XIDS) e.now.xids.push({ xid: ownCopy(labelValue(s.labels, "xid") ?? ""), xidClass: ownCopy(labelValue(s.labels, "xid_class") ?? "") });
          break;
        case C.GPU_ECC_DBE_ERRORS:
          if (labelValue(s.labels, "scope") === "volatile") e.now.volatileDbe = v;
          break;
        case C.GPU_RETIRED_PAGES_PENDING: e.now.retiredPagesPending = v; break;
        case C.GPU_ROW_REMAP_FAILED: e.now.rowRemapFailed = v; break;
      }
    }
    for (const [uuid, { point, now }] of byGpu) {
      let entry = this.gpus.get(uuid);
      if (!entry) {
        if (this.gpus.size >= this.limits.maxGpus) continue;
        this.gpus.set(ownCopy(uuid), (entry = { points: [], now: { gpu: "", hostname: "", xids: [] } }));
        this.heldBytes += GPU_NOW_BYTES;
      }
      // The names rarely change: the previous copies stay.
      now.gpu = now.gpu === entry.now.gpu ? entry.now.gpu : ownCopy(now.gpu);
      now.hostname = now.hostname === entry.now.hostname ? entry.now.hostname : ownCopy(now.hostname);
      this.heldBytes += XID_BYTES * (now.xids.length - entry.now.xids.length);
      entry.now = now;
      entry.points.push(point);
      this.heldBytes += GPU_POINT_BYTES;
      this.trim(entry.points, tMs);
    }
  }

  private trim(list: (PodPoint | GpuPoint)[], nowMs: number): void {
    let drop = Math.max(0, list.length - this.limits.maxPointsPerKey);
    while (drop < list.length && list[drop]!.tMs <= nowMs - this.limits.retentionMs) drop++;
    this.dropOldest(list, drop);
  }

  private dropOldest(list: (PodPoint | GpuPoint)[], count: number): void {
    if (count <= 0) return;
    for (const p of list.splice(0, count)) this.heldBytes -= pointBytes(p);
    // A pod point whose GPU list was shared with the one dropped before it now holds the list.
    const first = list[0];
    if (first !== undefined && "bytes" in first && first.bytes === POD_POINT_BYTES) {
      first.bytes = podPointBytes(first.gpus.length, false);
      this.heldBytes += first.bytes - POD_POINT_BYTES;
    }
  }

  /** Pods and GPUs whose every point is past the retention go (their place among maxPods and maxGpus with them). */
  private expire(nowMs: number): void {
    for (const [k, e] of this.pods) {
      this.trim(e.points, nowMs);
      if (e.points.length === 0) this.pods.delete(k);
    }
    for (const [k, e] of this.gpus) {
      this.trim(e.points, nowMs);
      if (e.points.length === 0) this.forgetGpu(k, e.now);
    }
  }

  private forgetGpu(uuid: string, now: GpuNow): void {
    this.gpus.delete(uuid);
    this.heldBytes -= GPU_NOW_BYTES + XID_BYTES * now.xids.length;
  }

  /** Over the byte budget: the oldest points of any pod or GPU go first. */
  private trimToBudget(): void {
    while (this.heldBytes > this.limits.maxBytes) {
      let oldest: (PodPoint | GpuPoint)[] | undefined;
      for (const e of [...this.pods.values(), ...this.gpus.values()]) if (e.points.length > 0 && (!oldest || e.points[0]!.tMs < oldest[0]!.tMs)) oldest = e.points;
      if (!oldest) break;
      // Up to the next list's oldest point (at least one), so many pods cost one pass per slice.
      let next = Infinity;
      for (const e of [...this.pods.values(), ...this.gpus.values()]) if (e.points !== oldest && e.points.length > 0) next = Math.min(next, e.points[0]!.tMs);
      let over = this.heldBytes - this.limits.maxBytes;
      let count = 0;
      while (count < oldest.length && over > 0 && (count === 0 || oldest[count]!.tMs <= next)) over -= pointBytes(oldest[count++]!);
      this.dropOldest(oldest, count);
    }
    for (const [k, e] of this.pods) if (e.points.length === 0) this.pods.delete(k);
    for (const [k, e] of this.gpus) if (e.points.length === 0) this.forgetGpu(k, e.now);
  }

  /** Pods with GPU data, sorted by namespace then pod. */
  podKeys(namespace?: string): GpuPodKey[] {
    return [...this.pods.values()]
      .map((e) => e.key)
      .filter((k) => namespace === undefined || k.namespace === namespace)
      .sort((a, b) => (podKeyOf(a) < podKeyOf(b) ? -1 : podKeyOf(a) > podKeyOf(b) ? 1 : 0));
  }

  /** The scrape interval of a pod's sidecar (median of recent gaps, to 100 ms), default 2 s. */
  scrapeIntervalMs(key: GpuPodKey): number {
    const points = this.pods.get(podKeyOf(key))?.points ?? [];
    const gaps = points.slice(-21).map((p, i, all) => (i === 0 ? NaN : p.tMs - all[i - 1]!.tMs)).filter((g) => g > 0).sort((a, b) => a - b);
    return gaps.length > 0 ? Math.max(100, Math.round(gaps[Math.floor(gaps.length / 2)]! / 100) * 100) : 2000;
  }

  /** What a pod's panels show besides the columns: what its figures were measured on, and its GPUs' current problems. */
  describe(key: GpuPodKey): { gpuCount: number; smSource: string | null; basis: string | null; problems: string[] } {
    const e = this.pods.get(podKeyOf(key));
    const gpus = e?.points.at(-1)?.gpus ?? [];
    const problems: string[] = [];
    for (const uuid of [...gpus].sort()) {
      const now = this.gpus.get(uuid)?.now;
      if (!now) continue;
      const at = `GPU ${now.gpu} on ${now.hostname}`;
      for (const x of now.xids) problems.push(`${at}: XID ${x.xid} (${x.xidClass})`);
      if ((now.volatileDbe ?? 0) > 0) problems.push(`${at}: ${now.volatileDbe} volatile double-bit ECC errors`);
      if ((now.retiredPagesPending ?? 0) > 0) problems.push(`${at}: a page waits for a reset to be retired`);
      if ((now.rowRemapFailed ?? 0) > 0) problems.push(`${at}: a row remap failed (replace the GPU)`);
    }
    return { gpuCount: e?.gpuCount ?? 0, smSource: e?.smSource ?? null, basis: e?.basis ?? null, problems };
  }

  /** Columns for uPlot: `t` in seconds and one array per column, null where nothing fell within the lookback. */
  columns(key: GpuPodKey, q: { nowMs: number; rangeMs: number; stepMs: number; lookbackMs: number }): Record<"t" | GpuColumn, (number | null)[]> {
    const points = this.pods.get(podKeyOf(key))?.points ?? [];
    const out = Object.fromEntries([["t", []], ...GPU_COLUMNS.map((c) => [c, []])]) as unknown as Record<"t" | GpuColumn, (number | null)[]>;
    const last = Math.floor(q.nowMs / q.stepMs) * q.stepMs;
    const newestAt = <P extends { tMs: number }>(list: readonly P[], at: number): P | undefined => {
      let found: P | undefined;
      for (const p of list) {
        if (p.tMs > at) break;
        if (p.tMs > at - q.lookbackMs) found = p;
      }
      return found;
    };
    for (let at = last - q.rangeMs + q.stepMs; at <= last; at += q.stepMs) {
      out.t.push(at / 1000);
      const p = newestAt(points, at);
      const health = (p?.gpus ?? []).map((uuid) => newestAt(this.gpus.get(uuid)?.points ?? [], at)).filter((g): g is GpuPoint => g !== undefined);
      const worst = (f: (g: GpuPoint) => number | undefined): number | null => {
        const v = health.map(f).filter((x): x is number => x !== undefined);
        return v.length > 0 ? Math.max(...v) : null;
      };
      for (const c of GPU_COLUMNS) {
        if (c === "thermalThrottled") out[c].push(worst((g) => g.thermal));
        else if (c === "powerThrottled") out[c].push(worst((g) => g.power));
        else if (c === "temperatureC") out[c].push(worst((g) => g.temperatureC));
        else out[c].push(p?.values[c] ?? null);
      }
    }
    return out;
  }
}
