// GPU state of each (pod, GPU) link, with each Envoy (or static) scrape of a settled pod: the info
// series for every link, and utilisation, SM activity (SM_ACTIVE, else the default counters'
// GR_ENGINE_ACTIVE), SM occupancy, tensor and DRAM activity, memory and power where dcgm-exporter has them.
import type { Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { podLabelsOf, type IdentityView, type PodIdentity } from "../identity.js";
import { gpusOf, smActivityOf, type Derivation } from "./derivation.js";

/** tokentrace_pod_gpu_*: stateless, read from the GPU index at each sidecar scrape. */
export class PodGpuState implements Derivation {
  constructor(private readonly identities: IdentityView) {}

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    const index = this.identities.index;
    const ts = r.timestampMs;
    const podLabels: Labels = podLabelsOf(t);
    for (const g of gpusOf(this.identities, pod)) {
      const gl: Labels = [...podLabels, "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname, "gpu_pods", String(index.podsOfGpu(g.key).length)];
      const memoryMiB = index.memoryOf(pod.key, g.key);
      const sm = smActivityOf(g);
      const state: [string, number | undefined][] = [
        [C.POD_GPU_UTILIZATION, index.utilizationOf(pod.key, g.key)],
        [C.POD_GPU_SM_OCCUPANCY, g.smOccupancyRatio],
        [C.POD_GPU_TENSOR_ACTIVE, g.tensorActiveRatio],
        [C.POD_GPU_DRAM_ACTIVE, g.dramActiveRatio],
        [C.POD_GPU_MEMORY_USED, memoryMiB === undefined ? undefined : memoryMiB * 1024 * 1024],
        [C.POD_GPU_POWER, g.powerWatts],
      ];
      // The info series exists for every link, so PromQL can join on it even when dcgm-exporter left a field out.
      out.push({ labels: ["__name__", C.POD_GPU_INFO, ...gl], samples: [{ value: 1, timestampMs: ts }] });
      for (const [name, v] of state) if (v !== undefined) out.push({ labels: ["__name__", name, ...gl], samples: [{ value: v, timestampMs: ts }] });
      if (sm) out.push({ labels: ["__name__", C.POD_GPU_SM_ACTIVE, ...gl, "source", sm.source], samples: [{ value: sm.value, timestampMs: ts }] });
    }
  }
}
