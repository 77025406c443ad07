// What dcgm-exporter says about GPUs: identity, state, and which pods use which GPU. Built from the
// latest scrape of every dcgm-exporter; several GPUs per pod and several pods per GPU (time slicing,
// MIG) are both kept as they are, as a many-to-many link.
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

/** The pod/GPU links and GPU states of one or more dcgm-exporter scrapes. */
export class GpuIndex {
  readonly gpus = new Map<string, GpuInfo>();
  /** "namespace/pod" -> GPU keys. */
  readonly podGpus = new Map<string, Set<string>>();
  /** GPU key -> "namespace/pod" keys. */
  readonly gpuPods = new Map<string, Set<string>>();
  /** hostname -> GPU keys no pod was mapped to (for the node-level fallback). */
  readonly unmappedByHost = new Map<string, Set<string>>();

  /** Adds the series of one dcgm-exporter scrape. */
  addScrape(samples: ParsedSample[]): void {
    for (const s of samples) {
      if (!s.name.startsWith("DCGM_FI_")) continue;
      const uuid = labelValue(s.labels, "UUID");
      if (!uuid) continue;
      const migId = labelValue(s.labels, "GPU_I_ID");
      const key = migId ? `${uuid}/mig${migId}` : uuid;
      let g = this.gpus.get(key);
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
        this.gpus.set(key, g);
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
      if (ns && pod) {
        const pk = `${ns}/${pod}`;
        link(this.podGpus, pk, key);
        link(this.gpuPods, key, pk);
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
