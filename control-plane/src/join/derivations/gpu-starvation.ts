// "Busy but starved", per (pod, GPU) link at each sidecar scrape: how full the GPU was while it was
// busy. DCGM_FI_DEV_GPU_UTIL is the share of time a kernel ran, whatever its size; the profiling
// fields say how much of the GPU that kernel used (NVIDIA/DCGM 72fa3fe dcgmlib/dcgm_fields.h:
// SM_ACTIVE, cycles an SM has a warp assigned; PIPE_TENSOR_ACTIVE, cycles the tensor pipe is
// active; DRAM_ACTIVE, cycles the memory interface is busy). Their ratio to utilisation is the
// activity per unit of busy time: near 1 for a GPU doing real work, low for one kept "busy" by
// small kernels, launch gaps or synchronisation. The basis is SM_ACTIVE where the exporter exports
// it; on the default counters (which leave it out) the busier of the tensor pipe and the memory
// interface, since LLM prefill runs on the first and decode on the second. No threshold here: the
// alert's thresholds are recorded parameters in istio/observability/gpu-health-rules.yaml.
import type { Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import type { GpuInfo } from "../gpu-index.js";
import * as C from "../catalogue.js";
import { podLabelsOf, type IdentityView, type PodIdentity } from "../identity.js";
import { gpusOf, type Derivation } from "./derivation.js";

/** The activity per unit of busy time of one GPU (0-1) and what it was measured on; undefined while idle or unmeasured. */
export function activityWhileBusy(g: GpuInfo): { ratio: number; basis: "sm_active" | "tensor_dram" } | undefined {
  const util = g.utilizationPercent;
  if (util === undefined || !(util > 0)) return undefined;
  let activity: number;
  let basis: "sm_active" | "tensor_dram";
  if (g.smActiveRatio !== undefined) {
    activity = g.smActiveRatio;
    basis = "sm_active";
  } else if (g.tensorActiveRatio !== undefined && g.dramActiveRatio !== undefined) {
    activity = Math.max(g.tensorActiveRatio, g.dramActiveRatio);
    basis = "tensor_dram";
  } else return undefined;
  // The profiling fields and utilisation are sampled over different periods: a ratio past 1 is noise.
  return { ratio: Math.min(1, Math.max(0, activity) / (util / 100)), basis };
}

/** tokentrace_pod_gpu_activity_while_busy_ratio: stateless, read from the GPU index at each sidecar scrape. */
export class GpuStarvation implements Derivation {
  constructor(private readonly identities: IdentityView) {}

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    const ts = r.timestampMs;
    const podLabels: Labels = podLabelsOf(t);
    for (const g of gpusOf(this.identities, pod)) {
      const a = activityWhileBusy(g);
      if (!a) continue;
      out.push({
        labels: ["__name__", C.POD_GPU_ACTIVITY_WHILE_BUSY, ...podLabels, "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname, "basis", a.basis],
        samples: [{ value: a.ratio, timestampMs: ts }],
      });
    }
  }
}
