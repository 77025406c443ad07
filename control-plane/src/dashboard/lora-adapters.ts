// The dashboard's LoRA adapters per base model: from each vLLM scrape's joined batch, the join's
// tokentrace_model_lora_adapter_running / _waiting per (pod, adapter) with its base_model (the
// series remote write ships and the Grafana panel "LoRA adapters: running and waiting" queries).
// Only the newest state is kept, per pod, and read within the lookback: vLLM exports which
// adapters have running and waiting requests, not how many (../engine/lora-info.ts). What is kept
// is bounded in bytes (names are copies, never slices of a scrape) and forgets a pod after the
// retention, so pods that come and go (a Deployment's rollouts) do not grow it.
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import { MODEL_LORA_ADAPTER_RUNNING, MODEL_LORA_ADAPTER_WAITING } from "../join/catalogue.js";
import { MAX_ADAPTERS_PER_POD } from "../engine/lora-info.js";
import { ownCopy } from "../scrape/name-pool.js";

/** One adapter of one base model now: the pods it has running (waiting) requests on, and every pod that reports it. */
export interface AdapterRow {
  adapter: string;
  runningPods: string[];
  waitingPods: string[];
  pods: string[];
}

/** Bounds of what the states hold. */
export interface LoraLimits {
  /** (namespace, base model) pairs kept. */
  maxModels: number;
  /** What the states may hold together, estimated (stateBytes); past it the oldest pod states go first. */
  maxBytes: number;
  /** A pod state older than this (behind the newest scrape seen) is forgotten, ms: the page's longest range. */
  retentionMs: number;
}

/** Defaults: 32 base models, 2 MiB (about 10,000 pod states with 64-character names), an hour. */
export const LORA_LIMITS: LoraLimits = { maxModels: 32, maxBytes: 2 * 1024 * 1024, retentionMs: 3_600_000 };

// Estimated heap bytes (Node 20, x64), rounded up: a Map entry and its object, plus a string's
// header and two bytes a character (a name outside Latin-1 takes two).
const MODEL_BYTES = 200;
const ADAPTER_BYTES = 160;
const POD_STATE_BYTES = 120;
const stringBytes = (s: string): number => 24 + 2 * s.length;

interface PodState {
  tMs: number;
  running: boolean;
  waiting: boolean;
}

const keyOf = (namespace: string, base: string): string => `${namespace}\u0000${base}`;
const byName = <T>([a]: [string, T], [b]: [string, T]): number => (a < b ? -1 : a > b ? 1 : 0);

/** Newest LoRA state per (namespace, base model) -> adapter -> pod, bounded per base model (MAX_ADAPTERS_PER_POD), in models and in bytes. */
export class LoraAdapterStates {
  private readonly byModel = new Map<string, Map<string, Map<string, PodState>>>();
  private readonly limits: LoraLimits;
  private heldBytes = 0;
  private newestMs = -Infinity;
  private prunedAtMs = -Infinity;

  constructor(limits: Partial<LoraLimits> = {}) {
    this.limits = { ...LORA_LIMITS, ...limits };
  }

  /** The estimated bytes held (at most limits.maxBytes once a batch is taken). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** What the states may hold together (limits.maxBytes). */
  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  /** Takes one joined batch; only vLLM scrapes carry adapters. */
  observe(series: readonly WriteSeries[], source: { target: { kind: string; namespace?: string; pod?: string; id: string } }): void {
    const t = source.target;
    if (t.kind !== "vllm") return;
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      const running = name === MODEL_LORA_ADAPTER_RUNNING;
      if (!running && name !== MODEL_LORA_ADAPTER_WAITING) continue;
      const sample = s.samples[s.samples.length - 1];
      if (!sample || sample.stale) continue;
      const state = this.stateOf(labelValue(s.labels, "namespace") ?? t.namespace ?? "", labelValue(s.labels, "base_model") ?? "", labelValue(s.labels, "model") ?? "", labelValue(s.labels, "pod") ?? t.pod ?? t.id, sample.timestampMs);
      if (!state) continue;
      if (running) state.running = sample.value > 0;
      else state.waiting = sample.value > 0;
    }
    this.prune();
  }

  /** The state of (namespace, base, adapter, pod) at `tMs`: the one held when it is of that scrape, else a fresh one; undefined past the bounds. */
  private stateOf(namespace: string, base: string, adapter: string, pod: string, tMs: number): PodState | undefined {
    if (tMs > this.newestMs) this.newestMs = tMs;
    const key = keyOf(namespace, base);
    let adapters = this.byModel.get(key);
    if (!adapters) {
      if (this.byModel.size >= this.limits.maxModels) return undefined;
      const kept = keyOf(ownCopy(namespace), ownCopy(base));
      this.byModel.set(kept, (adapters = new Map()));
      this.heldBytes += MODEL_BYTES + stringBytes(kept);
    }
    let pods = adapters.get(adapter);
    if (!pods) {
      if (adapters.size >= MAX_ADAPTERS_PER_POD) return undefined;
      adapters.set(ownCopy(adapter), (pods = new Map()));
      this.heldBytes += ADAPTER_BYTES + stringBytes(adapter);
    }
    let state = pods.get(pod);
    if (!state) {
      pods.set(ownCopy(pod), (state = { tMs, running: false, waiting: false }));
      this.heldBytes += POD_STATE_BYTES + stringBytes(pod);
    } else if (state.tMs !== tMs) {
      state.tMs = tMs;
      state.running = false;
      state.waiting = false;
    }
    return state;
  }

  /** Forgets pod states past the retention (at most once a minute of scrape time), then the oldest while over the byte budget. */
  private prune(): void {
    const expired = this.newestMs - this.limits.retentionMs;
    if (this.heldBytes <= this.limits.maxBytes && this.newestMs - this.prunedAtMs < 60_000) return;
    this.prunedAtMs = this.newestMs;
    const all: { key: string; adapter: string; pod: string; tMs: number }[] = [];
    for (const [key, adapters] of this.byModel) for (const [adapter, pods] of adapters) for (const [pod, s] of pods) all.push({ key, adapter, pod, tMs: s.tMs });
    all.sort((a, b) => a.tMs - b.tMs);
    for (const e of all) {
      if (e.tMs > expired && this.heldBytes <= this.limits.maxBytes) break;
      this.remove(e.key, e.adapter, e.pod);
    }
  }

  private remove(key: string, adapter: string, pod: string): void {
    const adapters = this.byModel.get(key)!;
    const pods = adapters.get(adapter)!;
    pods.delete(pod);
    this.heldBytes -= POD_STATE_BYTES + stringBytes(pod);
    if (pods.size > 0) return;
    adapters.delete(adapter);
    this.heldBytes -= ADAPTER_BYTES + stringBytes(adapter);
    if (adapters.size > 0) return;
    this.byModel.delete(key);
    this.heldBytes -= MODEL_BYTES + stringBytes(key);
  }

  /** Base models with adapters, as (namespace, model). */
  models(namespace?: string): { namespace: string; model: string }[] {
    return [...this.byModel.keys()].map((k) => {
      const [ns, model] = k.split("\u0000") as [string, string];
      return { namespace: ns, model };
    }).filter((k) => namespace === undefined || k.namespace === namespace);
  }

  /** The adapters of a base model with a pod state newer than `nowMs - lookbackMs`, sorted by name. */
  adapters(namespace: string, base: string, nowMs: number, lookbackMs: number): AdapterRow[] {
    const out: AdapterRow[] = [];
    for (const [adapter, pods] of this.byModel.get(keyOf(namespace, base)) ?? []) {
      const fresh = [...pods].filter(([, s]) => s.tMs > nowMs - lookbackMs && s.tMs <= nowMs).sort(byName);
      if (fresh.length === 0) continue;
      out.push({ adapter, runningPods: fresh.filter(([, s]) => s.running).map(([p]) => p), waitingPods: fresh.filter(([, s]) => s.waiting).map(([p]) => p), pods: fresh.map(([p]) => p) });
    }
    return out.sort((a, b) => (a.adapter < b.adapter ? -1 : a.adapter > b.adapter ? 1 : 0));
  }
}
