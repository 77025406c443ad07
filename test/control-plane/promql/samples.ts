// Series as rate.ts reads them (Samples), for the promql tests.
import type { Samples } from "../../../control-plane/src/promql/rate.js";

/** What a series holds, as [t, v, ...]. */
export function heldPoints(s: Samples): number[] {
  return Array.from({ length: s.count }, (_, i) => [s.time(i), s.value(i)]).flat();
}
