// histogram_quantile over classic (le) buckets, exactly as Prometheus computes it, so the dashboard,
// the pipeline's percentiles and a PromQL query over the same buckets agree. Mirrors
// promql/quantile.go BucketQuantile, coalesceBuckets and ensureMonotonicAndIgnoreSmallDeltas
// (prometheus/prometheus d15adb9).

/** Relative tolerance under which two bucket counts are taken as equal (quantile.go smallDeltaTolerance). */
const SMALL_DELTA_TOLERANCE = 1e-12;

function almostEqual(a: number, b: number, epsilon: number): boolean {
  // util/almost.Equal: relative difference, with an absolute floor near zero.
  if (a === b) return true;
  const minNormal = 2.2250738585072014e-308;
  const absSum = Math.abs(a) + Math.abs(b);
  const diff = Math.abs(a - b);
  if (a === 0 || b === 0 || absSum < minNormal) return diff < epsilon * minNormal;
  return diff / Math.min(absSum, Number.MAX_VALUE) < epsilon;
}

/**
 * The q-quantile of cumulative bucket counts keyed by upper bound (`Infinity` for +Inf); null where
 * Prometheus returns NaN (no observations, no +Inf bucket, fewer than two buckets). Decreasing
 * counts are lifted to the running maximum (BucketQuantile's forced monotonicity), so for one set of
 * buckets the result never decreases as q grows: P50 <= P95 <= P99.
 */
export function histogramQuantile(q: number, cumulative: ReadonlyMap<number, number>): number | null {
  if (Number.isNaN(q)) return null;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const buckets: { le: number; count: number }[] = [...cumulative].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
  if (buckets.length === 0 || buckets[buckets.length - 1]!.le !== Infinity) return null;
  // coalesceBuckets: same upper bound, counts added.
  const merged: { le: number; count: number }[] = [];
  for (const b of buckets) {
    const last = merged[merged.length - 1];
    if (last && last.le === b.le) last.count += b.count;
    else merged.push({ ...b });
  }
  // ensureMonotonicAndIgnoreSmallDeltas: tiny differences and decreases take the previous count.
  let prev = merged[0]!.count;
  for (let i = 1; i < merged.length; i++) {
    const cur = merged[i]!.count;
    if (cur === prev) continue;
    if (almostEqual(prev, cur, SMALL_DELTA_TOLERANCE) || cur < prev) {
      merged[i]!.count = prev;
      continue;
    }
    prev = cur;
  }
  if (merged.length < 2) return null;
  const observations = merged[merged.length - 1]!.count;
  if (observations === 0) return null;
  let rank = q * observations;
  // sort.Search over all but the +Inf bucket: the first bucket whose count reaches the rank.
  let b = merged.length - 1;
  for (let i = 0; i < merged.length - 1; i++) {
    if (merged[i]!.count >= rank) {
      b = i;
      break;
    }
  }
  if (b === merged.length - 1) return merged[merged.length - 2]!.le;
  if (b === 0 && merged[0]!.le <= 0) return merged[0]!.le;
  let start = 0;
  let count = merged[b]!.count;
  if (b > 0) {
    start = merged[b - 1]!.le;
    count -= merged[b - 1]!.count;
    rank -= merged[b - 1]!.count;
  }
  return start + (merged[b]!.le - start) * (rank / count);
}
