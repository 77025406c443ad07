// The sampling policy: which workloads it targets and the filter pluginConfig they get.
// `pluginConfig` is exactly the JSON the filter accepts (filter/config.schema.json).

/** Label-selector target: pods in `namespace` carrying every label in `matchLabels`. */
export interface SelectorTarget {
  namespace: string;
  selector: { matchLabels: Record<string, string> };
}

/** Gateway API style target (Kubernetes mode only; pull resolution ignores these policies). */
export interface TargetRefsTarget {
  namespace: string;
  targetRefs: { group?: string; kind: string; name: string }[];
}

/** Adaptive sampling settings (REFERENCE section 8); every route aims at the same target. */
export interface AdaptiveSettings {
  /** Sampled traces per second wanted for each route. */
  targetTracesPerSecond: number;
  /** Lowest rate adaptive sampling may set. */
  floorRate?: number;
  /** Rare routes still get this many sampled traces per minute. */
  minTracesPerMinute?: number;
  /** Largest multiplicative increase per step (decreases are immediate). */
  maxIncreaseFactor?: number;
  /** No change while sampled/target is within this fraction of 1 (hysteresis). */
  tolerance?: number;
}

/** The filter's pluginConfig (validated against filter/config.schema.json). */
export interface PluginConfig {
  sampling?: {
    defaultRate?: number;
    routes?: { routeName?: string; pathPrefix?: string; host?: string; rate: number }[];
    force?: { header: string; value?: string }[];
  };
  headers?: { tokenTraceId?: string };
  stats?: { maxRoutes?: number };
  /** The schema's other sections (llm, spans, ...): carried through untouched. */
  [section: string]: unknown;
}

/** A policy as clients send it. */
export interface Policy {
  name: string;
  target: SelectorTarget | TargetRefsTarget;
  pluginConfig: PluginConfig;
  adaptive?: AdaptiveSettings;
}

/** A stored policy and its version (the ETag); stores hand these out deeply frozen. */
export interface PolicyRecord {
  policy: Policy;
  version: string;
  updatedAt: string;
  updatedBy: string;
}

/** One entry of a policy's history: the record after `action`, or the deletion; also its audit record. */
export interface HistoryEntry {
  action: "create" | "replace" | "patch" | "rollback" | "delete";
  version: string;
  /** The version this change replaced (null when there was no current policy). */
  previousVersion: string | null;
  at: string;
  by: string;
  /** The policy after the action; absent for delete. */
  policy?: Policy;
}

/** Field error reported to API clients. */
export interface FieldError {
  field: string;
  reason: string;
}

/** True for a label-selector target. */
export function hasSelector(target: Policy["target"]): target is SelectorTarget {
  return "selector" in target;
}
