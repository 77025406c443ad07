// What a pod did over its last sidecar scrape interval, from each series' irate() over its two
// newest scrapes (counter resets handled), summed as the recording rules sum them: output tokens
// per second per GPU and mean latency per phase (the sidecar's ttft and decode, the engine's queue
// and prefill over its own last interval) per route and model, the utilisation of the pod's GPUs
// beside them, and GPU-seconds per 1000 output tokens per model. It also keeps each pod's output
// token rate, which the energy family divides by power.
import { labelValue, type Labels, type ParsedSample } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { ScrapeTarget } from "../../scrape/targets.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { sumOf } from "../../promql/aggregate.js";
import { instantRate } from "../../promql/rate.js";
import { inSeriesOrder, seriesOrderKey, seriesOrderKeyOf } from "../../promql/series-order.js";
import { podKeyOf, podLabelsOf, sourceKeyOf, type IdentityView, type PodIdentity } from "../identity.js";
import { gpusOf, meanUtilizationOf, type Derivation } from "./derivation.js";

/** One counter series of a scrape: its family, its group, its place in Prometheus's series order. */
interface SeriesPoint {
  family: string;
  route: string;
  model: string;
  order: string;
  value: number;
}

interface CounterSnapshot {
  ts: number;
  /** By series identity (its order key). */
  series: Map<string, SeriesPoint>;
}

/** One series' irate over the interval, with what it is summed by. */
type SeriesRate = Omit<SeriesPoint, "value"> & { rate: number };

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
  /** Per pod and source (the pod, or the pod through a waypoint): output tokens per second over its last Envoy scrape interval (for tokens per joule). */
  private readonly podTokenRate = new Map<string, Map<string, number>>();

  constructor(private readonly identities: IdentityView) {}

  /** A pod's output tokens per second over its last sidecar interval, if known. */
  tokenRateOf(podKey: string): number | undefined {
    const bySource = this.podTokenRate.get(podKey);
    if (bySource === undefined) return undefined;
    let sum = 0;
    for (const rate of bySource.values()) sum += rate;
    return sum;
  }

  observe(r: ScrapeResult): void {
    const t = r.target;
    const podKey = podKeyOf(t);
    if (!podKey) return;
    // Rates of a pod we cannot read are unknown, not frozen at their last value.
    if (!r.ok && (t.kind === "envoy" || t.kind === "static")) this.forgetRates(podKey, sourceKeyOf(t, podKey));
    // The engine's means are tracked as its scrapes arrive, held or not.
    if (r.ok && t.kind === "vllm") this.trackVllm(podKey, r);
  }

  forget(t: ScrapeTarget): void {
    const podKey = podKeyOf(t);
    if (!podKey) return;
    if (t.kind === "envoy" || t.kind === "static") this.forgetRates(podKey, sourceKeyOf(t, podKey));
    if (t.kind === "vllm") {
      this.prevVllm.delete(podKey);
      for (const k of [...this.vllmMeans.keys()]) if (k.startsWith(`${podKey}\xff`)) this.vllmMeans.delete(k);
    }
  }

  private forgetRates(podKey: string, source: string): void {
    this.prevPod.delete(source);
    this.setTokenRate(podKey, source, undefined);
  }

  private setTokenRate(podKey: string, source: string, rate: number | undefined): void {
    let bySource = this.podTokenRate.get(podKey);
    if (rate === undefined) {
      bySource?.delete(source);
      if (bySource?.size === 0) this.podTokenRate.delete(podKey);
      return;
    }
    if (!bySource) this.podTokenRate.set(podKey, (bySource = new Map()));
    bySource.set(source, rate);
  }

  // Each value is computed as its rule in istio/observability/recording-rules.yaml computes it, the
  // same operations in the same order, so both give the same double: irate() per series, then
  // sum by (...) over the series in their label order, then the rule's binary operations left to right.
  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    const podKey = pod.key;
    const source = sourceKeyOf(t, podKey);
    const ts = r.timestampMs;
    const podLabels: Labels = podLabelsOf(t);
    const cur = snapshotOf(r.samples, LATENCY_FAMILIES, podLabels, (s) => [labelValue(s.labels, "route") ?? "", labelValue(s.labels, "model") ?? ""]);
    const prev = this.prevPod.get(source);
    this.prevPod.set(source, { ts, series: cur });
    if (!prev || ts <= prev.ts) return;
    const rates = ratesOf(prev, { ts, series: cur });
    // namespace_pod:tokentrace_llm_output_tokens_per_gpu:irate2m's sum by (namespace, pod) (irate(...)).
    const podRate = sumOf(rates.filter((x) => x.family === "out").map((x) => x.rate));
    this.setTokenRate(podKey, source, podRate);
    const sumWhere = (family: string, route: string | undefined, model: string): number | undefined =>
      sumOf(rates.filter((x) => x.family === family && (route === undefined || x.route === route) && x.model === model).map((x) => x.rate));
    // sum(irate(x_sum)) / (sum(irate(x_count)) > 0) / 1000
    const mean = (sumFamily: string, countFamily: string, route: string, model: string): number | undefined => {
      const perSecond = sumWhere(sumFamily, route, model);
      const countPerSecond = sumWhere(countFamily, route, model);
      return perSecond !== undefined && countPerSecond !== undefined && countPerSecond > 0 ? perSecond / countPerSecond / 1000 : undefined;
    };
    const gpuCount = pod.gpuKeys.length;
    const meanUtil = meanUtilizationOf(this.identities, pod);
    const groups = new Map<string, [string, string]>();
    for (const p of cur.values()) if (p.family === "out" || p.family === "ttft_sum" || p.family === "decode_sum") groups.set(`${p.route}\xff${p.model}`, [p.route, p.model]);
    const models = new Set<string>();
    for (const [, [route, model]] of [...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const rl: Labels = [...podLabels, "route", route, "model", model];
      const outPerSecond = sumWhere("out", route, model);
      if (outPerSecond !== undefined) {
        models.add(model);
        // sum by (namespace, pod, route, model) (irate(...)) / on (namespace, pod) group_left namespace_pod:tokentrace_pod_gpu_info:count
        if (gpuCount > 0) out.push({ labels: ["__name__", C.OUTPUT_TOKENS_PER_SECOND_PER_GPU, ...rl], samples: [{ value: outPerSecond / gpuCount, timestampMs: ts }] });
      }
      const vllm = this.vllmMeans.get(`${podKey}\xff${model}`);
      const phases: [string, number | undefined][] = [
        ["ttft", mean("ttft_sum", "ttft_count", route, model)],
        // The filter's own decode histogram: last body byte minus first content chunk, streaming only.
        ["decode", mean("decode_sum", "decode_count", route, model)],
        ["queue", vllm?.queue],
        ["prefill", vllm?.prefill],
      ];
      let any = false;
      for (const [phase, v] of phases) {
        if (v === undefined) continue;
        any = true;
        out.push({ labels: ["__name__", C.ROUTE_LATENCY, ...rl, "phase", phase], samples: [{ value: v, timestampMs: ts }] });
      }
      if (any && meanUtil !== undefined) out.push({ labels: ["__name__", C.ROUTE_GPU_UTILIZATION, ...rl], samples: [{ value: meanUtil, timestampMs: ts }] });
    }
    const gpuShare = gpuShareOf(this.identities, pod);
    if (gpuShare === undefined) return;
    for (const model of [...models].sort()) {
      // Over every route of the model: sum by (namespace, pod, model), not a sum of the routes' sums.
      const outPerSecond = sumWhere("out", undefined, model);
      // 1000 / (sum by (namespace, pod, model) (irate(...)) > 0) * on (namespace, pod) group_left namespace_pod:tokentrace_pod_gpu_share:sum
      if (outPerSecond === undefined || !(outPerSecond > 0)) continue;
      out.push({ labels: ["__name__", C.GPU_SECONDS_PER_1K_TOKENS, ...podLabels, "model", model], samples: [{ value: (1000 / outPerSecond) * gpuShare, timestampMs: ts }] });
    }
  }

  private trackVllm(podKey: string, r: ScrapeResult): void {
    const t = r.target;
    const cur = snapshotOf(r.samples, VLLM_FAMILIES, ["namespace", t.namespace ?? "", "pod", t.pod ?? ""], (s) => ["", labelValue(s.labels, "model_name") ?? ""]);
    const prev = this.prevVllm.get(podKey);
    const now = { ts: r.timestampMs, series: cur };
    this.prevVllm.set(podKey, now);
    if (!prev || now.ts <= prev.ts) return;
    const rates = ratesOf(prev, now);
    const models = new Set([...cur.values()].map((p) => p.model));
    for (const model of models) {
      // sum by (namespace, pod, model_name) (irate(x_sum)) / (sum by (...) (irate(x_count)) > 0)
      const mean = (sumFamily: string, countFamily: string): number | undefined => {
        const perSecond = sumOf(rates.filter((x) => x.family === sumFamily && x.model === model).map((x) => x.rate));
        const countPerSecond = sumOf(rates.filter((x) => x.family === countFamily && x.model === model).map((x) => x.rate));
        return perSecond !== undefined && countPerSecond !== undefined && countPerSecond > 0 ? perSecond / countPerSecond : undefined;
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

/** tokentrace:pod_gpu_share:sum: the sum over the pod's GPUs, in its info series' order, of 1 / pods mapped to the GPU. */
function gpuShareOf(identities: IdentityView, pod: PodIdentity): number | undefined {
  const index = identities.index;
  const links = gpusOf(identities, pod).map((g) => {
    const pods = index.podsOfGpu(g.key).length;
    const info: Labels = ["__name__", C.POD_GPU_INFO, ...pod.labels.slice(0, 4), "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname, "gpu_pods", String(pods)];
    // (info * 0 + 1) / on (gpu_uuid) group_left gpu_uuid:tokentrace_gpu_mapped_pods:count, or 1 where no pod is mapped.
    return { order: seriesOrderKey(info), share: pods > 0 ? 1 / pods : 1 };
  });
  return sumOf(inSeriesOrder(links).map((l) => l.share));
}

/** The samples of the named families, one point per series, keyed and ordered by its full label set. */
function snapshotOf(samples: readonly ParsedSample[], families: ReadonlyMap<string, string>, targetLabels: Labels, group: (s: ParsedSample) => [string, string]): Map<string, SeriesPoint> {
  const series = new Map<string, SeriesPoint>();
  for (const s of samples) {
    const family = families.get(s.name);
    if (!family) continue;
    const order = seriesOrderKeyOf(s.name, s.labels, targetLabels);
    const [route, model] = group(s);
    series.set(order, { family, route, model, order, value: s.value });
  }
  return series;
}

/** irate() of every series in both snapshots, in series order (a series needs two samples). */
function ratesOf(prev: CounterSnapshot, cur: CounterSnapshot): SeriesRate[] {
  const rates: SeriesRate[] = [];
  for (const [key, c] of cur.series) {
    const p = prev.series.get(key);
    if (!p) continue;
    const rate = instantRate(p.value, prev.ts, c.value, cur.ts);
    if (rate !== undefined) rates.push({ family: c.family, route: c.route, model: c.model, order: c.order, rate });
  }
  return inSeriesOrder(rates);
}
