// What a pod did over its last sidecar scrape interval, from the deltas between consecutive scrapes
// (counter resets handled): output tokens per second per GPU and mean latency per phase (the
// sidecar's ttft and decode, the engine's queue and prefill over its own last interval) per route
// and model, the utilisation of the pod's GPUs beside them, and GPU-seconds per 1000 output tokens
// per model. It also keeps each pod's output token rate, which the energy family divides by power.
import { labelValue, type Labels, type ParsedSample } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { ScrapeTarget } from "../../scrape/targets.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { counterDelta } from "../counter.js";
import { podKeyOf, type IdentityView, type PodIdentity } from "../identity.js";
import { gpusOf, round, type Derivation } from "./derivation.js";

interface CounterSnapshot {
  ts: number;
  values: Map<string, number>;
}

// Maps, not objects: they are indexed by scraped series names.
const LATENCY_FAMILIES = new Map([
  ["tokentrace_llm_ttft_ms_sum", "ttft_sum"],
  ["tokentrace_llm_ttft_ms_count", "ttft_count"],
  ["tokentrace_llm_decode_ms_sum", "decode_sum"],
  ["tokentrace_llm_decode_ms_count", "decode_count"],
  ["tokentrace_llm_output_tokens_total", "out"],
]);
const VLLM_FAMILIES = new Map([
  ["vllm:request_queue_time_seconds_sum", "queue_sum"],
  ["vllm:request_queue_time_seconds_count", "queue_count"],
  ["vllm:request_prefill_time_seconds_sum", "prefill_sum"],
  ["vllm:request_prefill_time_seconds_count", "prefill_count"],
]);

/** tokentrace_output_tokens_per_second_per_gpu, tokentrace_route_latency_seconds, tokentrace_route_gpu_utilization_percent, tokentrace_gpu_seconds_per_1k_output_tokens. */
export class PodInterval implements Derivation {
  private readonly prevPod = new Map<string, CounterSnapshot>();
  private readonly prevVllm = new Map<string, CounterSnapshot>();
  /** Per pod and model: mean queue and prefill seconds over the last vLLM interval. */
  private readonly vllmMeans = new Map<string, { queue?: number; prefill?: number }>();
  /** Per pod: output tokens per second over its last Envoy scrape interval (for tokens per joule). */
  private readonly podTokenRate = new Map<string, number>();

  constructor(private readonly identities: IdentityView) {}

  /** A pod's output tokens per second over its last sidecar interval, if known. */
  tokenRateOf(podKey: string): number | undefined {
    return this.podTokenRate.get(podKey);
  }

  observe(r: ScrapeResult): void {
    const t = r.target;
    const podKey = podKeyOf(t);
    if (!podKey) return;
    // Rates of a pod we cannot read are unknown, not frozen at their last value.
    if (!r.ok && (t.kind === "envoy" || t.kind === "static")) this.forgetRates(podKey);
    // The engine's means are tracked as its scrapes arrive, held or not.
    if (r.ok && t.kind === "vllm") this.trackVllm(podKey, r);
  }

  forget(t: ScrapeTarget): void {
    const podKey = podKeyOf(t);
    if (!podKey) return;
    if (t.kind === "envoy" || t.kind === "static") this.forgetRates(podKey);
    if (t.kind === "vllm") {
      this.prevVllm.delete(podKey);
      for (const k of [...this.vllmMeans.keys()]) if (k.startsWith(`${podKey}\xff`)) this.vllmMeans.delete(k);
    }
  }

  private forgetRates(podKey: string): void {
    this.prevPod.delete(podKey);
    this.podTokenRate.delete(podKey);
  }

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    const podKey = pod.key;
    const ts = r.timestampMs;
    const podLabels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
    const cur = sumFamilies(r.samples, LATENCY_FAMILIES, (s) => `${labelValue(s.labels, "route") ?? ""}\xff${labelValue(s.labels, "model") ?? ""}`);
    let podOut = 0;
    for (const [k, v] of cur) if (k.startsWith("out\xff")) podOut += v;
    cur.set("pod_out", podOut);
    const prev = this.prevPod.get(podKey);
    this.prevPod.set(podKey, { ts, values: cur });
    if (!prev || ts <= prev.ts) return;
    const dtSec = (ts - prev.ts) / 1000;
    this.podTokenRate.set(podKey, counterDelta(prev.values.get("pod_out") ?? 0, podOut) / dtSec);
    const delta = (k: string): number | undefined => {
      const c = cur.get(k);
      const p = prev.values.get(k);
      return c === undefined || p === undefined ? undefined : counterDelta(p, c);
    };
    const mean = (sumKey: string, countKey: string, rm: string): number | undefined => {
      const dSum = delta(`${sumKey}\xff${rm}`);
      const dCount = delta(`${countKey}\xff${rm}`);
      return dSum !== undefined && dCount ? dSum / dCount / 1000 : undefined;
    };
    const index = this.identities.index;
    const gpus = gpusOf(this.identities, pod);
    const gpuCount = pod.gpuKeys.length;
    const gpuShare = gpus.reduce((n, g) => n + 1 / Math.max(1, index.podsOfGpu(g.key).length), 0);
    const utilValues = gpus.map((g) => index.utilizationOf(podKey, g.key)).filter((v): v is number => v !== undefined);
    const meanUtil = utilValues.length > 0 ? utilValues.reduce((a, b) => a + b, 0) / utilValues.length : undefined;
    const routes = new Set<string>();
    for (const k of cur.keys()) if (k.startsWith("out\xff") || k.startsWith("ttft_sum\xff") || k.startsWith("decode_sum\xff")) routes.add(k.slice(k.indexOf("\xff") + 1));
    const outByModel = new Map<string, number>();
    for (const rm of [...routes].sort()) {
      const [route, model] = rm.split("\xff") as [string, string];
      const rl: Labels = [...podLabels, "route", route, "model", model];
      const dOut = delta(`out\xff${rm}`);
      if (dOut !== undefined) {
        outByModel.set(model, (outByModel.get(model) ?? 0) + dOut);
        if (gpuCount > 0) out.push({ labels: ["__name__", C.OUTPUT_TOKENS_PER_SECOND_PER_GPU, ...rl], samples: [{ value: round(dOut / dtSec / gpuCount), timestampMs: ts }] });
      }
      const vllm = this.vllmMeans.get(`${podKey}\xff${model}`);
      const phases: [string, number | undefined][] = [
        ["ttft", mean("ttft_sum", "ttft_count", rm)],
        // The filter's own decode histogram: last body byte minus first content chunk, streaming only.
        ["decode", mean("decode_sum", "decode_count", rm)],
        ["queue", vllm?.queue],
        ["prefill", vllm?.prefill],
      ];
      let any = false;
      for (const [phase, v] of phases) {
        if (v === undefined) continue;
        any = true;
        out.push({ labels: ["__name__", C.ROUTE_LATENCY, ...rl, "phase", phase], samples: [{ value: round(v), timestampMs: ts }] });
      }
      if (any && meanUtil !== undefined) out.push({ labels: ["__name__", C.ROUTE_GPU_UTILIZATION, ...rl], samples: [{ value: round(meanUtil), timestampMs: ts }] });
    }
    if (gpuShare > 0) {
      for (const [model, dOut] of [...outByModel].sort()) {
        if (dOut <= 0) continue;
        out.push({ labels: ["__name__", C.GPU_SECONDS_PER_1K_TOKENS, ...podLabels, "model", model], samples: [{ value: round((gpuShare * dtSec) / (dOut / 1000)), timestampMs: ts }] });
      }
    }
  }

  private trackVllm(podKey: string, r: ScrapeResult): void {
    const cur = sumFamilies(r.samples, VLLM_FAMILIES, (s) => labelValue(s.labels, "model_name") ?? "");
    const prev = this.prevVllm.get(podKey);
    this.prevVllm.set(podKey, { ts: r.timestampMs, values: cur });
    if (!prev) return;
    const models = new Set([...cur.keys()].map((k) => k.slice(k.indexOf("\xff") + 1)));
    for (const model of models) {
      const mean = (sumKey: string, countKey: string): number | undefined => {
        const cs = cur.get(`${sumKey}\xff${model}`);
        const cc = cur.get(`${countKey}\xff${model}`);
        const ps = prev.values.get(`${sumKey}\xff${model}`);
        const pc = prev.values.get(`${countKey}\xff${model}`);
        if (cs === undefined || cc === undefined || ps === undefined || pc === undefined) return undefined;
        const dc = counterDelta(pc, cc);
        return dc > 0 ? counterDelta(ps, cs) / dc : undefined;
      };
      const m: { queue?: number; prefill?: number } = {};
      const q = mean("queue_sum", "queue_count");
      const p = mean("prefill_sum", "prefill_count");
      if (q !== undefined) m.queue = q;
      if (p !== undefined) m.prefill = p;
      this.vllmMeans.set(`${podKey}\xff${model}`, m);
    }
  }
}

/** Sums the samples of the named families per `<family key>\xff<group>`. */
function sumFamilies(samples: readonly ParsedSample[], families: ReadonlyMap<string, string>, group: (s: ParsedSample) => string): Map<string, number> {
  const cur = new Map<string, number>();
  for (const s of samples) {
    const key = families.get(s.name);
    if (!key) continue;
    const k = `${key}\xff${group(s)}`;
    cur.set(k, (cur.get(k) ?? 0) + s.value);
  }
  return cur;
}
