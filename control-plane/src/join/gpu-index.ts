// What dcgm-exporter says about GPUs: identity, state, and which pods use which GPU. Each
// dcgm-exporter target contributes its own GPUs and pod links (replaced whole by its next scrape);
// the combined view is rebuilt from those small per-target parts, never by re-reading samples.
// Several GPUs per pod and several pods per GPU (time slicing, MIG) are both kept as they are.
//
// Shared GPUs, as dcgm-exporter reports them (NVIDIA/dcgm-exporter d5e5f51,
// internal/pkg/transformation/kubernetes.go PodMapper.Process and process_metrics.go):
// - time slicing with --kubernetes-virtual-gpus: every field is copied once per pod sharing the GPU
//   (`vgpu` label); newer exporters also keep the device-level DCGM_FI_DEV_GPU_UTIL (no pod labels)
//   and give each pod's copy the pod's own processes' utilisation (NVML per-process samples). So a
//   pod's utilisation is its own where a device-level series stands beside the pod ones, and the
//   whole GPU's otherwise (older exporters copy the device value to every pod).
// - MIG: fields of a GPU instance carry GPU_I_ID and GPU_I_PROFILE and are mapped to the pod that
//   holds the instance; DCGM_FI_DEV_GPU_UTIL is not reported for instances (NVIDIA/dcgm-exporter
//   #216, #430: use DCGM_FI_PROF_GR_ENGINE_ACTIVE), so an instance's utilisation is its graphics
//   engine activity x 100. The parent GPU's own series are labelled with whichever instance's pod
//   the exporter met last (toDeviceToPod maps the parent UUID too), so they link no pod.
import { labelValue, type ParsedSample } from "../scrape/sample.js";

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
  smActiveRatio?: number;
  memoryUsedMiB?: number;
  powerWatts?: number;
  /** DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since boot (a counter). */
  energyMj?: number;
}

/** The GPUs and pod links of one dcgm-exporter scrape. */
export interface ExporterGpus {
  gpus: Map<string, GpuInfo>;
  /** [namespace/pod, GPU key] pairs. */
  links: [string, string][];
  /** "namespace/pod\xffGPU key" -> the pod's own utilisation of a time-sliced GPU (per-process values). */
  linkUtilization: Map<string, number>;
  /** Keys of GPUs split into MIG instances (their own series link no pod). */
  migParents: Set<string>;
}

/** Reads the GPUs and pod links out of one dcgm-exporter scrape. */
export function readExporterGpus(samples: readonly ParsedSample[]): ExporterGpus {
  const gpus = new Map<string, GpuInfo>();
  const links = new Map<string, [string, string]>();
  const migParents = new Set<string>();
  for (const s of samples) {
    const uuid = labelValue(s.labels, "UUID");
    if (uuid && labelValue(s.labels, "GPU_I_ID") && s.name.startsWith("DCGM_FI_")) migParents.add(uuid);
  }
  // GPU_UTIL per key: the device-level value (no pod labels) and each pod's copy.
  const deviceUtil = new Map<string, number>();
  const podUtil = new Map<string, Map<string, number>>();
  for (const s of samples) {
    if (!s.name.startsWith("DCGM_FI_")) continue;
    const uuid = labelValue(s.labels, "UUID");
    if (!uuid) continue;
    const migId = labelValue(s.labels, "GPU_I_ID");
    const key = migId ? `${uuid}/mig${migId}` : uuid;
    let g = gpus.get(key);
    if (!g) {
      g = {
        key,
        uuid,
        gpu: labelValue(s.labels, "gpu") ?? "",
        modelName: labelValue(s.labels, "modelName") ?? "",
        // Both spellings: "Hostname" up to dcgm-exporter 4.x, "hostname" in the newest source.
        hostname: labelValue(s.labels, "hostname") ?? labelValue(s.labels, "Hostname") ?? "",
      };
      const profile = labelValue(s.labels, "GPU_I_PROFILE");
      if (profile) g.migProfile = profile;
      gpus.set(key, g);
    }
    const ns = labelValue(s.labels, "namespace");
    const pod = labelValue(s.labels, "pod");
    const podKey = ns && pod ? `${ns}/${pod}` : undefined;
    switch (s.name) {
      case "DCGM_FI_DEV_GPU_UTIL":
        if (migId) break;
        if (podKey) {
          let m = podUtil.get(key);
          if (!m) podUtil.set(key, (m = new Map()));
          m.set(podKey, s.value);
        } else deviceUtil.set(key, s.value);
        break;
      case "DCGM_FI_PROF_GR_ENGINE_ACTIVE": if (migId) g.utilizationPercent = s.value * 100; break;
      case "DCGM_FI_PROF_SM_ACTIVE": g.smActiveRatio = s.value; break;
      case "DCGM_FI_DEV_FB_USED": g.memoryUsedMiB = s.value; break;
      case "DCGM_FI_DEV_POWER_USAGE": g.powerWatts = s.value; break;
      case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": g.energyMj = s.value; break;
    }
    if (podKey && (migId || !migParents.has(uuid))) links.set(`${podKey}\xff${key}`, [podKey, key]);
  }
  const linkUtilization = new Map<string, number>();
  for (const [key, g] of gpus) {
    if (g.migProfile !== undefined) continue;
    const device = deviceUtil.get(key);
    const pods = podUtil.get(key);
    if (device !== undefined) {
      g.utilizationPercent = device;
      // Pod copies beside a device-level value are the pods' own (per-process) utilisation.
      for (const [podKey, v] of pods ?? []) linkUtilization.set(`${podKey}\xff${key}`, v);
    } else if (pods && pods.size > 0) {
      // Older exporters copy the device value to every sharing pod: all copies are the GPU's.
      g.utilizationPercent = Math.max(...pods.values());
    }
  }
  return { gpus, links: [...links.values()], linkUtilization, migParents };
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
    this.migParents.clear();
    for (const e of this.byExporter.values()) {
      for (const g of e.gpus.values()) this.gpus.set(g.key, g);
      for (const [pod, key] of e.links) {
        link(this.podGpus, pod, key);
        link(this.gpuPods, key, pod);
      }
      for (const [k, v] of e.linkUtilization) this.linkUtilization.set(k, v);
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
