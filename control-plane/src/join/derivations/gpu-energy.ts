// Tokens per joule of each GPU an exporter reported, at each dcgm-exporter scrape: the token rate
// of the pods on it (each pod's rate over its last Envoy interval, split evenly over its GPUs)
// divided by the GPU's mean power over this exporter's own last interval (energy counter delta /
// time between its two scrapes). Each exporter keeps its own previous reading, so exporters scraped
// at different offsets never shorten or stretch each other's intervals.
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { ScrapeTarget } from "../../scrape/targets.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { sumOf } from "../../promql/aggregate.js";
import { instantRate } from "../../promql/rate.js";
import { inSeriesOrder, seriesOrderKey } from "../../promql/series-order.js";
import type { IdentityView, PodIdentity } from "../identity.js";
import type { Derivation } from "./derivation.js";
import type { PodInterval } from "./pod-interval.js";

/** tokentrace_gpu_tokens_per_joule. */
export class GpuEnergy implements Derivation {
  /** Per (exporter, GPU): the energy counter at that exporter's previous scrape of the GPU. */
  private readonly prevEnergy = new Map<string, { ts: number; energyMj: number }>();

  constructor(private readonly identities: IdentityView, private readonly tokenRates: Pick<PodInterval, "tokenRateOf">) {}

  observe(): void {}

  forget(t: ScrapeTarget): void {
    if (t.kind !== "dcgm") return;
    for (const k of [...this.prevEnergy.keys()]) if (k.startsWith(`${t.id}\xff`)) this.prevEnergy.delete(k);
  }

  derive(r: ScrapeResult, _pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (t.kind !== "dcgm") return;
    const ts = r.timestampMs;
    for (const g of this.identities.index.gpusOfExporter(t.id)?.values() ?? []) {
      if (g.energyMj === undefined) continue;
      const key = `${t.id}\xff${g.key}`;
      const prev = this.prevEnergy.get(key);
      this.prevEnergy.set(key, { ts, energyMj: g.energyMj });
      if (!prev || ts <= prev.ts) continue;
      // sum by (gpu, ...) (tokentrace_pod_gpu_info * on (namespace, pod) group_left
      // namespace_pod:tokentrace_llm_output_tokens_per_gpu:irate2m): each pod's rate over its GPU count, added
      // in the order of the info series (the same GPU, so by namespace and pod).
      const perPod: { order: string; rate: number }[] = [];
      for (const pk of this.identities.podsWithGpu(g.key) ?? []) {
        const rate = this.tokenRates.tokenRateOf(pk);
        const identity = this.identities.identityOf(pk);
        if (rate === undefined || !identity) continue;
        perPod.push({ order: seriesOrderKey(identity.labels.slice(0, 4)), rate: rate / Math.max(1, identity.gpuKeys.length) });
      }
      const tokensPerSec = sumOf(inSeriesOrder(perPod).map((p) => p.rate));
      // max by (gpu_uuid) (irate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[2m])) / 1000 > 0: mJ/s, then W.
      const mjPerSec = instantRate(prev.energyMj, prev.ts, g.energyMj, ts);
      if (tokensPerSec === undefined || mjPerSec === undefined) continue;
      const watts = mjPerSec / 1000;
      if (!(watts > 0)) continue;
      out.push({
        labels: ["__name__", C.TOKENS_PER_JOULE, "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname],
        samples: [{ value: tokensPerSec / watts, timestampMs: ts }],
      });
    }
  }
}
