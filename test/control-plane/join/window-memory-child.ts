// Run by window-memory.test.ts as `node --expose-gc`: `pods` pods' windows (the join's PodWindows, as
// its route attribution keeps a sidecar's and its engine signals a vLLM server's) fed every
// `intervalMs` for a full window of scrapes parsed from text, each with `routes` routes (sidecar) and
// `models` models of `buckets` buckets, model names padded by `pad` characters. Prints, as JSON, what
// the heap and the array buffers grew by per window series beside the windows' estimate (their
// budget's tally) per series.
import { keepSidecarInfo, sidecarEntries } from "../../../control-plane/src/engine/attribution.js";
import { engineEntries, keepEngineInfo } from "../../../control-plane/src/engine/signals.js";
import { NamePool } from "../../../control-plane/src/scrape/name-pool.js";
import { PodWindows, WindowBudget } from "../../../control-plane/src/join/derivations/derivation.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { heldBytes } from "../heap.js";

const [kind, pods, routes, models, buckets, intervalMs, pad] = process.argv.slice(2).map((a, i) => (i === 0 ? a : Number(a))) as ["envoy" | "vllm", number, number, number, number, number, number];
const rateWindowMs = 300_000;
const bounds = [...Array.from({ length: buckets - 1 }, (_, i) => String(5 * (i + 1))), "+Inf"];
const model = (m: number): string => `meta-llama/Llama-3.1-8B-Instruct-${m}${"x".repeat(pad)}`;

function text(k: number): string {
  const lines: string[] = [];
  for (let m = 0; m < models; m++) {
    if (kind === "envoy") {
      for (let r = 0; r < routes; r++) for (const h of ["ttft", "decode"]) bounds.forEach((le, i) => lines.push(`tokentrace_llm_${h}_ms_bucket{route="route-${r}",model="${model(m)}",le="${le}"} ${k * (i + 1)}`));
      continue;
    }
    const labels = `engine="0",model_name="${model(m)}"`;
    for (const h of ["request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds", "inter_token_latency_seconds", "request_time_per_output_token_seconds"]) bounds.forEach((le, i) => lines.push(`vllm:${h}_bucket{${labels},le="${le}"} ${k * (i + 1)}`));
    for (const g of ["num_requests_waiting", "num_requests_running", "kv_cache_usage_perc", "prefix_cache_queries_total", "prefix_cache_hits_total", "num_preemptions_total"]) lines.push(`vllm:${g}{${labels}} ${k}`);
  }
  return `${lines.join("\n")}\n`;
}

const budget = new WindowBudget();
// What each series keeps of its info, as the join's derivations keep it.
const keep = kind === "envoy" ? keepSidecarInfo(new NamePool()) : keepEngineInfo(new NamePool());
const windows = new PodWindows<unknown>(rateWindowMs, budget, keep as (info: unknown) => unknown);
function scrape(pod: number, k: number): void {
  const id = `${kind}|http://10.1.${pod % 250}.${pod % 100}:${kind === "envoy" ? 15020 : 8000}/metrics|llm-serving/chat-7d9f8b6c5-${pod}`;
  const samples = parseText(text(k)).samples;
  windows.observe(`llm-serving/chat-7d9f8b6c5-${pod}`, id, 1_800_000_000_000 + k * intervalMs, kind === "envoy" ? sidecarEntries(id, samples) : engineEntries(id, samples));
}

// A warm-up pod first (compiled code); then every pod's window fills and turns over once.
for (let k = 0; k < 40; k++) scrape(1_000_000, k);
const estimatedBefore = budget.bytes;
const before = heldBytes();
const scrapes = Math.ceil(rateWindowMs / intervalMs) + 10;
for (let k = 0; k < scrapes; k++) for (let p = 0; p < pods; p++) scrape(p, k);
const after = heldBytes();
let series = 0;
for (let p = 0; p < pods; p++) series += windows.get(`llm-serving/chat-7d9f8b6c5-${p}`)!.size;
const points = windows.get("llm-serving/chat-7d9f8b6c5-0")!.all()[0]!.count;
process.stdout.write(JSON.stringify({ series, points, measuredPerSeries: (after - before) / series, estimatedPerSeries: (budget.bytes - estimatedBefore) / series }));
