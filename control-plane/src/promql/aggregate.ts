// sum() and avg() over the elements of an instant vector, computed as Prometheus computes them
// (promql/engine.go aggregation, prometheus/prometheus d15adb9): a compensated sum, the
// compensation added at the end; avg divides both by the count while the sum stays finite, else
// keeps a running mean. Callers pass the elements in the order of their label sets, as the
// storage returns series.
import { kahanSumInc } from "./kahan.js";

/** sum(v); undefined for an empty vector (Prometheus returns no element). */
export function sumOf(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  let sum = values[0]!;
  let c = 0;
  for (let i = 1; i < values.length; i++) [sum, c] = kahanSumInc(values[i]!, sum, c);
  return sum + c;
}

/** avg(v); undefined for an empty vector. */
export function avgOf(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  let sum = values[0]!;
  let c = 0;
  let mean = 0;
  let incremental = false;
  for (let i = 1; i < values.length; i++) {
    const count = i + 1;
    const f = values[i]!;
    if (!incremental) {
      const [s, nc] = kahanSumInc(f, sum, c);
      if (!(s > Number.MAX_VALUE || s < -Number.MAX_VALUE)) {
        sum = s;
        c = nc;
        continue;
      }
      incremental = true;
      mean = sum / (count - 1);
      c /= count - 1;
    }
    const q = (count - 1) / count;
    [mean, c] = kahanSumInc(f / count, q * mean, q * c);
  }
  return incremental ? mean + c : sum / values.length + c / values.length;
}
