// rate() and the *_over_time() functions over one float series, computed exactly as Prometheus
// computes them (same operations in the same order, so the results are the same doubles): the
// pipeline's figures over a window then equal a recording rule's evaluated at the same instant.
// Mirrors promql/functions.go (prometheus/prometheus d15adb9) for float samples without created
// timestamps (extrapolatedRate, funcAvgOverTime, funcMaxOverTime); a range
// selector takes the samples in (end - range, end] (its start is exclusive since Prometheus 3.0).

import { avgOf } from "./aggregate.js";

/** One sample of a series, ms since the epoch. */
export interface Point {
  t: number;
  v: number;
}

/** The points of a time-sorted series inside (endMs - rangeMs, endMs]. */
export function inRange(points: readonly Point[], endMs: number, rangeMs: number): Point[] {
  const start = endMs - rangeMs;
  let lo = 0;
  while (lo < points.length && points[lo]!.t <= start) lo++;
  let hi = lo;
  while (hi < points.length && points[hi]!.t <= endMs) hi++;
  return points.slice(lo, hi);
}

/**
 * rate(x[range]) (isRate) or increase(x[range]) of a counter evaluated at `endMs`; undefined where
 * Prometheus returns no sample (fewer than two points in the range). extrapolatedRate: resets add
 * the value before the drop; the result is extrapolated towards the range's ends by up to half an
 * average sample gap, and towards the start no further than where the counter would reach zero.
 */
export function extrapolatedRate(points: readonly Point[], endMs: number, rangeMs: number, isRate = true): number | undefined {
  const samples = inRange(points, endMs, rangeMs);
  if (samples.length < 2) return undefined;
  const rangeStart = endMs - rangeMs;
  const numSamplesMinusOne = samples.length - 1;
  const first = samples[0]!;
  const last = samples[numSamplesMinusOne]!;
  let resultFloat = last.v - first.v;
  for (let i = 1; i < samples.length; i++) {
    if (samples[i]!.v < samples[i - 1]!.v) resultFloat += samples[i - 1]!.v;
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
export function avgOverTime(points: readonly Point[], endMs: number, rangeMs: number): number | undefined {
  return avgOf(inRange(points, endMs, rangeMs).map((p) => p.v));
}

/** max_over_time(x[range]) at `endMs` (NaN loses to any number, as funcMaxOverTime); undefined for no points. */
export function maxOverTime(points: readonly Point[], endMs: number, rangeMs: number): number | undefined {
  const samples = inRange(points, endMs, rangeMs);
  if (samples.length === 0) return undefined;
  let max = samples[0]!.v;
  for (const s of samples) if (s.v > max || Number.isNaN(max)) max = s.v;
  return max;
}
