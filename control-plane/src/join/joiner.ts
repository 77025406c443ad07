// Joins each scrape into the series remote write ships: the filter's series from a pod's Envoy
// sidecar get the pod identity (from the target, not the series) and its GPU identity; dcgm-exporter
// and vLLM series are cleaned and passed on; derived series are computed from deltas between a
// target's consecutive scrapes, with counter resets handled.
import { labelValue, type Labels, type ParsedSample } from "../scrape/sample.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { WriteSeries } from "../remote-write/series.js";
import { GpuIndex, type GpuInfo } from "./gpu-index.js";
import { cleanLabels, setLabel } from "./labels.js";
import * as C from "./catalogue.js";

/** Which scraped series are passed on (by name prefix), per target kind. */
export interface ForwardRules {
  envoy: string[];
  dcgm: string[];
  vllm: string[];
  static: string[];
}

/** Default forwarding: the filter's own series, all of dcgm-exporter, vLLM's. */
export const DEFAULT_FORWARD: ForwardRules = { envoy: ["tokentrace_"], dcgm: ["DCGM_FI_"], vllm: ["vllm:"], static: ["tokentrace_", "DCGM_FI_", "vllm:"] };

interface PodSnapshot {
  ts: number;
  values: Map<string, number>;
}

interface GpuSnapshot {
  ts: number;
  energyMj: number;
}

const LATENCY_FAMILIES: Record<string, string> = {
  tokentrace_llm_ttft_ms_sum: "ttft_sum",
  tokentrace_llm_ttft_ms_count: "ttft_count",
  tokentrace_llm_duration_ms_sum: "dur_sum",
  tokentrace_llm_duration_ms_count: "dur_count",
  tokentrace_llm_output_tokens_total: "out",
};
const VLLM_FAMILIES: Record<string, string> = {
  "vllm:request_queue_time_seconds_sum": "queue_sum",
  "vllm:request_queue_time_seconds_count": "queue_count",
  "vllm:request_prefill_time_seconds_sum": "prefill_sum",
  "vllm:request_prefill_time_seconds_count": "prefill_count",
};

/** Counter delta with a reset (value went down) read as "started again from zero". */
export function counterDelta(prev: number, cur: number): number {
  return cur >= prev ? cur - prev : cur;
}

const round = (v: number): number => Math.round(v * 1e9) / 1e9;

/** Stateful join over the stream of scrape results. */
export class Joiner {
  private readonly dcgmByTarget = new Map<string, ParsedSample[]>();
  private index = new GpuIndex();
  private readonly prevPod = new Map<string, PodSnapshot>();
  private readonly prevVllm = new Map<string, PodSnapshot>();
  /** Per pod and model: mean queue and prefill seconds over the last vLLM interval. */
  private readonly vllmMeans = new Map<string, { queue?: number; prefill?: number }>();
  /** Per pod: output tokens per second over its last Envoy scrape interval (for tokens per joule). */
  private readonly podTokenRate = new Map<string, number>();
  private readonly prevGpu = new Map<string, GpuSnapshot>();

  constructor(private readonly forward: ForwardRules = DEFAULT_FORWARD) {}

  /** The current GPU index (for tests and diagnostics). */
  get gpuIndex(): GpuIndex {
    return this.index;
  }

  /** Forgets a target that went away. */
  removeTarget(id: string): void {
    if (this.dcgmByTarget.delete(id)) this.rebuildIndex();
    const [kind, ns, pod] = id.split("/");
    if (kind === "envoy" && ns && pod) this.forgetPod(`${ns}/${pod}`);
    if (kind === "vllm" && ns && pod) {
      const podKey = `${ns}/${pod}`;
      this.prevVllm.delete(podKey);
      for (const k of [...this.vllmMeans.keys()]) if (k.startsWith(`${podKey}\xff`)) this.vllmMeans.delete(k);
    }
  }

  private forgetPod(podKey: string): void {
    this.prevPod.delete(podKey);
    this.podTokenRate.delete(podKey);
  }

  private rebuildIndex(): void {
    const idx = new GpuIndex();
    for (const samples of this.dcgmByTarget.values()) idx.addScrape(samples);
    this.index = idx;
  }

  /** The series one scrape yields (up and scrape_duration_seconds included). */
  join(r: ScrapeResult): WriteSeries[] {
    const out: WriteSeries[] = [];
    const t = r.target;
    const ts = r.timestampMs;
    const targetLabels: Labels = ["job", t.kind, "instance", instanceOf(t.url)];
    if (t.namespace) targetLabels.push("namespace", t.namespace);
    if (t.pod) targetLabels.push("pod", t.pod);
    out.push({ labels: ["__name__", C.UP, ...targetLabels], samples: [{ value: r.ok ? 1 : 0, timestampMs: ts }] });
    out.push({ labels: ["__name__", C.SCRAPE_DURATION, ...targetLabels], samples: [{ value: round(r.durationMs / 1000), timestampMs: ts }] });
    if (!r.ok) {
      // Rates of a pod we cannot read are unknown, not frozen at their last value.
      if (t.kind === "envoy" && t.namespace && t.pod) this.forgetPod(`${t.namespace}/${t.pod}`);
      return out;
    }
    if (t.kind === "dcgm") {
      this.dcgmByTarget.set(t.id, r.samples);
      this.rebuildIndex();
      this.forwardSeries(r, this.forward.dcgm, [], out);
      this.deriveGpu(ts, out);
      return out;
    }
    const identity = this.podIdentity(t.namespace, t.pod, t.node);
    const prefixes = t.kind === "envoy" ? this.forward.envoy : t.kind === "vllm" ? this.forward.vllm : this.forward.static;
    this.forwardSeries(r, prefixes, identity.labels, out);
    if (t.kind === "envoy" && t.namespace && t.pod) this.derivePod(r, identity.gpus, out);
    if (t.kind === "vllm" && t.namespace && t.pod) this.trackVllm(r);
    return out;
  }

  private podIdentity(namespace: string | undefined, pod: string | undefined, node: string | undefined): { labels: Labels; gpus: GpuInfo[] } {
    const labels: Labels = [];
    if (namespace) labels.push("namespace", namespace);
    if (pod) labels.push("pod", pod);
    if (!namespace || !pod) return { labels, gpus: [] };
    const { gpus, attribution } = this.index.gpusOfPod(namespace, pod, node);
    if (gpus.length === 0) {
      if (node) labels.push("hostname", node);
      return { labels, gpus };
    }
    // Several GPUs per pod: one series per filter series still, the GPUs listed in index order.
    labels.push(
      "gpu", gpus.map((g) => g.gpu).join(","),
      "gpu_uuid", gpus.map((g) => g.key).join(","),
      "gpu_model", [...new Set(gpus.map((g) => g.modelName))].join(","),
      "hostname", [...new Set(gpus.map((g) => g.hostname))].join(","),
      "gpu_count", String(gpus.length),
      "gpu_attribution", attribution,
    );
    return { labels, gpus };
  }

  private forwardSeries(r: ScrapeResult, prefixes: string[], extra: Labels, out: WriteSeries[]): void {
    for (const s of r.samples) {
      if (!prefixes.some((p) => s.name.startsWith(p))) continue;
      const labels = cleanLabels(s.labels);
      for (let i = 0; i < extra.length; i += 2) setLabel(labels, extra[i]!, extra[i + 1]!);
      labels.push("__name__", s.name);
      out.push({ labels, samples: [{ value: s.value, timestampMs: s.timestampMs ?? r.timestampMs }] });
    }
  }

  private derivePod(r: ScrapeResult, gpus: GpuInfo[], out: WriteSeries[]): void {
    const t = r.target;
    const podKey = `${t.namespace}/${t.pod}`;
    const ts = r.timestampMs;
    const podLabels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
    // GPU state of each (pod, GPU) link.
    for (const g of gpus) {
      const gl: Labels = [...podLabels, "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname, "gpu_pods", String(this.index.podsOfGpu(g.key).length)];
      const state: [string, number | undefined][] = [
        [C.POD_GPU_UTILIZATION, g.utilizationPercent],
        [C.POD_GPU_SM_ACTIVE, g.smActiveRatio],
        [C.POD_GPU_MEMORY_USED, g.memoryUsedMiB === undefined ? undefined : g.memoryUsedMiB * 1024 * 1024],
        [C.POD_GPU_POWER, g.powerWatts],
      ];
      // The info series exists for every link, so PromQL can join on it even when dcgm-exporter left a field out.
      out.push({ labels: ["__name__", C.POD_GPU_INFO, ...gl], samples: [{ value: 1, timestampMs: ts }] });
      for (const [name, v] of state) if (v !== undefined) out.push({ labels: ["__name__", name, ...gl], samples: [{ value: v, timestampMs: ts }] });
    }
    // Current values of the counters the derived series need, per route and model.
    const cur = new Map<string, number>();
    let podOut = 0;
    for (const s of r.samples) {
      const key = LATENCY_FAMILIES[s.name];
      if (!key) continue;
      const route = labelValue(s.labels, "route") ?? "";
      const model = labelValue(s.labels, "model") ?? "";
      const k = `${key}\xff${route}\xff${model}`;
      cur.set(k, (cur.get(k) ?? 0) + s.value);
      if (key === "out") podOut += s.value;
    }
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
    const gpuCount = gpus.length;
    const gpuShare = gpus.reduce((n, g) => n + 1 / Math.max(1, this.index.podsOfGpu(g.key).length), 0);
    const utilValues = gpus.map((g) => g.utilizationPercent).filter((v): v is number => v !== undefined);
    const meanUtil = utilValues.length > 0 ? utilValues.reduce((a, b) => a + b, 0) / utilValues.length : undefined;
    const routes = new Set<string>();
    for (const k of cur.keys()) if (k.startsWith("out\xff") || k.startsWith("ttft_sum\xff") || k.startsWith("dur_sum\xff")) routes.add(k.slice(k.indexOf("\xff") + 1));
    const outByModel = new Map<string, number>();
    for (const rm of [...routes].sort()) {
      const [route, model] = rm.split("\xff") as [string, string];
      const rl: Labels = [...podLabels, "route", route, "model", model];
      const dOut = delta(`out\xff${rm}`);
      if (dOut !== undefined) {
        outByModel.set(model, (outByModel.get(model) ?? 0) + dOut);
        if (gpuCount > 0) out.push({ labels: ["__name__", C.OUTPUT_TOKENS_PER_SECOND_PER_GPU, ...rl], samples: [{ value: round(dOut / dtSec / gpuCount), timestampMs: ts }] });
      }
      const dTtftSum = delta(`ttft_sum\xff${rm}`);
      const dTtftCount = delta(`ttft_count\xff${rm}`);
      const dDurSum = delta(`dur_sum\xff${rm}`);
      const dDurCount = delta(`dur_count\xff${rm}`);
      const ttft = dTtftSum !== undefined && dTtftCount ? dTtftSum / dTtftCount / 1000 : undefined;
      const dur = dDurSum !== undefined && dDurCount ? dDurSum / dDurCount / 1000 : undefined;
      const phases: [string, number | undefined][] = [
        ["ttft", ttft],
        ["decode", ttft !== undefined && dur !== undefined ? Math.max(0, dur - ttft) : undefined],
        ["queue", this.vllmMeans.get(`${t.namespace}/${t.pod}\xff${model}`)?.queue],
        ["prefill", this.vllmMeans.get(`${t.namespace}/${t.pod}\xff${model}`)?.prefill],
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

  private trackVllm(r: ScrapeResult): void {
    const t = r.target;
    const cur = new Map<string, number>();
    for (const s of r.samples) {
      const key = VLLM_FAMILIES[s.name];
      if (!key) continue;
      const model = labelValue(s.labels, "model_name") ?? "";
      const k = `${key}\xff${model}`;
      cur.set(k, (cur.get(k) ?? 0) + s.value);
    }
    const podKey = `${t.namespace}/${t.pod}`;
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

  /**
   * Tokens per joule of each GPU: the token rate of the pods on it (each pod's rate over its last
   * Envoy interval, split evenly over the GPUs it uses) divided by the GPU's mean power over the
   * last dcgm interval (energy counter delta / time). A ratio of two rates, so the two scrape
   * schedules need not line up.
   */
  private deriveGpu(ts: number, out: WriteSeries[]): void {
    for (const g of this.index.gpus.values()) {
      if (g.energyMj === undefined) continue;
      const prev = this.prevGpu.get(g.key);
      this.prevGpu.set(g.key, { ts, energyMj: g.energyMj });
      if (!prev || ts <= prev.ts) continue;
      let tokensPerSec = 0;
      let known = false;
      for (const pk of this.index.podsOfGpu(g.key)) {
        const rate = this.podTokenRate.get(pk);
        if (rate === undefined) continue;
        known = true;
        tokensPerSec += rate / (this.index.podGpus.get(pk)?.size ?? 1);
      }
      const watts = counterDelta(prev.energyMj, g.energyMj) / 1000 / ((ts - prev.ts) / 1000);
      if (!known || watts <= 0) continue;
      out.push({
        labels: ["__name__", C.TOKENS_PER_JOULE, "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname],
        samples: [{ value: round(tokensPerSec / watts), timestampMs: ts }],
      });
    }
  }
}

function instanceOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
