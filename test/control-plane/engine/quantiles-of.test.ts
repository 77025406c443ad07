// quantilesOf (the engine's and the sidecar's percentiles from summed bucket rates keyed by le text)
// against histogram_quantile over the buckets as `sum by (le)` leaves them: le parsed, equal bounds
// added in order, each of P50, P95, P99 asked of histogramQuantile (itself checked against promtool in
// promql/quantile.test.ts), kept where >= 0 and scaled.
import { test } from "node:test";
import assert from "node:assert/strict";
import { quantilesOf, QUANTILES } from "../../../control-plane/src/engine/signals.js";
import { histogramQuantile } from "../../../control-plane/src/promql/quantile.js";
import { mulberry32 } from "../../support/mulberry32.js";

function expected(rateByLe: Map<string, number>, scale: number): Map<number, number> {
  const sorted = [...rateByLe].map(([le, v]) => ({ bound: le === "+Inf" ? Infinity : Number(le), v })).filter((b) => !Number.isNaN(b.bound)).sort((a, b) => a.bound - b.bound);
  const buckets = new Map<number, number>();
  for (const b of sorted) buckets.set(b.bound, (buckets.get(b.bound) ?? 0) + b.v);
  const out = new Map<number, number>();
  for (const q of QUANTILES) {
    const v = histogramQuantile(q, buckets);
    if (v !== null && v >= 0) out.set(q, v / scale);
  }
  return out;
}

test("quantilesOf gives histogram_quantile's P50, P95 and P99 of the summed rates, over 2,000 random bucket sets: equal bounds spelled apart, decreasing or tiny steps, no +Inf, bad le, no observations", () => {
  const next = mulberry32(3);
  const random = (n: number): number => Math.floor(next() * n);
  const spellings = ["0.1", "0.10", "1", "1.0", "1e0", "2.5", "5", "10", "-1", "0", "+Inf", "Infinity", "nan", "x"];
  for (let i = 0; i < 2000; i++) {
    const rates = new Map<string, number>();
    const n = random(8);
    let running = 0;
    for (let k = 0; k < n; k++) {
      running += random(4) === 0 ? -random(3) : random(5) + (random(3) === 0 ? 1e-14 : 0);
      rates.set(spellings[random(spellings.length)]!, random(6) === 0 ? 0 : running);
    }
    if (random(2) === 0) rates.set("+Inf", running + random(3));
    const scale = random(2) === 0 ? 1 : 1000;
    assert.deepEqual([...quantilesOf(rates, scale)], [...expected(rates, scale)], JSON.stringify([...rates]));
  }
});
