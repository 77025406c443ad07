// Tensor-parallel stragglers, per pod with two or more GPUs dcgm-exporter maps to it, at each sidecar
// scrape: the spread of its GPUs' utilisation (max - min, percentage points), framebuffer use
// ((max - min) / max) and SM activity (max - min). The ranks of a tensor-parallel engine hold equal
// shards and equal KV caches and run the same kernels in lock step, every all-reduce waiting for
// the slowest: cards that differ, in memory (another process, a leak) or in activity (a card that
// is slower, throttled, or waiting on the others), are what to look at. Pods on the node-level
// fallback (GPUs no pod was mapped to) are left out: those GPUs need not be the pod's.
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { podLabelsOf, type IdentityView, type PodIdentity } from "../identity.js";
import { gpusOf, mappedToPod, smActivityOf, type Derivation } from "./derivation.js";

const spread = (values: readonly number[]): { min: number; max: number } => {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { min, max };
};

/** tokentrace_pod_gpu_*_spread_*: stateless, read from the GPU index at each sidecar scrape. */
export class GpuStragglers implements Derivation {
  constructor(private readonly identities: IdentityView) {}

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static") || pod.gpuKeys.length < 2 || !mappedToPod(pod)) return;
    const index = this.identities.index;
    const gpus = gpusOf(this.identities, pod);
    if (gpus.length < 2) return;
    const ts = r.timestampMs;
    const put = (name: string, value: number, extra: string[] = []): void => {
      out.push({ labels: ["__name__", name, ...podLabelsOf(t), ...extra], samples: [{ value, timestampMs: ts }] });
    };
    const utils = gpus.map((g) => index.utilizationOf(pod.key, g.key));
    if (utils.every((v) => v !== undefined)) {
      const u = spread(utils as number[]);
      put(C.POD_GPU_UTILIZATION_SPREAD, u.max - u.min);
    }
    const mems = gpus.map((g) => index.memoryOf(pod.key, g.key));
    if (mems.every((v) => v !== undefined)) {
      const m = spread(mems as number[]);
      if (m.max > 0) put(C.POD_GPU_MEMORY_USED_SPREAD, (m.max - m.min) / m.max);
    }
    // One source for every card, so a card with SM_ACTIVE is never compared with one without.
    const sm = gpus.map(smActivityOf);
    const source = sm[0]?.source;
    if (source && sm.every((a) => a?.source === source)) {
      const s = spread(sm.map((a) => a!.value));
      put(C.POD_GPU_SM_ACTIVE_SPREAD, s.max - s.min, ["source", source]);
    }
  }
}
