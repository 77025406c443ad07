// tokentrace_model_lora_*: per vLLM scrape, its LoRA adapters (../../engine/lora-info.ts) with the
// base model each extends (../../engine/model-list.ts, fetched apart from the scrape), so the route
// stats of an adapter (their `model` is the adapter's name) meet their base model by (namespace,
// pod, model). Instant values of this scrape only: nothing is kept between scrapes.
import type { Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import { loraStateOf, MAX_ADAPTERS_PER_POD } from "../../engine/lora-info.js";
import * as C from "../catalogue.js";
import type { PodIdentity } from "../identity.js";
import type { Derivation } from "./derivation.js";

/** Adapter -> base model of a target's newest model list, undefined before one. */
export type AdapterParents = (targetId: string) => ReadonlyMap<string, string> | undefined;

/** The models a vLLM scrape names (`model_name` of its series): an adapter without a listed parent extends the one, if there is one. */
function servedModels(r: ScrapeResult): Set<string> {
  const models = new Set<string>();
  for (const s of r.samples) {
    if (!s.name.startsWith("vllm:")) continue;
    for (let i = 0; i < s.labels.length; i += 2) if (s.labels[i] === "model_name") models.add(s.labels[i + 1]!);
    if (models.size > 1) break;
  }
  return models;
}

/** tokentrace_model_lora_adapter_{info,running,waiting} and tokentrace_model_lora_max_adapters. */
export class LoraAdapters implements Derivation {
  constructor(
    private readonly parentsOf: AdapterParents,
    /** Adapters of one scrape left out by the bounds (names too long, or past MAX_ADAPTERS_PER_POD). */
    private readonly onDropped: (n: number) => void = () => undefined,
  ) {}

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || t.kind !== "vllm") return;
    const state = loraStateOf(r.samples);
    const parents = this.parentsOf(t.id);
    if (!state && !parents?.size) return;
    const served = servedModels(r);
    const onlyModel = served.size === 1 ? [...served][0]! : "";
    const running = new Set(state?.running);
    const waiting = new Set(state?.waiting);
    // Listed adapters first (their order in the list), then any in use the list did not have yet.
    const adapters: string[] = [];
    let dropped = state?.dropped ?? 0;
    for (const name of [...(parents?.keys() ?? []), ...running, ...waiting]) {
      if (adapters.includes(name)) continue;
      if (adapters.length < MAX_ADAPTERS_PER_POD) adapters.push(name);
      else dropped++;
    }
    if (dropped > 0) this.onDropped(dropped);
    const ts = r.timestampMs;
    const podLabels: Labels = ["namespace", t.namespace!, "pod", t.pod!];
    const put = (name: string, labels: Labels, value: number): void => {
      out.push({ labels: ["__name__", name, ...podLabels, ...labels], samples: [{ value, timestampMs: ts }] });
    };
    for (const adapter of adapters) {
      const labels: Labels = ["model", adapter, "base_model", parents?.get(adapter) ?? onlyModel];
      put(C.MODEL_LORA_ADAPTER_INFO, labels, 1);
      if (!state) continue;
      put(C.MODEL_LORA_ADAPTER_RUNNING, labels, running.has(adapter) ? 1 : 0);
      put(C.MODEL_LORA_ADAPTER_WAITING, labels, waiting.has(adapter) ? 1 : 0);
    }
    if (state?.maxLora !== undefined) put(C.MODEL_LORA_MAX_ADAPTERS, ["model", onlyModel], state.maxLora);
  }
}
