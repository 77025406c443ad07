// Live tail-keep thresholds on a schedule: every step reads each policy's windows (per route and
// model duration and TTFT histograms, pipeline-histograms.ts), computes the next spans.keep.live
// with nextLiveThresholds (hysteresis, capped rises, floor and ceiling, at most 128 pairs), and
// publishes it for the policy's served config (the pull response, and in Kubernetes mode the
// WasmPlugin pluginConfig). Only policies whose pluginConfig has spans.keep and no `live` of their
// own get them (a hand-written `live` wins). Publishing is rate-limited per policy
// (`minPushIntervalMs`): in Kubernetes mode each publish rewrites a WasmPlugin, and every sidecar
// it selects reconfigures its filter. A step that may not publish changes nothing, so the next step
// starts from the thresholds the filters actually run with. A new leader starts from the thresholds
// the previous one published in the policy's status (`seed`), which followers serve meanwhile.
import type { PolicyRecord } from "../policy/model.js";
import { DEFAULT_LIVE_THRESHOLDS, nextLiveThresholds, type LiveThreshold, type LiveThresholdOptions } from "./live-thresholds.js";
import type { WindowSource } from "./pipeline-histograms.js";

/** Dependencies and limits of the scheduler. */
export interface LiveThresholdSchedulerOptions {
  source: WindowSource;
  /** The current policies (the store's list). */
  policies: () => readonly PolicyRecord[];
  /** Milliseconds clock (injected in tests). */
  now: () => number;
  /** At most one published change per policy per this interval. */
  minPushIntervalMs: number;
  thresholds?: LiveThresholdOptions;
  /** Called after a policy's thresholds changed (published or withdrawn). */
  onChange?: (policyName: string) => void;
  /** Called at every step of a policy with the pairs it left out (past maxEntries; they fall back in the filter). */
  onOverflow?: (policyName: string, pairs: number) => void;
  /**
   * The thresholds a previous leader published for a policy (its status): a new leader's first
   * step continues from them (hysteresis, capped rises) instead of from none.
   */
  seed?: (policyName: string) => readonly LiveThreshold[] | undefined;
}

interface PolicyState {
  live: readonly LiveThreshold[];
  lastPublishMs: number;
}

/** Whether a policy asks for tail keep without thresholds of its own. */
export function takesLiveThresholds(record: PolicyRecord): boolean {
  const spans = record.policy.pluginConfig.spans;
  if (typeof spans !== "object" || spans === null) return false;
  const keep = (spans as { keep?: unknown }).keep;
  return typeof keep === "object" && keep !== null && (keep as { live?: unknown }).live === undefined;
}

/** Keeps per-policy live thresholds and publishes them. */
export class LiveThresholdScheduler {
  private readonly states = new Map<string, PolicyState>();

  constructor(private readonly options: LiveThresholdSchedulerOptions) {}

  /** The thresholds published for a policy (undefined: none). */
  live(policyName: string): readonly LiveThreshold[] | undefined {
    return this.states.get(policyName)?.live;
  }

  /** Forgets every policy's thresholds (leadership moved). */
  reset(): void {
    this.states.clear();
  }

  /** One recompute for every policy that takes live thresholds; returns the names whose thresholds changed. */
  step(): string[] {
    const changed: string[] = [];
    const records = this.options.policies().filter(takesLiveThresholds);
    const names = new Set(records.map((r) => r.policy.name));
    for (const name of [...this.states.keys()]) {
      if (!names.has(name)) {
        this.states.delete(name);
        changed.push(name);
      }
    }
    const o = this.options.thresholds ?? DEFAULT_LIVE_THRESHOLDS;
    for (const record of records) {
      const name = record.policy.name;
      const state = this.states.get(name) ?? { live: this.options.seed?.(name) ?? [], lastPublishMs: Number.NEGATIVE_INFINITY };
      const next = nextLiveThresholds(state.live, this.options.source.windows(name), o);
      this.options.onOverflow?.(name, next.overflow);
      const now = this.options.now();
      if (!next.changed || now - state.lastPublishMs < this.options.minPushIntervalMs) continue;
      this.states.set(name, { live: next.entries, lastPublishMs: now });
      changed.push(name);
    }
    for (const name of changed) this.options.onChange?.(name);
    return changed;
  }
}
