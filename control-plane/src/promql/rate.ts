// rate() and the *_over_time() functions over one float series, computed exactly as Prometheus
// computes them (same operations in the same order, so the results are the same doubles): the
// pipeline's figures over a window then equal a recording rule's evaluated at the same instant.
// Mirrors promql/functions.go (prometheus/prometheus d15adb9) for float samples without created
// timestamps (extrapolatedRate, funcAvgOverTime, funcMaxOverTime); a range
// selector takes the samples in (end - range, end] (its start is exclusive since Prometheus 3.0).

import { avgOf } from "./aggregate.js";

/**
 * A time-sorted series read by index: sample i at time(i) (ms since the epoch) with value(i). No
 * object per sample, since a window holds minutes of samples per series (see series-window.ts).
 */
export interface Samples {
  readonly count: number;
  time(i: number): number;
  value(i: number): number;
}

/** The sample indexes [lo, hi) of a series inside (endMs - rangeMs, endMs]. */
export function rangeOf(points: Samples, endMs: number, rangeMs: number): [number, number] {
  const start = endMs - rangeMs;
  const n = points.count;
  let lo = 0;
  while (lo < n && points.time(lo) <= start) lo++;
  let hi = lo;
  while (hi < n && points.time(hi) <= endMs) hi++;
  return [lo, hi];
}

/**
 * rate(x[range]) (isRate) or increase(x[range]) of a counter evaluated at `endMs`; undefined where
 * Prometheus returns no sample (fewer than two points in the range). extrapolatedRate: resets add
 * the value before the drop; the result is extrapolated towards the range's ends by up to half an
 * average sample gap, and towards the start no further than where the counter would reach zero.
 */
export function extrapolatedRate(points: Samples, endMs: number, rangeMs: number, isRate = true): number | undefined {
  const [lo, hi] = rangeOf(points, endMs, rangeMs);
  if (hi - lo < 2) return undefined;
  const rangeStart = endMs - rangeMs;
  const numSamplesMinusOne = hi - lo - 1;
  const first = { t: points.time(lo), v: points.value(lo) };
  const last = { t: points.time(hi - 1), v: points.value(hi - 1) };
  let resultFloat = last.v - first.v;
  for (let i = lo + 1; i < hi; i++) {
    const before = points.value(i - 1);
    if (points.value(i) < before) resultFloat += before;
  }
  let durationToStart = (first.t - rangeStart) / 1000;
  let durationToEnd = (endMs - last.t) / 1000;
  const sampledInterval = (last.t - first.t) / 1000;
  const averageDurationBetweenSamples = sampledInterval / numSamplesMinusOne;
  const extrapolationThreshold = averageDurationBetweenSamples * 1.1;
  if (durationToStart >= extrapolationThreshold) durationToStart = averageDurationBetweenSamples / 2;
  // A counter cannot go below zero: extrapolate no further back than its zero point.
  let durationToZero = durationToStart;
  if (resultFloat > 0 && first.v >= 0) durationToZero = sampledInterval * (first.v / resultFloat);
  if (durationToZero < durationToStart) durationToStart = durationToZero;
  if (durationToEnd >= extrapolationThreshold) durationToEnd = averageDurationBetweenSamples / 2;
  let factor = 1.0;
  if (sampledInterval !== 0) factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval;
  if (isRate) factor /= rangeMs / 1000;
  return resultFloat * factor;
}

/**
 * avg_over_time(x[range]) at `endMs`; undefined for no points. funcAvgOverTime's float path is
 * avg()'s (a compensated sum over the count, a running mean past overflow).
 */
export function avgOverTime(points: Samples, endMs: number, rangeMs: number): number | undefined {
  return avgOf(valuesIn(points, endMs, rangeMs));
}

/** max_over_time(x[range]) at `endMs` (NaN loses to any number, as funcMaxOverTime); undefined for no points. */
export function maxOverTime(points: Samples, endMs: number, rangeMs: number): number | undefined {
  const values = valuesIn(points, endMs, rangeMs);
  if (values.length === 0) return undefined;
  let max = values[0]!;
  for (const v of values) if (v > max || Number.isNaN(max)) max = v;
  return max;
}

function valuesIn(points: Samples, endMs: number, rangeMs: number): number[] {
  const [lo, hi] = rangeOf(points, endMs, rangeMs);
  const values: number[] = [];
  for (let i = lo; i < hi; i++) values.push(points.value(i));
  return values;
}

/**
 * irate(x[range]) of a counter from its two newest samples: a drop reads as a reset (the newer
 * value), the difference per second of the interval between them; undefined for equal times
 * (promql/functions.go instantValue, prometheus/prometheus d15adb9: `F /= float64(interval) / 1000`).
 */
export function instantRate(prevValue: number, prevMs: number, curValue: number, curMs: number): number | undefined {
  const sampledIntervalMs = curMs - prevMs;
  if (sampledIntervalMs === 0) return undefined;
  const delta = curValue < prevValue ? curValue : curValue - prevValue;
  return delta / (sampledIntervalMs / 1000);
}
