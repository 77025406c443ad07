// The model servers' view per (namespace, pod, model), evaluated at each engine scrape over the
// rate window (../../engine/signals.ts), with the utilisation of the pod's GPUs beside it.
import type { Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { ScrapeTarget } from "../../scrape/targets.js";
import type { WriteSeries } from "../../remote-write/series.js";
import { engineEntries, keepEngineInfo, modelSignals, type EngineInfo, type ModelSignals } from "../../engine/signals.js";
import { NamePool } from "../../scrape/name-pool.js";
import * as C from "../catalogue.js";
import { podKeyOf, type IdentityView, type PodIdentity } from "../identity.js";
import { meanUtilizationOf, PodWindows, WindowBudget, type Derivation } from "./derivation.js";

/** tokentrace_model_*: per pod, its engine targets' series over the rate window. */
export class EngineSignals implements Derivation {
  private readonly windows: PodWindows<EngineInfo>;

  constructor(private readonly identities: IdentityView, private readonly rateWindowMs: number, budget: WindowBudget = new WindowBudget()) {
    this.windows = new PodWindows(rateWindowMs, budget, keepEngineInfo(new NamePool()));
  }

  /** The signals of every model the pod's engines report, at `ts` over the rate window (empty before any engine scrape). */
  signalsAt(podKey: string, ts: number): Map<string, ModelSignals> {
    const w = this.windows.get(podKey);
    return w ? modelSignals(w.all(), ts, this.rateWindowMs) : new Map<string, ModelSignals>();
  }

  observe(r: ScrapeResult): void {
    const podKey = podKeyOf(r.target);
    // Prometheus marks a failed target's series stale: instant values stop, ranges keep what they had.
    if (!r.ok && podKey) this.windows.get(podKey)?.failed(r.target.id, r.timestampMs);
  }

  forget(t: ScrapeTarget): void {
    const podKey = podKeyOf(t);
    if (podKey && t.kind !== "dcgm") this.windows.remove(podKey, t.id);
  }

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || t.kind !== "vllm") return;
    const ts = r.timestampMs;
    const entries = engineEntries(t.id, r.samples);
    if (entries.length === 0 && !this.windows.has(pod.key)) return;
    if (this.windows.observe(pod.key, t.id, ts, entries) === undefined) return;
    const signals = this.signalsAt(pod.key, ts);
    const gpuUtil = meanUtilizationOf(this.identities, pod);
    const podLabels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
    for (const [model, m] of [...signals].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const ml: Labels = [...podLabels, "model", model];
      const put = (name: string, v: number | undefined, extra: Labels = []): void => {
        if (v !== undefined) out.push({ labels: ["__name__", name, ...ml, ...extra], samples: [{ value: v, timestampMs: ts }] });
      };
      put(C.MODEL_REQUESTS_WAITING, m.waiting);
      put(C.MODEL_REQUESTS_RUNNING, m.running);
      put(C.MODEL_KV_CACHE_USAGE, m.kvCacheUsage);
      put(C.MODEL_PREFIX_CACHE_HIT_RATIO, m.prefixCacheHitRatio);
      put(C.MODEL_PREEMPTIONS_PER_SECOND, m.preemptionsPerSecond);
      put(C.MODEL_SPEC_DECODE_ACCEPTANCE, m.specDecodeAcceptance);
      put(C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO, m.externalPrefixCacheHitRatio);
      put(C.MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN, m.prefillKvComputedTokensMean);
      put(C.MODEL_REQUEST_PREEMPTIONS_MEAN, m.requestPreemptionsMean);
      for (const [q, v] of m.requestTpot) put(C.MODEL_REQUEST_TPOT_QUANTILE, v, ["quantile", String(q)]);
      for (const [reason, v] of m.waitingByReason) put(C.MODEL_REQUESTS_WAITING_BY_REASON, v, ["reason", reason]);
      for (const [source, v] of m.prefixCacheHitRatioBySource) put(C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, v, ["cache_source", source]);
      // Beside every model the engines report right now (a running or waiting gauge).
      if (m.running !== undefined || m.waiting !== undefined) put(C.MODEL_GPU_UTILIZATION, gpuUtil);
      for (const [phase, quantiles] of m.phases) for (const [q, v] of quantiles) put(C.MODEL_LATENCY_QUANTILE, v, ["phase", phase, "quantile", String(q)]);
    }
  }
}
