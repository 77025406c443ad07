// The one counter-reset rule of the control plane (pipeline rates, dashboard, adaptive sampling).

/**
 * Counter delta with a reset (value went down) read as "started again from zero", as Prometheus's
 * rate() and irate() read it (promql/functions.go, extrapolatedRate and instantValue).
 */
export function counterDelta(prev: number, cur: number): number {
  return cur >= prev ? cur - prev : cur;
}
