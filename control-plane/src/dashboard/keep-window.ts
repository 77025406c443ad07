// The keep-reasons panel's columns for one route over a time range: at each step, the spans the
// route's sidecars kept by reason (tokentrace_spans_kept_total) and those the budget dropped
// (tokentrace_spans_budget_dropped_total, all reasons) over the trailing window, per second, summed
// per pod then added across pods, as `sum by (keep_reason) (rate(x[w]))` would on the remote-written
// series.
import type { RouteInterval } from "./series.js";
import { DROPPED_OFFSET, KEEP_REASONS } from "./series.js";
import type { Columns } from "./window.js";

/** Column names, in the order the page draws them. */
export const KEEP_COLUMNS = ["keptHeadPerSecond", "keptForcedPerSecond", "keptSlowPerSecond", "keptErrorPerSecond", "budgetDroppedPerSecond"] as const;

const columnOf = (reason: string): string => `kept${reason[0]!.toUpperCase()}${reason.slice(1)}PerSecond`;

/** Where and how densely to evaluate (as window.ts's WindowQuery, without the model and the sampling window). */
export interface KeepQuery {
  nowMs: number;
  rangeMs: number;
  stepMs: number;
  windowMs: number;
}

const round3 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);

/** Columns for uPlot: `t` in seconds, then one rate per keep reason and the budget's drops, null where nothing was observed. */
export function keepColumns(source: readonly RouteInterval[], q: KeepQuery): Columns {
  const intervals = [...source].sort((a, b) => a.endMs - b.endMs);
  const last = Math.floor(q.nowMs / q.stepMs) * q.stepMs;
  const count = Math.max(1, Math.floor(q.rangeMs / q.stepMs));
  const cols: Columns = { t: [] };
  for (const name of KEEP_COLUMNS) cols[name] = [];
  let lo = 0;
  for (let k = count - 1; k >= 0; k--) {
    const t = last - k * q.stepMs;
    while (lo < intervals.length && intervals[lo]!.endMs <= t - q.windowMs) lo++;
    cols.t!.push(t / 1000);
    const perPod = new Map<string, { seconds: number; keeps: number[] }>();
    for (let j = lo; j < intervals.length && intervals[j]!.endMs <= t; j++) {
      const i = intervals[j]!;
      let s = perPod.get(i.pod);
      if (!s) perPod.set(i.pod, (s = { seconds: 0, keeps: new Array<number>(2 * DROPPED_OFFSET).fill(0) }));
      s.seconds += i.seconds;
      i.counts.keeps?.forEach((v, k) => (s.keeps[k]! += v));
    }
    const pods = [...perPod.values()].filter((s) => s.seconds > 0);
    const rate = (f: (keeps: number[]) => number): number | null => (pods.length === 0 ? null : pods.reduce((a, s) => a + f(s.keeps) / s.seconds, 0));
    KEEP_REASONS.forEach((reason, k) => cols[columnOf(reason)]!.push(round3(rate((keeps) => keeps[k]!))));
    cols.budgetDroppedPerSecond!.push(round3(rate((keeps) => keeps.slice(DROPPED_OFFSET).reduce((a, v) => a + v, 0))));
  }
  return cols;
}
