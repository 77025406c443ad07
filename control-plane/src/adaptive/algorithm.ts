// One step of adaptive sampling for one route, after Jaeger's adaptive sampler (REFERENCE
// section 8): aim sampled traces/s at the target from the observed request rate; raise the rate
// by at most `maxIncreaseFactor` per step, lower it at once; never below a floor that still
// samples rare routes `minTracesPerMinute` times a minute; and leave it alone while the expected
// sampled rate is within `tolerance` of the target, so noise does not make it flap.
import type { AdaptiveSettings } from "../policy/model.js";

/** Lowest rate ever set (Jaeger's lower clamp). */
export const minimumRate = 1e-5;

/** Settings with every default filled in. */
export interface AdaptiveParams {
  targetTracesPerSecond: number;
  floorRate: number;
  minTracesPerMinute: number;
  maxIncreaseFactor: number;
  tolerance: number;
}

/** Defaults: Jaeger's +50% cap, 1 trace per minute for rare routes, a 20% dead band (Jaeger's is 30%). */
export function withDefaults(settings: AdaptiveSettings): AdaptiveParams {
  return {
    targetTracesPerSecond: settings.targetTracesPerSecond,
    floorRate: settings.floorRate ?? minimumRate,
    minTracesPerMinute: settings.minTracesPerMinute ?? 1,
    maxIncreaseFactor: settings.maxIncreaseFactor ?? 1.5,
    tolerance: settings.tolerance ?? 0.2,
  };
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, value));
}

/** The next rate for a route currently sampled at `current` that sees `requestsPerSecond`. */
export function nextRate(current: number, requestsPerSecond: number, params: AdaptiveParams): number {
  // No traffic tells nothing about the right rate: keep it.
  if (!(requestsPerSecond > 0)) return current;
  const lowest = Math.max(minimumRate, params.floorRate);
  const floor = clamp((params.minTracesPerMinute / 60) / requestsPerSecond, lowest, 1);
  const target = params.targetTracesPerSecond;
  const expectedSampled = current * requestsPerSecond;
  if (current >= floor && Math.abs(expectedSampled - target) <= params.tolerance * target) return current;
  const desired = Math.max(target / requestsPerSecond, floor);
  const base = Math.max(current, lowest);
  const stepped = desired > current ? Math.min(desired, base * params.maxIncreaseFactor) : desired;
  // The floor applies at once: a rare route must not wait several steps for its first traces.
  return clamp(Math.max(stepped, floor), lowest, 1);
}

/** Weights of the last observations, newest first (recent intervals count most). */
export const observationWeights = [1, 0.5, 0.25] as const;

/** Weighted mean of the last observations (newest last in `history`). */
export function smoothedRate(history: readonly number[]): number {
  let sum = 0;
  let weights = 0;
  for (let i = 0; i < observationWeights.length && i < history.length; i++) {
    const weight = observationWeights[i] as number;
    sum += weight * (history[history.length - 1 - i] as number);
    weights += weight;
  }
  return weights === 0 ? 0 : sum / weights;
}
