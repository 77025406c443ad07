// The join: each scrape result flows one way through the stages below and leaves as the series
// remote write ships.
//
//   scrape ─► report      up, scrape_duration_seconds: shipped at once (report.ts)
//          ─► observe     every derivation sees the scrape as it arrives, held or not
//          ─► identity    a pod's scrapes wait until its GPUs are known or known-absent;
//                         a dcgm-exporter's scrape updates the GPU index (identity.ts)
//          ─► enrich      forwarded series, clean labels, the pod's identity (enrich.ts)
//          ─► derive      each family, in the order `derivations()` lists them, appends its series (derivations/)
//
// A new derived series is a new module in derivations/ and one line in `derivations()`.
import type { ScrapeResult } from "../scrape/scraper.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import type { WriteSeries } from "../remote-write/series.js";
import type { ExporterLabelNote, GpuIndex } from "./gpu-index.js";
import { IdentityStage, type Admitted } from "./identity.js";
import { DEFAULT_FORWARD, enrich, type Enriched, type ForwardRules } from "./enrich.js";
import { reportOf } from "./report.js";
import { WindowBudget, type Derivation } from "./derivations/derivation.js";
import { PodGpuState } from "./derivations/pod-gpu.js";
import { PodInterval } from "./derivations/pod-interval.js";
import { EngineSignals } from "./derivations/engine-signals.js";
import { RouteAttribution } from "./derivations/route-attribution.js";
import { GpuEnergy } from "./derivations/gpu-energy.js";
import { GpuStarvation } from "./derivations/gpu-starvation.js";
import { GpuStragglers } from "./derivations/gpu-stragglers.js";
import { GpuHealthState } from "./derivations/gpu-health.js";
import { LoraAdapters, type AdapterParents } from "./derivations/lora-adapters.js";
import { GenAiMetrics, type GenAiOptions } from "./derivations/genai.js";
import { GenAiTokenUsage } from "./derivations/genai-token-usage.js";

export { counterDelta } from "./counter.js";
export { WindowBudget, windowBudgetBytes, windowPoints } from "./derivations/derivation.js";
export { DEFAULT_FORWARD, type ForwardRules } from "./enrich.js";
export type { ExporterLabelNote } from "./gpu-index.js";
export { instanceAndPath, targetLabels } from "./report.js";

/** The scraped series of one scrape, ready to ship, with the scrape they came from. */
export interface JoinedBatch {
  result: ScrapeResult;
  /** `up` and `scrape_duration_seconds` of that scrape (already shipped when the batch was held). */
  report: WriteSeries[];
  series: WriteSeries[];
  /** The first series are the forwarded ones, each with the pod's identity labels set (the series gate compares less of them). */
  enriched: Enriched;
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
  /** Called when a dcgm-exporter's label spellings other than its defaults change (see gpu-index.ts ExporterLabelNote). */
  onExporterLabels?: (target: ScrapeTarget, notes: ReadonlySet<ExporterLabelNote>) => void;
  /** The range of the engine's and the sidecar's percentiles and rates (PromQL `[5m]` in the recording rules); default 5 min. */
  rateWindowMs?: number;
  /** Adapter -> base model per vLLM target, from its /v1/models (../engine/model-list.ts); without it adapters are related to the server's one model. */
  adapterParents?: AdapterParents;
  /** Called with the LoRA adapters of a scrape left out by the per-pod bounds. */
  onLoraAdaptersDropped?: (n: number) => void;
  /** The OpenTelemetry GenAI histograms (derivations/genai.ts): their provider name, or false for none (default on). */
  genai?: GenAiOptions | false;
  /** What the rate windows of every pod may hold together (default: no bound). */
  windowBudget?: WindowBudget;
}

/** The derived families, in the order their series follow a scrape's forwarded ones. */
function derivations(identity: IdentityStage, rateWindowMs: number, adapterParents: AdapterParents, windowBudget: WindowBudget, onLoraAdaptersDropped?: (n: number) => void, genai: GenAiOptions | false = {}): Derivation[] {
  const podInterval = new PodInterval(identity);
  const engine = new EngineSignals(identity, rateWindowMs, windowBudget);
  const list: Derivation[] = [
    new PodGpuState(identity), // tokentrace_pod_gpu_*, per sidecar scrape
    podInterval, // tokens per second per GPU, route latency means, GPU-seconds per 1k tokens
    engine, // tokentrace_model_*, per engine scrape
    new LoraAdapters(adapterParents, onLoraAdaptersDropped), // tokentrace_model_lora_*, per vLLM scrape
    new RouteAttribution(engine, rateWindowMs, windowBudget), // tokentrace_route_latency_quantile_seconds, per sidecar scrape
    new GpuEnergy(identity, podInterval), // tokentrace_gpu_tokens_per_joule, per dcgm-exporter scrape
    new GpuStarvation(identity), // tokentrace_pod_gpu_activity_while_busy_ratio, per sidecar scrape
    new GpuStragglers(identity), // tokentrace_pod_gpu_*_spread_*, per sidecar scrape
    new GpuHealthState(identity), // tokentrace_gpu_* health, per dcgm-exporter scrape
  ];
  if (genai !== false) list.push(new GenAiMetrics(genai), new GenAiTokenUsage(genai)); // gen_ai_*, per sidecar scrape
  return list;
}

/** Stateful join over the stream of scrape results. */
export class Joiner {
  private readonly forward: ForwardRules;
  private readonly identity: IdentityStage;
  private readonly derivations: readonly Derivation[];
  /** The rate windows' byte budget and what they hold. */
  readonly windowBudget: WindowBudget;

  constructor(options: JoinerOptions = {}) {
    this.forward = options.forward ?? DEFAULT_FORWARD;
    this.identity = new IdentityStage({ identityWaitMs: options.identityWaitMs ?? 60_000, onIdentityTimeout: options.onIdentityTimeout, onExporterLabels: options.onExporterLabels });
    this.windowBudget = options.windowBudget ?? new WindowBudget();
    this.derivations = derivations(this.identity, options.rateWindowMs ?? 300_000, options.adapterParents ?? (() => undefined), this.windowBudget, options.onLoraAdaptersDropped, options.genai);
  }

  /** The current GPU index (for tests and diagnostics). */
  get gpuIndex(): GpuIndex {
    return this.identity.index;
  }

  /** How many dcgm-exporters' latest scrape used each label spelling other than the default. */
  exporterLabelNoteCounts(): Map<ExporterLabelNote, number> {
    return this.identity.exporterLabelNoteCounts();
  }

  /** Pods whose scrapes are held waiting for their GPU identity. */
  get pendingPods(): number {
    return this.identity.pendingPods;
  }

  /** Learns the dcgm-exporters that could map pods (before their first scrape); returns scrapes this released. */
  setTargets(targets: readonly ScrapeTarget[]): JoinedBatch[] {
    return this.identity.setTargets(targets).map((a) => this.derive(a));
  }

  /** Forgets a target that went away; returns scrapes its going released (an exporter no longer awaited). */
  removeTarget(t: ScrapeTarget): JoinedBatch[] {
    for (const d of this.derivations) d.forget(t);
    return this.identity.removeTarget(t).map((a) => this.derive(a));
  }

  /** Everything one scrape yields now, flattened (report first); see `joinScrape` for the parts. */
  join(r: ScrapeResult): WriteSeries[] {
    const out = this.joinScrape(r);
    return [...out.report, ...out.batches.flatMap((b) => (b.result === r ? b.series : [...b.report, ...b.series]))];
  }

  /** Joins one scrape: its report at once, its series now or once its pod's GPU identity is settled. */
  joinScrape(r: ScrapeResult): JoinOutput {
    const report = reportOf(r);
    for (const d of this.derivations) d.observe(r);
    // A failed scrape has no series; its report says so.
    if (!r.ok) return { report, batches: [{ result: r, report, series: [], enriched: { count: 0, labels: [] } }] };
    const now = this.identity.admit(r, report);
    const batches = now ? [this.derive(now)] : [];
    // After this scrape's own series: a dcgm-exporter's energy reading is taken before it settles pods.
    for (const a of this.identity.release(r)) batches.push(this.derive(a));
    return { report, batches };
  }

  private derive({ result, report, pod }: Admitted): JoinedBatch {
    const series: WriteSeries[] = [];
    const labels = pod?.labels ?? [];
    enrich(result, this.forward, labels, series);
    const enriched = { count: series.length, labels };
    for (const d of this.derivations) d.derive(result, pod, series);
    return { result, report, series, enriched };
  }
}
