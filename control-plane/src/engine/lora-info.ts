// vLLM's LoRA gauge: `vllm:lora_requests_info{max_lora, running_lora_adapters, waiting_lora_adapters}`
// set to the current time on every scheduler update, the adapters with running (waiting) requests
// joined by "," (vllm-project/vllm 005a810 vllm/v1/metrics/loggers.py PrometheusStatLogger.record
// and __init__; docs/design/metrics.md "LoRA Metrics"). prometheus_client keeps every label
// combination it was ever given, so /metrics lists past states too: the newest is the one with the
// largest value (as the Gateway API inference extension's endpoint picker reads it). No per-adapter
// counts are exported, only which adapters have running and waiting requests.
import type { Labels, ParsedSample } from "../scrape/sample.js";

/** The gauge's name on /metrics. */
export const LORA_INFO = "vllm:lora_requests_info";

/** Adapters per pod the join reports at most (a bound on the series an engine can make us write). */
export const MAX_ADAPTERS_PER_POD = 64;
/** Longest adapter name kept, bytes (UTF-16 units); longer names are dropped, not cut. */
export const MAX_ADAPTER_NAME_LENGTH = 256;

/** One engine's newest LoRA state. */
export interface LoraState {
  running: string[];
  waiting: string[];
  /** `--max-loras`: adapters one batch can hold. */
  maxLora?: number;
  /** Names dropped by the bounds above. */
  dropped: number;
}

const label = (labels: Labels, name: string): string | undefined => {
  for (let i = 0; i < labels.length; i += 2) if (labels[i] === name) return labels[i + 1];
  return undefined;
};

/** Splits a comma-joined adapter list, within the bounds; `seen` dedupes across both lists. */
function namesOf(list: string | undefined, seen: Set<string>, state: LoraState): string[] {
  const out: string[] = [];
  for (const raw of (list ?? "").split(",")) {
    const name = raw.trim();
    if (name === "") continue;
    if (name.length > MAX_ADAPTER_NAME_LENGTH || (!seen.has(name) && seen.size >= MAX_ADAPTERS_PER_POD)) {
      state.dropped++;
      continue;
    }
    seen.add(name);
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

/** The newest `vllm:lora_requests_info` series of one scrape, or undefined without one. */
export function loraStateOf(samples: readonly ParsedSample[]): LoraState | undefined {
  let newest: ParsedSample | undefined;
  for (const s of samples) if (s.name === LORA_INFO && !Number.isNaN(s.value) && (!newest || s.value > newest.value)) newest = s;
  if (!newest) return undefined;
  const state: LoraState = { running: [], waiting: [], dropped: 0 };
  const seen = new Set<string>();
  state.running = namesOf(label(newest.labels, "running_lora_adapters"), seen, state);
  state.waiting = namesOf(label(newest.labels, "waiting_lora_adapters"), seen, state);
  const max = Number(label(newest.labels, "max_lora"));
  if (Number.isInteger(max) && max >= 0) state.maxLora = max;
  return state;
}
