// Joins each scrape into the series remote write ships: the filter's series from a pod's Envoy
// sidecar (and vLLM's) get the pod identity (from the target, not the series) and its GPU identity;
// dcgm-exporter series are cleaned and passed on; derived series are computed from deltas between
// a target's consecutive scrapes, with counter resets handled.
//
// GPU identity is settled once per pod and then kept while the pod's targets live, so a filter
// series never changes labels mid-life. A pod's scrapes are held (the newest one per target, not
// shipped) until its identity is known or known to be absent: known as soon as a dcgm-exporter maps
// the pod; known-absent once every dcgm-exporter that could map it (same node, or node unknown)
// has answered a scrape that started after the pod was first seen; or, when those exporters keep
// failing, after `identityWaitMs` (counted: the one case where a later restart may label the pod's
// series differently). The filter's series are counters and histograms, so a held scrape that a
// newer one replaces loses nothing a rate() needs.
import { labelValue, type Labels, type ParsedSample } from "../scrape/sample.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import type { WriteSeries } from "../remote-write/series.js";
import { GpuIndex, type GpuInfo } from "./gpu-index.js";
import { cleanLabels, setLabel } from "./labels.js";
import { counterDelta } from "./counter.js";
import * as C from "./catalogue.js";
import { ENGINE_PREFIXES } from "../engine/catalogue.js";
import { engineEntries, modelSignals, type EngineInfo, type ModelSignals } from "../engine/signals.js";
import { routePhases, sidecarEntries, type SidecarInfo } from "../engine/attribution.js";
import { LOOKBACK_MS, SeriesWindow } from "../promql/series-window.js";
import { avgOf } from "../promql/aggregate.js";

export { counterDelta } from "./counter.js";

/** Which scraped series are passed on (by name prefix), per target kind. */
export interface ForwardRules {
  envoy: string[];
  dcgm: string[];
  vllm: string[];
  static: string[];
}

/** Default forwarding: the filter's own series, all of dcgm-exporter, the model server's (vLLM, SGLang, TGI). */
export const DEFAULT_FORWARD: ForwardRules = { envoy: ["tokentrace_"], dcgm: ["DCGM_FI_"], vllm: [...ENGINE_PREFIXES], static: ["tokentrace_", "DCGM_FI_", ...ENGINE_PREFIXES] };

/** The scraped series of one scrape, ready to ship, with the scrape they came from. */
export interface JoinedBatch {
  result: ScrapeResult;
  /** `up` and `scrape_duration_seconds` of that scrape (already shipped when the batch was held). */
  report: WriteSeries[];
  series: WriteSeries[];
}

/** What one call of the joiner produced. */
export interface JoinOutput {
  /** `up` and `scrape_duration_seconds` of the scrape just joined: shipped at once, held or not. */
  report: WriteSeries[];
  /** Scraped series ready now: this scrape's, and any held scrapes its result released. */
  batches: JoinedBatch[];
}

/** Joiner settings. */
export interface JoinerOptions {
  forward?: ForwardRules;
  /** Longest a pod's scrapes are held waiting for its GPU identity (default 60 s). */
  identityWaitMs?: number;
  /** Called when a pod's identity was settled by the wait running out. */
  onIdentityTimeout?: () => void;
  /** The range of the engine's and the sidecar's percentiles and rates (PromQL `[5m]` in the recording rules); default 5 min. */
  rateWindowMs?: number;
}

interface CounterSnapshot {
  ts: number;
  values: Map<string, number>;
}

/** A pod's settled GPU identity (sticky while its targets live). */
interface PodIdentity {
  labels: Labels;
  gpuKeys: string[];
}

interface PodState {
  namespace: string;
  pod: string;
  node?: string;
  /** First scrape time of any of its targets while unresolved. */
  firstSeenMs: number;
  identity?: PodIdentity;
  /** Newest held scrape per target id, with the report already shipped for it. */
  held: Map<string, { result: ScrapeResult; report: WriteSeries[] }>;
}

interface ExporterState {
  node?: string;
  /** Start time of its latest successful scrape. */
  lastOkMs?: number;
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

const round = (v: number): number => Math.round(v * 1e9) / 1e9;
const podKeyOf = (t: ScrapeTarget): string | undefined => (t.namespace && t.pod ? `${t.namespace}/${t.pod}` : undefined);

/** `instance` (host:port, as Prometheus sets it from `__address__`) and the path of a target's URL. */
export function instanceAndPath(url: string): { instance: string; path: string } {
  try {
    const u = new URL(url);
    return { instance: u.host, path: u.pathname + u.search };
  } catch {
    return { instance: url, path: "" };
  }
}

/** The labels of a target's `up` and `scrape_duration_seconds`: distinct for every target identity (kind, URL, pod). */
export function targetLabels(t: ScrapeTarget): Labels {
  const { instance, path } = instanceAndPath(t.url);
  const labels: Labels = ["job", t.kind, "instance", instance];
  // Prometheus keeps the path out of `up` because a job has one path; targets of one kind here can
  // differ only by path (several exporters behind one host:port), so it stays in.
  if (path) labels.push("metrics_path", path);
  if (t.namespace) labels.push("namespace", t.namespace);
  if (t.pod) labels.push("pod", t.pod);
  return labels;
}

/** Stateful join over the stream of scrape results. */
export class Joiner {
  private readonly forward: ForwardRules;
  private readonly identityWaitMs: number;
  private readonly index = new GpuIndex();
  private readonly exporters = new Map<string, ExporterState>();
  private readonly pods = new Map<string, PodState>();
  /** GPU key -> pods whose settled identity includes it. */
  private readonly podsByGpu = new Map<string, Set<string>>();
  private readonly prevPod = new Map<string, CounterSnapshot>();
  private readonly prevVllm = new Map<string, CounterSnapshot>();
  /** Per pod and model: mean queue and prefill seconds over the last vLLM interval. */
  private readonly vllmMeans = new Map<string, { queue?: number; prefill?: number }>();
  /** Per pod: output tokens per second over its last Envoy scrape interval (for tokens per joule). */
  private readonly podTokenRate = new Map<string, number>();
  /** Per (exporter, GPU): the energy counter at that exporter's previous scrape of the GPU. */
  private readonly prevEnergy = new Map<string, { ts: number; energyMj: number }>();
  private readonly rateWindowMs: number;
  /** Per pod: its engine targets' series and its sidecar's TTFT and decode buckets, over the rate window. */
  private readonly engineWindows = new Map<string, SeriesWindow<EngineInfo>>();
  private readonly sidecarWindows = new Map<string, SeriesWindow<SidecarInfo>>();

  constructor(private readonly options: JoinerOptions = {}) {
    this.forward = options.forward ?? DEFAULT_FORWARD;
    this.identityWaitMs = options.identityWaitMs ?? 60_000;
    this.rateWindowMs = options.rateWindowMs ?? 300_000;
  }

  /** The current GPU index (for tests and diagnostics). */
  get gpuIndex(): GpuIndex {
    return this.index;
  }

  /** Pods whose scrapes are held waiting for their GPU identity. */
  get pendingPods(): number {
    let n = 0;
    for (const p of this.pods.values()) if (!p.identity) n++;
    return n;
  }

  /** Learns the dcgm-exporters that could map pods (before their first scrape); returns scrapes this released. */
  setTargets(targets: readonly ScrapeTarget[]): JoinedBatch[] {
    for (const t of targets) {
      if (t.kind !== "dcgm" || this.exporters.has(t.id)) continue;
      this.exporters.set(t.id, t.node === undefined ? {} : { node: t.node });
    }
    return this.resolvePending(undefined);
  }

  /** Forgets a target that went away; returns scrapes its going released (an exporter no longer awaited). */
  removeTarget(t: ScrapeTarget): JoinedBatch[] {
    if (t.kind === "dcgm") {
      this.exporters.delete(t.id);
      this.index.removeExporter(t.id);
      for (const k of [...this.prevEnergy.keys()]) if (k.startsWith(`${t.id}\xff`)) this.prevEnergy.delete(k);
      return this.resolvePending(undefined);
    }
    const podKey = podKeyOf(t);
    if (!podKey) return [];
    if (t.kind === "envoy" || t.kind === "static") this.forgetRates(podKey);
    if (t.kind === "vllm") {
      this.prevVllm.delete(podKey);
      for (const k of [...this.vllmMeans.keys()]) if (k.startsWith(`${podKey}\xff`)) this.vllmMeans.delete(k);
    }
    for (const windows of [this.engineWindows, this.sidecarWindows] as Map<string, SeriesWindow<unknown>>[]) {
      const w = windows.get(podKey);
      w?.remove(t.id);
      if (w?.empty) windows.delete(podKey);
    }
    // A target of the pod went: the pod was deleted or restarted, so its identity is settled anew.
    this.forgetIdentity(podKey);
    return [];
  }

  private forgetRates(podKey: string): void {
    this.prevPod.delete(podKey);
    this.podTokenRate.delete(podKey);
  }

  private forgetIdentity(podKey: string): void {
    const state = this.pods.get(podKey);
    if (!state) return;
    for (const key of state.identity?.gpuKeys ?? []) this.podsByGpu.get(key)?.delete(podKey);
    this.pods.delete(podKey);
  }

  /** Everything one scrape yields now, flattened (report first); see `joinScrape` for the parts. */
  join(r: ScrapeResult): WriteSeries[] {
    const out = this.joinScrape(r);
    return [...out.report, ...out.batches.flatMap((b) => (b.result === r ? b.series : [...b.report, ...b.series]))];
  }

  /** Joins one scrape: its report at once, its series now or once its pod's GPU identity is settled. */
  joinScrape(r: ScrapeResult): JoinOutput {
    const t = r.target;
    const ts = r.timestampMs;
    const labels = targetLabels(t);
    const report: WriteSeries[] = [
      { labels: ["__name__", C.UP, ...labels], samples: [{ value: r.ok ? 1 : 0, timestampMs: ts }] },
      { labels: ["__name__", C.SCRAPE_DURATION, ...labels], samples: [{ value: round(r.durationMs / 1000), timestampMs: ts }] },
    ];
    const podKey = podKeyOf(t);
    if (!r.ok) {
      // Rates of a pod we cannot read are unknown, not frozen at their last value.
      if ((t.kind === "envoy" || t.kind === "static") && podKey) this.forgetRates(podKey);
      // Prometheus marks a failed target's series stale: instant values stop, ranges keep what they had.
      if (podKey) for (const w of [this.engineWindows.get(podKey), this.sidecarWindows.get(podKey)]) w?.failed(t.id, ts);
      return { report, batches: [{ result: r, report, series: [] }] };
    }
    if (t.kind === "dcgm") {
      const exporter = this.exporters.get(t.id) ?? {};
      if (t.node !== undefined) exporter.node = t.node;
      exporter.lastOkMs = ts;
      this.exporters.set(t.id, exporter);
      const gpus = this.index.setExporter(t.id, r.samples).gpus;
      const series: WriteSeries[] = [];
      this.forwardSeries(r, this.forward.dcgm, [], series);
      this.deriveEnergy(t.id, gpus.values(), ts, series);
      return { report, batches: [{ result: r, report, series }, ...this.resolvePending(ts)] };
    }
    if (t.kind === "vllm" && podKey) this.trackVllm(r);
    if (!podKey) return { report, batches: [{ result: r, report, series: this.joinPodScrape(r, undefined) }] };
    let state = this.pods.get(podKey);
    if (!state) {
      state = { namespace: t.namespace!, pod: t.pod!, firstSeenMs: ts, held: new Map() };
      this.pods.set(podKey, state);
    }
    if (t.node !== undefined) state.node = t.node;
    if (!state.identity) {
      state.held.set(t.id, { result: r, report });
      return { report, batches: this.resolve(podKey, state, ts) };
    }
    return { report, batches: [{ result: r, report, series: this.joinPodScrape(r, state.identity) }] };
  }

  /** Tries to settle every pending pod's identity; `now` (a scrape time) lets the wait run out. */
  private resolvePending(now: number | undefined): JoinedBatch[] {
    const out: JoinedBatch[] = [];
    for (const [podKey, state] of this.pods) if (!state.identity) out.push(...this.resolve(podKey, state, now));
    return out;
  }

  private resolve(podKey: string, state: PodState, now: number | undefined): JoinedBatch[] {
    const mapped = (this.index.podGpus.get(podKey)?.size ?? 0) > 0;
    if (!mapped && !this.everyExporterAnswered(state) && !this.waitedOut(state, now)) return [];
    const { gpus, attribution } = this.index.gpusOfPod(state.namespace, state.pod, state.node);
    const labels: Labels = ["namespace", state.namespace, "pod", state.pod];
    if (gpus.length === 0) {
      if (state.node) labels.push("hostname", state.node);
    } else {
      // Several GPUs per pod: one series per filter series still, the GPUs listed in index order.
      labels.push(
        "gpu", gpus.map((g) => g.gpu).join(","),
        "gpu_uuid", gpus.map((g) => g.key).join(","),
        "gpu_model", [...new Set(gpus.map((g) => g.modelName))].join(","),
        "hostname", [...new Set(gpus.map((g) => g.hostname))].join(","),
        "gpu_count", String(gpus.length),
        "gpu_attribution", attribution,
      );
    }
    state.identity = { labels, gpuKeys: gpus.map((g) => g.key) };
    for (const key of state.identity.gpuKeys) {
      let set = this.podsByGpu.get(key);
      if (!set) this.podsByGpu.set(key, (set = new Set()));
      set.add(podKey);
    }
    const held = [...state.held.values()].sort((a, b) => a.result.timestampMs - b.result.timestampMs);
    state.held.clear();
    return held.map(({ result, report }) => ({ result, report, series: this.joinPodScrape(result, state.identity) }));
  }

  /** Whether every exporter that could map the pod has answered since the pod was first seen. */
  private everyExporterAnswered(state: PodState): boolean {
    for (const e of this.exporters.values()) {
      const couldMap = e.node === undefined || state.node === undefined || e.node === state.node;
      if (couldMap && (e.lastOkMs === undefined || e.lastOkMs < state.firstSeenMs)) return false;
    }
    return true;
  }

  private waitedOut(state: PodState, now: number | undefined): boolean {
    if (now === undefined || now - state.firstSeenMs < this.identityWaitMs) return false;
    this.options.onIdentityTimeout?.();
    return true;
  }

  /** The series of an Envoy, vLLM or static scrape, with the pod identity (if any) and derived series. */
  private joinPodScrape(r: ScrapeResult, identity: PodIdentity | undefined): WriteSeries[] {
    const t = r.target;
    const out: WriteSeries[] = [];
    const prefixes = t.kind === "envoy" ? this.forward.envoy : t.kind === "vllm" ? this.forward.vllm : this.forward.static;
    this.forwardSeries(r, prefixes, identity?.labels ?? [], out);
    if ((t.kind === "envoy" || t.kind === "static") && identity) this.derivePod(r, identity, out);
    if (identity && t.namespace && t.pod) this.deriveAttribution(r, identity, out);
    return out;
  }

  private window<I>(windows: Map<string, SeriesWindow<I>>, podKey: string): SeriesWindow<I> {
    let w = windows.get(podKey);
    // Held long enough for the rate window and an instant selector's lookback before it.
    if (!w) windows.set(podKey, (w = new SeriesWindow<I>(this.rateWindowMs + LOOKBACK_MS)));
    return w;
  }

  /**
   * The engine's view per model (at each engine scrape) and the latency attribution per route (at
   * each sidecar scrape), both evaluated at the scrape's time over the rate window.
   */
  private deriveAttribution(r: ScrapeResult, identity: PodIdentity, out: WriteSeries[]): void {
    const t = r.target;
    const podKey = `${t.namespace}/${t.pod}`;
    const ts = r.timestampMs;
    const podLabels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
    if (t.kind === "vllm") {
      const entries = engineEntries(t.id, r.samples);
      if (entries.length === 0 && !this.engineWindows.has(podKey)) return;
      this.window(this.engineWindows, podKey).observe(t.id, ts, entries);
      const signals = modelSignals(this.engineWindows.get(podKey)!.all(), ts, this.rateWindowMs);
      this.emitModelSignals(podKey, podLabels, identity, signals, ts, out);
      return;
    }
    const entries = sidecarEntries(t.id, r.samples);
    if (entries.length === 0 && !this.sidecarWindows.has(podKey)) return;
    this.window(this.sidecarWindows, podKey).observe(t.id, ts, entries);
    const engine = this.engineWindows.get(podKey);
    const signals = engine ? modelSignals(engine.all(), ts, this.rateWindowMs) : new Map<string, ModelSignals>();
    for (const [rm, phases] of [...routePhases(this.sidecarWindows.get(podKey)!.all(), signals, ts, this.rateWindowMs)].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const [route, model] = rm.split("\xff") as [string, string];
      for (const [phase, quantiles] of phases) {
        for (const [q, v] of quantiles) out.push({ labels: ["__name__", C.ROUTE_LATENCY_QUANTILE, ...podLabels, "route", route, "model", model, "phase", phase, "quantile", String(q)], samples: [{ value: v, timestampMs: ts }] });
      }
    }
  }

  private emitModelSignals(podKey: string, podLabels: Labels, identity: PodIdentity, signals: ReadonlyMap<string, ModelSignals>, ts: number, out: WriteSeries[]): void {
    const utils = identity.gpuKeys.map((k) => this.index.utilizationOf(podKey, k)).filter((v): v is number => v !== undefined);
    const gpuUtil = avgOf(utils);
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
      // Beside every model the engines report right now (a running or waiting gauge).
      if (m.running !== undefined || m.waiting !== undefined) put(C.MODEL_GPU_UTILIZATION, gpuUtil);
      for (const [phase, quantiles] of m.phases) for (const [q, v] of quantiles) put(C.MODEL_LATENCY_QUANTILE, v, ["phase", phase, "quantile", String(q)]);
    }
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

  private derivePod(r: ScrapeResult, identity: PodIdentity, out: WriteSeries[]): void {
    const t = r.target;
    const podKey = `${t.namespace}/${t.pod}`;
    const ts = r.timestampMs;
    const podLabels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
    const gpus = identity.gpuKeys.map((k) => this.index.gpus.get(k)).filter((g): g is GpuInfo => g !== undefined);
    // GPU state of each (pod, GPU) link.
    for (const g of gpus) {
      const gl: Labels = [...podLabels, "gpu", g.gpu, "gpu_uuid", g.key, "gpu_model", g.modelName, "hostname", g.hostname, "gpu_pods", String(this.index.podsOfGpu(g.key).length)];
      const state: [string, number | undefined][] = [
        [C.POD_GPU_UTILIZATION, this.index.utilizationOf(podKey, g.key)],
        [C.POD_GPU_SM_ACTIVE, g.smActiveRatio],
        [C.POD_GPU_MEMORY_USED, g.memoryUsedMiB === undefined ? undefined : g.memoryUsedMiB * 1024 * 1024],
        [C.POD_GPU_POWER, g.powerWatts],
      ];
      // The info series exists for every link, so PromQL can join on it even when dcgm-exporter left a field out.
      out.push({ labels: ["__name__", C.POD_GPU_INFO, ...gl], samples: [{ value: 1, timestampMs: ts }] });
      for (const [name, v] of state) if (v !== undefined) out.push({ labels: ["__name__", name, ...gl], samples: [{ value: v, timestampMs: ts }] });
    }
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
    const gpuCount = identity.gpuKeys.length;
    const gpuShare = gpus.reduce((n, g) => n + 1 / Math.max(1, this.index.podsOfGpu(g.key).length), 0);
    const utilValues = gpus.map((g) => this.index.utilizationOf(podKey, g.key)).filter((v): v is number => v !== undefined);
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

  private trackVllm(r: ScrapeResult): void {
    const t = r.target;
    const cur = sumFamilies(r.samples, VLLM_FAMILIES, (s) => labelValue(s.labels, "model_name") ?? "");
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
   * Tokens per joule of each GPU this exporter reported: the token rate of the pods on it (each
   * pod's rate over its last Envoy interval, split evenly over its GPUs) divided by the GPU's mean
   * power over this exporter's own last interval (energy counter delta / time between its two
   * scrapes). Each exporter keeps its own previous reading, so exporters scraped at different
   * offsets never shorten or stretch each other's intervals.
   */
  private deriveEnergy(exporterId: string, gpus: Iterable<GpuInfo>, ts: number, out: WriteSeries[]): void {
    for (const g of gpus) {
      if (g.energyMj === undefined) continue;
      const key = `${exporterId}\xff${g.key}`;
      const prev = this.prevEnergy.get(key);
      this.prevEnergy.set(key, { ts, energyMj: g.energyMj });
      if (!prev || ts <= prev.ts) continue;
      let tokensPerSec = 0;
      let known = false;
      for (const pk of this.podsByGpu.get(g.key) ?? []) {
        const rate = this.podTokenRate.get(pk);
        if (rate === undefined) continue;
        known = true;
        tokensPerSec += rate / Math.max(1, this.pods.get(pk)?.identity?.gpuKeys.length ?? 1);
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
