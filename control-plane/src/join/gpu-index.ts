// What dcgm-exporter says about GPUs: identity, state, and which pods use which GPU. Each
// dcgm-exporter target contributes its own GPUs and pod links (replaced whole by its next scrape);
// the combined view is rebuilt from those small per-target parts, never by re-reading samples.
// Several GPUs per pod and several pods per GPU (time slicing, MIG) are both kept as they are.
//
// Shared GPUs, as dcgm-exporter reports them (NVIDIA/dcgm-exporter d5e5f51,
// internal/pkg/transformation/kubernetes.go PodMapper.Process and process_metrics.go):
// - time slicing with --kubernetes-virtual-gpus: every field is copied once per pod sharing the GPU
//   (`vgpu` label); since fb5e3dc the exporter also keeps the device-level DCGM_FI_DEV_GPU_UTIL and
//   DCGM_FI_DEV_FB_USED (no pod labels) and gives each pod's copy of those two the pod's own
//   processes' value (NVML per-process samples). So a pod's utilisation and memory are its own where
//   a device-level series stands beside the pod ones, and the whole GPU's otherwise (older exporters
//   copy the device value to every pod); the GPU's own figures are always the device-level ones.
// - MIG: fields of a GPU instance carry GPU_I_ID and GPU_I_PROFILE and are mapped to the pod that
//   holds the instance; DCGM_FI_DEV_GPU_UTIL is not reported for instances (NVIDIA/dcgm-exporter
//   #216, #430: use DCGM_FI_PROF_GR_ENGINE_ACTIVE), so an instance's utilisation is its graphics
//   engine activity x 100. The parent GPU's own series are labelled with whichever instance's pod
//   the exporter met last (toDeviceToPod maps the parent UUID too), so they link no pod.
import { labelValue, type Labels, type ParsedSample } from "../scrape/sample.js";

/**
 * A GPU's health fields, each present only when the exporter's counters file enables it (NVIDIA/dcgm-exporter
 * d5e5f51 etc/default-counters.csv enables temperatures, XID, PCIe replays and row remapping; ECC, retired pages
 * and the clock-event reasons are commented out or absent). Field meanings: NVIDIA/DCGM 72fa3fe dcgmlib/dcgm_fields.h.
 */
export interface GpuHealth {
  /** DCGM_FI_DEV_GPU_TEMP, °C. */
  temperatureC?: number;
  /** DCGM_FI_DEV_MEMORY_TEMP, °C (0 where the board has no memory sensor). */
  memoryTemperatureC?: number;
  /** DCGM_FI_DEV_XID_ERRORS: the last XID the driver reported (0: none within DCGM's keep age). */
  xid?: number;
  /** DCGM_EXP_XID_ERRORS_COUNT: XID -> how many the exporter saw within its window. */
  xidCounts?: Map<string, number>;
  /** DCGM_FI_DEV_CLOCKS_EVENT_REASONS (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before dcgm-exporter 4.0.0): bitmask. */
  clockEventReasons?: number;
  /** DCGM_EXP_CLOCK_EVENTS_COUNT: reason name -> samples with it set within the exporter's window. */
  clockEventCounts?: Map<string, number>;
  eccDbeVolatile?: number;
  eccDbeAggregate?: number;
  retiredPagesDbe?: number;
  retiredPagesSbe?: number;
  /** 1 while a page waits for a GPU reset to be retired. */
  retiredPagesPending?: number;
  remappedRowsUncorrectable?: number;
  remappedRowsCorrectable?: number;
  /** 1 once remapping a row has failed. */
  rowRemapFailed?: number;
  /** DCGM_FI_DEV_PCIE_REPLAY_COUNTER, a counter. */
  pcieReplays?: number;
}

/** One GPU (or MIG instance) and its latest state. */
export interface GpuInfo {
  /** UUID, plus "/mig<GPU_I_ID>" for a MIG instance so instances of one GPU stay distinct. */
  key: string;
  uuid: string;
  gpu: string;
  modelName: string;
  hostname: string;
  migProfile?: string;
  utilizationPercent?: number;
  /** DCGM_FI_PROF_SM_ACTIVE (not in the default counters: the operator enables it). */
  smActiveRatio?: number;
  /** DCGM_FI_PROF_GR_ENGINE_ACTIVE (default counters). */
  grEngineActiveRatio?: number;
  /** DCGM_FI_PROF_SM_OCCUPANCY (not in the default counters). */
  smOccupancyRatio?: number;
  /** DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (default counters). */
  tensorActiveRatio?: number;
  /** DCGM_FI_PROF_DRAM_ACTIVE (default counters). */
  dramActiveRatio?: number;
  /** The device's DCGM_FI_DEV_FB_USED, never a pod's own copy of it. */
  memoryUsedMiB?: number;
  powerWatts?: number;
  /** DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since boot (a counter). */
  energyMj?: number;
  health?: GpuHealth;
}

/**
 * Label spellings other than dcgm-exporter's default that the index read (each names what to change):
 * `old_namespace`: the exporter runs with --use-old-namespace (uuid, pod_name, pod_namespace);
 * `honor_labels_renamed`: the series came through a Prometheus scrape with honor_labels false (the Helm
 * chart's serviceMonitor.honorLabels default), which renamed pod and namespace to exported_pod and
 * exported_namespace and put the exporter's own pod in their place.
 */
export type ExporterLabelNote = "old_namespace" | "honor_labels_renamed";

/** What to tell the operator about a label spelling, naming the setting that causes it. */
export function labelNoteMessage(note: ExporterLabelNote, url: string): string {
  return note === "old_namespace"
    ? `dcgm-exporter at ${url} runs with --use-old-namespace (DCGM_EXPORTER_USE_OLD_NAMESPACE): its labels uuid, pod_name and pod_namespace are read as UUID, pod and namespace here, but Prometheus rules and dashboards written for its default labels find nothing; run it without the flag`
    : `dcgm-exporter series at ${url} carry exported_pod and exported_namespace: they passed through a Prometheus scrape with honor_labels false (the dcgm-exporter Helm chart's default, serviceMonitor.honorLabels: false), which put the exporter's own pod in pod and namespace; they are read from the exported_ labels here, but set serviceMonitor.honorLabels: true (honor_labels: true) for every other consumer`;
}

/** The GPUs and pod links of one dcgm-exporter scrape. */
export interface ExporterGpus {
  gpus: Map<string, GpuInfo>;
  /** [namespace/pod, GPU key] pairs. */
  links: [string, string][];
  /** "namespace/pod\xffGPU key" -> the pod's own utilisation of a time-sliced GPU (per-process values). */
  linkUtilization: Map<string, number>;
  /** "namespace/pod\xffGPU key" -> the pod's own framebuffer use of a time-sliced GPU, MiB (per-process values). */
  linkMemory: Map<string, number>;
  /** Keys of GPUs split into MIG instances (their own series link no pod). */
  migParents: Set<string>;
  /** Label spellings read other than the default, for the operator to be told. */
  labelNotes: Set<ExporterLabelNote>;
}

/** What one dcgm-exporter sample says about which GPU and which pod, read in one pass over its labels. */
interface SampleIdentity {
  uuid: string | undefined;
  /** The UUID came as `uuid` (--use-old-namespace). */
  oldUuid: boolean;
  gpu: string | undefined;
  migId: string | undefined;
  migProfile: string | undefined;
  modelName: string | undefined;
  hostname: string | undefined;
  /** "namespace/pod" from `namespace` and `pod`. */
  podKey: string | undefined;
  /** From `pod_namespace` and `pod_name` (--use-old-namespace). */
  oldPodKey: string | undefined;
  /** From `exported_namespace` and `exported_pod` (honor_labels false). */
  exportedPodKey: string | undefined;
}

/**
 * The identity labels of a sample in any of dcgm-exporter's spellings (NVIDIA/dcgm-exporter d5e5f51):
 * `UUID`, or `uuid` under --use-old-namespace (internal/pkg/collector/gpu_collector.go); `pod`/`namespace`, or
 * `pod_name`/`pod_namespace` under --use-old-namespace (internal/pkg/transformation/const.go,
 * kubernetes.go PodMapper.Process); `Hostname` up to 4.x, `hostname` since d5e5f51 (render_metrics.go);
 * and `exported_pod`/`exported_namespace`, which a Prometheus scrape with honor_labels false writes in place
 * of the exporter's pod and namespace when its target has those labels itself (prometheus/prometheus
 * fcdb6c2 scrape/scrape.go mutateSampleLabels).
 */
function identityOf(labels: Labels): SampleIdentity {
  let uuid: string | undefined, oldUuid: string | undefined, gpu: string | undefined, migId: string | undefined, migProfile: string | undefined;
  let modelName: string | undefined, hostname: string | undefined;
  let pod: string | undefined, ns: string | undefined, oldPod: string | undefined, oldNs: string | undefined;
  let exportedPod: string | undefined, exportedNs: string | undefined;
  for (let i = 0; i < labels.length; i += 2) {
    const v = labels[i + 1]!;
    if (v === "") continue;
    switch (labels[i]) {
      case "UUID": uuid = v; break;
      case "uuid": oldUuid = v; break;
      case "gpu": gpu = v; break;
      case "GPU_I_ID": migId = v; break;
      case "GPU_I_PROFILE": migProfile = v; break;
      case "modelName": modelName = v; break;
      case "hostname": hostname = v; break;
      case "Hostname": hostname ??= v; break;
      case "pod": pod = v; break;
      case "namespace": ns = v; break;
      case "pod_name": oldPod = v; break;
      case "pod_namespace": oldNs = v; break;
      case "exported_pod": exportedPod = v; break;
      case "exported_namespace": exportedNs = v; break;
    }
  }
  return {
    uuid: uuid ?? oldUuid,
    oldUuid: uuid === undefined && oldUuid !== undefined,
    gpu,
    migId,
    migProfile,
    modelName,
    hostname,
    podKey: pod && ns ? `${ns}/${pod}` : undefined,
    oldPodKey: oldPod && oldNs ? `${oldNs}/${oldPod}` : undefined,
    exportedPodKey: exportedPod && exportedNs ? `${exportedNs}/${exportedPod}` : undefined,
  };
}

const healthOf = (g: GpuInfo): GpuHealth => (g.health ??= {});

/** Reads the GPUs and pod links out of one dcgm-exporter scrape. */
export function readExporterGpus(samples: readonly ParsedSample[]): ExporterGpus {
  const gpus = new Map<string, GpuInfo>();
  const links = new Map<string, [string, string]>();
  const migParents = new Set<string>();
  const labelNotes = new Set<ExporterLabelNote>();
  const ids: (SampleIdentity | undefined)[] = new Array<SampleIdentity | undefined>(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    // dcgm-exporter's own fields (DCGM_FI_*) and its exporter-computed ones (DCGM_EXP_*, collector/expcollector.go).
    if (!s.name.startsWith("DCGM_")) continue;
    const id = identityOf(s.labels);
    ids[i] = id;
    if (id.uuid && id.migId) migParents.add(id.uuid);
    if (id.exportedPodKey) labelNotes.add("honor_labels_renamed");
    if (id.oldUuid || id.oldPodKey) labelNotes.add("old_namespace");
  }
  // Once a scrape shows renamed labels, its `pod` and `namespace` are the scraping Prometheus's target
  // labels (the exporter's own pod) on every series, mapped or not: only the exported ones name a pod.
  const renamed = labelNotes.has("honor_labels_renamed");
  // GPU_UTIL and FB_USED per key: the device-level value (no pod labels) and each pod's copy.
  const device = { util: new Map<string, number>(), mem: new Map<string, number>() };
  const perPod = { util: new Map<string, Map<string, number>>(), mem: new Map<string, Map<string, number>>() };
  const putPod = (m: Map<string, Map<string, number>>, key: string, podKey: string, v: number): void => {
    let byPod = m.get(key);
    if (!byPod) m.set(key, (byPod = new Map()));
    byPod.set(podKey, v);
  };
  for (let i = 0; i < samples.length; i++) {
    const id = ids[i];
    if (!id?.uuid) continue;
    const s = samples[i]!;
    const { uuid, migId } = id;
    const podKey = renamed ? id.exportedPodKey : (id.podKey ?? id.oldPodKey);
    const key = migId ? `${uuid}/mig${migId}` : uuid;
    let g = gpus.get(key);
    if (!g) {
      g = { key, uuid, gpu: id.gpu ?? "", modelName: id.modelName ?? "", hostname: id.hostname ?? "" };
      if (id.migProfile) g.migProfile = id.migProfile;
      gpus.set(key, g);
    }
    switch (s.name) {
      // Time slicing (--kubernetes-virtual-gpus, since fb5e3dc): the device-level series stays and each pod's
      // copy carries its own processes' value (transformation/process_metrics.go isPerProcessMetric, createPerProcessMetrics).
      case "DCGM_FI_DEV_GPU_UTIL":
        if (migId) break;
        if (podKey) putPod(perPod.util, key, podKey, s.value);
        else device.util.set(key, s.value);
        break;
      case "DCGM_FI_DEV_FB_USED":
        if (podKey) putPod(perPod.mem, key, podKey, s.value);
        else device.mem.set(key, s.value);
        break;
      case "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
        g.grEngineActiveRatio = s.value;
        if (migId) g.utilizationPercent = s.value * 100;
        break;
      case "DCGM_FI_PROF_SM_ACTIVE": g.smActiveRatio = s.value; break;
      case "DCGM_FI_PROF_SM_OCCUPANCY": g.smOccupancyRatio = s.value; break;
      case "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": g.tensorActiveRatio = s.value; break;
      case "DCGM_FI_PROF_DRAM_ACTIVE": g.dramActiveRatio = s.value; break;
      case "DCGM_FI_DEV_POWER_USAGE": g.powerWatts = s.value; break;
      case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": g.energyMj = s.value; break;
      case "DCGM_FI_DEV_GPU_TEMP": healthOf(g).temperatureC = s.value; break;
      case "DCGM_FI_DEV_MEMORY_TEMP": healthOf(g).memoryTemperatureC = s.value; break;
      case "DCGM_FI_DEV_XID_ERRORS": healthOf(g).xid = s.value; break;
      // The bitmask field, renamed in dcgm-exporter 4.0.0 (5f9250c) after DCGM's rename; both are one DCGM field (112).
      case "DCGM_FI_DEV_CLOCKS_EVENT_REASONS":
      case "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS":
        healthOf(g).clockEventReasons = s.value;
        break;
      // Exporter-computed counts over its window (collector/clock_events_collector.go, xid_collector.go): one
      // series per reason or XID seen, or a single 0 without the label when none was.
      case "DCGM_EXP_CLOCK_EVENTS_COUNT": {
        const h = healthOf(g);
        const counts = (h.clockEventCounts ??= new Map());
        const reason = labelValue(s.labels, "clock_event");
        if (reason) counts.set(reason, s.value);
        break;
      }
      case "DCGM_EXP_XID_ERRORS_COUNT": {
        const h = healthOf(g);
        const counts = (h.xidCounts ??= new Map());
        const xid = labelValue(s.labels, "xid");
        if (xid) counts.set(xid, s.value);
        break;
      }
      case "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": healthOf(g).eccDbeVolatile = s.value; break;
      case "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": healthOf(g).eccDbeAggregate = s.value; break;
      case "DCGM_FI_DEV_RETIRED_DBE": healthOf(g).retiredPagesDbe = s.value; break;
      case "DCGM_FI_DEV_RETIRED_SBE": healthOf(g).retiredPagesSbe = s.value; break;
      case "DCGM_FI_DEV_RETIRED_PENDING": healthOf(g).retiredPagesPending = s.value; break;
      case "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": healthOf(g).remappedRowsUncorrectable = s.value; break;
      case "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": healthOf(g).remappedRowsCorrectable = s.value; break;
      case "DCGM_FI_DEV_ROW_REMAP_FAILURE": healthOf(g).rowRemapFailed = s.value; break;
      case "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": healthOf(g).pcieReplays = s.value; break;
    }
    if (podKey && (migId || !migParents.has(uuid))) links.set(`${podKey}\xff${key}`, [podKey, key]);
  }
  const linkUtilization = new Map<string, number>();
  const linkMemory = new Map<string, number>();
  for (const [key, g] of gpus) {
    const util = splitDeviceAndPods(key, device.util, perPod.util, linkUtilization);
    // A MIG instance's utilisation is its graphics engine activity (above), never a GPU_UTIL series.
    if (util !== undefined && g.migProfile === undefined) g.utilizationPercent = util;
    const mem = splitDeviceAndPods(key, device.mem, perPod.mem, linkMemory);
    if (mem !== undefined) g.memoryUsedMiB = mem;
  }
  return { gpus, links: [...links.values()], linkUtilization, linkMemory, migParents, labelNotes };
}

/**
 * A per-process field of one GPU key: the device-level value when there is one, its pod copies then
 * being each pod's own (kept in `perLink`); else every copy is the device's value (exporters before
 * fb5e3dc, or without --kubernetes-virtual-gpus, copy it to each pod), so any of them.
 */
function splitDeviceAndPods(key: string, device: Map<string, number>, perPod: Map<string, Map<string, number>>, perLink: Map<string, number>): number | undefined {
  const d = device.get(key);
  const pods = perPod.get(key);
  if (d !== undefined) {
    for (const [podKey, v] of pods ?? []) perLink.set(`${podKey}\xff${key}`, v);
    return d;
  }
  if (!pods || pods.size === 0) return undefined;
  let max = -Infinity;
  for (const v of pods.values()) if (v > max) max = v;
  return max;
}

/** The pod/GPU links and GPU states of every dcgm-exporter target's latest scrape. */
export class GpuIndex {
  private readonly byExporter = new Map<string, ExporterGpus>();
  readonly gpus = new Map<string, GpuInfo>();
  /** "namespace/pod" -> GPU keys. */
  readonly podGpus = new Map<string, Set<string>>();
  /** GPU key -> "namespace/pod" keys. */
  readonly gpuPods = new Map<string, Set<string>>();
  /** hostname -> GPU keys no pod was mapped to (for the node-level fallback). */
  readonly unmappedByHost = new Map<string, Set<string>>();
  private readonly linkUtilization = new Map<string, number>();
  private readonly linkMemory = new Map<string, number>();
  private readonly migParents = new Set<string>();

  /** Replaces what exporter `id` said with its latest scrape; returns that scrape's GPUs. */
  setExporter(id: string, samples: readonly ParsedSample[]): ExporterGpus {
    const parsed = readExporterGpus(samples);
    this.byExporter.set(id, parsed);
    this.rebuild();
    return parsed;
  }

  /** The GPUs of exporter `id`'s latest scrape, in the order it reported them. */
  gpusOfExporter(id: string): ReadonlyMap<string, GpuInfo> | undefined {
    return this.byExporter.get(id)?.gpus;
  }

  /** The label spellings other than the default that exporter `id`'s latest scrape used. */
  labelNotesOf(id: string): ReadonlySet<ExporterLabelNote> | undefined {
    return this.byExporter.get(id)?.labelNotes;
  }

  /** Forgets an exporter that went away. */
  removeExporter(id: string): boolean {
    if (!this.byExporter.delete(id)) return false;
    this.rebuild();
    return true;
  }

  private rebuild(): void {
    this.gpus.clear();
    this.podGpus.clear();
    this.gpuPods.clear();
    this.unmappedByHost.clear();
    this.linkUtilization.clear();
    this.linkMemory.clear();
    this.migParents.clear();
    for (const e of this.byExporter.values()) {
      for (const g of e.gpus.values()) this.gpus.set(g.key, g);
      for (const [pod, key] of e.links) {
        link(this.podGpus, pod, key);
        link(this.gpuPods, key, pod);
      }
      for (const [k, v] of e.linkUtilization) this.linkUtilization.set(k, v);
      for (const [k, v] of e.linkMemory) this.linkMemory.set(k, v);
      for (const k of e.migParents) this.migParents.add(k);
    }
    for (const g of this.gpus.values()) {
      // A MIG parent is used through its instances, never as a whole by an unmapped pod.
      if (!this.gpuPods.has(g.key) && !this.migParents.has(g.key) && g.hostname) link(this.unmappedByHost, g.hostname, g.key);
    }
  }

  /**
   * The GPUs of a pod: those dcgm-exporter mapped to it ("pod"), else, when it runs on a node whose
   * GPUs have no pod mapping, that node's unmapped GPUs ("node"). Sorted by GPU index.
   */
  gpusOfPod(namespace: string, pod: string, node: string | undefined): { gpus: GpuInfo[]; attribution: "pod" | "node" | "none" } {
    const keys = this.podGpus.get(`${namespace}/${pod}`);
    if (keys && keys.size > 0) return { gpus: this.sorted(keys), attribution: "pod" };
    const nodeKeys = node ? this.unmappedByHost.get(node) : undefined;
    if (nodeKeys && nodeKeys.size > 0) return { gpus: this.sorted(nodeKeys), attribution: "node" };
    return { gpus: [], attribution: "none" };
  }

  /**
   * A pod's utilisation of one of its GPUs (%): its own processes' share of a time-sliced GPU when
   * the exporter reports it, else the GPU's (or MIG instance's) own.
   */
  utilizationOf(podKey: string, gpuKey: string): number | undefined {
    return this.linkUtilization.get(`${podKey}\xff${gpuKey}`) ?? this.gpus.get(gpuKey)?.utilizationPercent;
  }

  /**
   * A pod's framebuffer use on one of its GPUs (MiB): its own processes' on a time-sliced GPU when the
   * exporter reports it, else the GPU's (or MIG instance's) own.
   */
  memoryOf(podKey: string, gpuKey: string): number | undefined {
    return this.linkMemory.get(`${podKey}\xff${gpuKey}`) ?? this.gpus.get(gpuKey)?.memoryUsedMiB;
  }

  /** The physical GPU a key lives on: the parent of a MIG instance, else the GPU itself. */
  deviceOf(gpuKey: string): GpuInfo | undefined {
    const g = this.gpus.get(gpuKey);
    return g?.migProfile !== undefined ? this.gpus.get(g.uuid) : g;
  }

  /** Pods mapped to a GPU. */
  podsOfGpu(key: string): string[] {
    return [...(this.gpuPods.get(key) ?? [])].sort();
  }

  private sorted(keys: Set<string>): GpuInfo[] {
    return [...keys].map((k) => this.gpus.get(k)!).sort((a, b) => Number(a.gpu) - Number(b.gpu) || (a.key < b.key ? -1 : 1));
  }
}

function link(m: Map<string, Set<string>>, a: string, b: string): void {
  let s = m.get(a);
  if (!s) m.set(a, (s = new Set()));
  s.add(b);
}
