// Compensated addition, as Prometheus sums floats (util/kahansum, prometheus/prometheus d15adb9).

/** Neumaier-compensated addition: util/kahansum Inc. Returns the new sum and compensation. */
export function kahanSumInc(inc: number, sum: number, c: number): [number, number] {
  const t = sum + inc;
  if (t > Number.MAX_VALUE || t < -Number.MAX_VALUE) return [t, 0];
  if (Math.abs(sum) >= Math.abs(inc)) c += sum - t + inc;
  else c += inc - t + sum;
  return [t, c];
}
