// Live tail-keep thresholds (issue #24): per (route, model), the recent P95 of LLM call duration and
// of TTFT, from the sidecars' histograms over a window, written to the filter's spans.keep.live.
// Two things keep them steady, as Jaeger's adaptive sampling keeps its probabilities steady
// (jaegertracing/jaeger plugin/sampling/strategyprovider/adaptive: calculationstrategy/
// percentage_increase_capped_calculator.go, tested at dd2e3eec, caps a change in the costly
// direction per step, and post_aggregator.go a65c1906 leaves a probability alone while the observed
// rate is within a tolerance):
// a threshold rises only when the new quantile is more than `hysteresis` above it, and by at most
// `maxIncrease` times per step. Here the costly direction is up (a threshold too high loses slow
// requests; one too low only keeps more), so a fall applies at once. Floor and ceiling bound each
// value; at most `maxEntries` pairs are sent (the busiest), the rest fall back in the filter to
// their route's threshold or the static one, and are counted.
import { histogramQuantile } from "../promql/quantile.js";

/** One (route, model) pair's histograms over the window: cumulative counts by upper bound (ms), +Inf included. */
export interface PairWindow {
  route: string;
  model: string;
  duration: ReadonlyMap<number, number>;
  /** Streams' time to first token; absent or empty: no TTFT threshold. */
  ttft?: ReadonlyMap<number, number>;
}

/** One entry of the filter's spans.keep.live. */
export interface LiveThreshold {
  route: string;
  model?: string;
  durationMs?: number;
  ttftMs?: number;
}

export interface LiveThresholdOptions {
  /** The quantile a request must exceed to be slow. */
  quantile: number;
  /**
   * The threshold is this share of the quantile: below 1 it errs toward keeping, which absorbs the
   * histogram's interpolation error and the window's lag behind a load that is getting slower.
   */
  margin: number;
  /** A new value replaces the current one only when it differs by more than this share of it. */
  hysteresis: number;
  /** At most this many times the current value per step. */
  maxIncrease: number;
  floorMs: number;
  ceilingMs: number;
  /** The filter's cap on spans.keep.live (filter/config/config.ts MAX_LIVE_THRESHOLDS). */
  maxEntries: number;
  /** Requests a pair needs in the window for its quantile to be trusted. */
  minRequests: number;
}

export const DEFAULT_LIVE_THRESHOLDS: LiveThresholdOptions = {
  quantile: 0.95,
  margin: 1,
  hysteresis: 0.1,
  maxIncrease: 1.5,
  floorMs: 1,
  ceilingMs: 3_600_000,
  maxEntries: 128,
  minRequests: 20,
};

export interface LiveThresholdStep {
  entries: LiveThreshold[];
  /** Pairs left out by maxEntries (they fall back in the filter). */
  overflow: number;
  /** Whether any value differs from `previous` (a push is due). */
  changed: boolean;
}

function totalOf(h: ReadonlyMap<number, number>): number {
  return h.get(Infinity) ?? 0;
}

function steady(current: number | undefined, target: number | null, o: LiveThresholdOptions): number | undefined {
  if (target === null || !Number.isFinite(target)) return current;
  const bounded = Math.min(o.ceilingMs, Math.max(o.floorMs, target * o.margin));
  if (current === undefined) return Math.round(bounded);
  // A fall keeps more and applies at once; a rise must clear the hysteresis and is capped.
  if (bounded < current) return Math.round(bounded);
  if (bounded - current <= o.hysteresis * current) return current;
  return Math.round(Math.min(bounded, current * o.maxIncrease));
}

const keyOf = (route: string, model: string | undefined): string => `${route}\u0000${model ?? ""}`;

/** The next thresholds from the window's histograms and the ones in force. */
export function nextLiveThresholds(previous: readonly LiveThreshold[], windows: readonly PairWindow[], o: LiveThresholdOptions = DEFAULT_LIVE_THRESHOLDS): LiveThresholdStep {
  const before = new Map(previous.map((t) => [keyOf(t.route, t.model), t]));
  const busiest = [...windows].filter((w) => totalOf(w.duration) >= o.minRequests).sort((a, b) => totalOf(b.duration) - totalOf(a.duration) || a.route.localeCompare(b.route) || a.model.localeCompare(b.model));
  const entries: LiveThreshold[] = [];
  for (const w of busiest.slice(0, o.maxEntries)) {
    const prev = before.get(keyOf(w.route, w.model));
    const durationMs = steady(prev?.durationMs, histogramQuantile(o.quantile, w.duration), o);
    const ttft = w.ttft !== undefined && totalOf(w.ttft) >= o.minRequests ? histogramQuantile(o.quantile, w.ttft) : null;
    const ttftMs = steady(prev?.ttftMs, ttft, o);
    if (durationMs === undefined && ttftMs === undefined) continue;
    entries.push({ route: w.route, model: w.model, ...(durationMs === undefined ? {} : { durationMs }), ...(ttftMs === undefined ? {} : { ttftMs }) });
  }
  const changed = entries.length !== previous.length || entries.some((e) => {
    const p = before.get(keyOf(e.route, e.model));
    return p === undefined || p.durationMs !== e.durationMs || p.ttftMs !== e.ttftMs;
  });
  return { entries, overflow: Math.max(0, busiest.length - o.maxEntries), changed };
}

/**
 * The window's histograms from two snapshots of cumulative bucket counts (a later one minus an
 * earlier one, per pair and bound), as a rate over a window would see them.
 */
export function windowOf(later: ReadonlyMap<number, number>, earlier: ReadonlyMap<number, number> | undefined): Map<number, number> {
  const out = new Map<number, number>();
  for (const [le, count] of later) out.set(le, Math.max(0, count - (earlier?.get(le) ?? 0)));
  return out;
}
