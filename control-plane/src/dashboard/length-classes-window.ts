// The "Latency by length class" table's figures for one route (and optionally one model) over the
// page's range: the intervals that ended within the range, buckets added per class across pods and
// models, then the quantile, as
// `histogram_quantile(q, sum by (input_length, le) (increase(tokentrace_llm_ttft_ms_bucket[range])))`
// (output_length for decode and duration) would on the remote-written series. A route's P99 of a
// few long prompts and its P99 of a slow engine are the same number; per class they are not.
import { histogramQuantile } from "../promql/quantile.js";
import { compareLengthClasses } from "./length-classes.js";
import { addDeltas, type Buckets } from "./bucket-deltas.js";
import type { ClassDeltas, ModelCounts, RouteInterval } from "./series.js";

/** One class of one histogram over the range. */
export interface LengthClassRow {
  lengthClass: string;
  /** Observations (the +Inf bucket's increase), to 3 decimals (a counter reset can make a part one). */
  calls: number;
  /** ms, to 3 decimals; null where Prometheus returns NaN. */
  p50: number | null;
  p99: number | null;
}

/** Per histogram, its classes by boundary (`unknown` last); empty when the route's filters label none. */
export interface LengthClassFigures {
  /** tokentrace_llm_ttft_ms by input_length. */
  ttft: LengthClassRow[];
  /** tokentrace_llm_decode_ms by output_length. */
  decode: LengthClassRow[];
  /** tokentrace_llm_duration_ms by output_length. */
  duration: LengthClassRow[];
}

/** Where to evaluate: the range ending at nowMs, one model or every model of the route. */
export interface LengthClassQuery {
  nowMs: number;
  rangeMs: number;
  model?: string | undefined;
}

const round3 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);

function addClasses(into: Map<string, Buckets>, from: ClassDeltas | null): void {
  if (from === null) return;
  from.classes.forEach((cls, k) => {
    let b = into.get(cls);
    if (!b) into.set(cls, (b = new Map()));
    addDeltas(b, from.deltas[k]!);
  });
}

function rows(byClass: Map<string, Buckets>): LengthClassRow[] {
  return [...byClass.keys()].sort(compareLengthClasses).map((lengthClass) => {
    const b = byClass.get(lengthClass)!;
    return { lengthClass, calls: round3(b.get(Infinity) ?? 0)!, p50: round3(histogramQuantile(0.5, b)), p99: round3(histogramQuantile(0.99, b)) };
  });
}

/** TTFT P50 and P99 per input-length class, decode and duration per output-length class, over the range. */
export function lengthClassFigures(intervals: readonly RouteInterval[], q: LengthClassQuery): LengthClassFigures {
  const sums = { ttft: new Map<string, Buckets>(), decode: new Map<string, Buckets>(), duration: new Map<string, Buckets>() };
  for (const i of intervals) {
    if (i.endMs <= q.nowMs - q.rangeMs || i.endMs > q.nowMs) continue;
    const models: ModelCounts[] = q.model === undefined ? [...i.counts.models.values()] : i.counts.models.has(q.model) ? [i.counts.models.get(q.model)!] : [];
    for (const m of models) {
      addClasses(sums.ttft, m.ttftByClass);
      addClasses(sums.decode, m.decodeByClass);
      addClasses(sums.duration, m.durationByClass);
    }
  }
  return { ttft: rows(sums.ttft), decode: rows(sums.decode), duration: rows(sums.duration) };
}
