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
 * Classic buckets as BucketQuantile reads them: bounds ascending, each once (coalesceBuckets),
 * counts made monotonic (ensureMonotonicAndIgnoreSmallDeltas). Made once for several quantiles.
 */
export interface Buckets {
  les: number[];
  counts: number[];
}

/**
 * `les` (ascending; equal bounds next to each other, their counts added left to right) and their
 * cumulative `counts` made into Buckets, in place; undefined where Prometheus gives NaN for every q
 * (no observations, no +Inf bucket, fewer than two buckets).
 */
export function bucketsOf(les: number[], counts: number[]): Buckets | undefined {
  let n = 0;
  for (let i = 0; i < les.length; i++) {
    if (n > 0 && les[n - 1] === les[i]) {
      counts[n - 1] = counts[n - 1]! + counts[i]!;
      continue;
    }
    les[n] = les[i]!;
    counts[n] = counts[i]!;
    n++;
  }
  les.length = n;
  counts.length = n;
  if (n === 0 || les[n - 1] !== Infinity) return undefined;
  // Tiny differences and decreases take the previous count.
  let prev = counts[0]!;
  for (let i = 1; i < n; i++) {
    const cur = counts[i]!;
    if (cur === prev) continue;
    if (almostEqual(prev, cur, SMALL_DELTA_TOLERANCE) || cur < prev) {
      counts[i] = prev;
      continue;
    }
    prev = cur;
  }
  if (n < 2 || counts[n - 1] === 0) return undefined;
  return { les, counts };
}

/** BucketQuantile's answer for q in [0, 1] over buckets made by bucketsOf. */
export function bucketQuantile(q: number, buckets: Buckets): number {
  const { les, counts } = buckets;
  const n = les.length;
  let rank = q * counts[n - 1]!;
  // sort.Search over all but the +Inf bucket: the first bucket whose count reaches the rank.
  let b = n - 1;
  for (let i = 0; i < n - 1; i++) {
    if (counts[i]! >= rank) {
      b = i;
      break;
    }
  }
  if (b === n - 1) return les[n - 2]!;
  if (b === 0 && les[0]! <= 0) return les[0]!;
  let start = 0;
  let count = counts[b]!;
  if (b > 0) {
    start = les[b - 1]!;
    count -= counts[b - 1]!;
    rank -= counts[b - 1]!;
  }
  return start + (les[b]! - start) * (rank / count);
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
  const buckets = bucketsOfMap(cumulative);
  return buckets === undefined ? null : bucketQuantile(q, buckets);
}

/** Buckets of cumulative counts keyed by upper bound. */
function bucketsOfMap(cumulative: ReadonlyMap<number, number>): Buckets | undefined {
  const entries = [...cumulative].sort((a, b) => a[0] - b[0]);
  return bucketsOf(
    entries.map((e) => e[0]),
    entries.map((e) => e[1]),
  );
}
