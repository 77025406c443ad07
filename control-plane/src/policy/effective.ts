// The config a workload actually gets: the policy's pluginConfig with adaptive-sampling rate
// overrides applied (only `rate` values change; force rules and everything else are kept), and
// an opaque version derived from its content so it changes exactly when the config changes.
import { createHash } from "node:crypto";
import type { PluginConfig, Policy } from "./model.js";

/** Rates set by adaptive sampling: the default rate and per-route rates by rule index. */
export interface RateOverrides {
  defaultRate?: number;
  routeRates: ReadonlyMap<number, number>;
}

/** Supplies overrides for a policy (the adaptive sampler); undefined = none. */
export type OverrideSource = (policyName: string) => RateOverrides | undefined;

/** pluginConfig with overrides applied; a fresh object. */
export function effectiveConfig(policy: Policy, overrides: RateOverrides | undefined): PluginConfig {
  const config = structuredClone(policy.pluginConfig);
  if (overrides === undefined) return config;
  const sampling = (config.sampling ??= {});
  if (overrides.defaultRate !== undefined) sampling.defaultRate = overrides.defaultRate;
  for (const [index, rate] of overrides.routeRates) {
    const rule = sampling.routes?.[index];
    if (rule !== undefined) rule.rate = rate;
  }
  return config;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Opaque version of (policy name, config): 16 hex characters of a SHA-256. */
export function configVersion(policyName: string, config: PluginConfig): string {
  return createHash("sha256").update(policyName).update("\n").update(canonicalJson(config)).digest("hex").slice(0, 16);
}
