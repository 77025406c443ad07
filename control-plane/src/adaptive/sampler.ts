// Adaptive sampling across policies: every step reads request rates per route, computes new
// rates with the algorithm, and publishes them as overrides of the policy's pluginConfig
// (sampling.defaultRate and sampling.routes[i].rate only; force rules are never touched).
// Publishing is rate-limited per policy; a step that may not publish changes nothing, so the
// rates the algorithm starts from are always the ones the filters actually run with.
import type { RateOverrides } from "../policy/effective.js";
import type { PolicyRecord } from "../policy/model.js";
import { nextRate, smoothedRate, withDefaults, observationWeights } from "./algorithm.js";
import { routeKey, unmatchedRoute, type RateSource } from "./rates.js";

/** Dependencies and limits of the sampler. */
export interface AdaptiveSamplerOptions {
  source: RateSource;
  /** The current policies (the store's list). */
  policies: () => readonly PolicyRecord[];
  /** Milliseconds clock (injected in tests). */
  now: () => number;
  /** At most one published change per policy per this interval. */
  minPushIntervalMs: number;
  /** Called after a policy's overrides changed. */
  onChange?: (policyName: string) => void;
  /** Called when a policy's rates could not be read (the step skips that policy). */
  onError?: (policyName: string, error: unknown) => void;
  /**
   * The rates in force for a policy this sampler has no state for: the previous leader's, as it
   * published them for this version (status.adaptive). A new leader continues from them instead
   * of starting over from the configured rates.
   */
  seed?: (record: PolicyRecord) => RateOverrides | undefined;
}

interface PolicyState {
  policyVersion: string;
  lastPublishMs: number;
  /** Current rates by route key (what the filters run with). */
  rates: Map<string, number>;
  /** Recent observations by route key, newest last. */
  observed: Map<string, number[]>;
  overrides: RateOverrides | undefined;
}

/** Rates adaptive sampling may change: the default and each rule with a key and a non-zero rate. */
function adjustable(record: PolicyRecord): Map<string, { index: number | "default"; rate: number }> {
  const out = new Map<string, { index: number | "default"; rate: number }>();
  const sampling = record.policy.pluginConfig.sampling ?? {};
  out.set(unmatchedRoute, { index: "default", rate: sampling.defaultRate ?? 0.01 });
  (sampling.routes ?? []).forEach((rule, index) => {
    const key = routeKey(rule);
    // A rule at rate 0 is an explicit "never sample"; the first rule with a key wins, as in the filter.
    if (key !== "" && rule.rate > 0 && !out.has(key)) out.set(key, { index, rate: rule.rate });
  });
  return out;
}

/** Keeps per-policy adaptive state and publishes overrides. */
export class AdaptiveSampler {
  private readonly states = new Map<string, PolicyState>();
  /** When this sampler last started over (a new leadership term); no publish of another leader is later. */
  private resetAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: AdaptiveSamplerOptions) {}

  /** The overrides currently published for a policy. */
  overrides(policyName: string): RateOverrides | undefined {
    return this.states.get(policyName)?.overrides;
  }

  /** Forgets every policy's state (leadership moved: another replica's rates may have replaced ours). */
  reset(): void {
    this.states.clear();
    this.resetAtMs = this.options.now();
  }

  /** One recompute for every adaptive policy; returns the names whose overrides changed. */
  async step(): Promise<string[]> {
    const changed: string[] = [];
    const records = this.options.policies().filter((r) => r.policy.adaptive !== undefined);
    const names = new Set(records.map((r) => r.policy.name));
    for (const name of [...this.states.keys()]) {
      if (!names.has(name)) {
        this.states.delete(name);
        changed.push(name);
      }
    }
    for (const record of records) {
      if (await this.stepPolicy(record)) changed.push(record.policy.name);
    }
    for (const name of changed) this.options.onChange?.(name);
    return changed;
  }

  private async stepPolicy(record: PolicyRecord): Promise<boolean> {
    const name = record.policy.name;
    let state = this.states.get(name);
    let reset = false;
    if (state === undefined || state.policyVersion !== record.version) {
      // A new policy version starts from its own configured rates; a policy new to this sampler
      // from the rates published for its version, when there are any.
      reset = state?.overrides !== undefined;
      const seeded = state === undefined ? this.options.seed?.(record) : undefined;
      state = { policyVersion: record.version, lastPublishMs: Number.NEGATIVE_INFINITY, rates: new Map(), observed: new Map(), overrides: undefined };
      if (seeded !== undefined) {
        for (const [key, { index }] of adjustable(record)) {
          const rate = index === "default" ? seeded.defaultRate : seeded.routeRates.get(index);
          if (rate !== undefined) state.rates.set(key, rate);
        }
        state.overrides = seeded;
        // The previous leader published before this term began: the push limit holds across leaders.
        state.lastPublishMs = this.resetAtMs;
      }
      this.states.set(name, state);
    }
    let observations;
    try {
      observations = await this.options.source.requestRates(name);
    } catch (error) {
      this.options.onError?.(name, error);
      return reset;
    }
    // Routes without a rule of their own are sampled at defaultRate, so their traffic counts as unmatched.
    const ruleKeys = new Set((record.policy.pluginConfig.sampling?.routes ?? []).map(routeKey));
    const byRoute = new Map<string, number>();
    for (const o of observations) {
      if (!Number.isFinite(o.requestsPerSecond) || o.requestsPerSecond < 0) continue;
      const key = ruleKeys.has(o.route) ? o.route : unmatchedRoute;
      byRoute.set(key, (byRoute.get(key) ?? 0) + o.requestsPerSecond);
    }
    const params = withDefaults(record.policy.adaptive ?? { targetTracesPerSecond: 1 });
    const routes = adjustable(record);
    const proposed = new Map<string, number>();
    let differs = false;
    for (const [key, { rate: configured }] of routes) {
      const history = state.observed.get(key) ?? [];
      history.push(byRoute.get(key) ?? 0);
      while (history.length > observationWeights.length) history.shift();
      state.observed.set(key, history);
      const current = state.rates.get(key) ?? configured;
      const next = nextRate(current, smoothedRate(history), params);
      proposed.set(key, next);
      if (next !== current) differs = true;
    }
    const now = this.options.now();
    if (!differs || now - state.lastPublishMs < this.options.minPushIntervalMs) return reset;
    state.rates = proposed;
    state.lastPublishMs = now;
    const routeRates = new Map<number, number>();
    let defaultRate: number | undefined;
    for (const [key, { index }] of routes) {
      const rate = proposed.get(key) as number;
      if (index === "default") defaultRate = rate;
      else routeRates.set(index, rate);
    }
    state.overrides = defaultRate === undefined ? { routeRates } : { defaultRate, routeRates };
    return true;
  }
}
