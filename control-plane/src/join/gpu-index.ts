// What dcgm-exporter says about GPUs: identity, state, and which pods use which GPU. Each
// dcgm-exporter target contributes its own GPUs and pod links (replaced whole by its next scrape);
// the combined view is rebuilt from those small per-target parts, never by re-reading samples.
// Several GPUs per pod and several pods per GPU (time slicing, MIG) are both kept as they are.
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
}

/** Reads the GPUs and pod links out of one dcgm-exporter scrape. */
export function readExporterGpus(samples: readonly ParsedSample[]): ExporterGpus {
  const gpus = new Map<string, GpuInfo>();
  const links = new Map<string, [string, string]>();
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
    switch (s.name) {
      case "DCGM_FI_DEV_GPU_UTIL": g.utilizationPercent = s.value; break;
      case "DCGM_FI_PROF_SM_ACTIVE": g.smActiveRatio = s.value; break;
      case "DCGM_FI_DEV_FB_USED": g.memoryUsedMiB = s.value; break;
      case "DCGM_FI_DEV_POWER_USAGE": g.powerWatts = s.value; break;
      case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": g.energyMj = s.value; break;
    }
    const ns = labelValue(s.labels, "namespace");
    const pod = labelValue(s.labels, "pod");
    if (ns && pod) links.set(`${ns}/${pod}\xff${key}`, [`${ns}/${pod}`, key]);
  }
  return { gpus, links: [...links.values()] };
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

  /** Replaces what exporter `id` said with its latest scrape; returns that scrape's GPUs. */
  setExporter(id: string, samples: readonly ParsedSample[]): ExporterGpus {
    const parsed = readExporterGpus(samples);
    this.byExporter.set(id, parsed);
    this.rebuild();
    return parsed;
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
    for (const e of this.byExporter.values()) {
      for (const g of e.gpus.values()) this.gpus.set(g.key, g);
      for (const [pod, key] of e.links) {
        link(this.podGpus, pod, key);
        link(this.gpuPods, key, pod);
      }
    }
    for (const g of this.gpus.values()) {
      if (!this.gpuPods.has(g.key) && g.hostname) link(this.unmappedByHost, g.hostname, g.key);
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
