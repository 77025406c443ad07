// The config a workload actually gets: the policy's pluginConfig with adaptive-sampling rate
// overrides applied (only `rate` values change; force rules and everything else are kept) and the
// live tail-keep thresholds in spans.keep.live, and
// an opaque version derived from its content so it changes exactly when the config changes.
// Both are computed once per (policy record, overrides) pair and cached: records are immutable
// and replaced on every change, and the sampler publishes a new overrides object when rates
// move, so object identity says when the cached answer is stale.
import { createHash } from "node:crypto";
import { deepFreeze } from "./admission.js";
import { canonicalJson } from "./canonical-json.js";
import type { PluginConfig, Policy, PolicyRecord } from "./model.js";

/** Rates set by adaptive sampling: the default rate and per-route rates by rule index. */
export interface RateOverrides {
  defaultRate?: number;
  routeRates: ReadonlyMap<number, number>;
  /** Live tail-keep thresholds (adaptive/live-scheduler.ts), written to spans.keep.live. */
  keepLive?: readonly KeepLiveThreshold[];
}

/** One spans.keep.live entry (filter/config.schema.json). */
export interface KeepLiveThreshold {
  route: string;
  model?: string;
  durationMs?: number;
  ttftMs?: number;
}

/** Supplies overrides for a policy (the adaptive sampler); undefined = none. */
export type OverrideSource = (policyName: string) => RateOverrides | undefined;

/** pluginConfig with overrides applied; a fresh object. */
export function effectiveConfig(policy: Policy, overrides: RateOverrides | undefined): PluginConfig {
  const config = structuredClone(policy.pluginConfig);
  if (overrides === undefined) return config;
  const live = overrides.keepLive;
  const spans = config.spans;
  if (live !== undefined && live.length > 0 && typeof spans === "object" && spans !== null) {
    const keep = (spans as { keep?: unknown }).keep;
    // Only where the policy asks for tail keep; a hand-written `live` is the operator's and wins.
    if (typeof keep === "object" && keep !== null && (keep as { live?: unknown }).live === undefined) (keep as { live?: unknown }).live = live.map((t) => ({ ...t }));
  }
  if (overrides.defaultRate === undefined && overrides.routeRates.size === 0) return config;
  const sampling = (config.sampling ??= {});
  if (overrides.defaultRate !== undefined) sampling.defaultRate = overrides.defaultRate;
  for (const [index, rate] of overrides.routeRates) {
    const rule = sampling.routes?.[index];
    if (rule !== undefined) rule.rate = rate;
  }
  return config;
}

/** Opaque version of (policy name, config): 16 hex characters of a SHA-256. */
export function configVersion(policyName: string, config: PluginConfig): string {
  return createHash("sha256").update(policyName).update("\n").update(canonicalJson(config)).digest("hex").slice(0, 16);
}

/** What the pull endpoint serves for one policy version: frozen config, its version, the 200 body. */
export interface ServedConfig {
  version: string;
  config: PluginConfig;
  /** `{"version","policy","config"}` serialized once. */
  body: string;
}

/** Effective configs by policy record and overrides identity. */
export class EffectiveConfigCache {
  private readonly cache = new WeakMap<PolicyRecord, { overrides: RateOverrides | undefined; served: ServedConfig }>();

  /** The served config for `record` under `overrides`, computed at most once per pair. */
  get(record: PolicyRecord, overrides: RateOverrides | undefined): ServedConfig {
    const hit = this.cache.get(record);
    if (hit !== undefined && hit.overrides === overrides) return hit.served;
    const config = deepFreeze(effectiveConfig(record.policy, overrides));
    const version = configVersion(record.policy.name, config);
    const served = { version, config, body: JSON.stringify({ version, policy: record.policy.name, config }) };
    this.cache.set(record, { overrides, served });
    return served;
  }
}
