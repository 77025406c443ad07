// The dashboard's LoRA adapters per base model: from each vLLM scrape's joined batch, the join's
// tokentrace_model_lora_adapter_running / _waiting per (pod, adapter) with its base_model (the
// series remote write ships and the Grafana panel "LoRA adapters: running and waiting" queries).
// Only the newest state is kept, per pod, and read within the lookback: vLLM exports which
// adapters have running and waiting requests, not how many (../engine/lora-info.ts).
import type { WriteSeries } from "../remote-write/series.js";
import { labelValue } from "../scrape/sample.js";
import { MODEL_LORA_ADAPTER_RUNNING, MODEL_LORA_ADAPTER_WAITING } from "../join/catalogue.js";
import { MAX_ADAPTERS_PER_POD } from "../engine/lora-info.js";

/** One adapter of one base model now: the pods it has running (waiting) requests on, and every pod that reports it. */
export interface AdapterRow {
  adapter: string;
  runningPods: string[];
  waitingPods: string[];
  pods: string[];
}

interface PodState {
  tMs: number;
  running: boolean;
  waiting: boolean;
}

const keyOf = (namespace: string, base: string): string => `${namespace}\u0000${base}`;

/** Newest LoRA state per (namespace, base model) -> adapter -> pod, bounded per base model (MAX_ADAPTERS_PER_POD) and in models. */
export class LoraAdapterStates {
  private readonly byModel = new Map<string, Map<string, Map<string, PodState>>>();

  constructor(private readonly maxModels = 32) {}

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
      const key = keyOf(labelValue(s.labels, "namespace") ?? t.namespace ?? "", labelValue(s.labels, "base_model") ?? "");
      const adapter = labelValue(s.labels, "model") ?? "";
      const pod = labelValue(s.labels, "pod") ?? t.pod ?? t.id;
      let adapters = this.byModel.get(key);
      if (!adapters) {
        if (this.byModel.size >= this.maxModels) continue;
        this.byModel.set(key, (adapters = new Map()));
      }
      let pods = adapters.get(adapter);
      if (!pods) {
        if (adapters.size >= MAX_ADAPTERS_PER_POD) continue;
        adapters.set(adapter, (pods = new Map()));
      }
      let state = pods.get(pod);
      if (!state || state.tMs !== sample.timestampMs) pods.set(pod, (state = { tMs: sample.timestampMs, running: false, waiting: false }));
      if (running) state.running = sample.value > 0;
      else state.waiting = sample.value > 0;
    }
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
      const fresh = [...pods].filter(([, s]) => s.tMs > nowMs - lookbackMs && s.tMs <= nowMs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      if (fresh.length === 0) continue;
      out.push({ adapter, runningPods: fresh.filter(([, s]) => s.running).map(([p]) => p), waitingPods: fresh.filter(([, s]) => s.waiting).map(([p]) => p), pods: fresh.map(([p]) => p) });
    }
    return out.sort((a, b) => (a.adapter < b.adapter ? -1 : a.adapter > b.adapter ? 1 : 0));
  }
}
