// The "Errors by model" table's figures for one route over the page's range: per model, the LLM
// calls and failed calls (tokentrace_llm_requests_total with an error_type) of the intervals that
// ended within the range, the failed share, and failures per second by error_type, rates summed per
// pod then added across pods, as `sum by (model, error_type) (rate(x{error_type!=""}[range]))` and
// `sum by (model) (increase(x{error_type!=""}[range])) / sum by (model) (increase(x[range]))` would
// on the remote-written series.
import type { RouteInterval } from "./series.js";

/** Failures of one error_type over the range. */
export interface ErrorTypeFigures {
  errorType: string;
  failed: number;
  perSecond: number;
}

/** One model's figures over the range. */
export interface ModelErrorFigures {
  model: string;
  calls: number;
  failed: number;
  /** failed / calls, to 4 decimals; null when no call was counted. */
  failedShare: number | null;
  callsPerSecond: number;
  failuresPerSecond: number;
  /** Most failures per second first. */
  errorTypes: ErrorTypeFigures[];
}

/** Where to evaluate: the range ending at nowMs. */
export interface ErrorsQuery {
  nowMs: number;
  rangeMs: number;
}

const round3 = (v: number): number => Math.round(v * 1000) / 1000;
const round4 = (v: number): number => Math.round(v * 10_000) / 10_000;

interface PodSum {
  seconds: number;
  /** Per model: calls, then failures by error_type. */
  models: Map<string, { calls: number; errors: Map<string, number> }>;
}

/** Per model of the route with calls or failures in the range, most failures per second first, then by name. */
export function modelErrors(intervals: readonly RouteInterval[], q: ErrorsQuery): ModelErrorFigures[] {
  const perPod = new Map<string, PodSum>();
  for (const i of intervals) {
    if (i.endMs <= q.nowMs - q.rangeMs || i.endMs > q.nowMs) continue;
    let pod = perPod.get(i.pod);
    if (!pod) perPod.set(i.pod, (pod = { seconds: 0, models: new Map() }));
    pod.seconds += i.seconds;
    for (const [name, m] of i.counts.models) {
      let s = pod.models.get(name);
      if (!s) pod.models.set(name, (s = { calls: 0, errors: new Map() }));
      s.calls += m.llmRequests;
      if (m.errors !== null) m.errors.types.forEach((t, k) => s.errors.set(t, (s.errors.get(t) ?? 0) + m.errors!.counts[k]!));
    }
  }
  const out = new Map<string, { calls: number; callsPerSecond: number; types: Map<string, { failed: number; perSecond: number }> }>();
  for (const pod of perPod.values()) {
    if (pod.seconds <= 0) continue;
    for (const [name, s] of pod.models) {
      let o = out.get(name);
      if (!o) out.set(name, (o = { calls: 0, callsPerSecond: 0, types: new Map() }));
      o.calls += s.calls;
      o.callsPerSecond += s.calls / pod.seconds;
      for (const [t, v] of s.errors) {
        const f = o.types.get(t) ?? { failed: 0, perSecond: 0 };
        f.failed += v;
        f.perSecond += v / pod.seconds;
        o.types.set(t, f);
      }
    }
  }
  const rows: ModelErrorFigures[] = [];
  for (const [model, o] of out) {
    const errorTypes = [...o.types].map(([errorType, f]) => ({ errorType, failed: f.failed, perSecond: round3(f.perSecond) }));
    errorTypes.sort((a, b) => b.perSecond - a.perSecond || (a.errorType < b.errorType ? -1 : 1));
    const failed = errorTypes.reduce((n, f) => n + f.failed, 0);
    if (o.calls === 0 && failed === 0) continue;
    const failuresPerSecond = [...o.types.values()].reduce((n, f) => n + f.perSecond, 0);
    rows.push({ model, calls: o.calls, failed, failedShare: o.calls > 0 ? round4(failed / o.calls) : null, callsPerSecond: round3(o.callsPerSecond), failuresPerSecond: round3(failuresPerSecond), errorTypes });
  }
  return rows.sort((a, b) => b.failuresPerSecond - a.failuresPerSecond || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}
