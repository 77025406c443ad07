// What every derived family implements: it sees each scrape as it arrives, derives series from the
// scrapes the identity stage lets through, and forgets a target that went away. Each family owns
// its own state; one that needs another's (energy needs the pods' token rates) is handed it when
// the list in ../joiner.ts is built.
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { ScrapeTarget } from "../../scrape/targets.js";
import type { WriteSeries } from "../../remote-write/series.js";
import { avgOf } from "../../promql/aggregate.js";
import { LOOKBACK_MS, SeriesWindow, windowSeriesBytes, type WindowTally } from "../../promql/series-window.js";
import type { GpuInfo } from "../gpu-index.js";
import type { IdentityView, PodIdentity } from "../identity.js";

/** One family of derived series, with its own state. */
export interface Derivation {
  /** Every scrape as it arrives, failed ones too, before the identity stage may hold it. */
  observe(r: ScrapeResult): void;
  /**
   * Appends the series derived from a scrape as it leaves the identity stage (at once, or when its
   * pod's identity is settled); `pod` is that identity, undefined for dcgm-exporter and pod-less targets.
   */
  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void;
  /** Forgets what it kept of a target that went away. */
  forget(t: ScrapeTarget): void;
}

/** The pod's GPUs the index still knows, in identity order. */
export function gpusOf(identities: IdentityView, pod: PodIdentity): GpuInfo[] {
  return pod.gpuKeys.map((k) => identities.index.gpus.get(k)).filter((g): g is GpuInfo => g !== undefined);
}

/**
 * avg by (namespace, pod) (namespace_pod_gpu_uuid:tokentrace_gpu_utilization_percent:max): the mean utilisation of the
 * pod's GPUs, met in the order of that series' labels (by gpu_uuid), as the rules average it.
 */
export function meanUtilizationOf(identities: IdentityView, pod: PodIdentity): number | undefined {
  const index = identities.index;
  const keys = [...pod.gpuKeys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return avgOf(keys.map((k) => index.utilizationOf(pod.key, k)).filter((v): v is number => v !== undefined));
}

/**
 * A GPU's SM activity: DCGM_FI_PROF_SM_ACTIVE where the exporter's counters enable it, else
 * DCGM_FI_PROF_GR_ENGINE_ACTIVE, the one the default counters keep (NVIDIA/dcgm-exporter d5e5f51
 * etc/default-counters.csv comments SM_ACTIVE out): the share of time the compute engine was busy,
 * an upper bound of SM activity that cannot show SMs left idle by a busy engine.
 */
export function smActivityOf(g: GpuInfo): { value: number; source: "sm_active" | "gr_engine_active" } | undefined {
  if (g.smActiveRatio !== undefined) return { value: g.smActiveRatio, source: "sm_active" };
  if (g.grEngineActiveRatio !== undefined) return { value: g.grEngineActiveRatio, source: "gr_engine_active" };
  return undefined;
}

/** Whether dcgm-exporter mapped the pod's GPUs to it (not the node-level fallback). */
export const mappedToPod = (pod: PodIdentity): boolean => {
  for (let i = 0; i < pod.labels.length; i += 2) if (pod.labels[i] === "gpu_attribution") return pod.labels[i + 1] === "pod";
  return false;
};

/**
 * What every pod's windows (of every family) may hold together, estimated as windowSeriesBytes: the
 * join's rate windows, the part of its state that grows with the rate window and the series.
 */
export class WindowBudget {
  readonly tally: WindowTally = { bytes: 0 };

  /** `onRefused`: scraped series a pod's window did not take because of the budget. */
  constructor(readonly maxBytes: number = Infinity, readonly onRefused: (series: number) => void = () => undefined) {}

  /** What the windows hold now (estimated). */
  get bytes(): number {
    return this.tally.bytes;
  }
}

/**
 * The windows' budget for `maxSeries` series of `keyBytes` bytes of key, each holding the points a
 * window keeps when scraped every `minIntervalMs`: max(rate window, lookback) of them, the newest
 * before the horizon, and one more as it arrives.
 */
export function windowBudgetBytes(maxSeries: number, keyBytes: number, rateWindowMs: number, minIntervalMs: number): number {
  return maxSeries * windowSeriesBytes(keyBytes, windowPoints(rateWindowMs, minIntervalMs));
}

/** The points a window series holds at most when scraped every `intervalMs` (see windowBudgetBytes). */
export function windowPoints(rateWindowMs: number, intervalMs: number): number {
  return Math.ceil(Math.max(rateWindowMs, LOOKBACK_MS) / intervalMs) + 2;
}

/**
 * Series windows per pod, each holding the longer of the rate window and an instant selector's
 * lookback: every evaluation is at the newest scrape, where a range selector reads (t - window, t]
 * and an instant selector the newest point in (t - lookback, t] (the window keeps the newest point
 * before its horizon too). Holding their sum, as before, kept twice the points at the default 5 min.
 * Within a byte budget (shared with the other families' windows): past it a pod's window may not
 * start or take new series, and goes whole rather than keep part of a histogram.
 */
export class PodWindows<I> {
  private readonly windows = new Map<string, SeriesWindow<I>>();

  /** `keep`: what a new series keeps of its info (see SeriesWindow). */
  constructor(private readonly rateWindowMs: number, private readonly budget: WindowBudget = new WindowBudget(), private readonly keep?: (info: I) => I) {}

  get(podKey: string): SeriesWindow<I> | undefined {
    return this.windows.get(podKey);
  }

  has(podKey: string): boolean {
    return this.windows.has(podKey);
  }

  /** The pod's window, created on first use (no budget check: see `observe`). */
  of(podKey: string): SeriesWindow<I> {
    let w = this.windows.get(podKey);
    if (!w) this.windows.set(podKey, (w = new SeriesWindow<I>(Math.max(this.rateWindowMs, LOOKBACK_MS), this.budget.tally, this.keep)));
    return w;
  }

  /**
   * One scrape of `targetId` into the pod's window (see SeriesWindow.observe); the window, or
   * undefined when the budget refused it: a pod without a window is not given one past the budget,
   * and one whose series grew past it goes (its scrapes' series counted as refused).
   */
  observe(podKey: string, targetId: string, ts: number, entries: readonly { key: string; info: I; value: number }[]): SeriesWindow<I> | undefined {
    let w = this.windows.get(podKey);
    if (!w) {
      if (this.budget.tally.bytes >= this.budget.maxBytes) {
        this.budget.onRefused(entries.length);
        return undefined;
      }
      w = this.of(podKey);
    }
    const held = w.size;
    w.observe(targetId, ts, entries);
    if (w.size > held && this.budget.tally.bytes > this.budget.maxBytes) {
      w.clear();
      this.windows.delete(podKey);
      this.budget.onRefused(entries.length);
      return undefined;
    }
    return w;
  }

  /** Forgets one target's series; the pod's window goes when it is empty. */
  remove(podKey: string, targetId: string): void {
    const w = this.windows.get(podKey);
    w?.remove(targetId);
    if (w?.empty) this.windows.delete(podKey);
  }
}
