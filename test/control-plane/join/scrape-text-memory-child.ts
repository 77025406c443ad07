// Run by scrape-text-memory.test.ts as `node --expose-gc`: the whole join (Joiner, no dcgm-exporter,
// pods settled at once) fed `scrapes` scrapes of `pods` pods' sidecar and vLLM server, each scrape's
// text carrying `fillerBytes` of comment. The text parser slices label values out of that text, and
// V8 holds a slice of 13 characters or more as a view of its whole parent: whatever the join keeps of
// a label value that is still a view keeps the scrape's text. Prints, as JSON, what the heap grew by
// per pod.
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { heldBytes } from "../heap.js";

const [pods, scrapes, fillerBytes] = process.argv.slice(2).map(Number) as [number, number, number];
const model = "meta-llama/Llama-3.1-8B-Instruct";
const bounds = ["5", "10", "25", "50", "100", "250", "500", "1000", "+Inf"];

function sidecarText(k: number): string {
  const lines = [`tokentrace_requests_total{route="chat-completions",status_class="2xx"} ${k * 10}`];
  for (const h of ["ttft", "decode", "duration"]) bounds.forEach((le, i) => lines.push(`tokentrace_llm_${h}_ms_bucket{route="chat-completions",model="${model}",le="${le}"} ${k * (i + 1)}`));
  return lines.join("\n");
}

function vllmText(k: number): string {
  const labels = `engine="0",model_name="${model}"`;
  const lines = ["request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds"].flatMap((h) => bounds.map((le, i) => `vllm:${h}_bucket{${labels},le="${le}"} ${k * (i + 1)}`));
  for (const g of ["num_requests_waiting", "num_requests_running", "kv_cache_usage_perc"]) lines.push(`vllm:${g}{${labels}} ${k % 4}`);
  return lines.join("\n");
}

function target(kind: "envoy" | "vllm", p: number): ScrapeTarget {
  const url = `http://10.1.0.${p}:${kind === "envoy" ? 15020 : 8000}/metrics`;
  return { id: `${kind}|${url}|llm/chat-7d9f8b6c5-${p}`, kind, url, intervalMs: 15_000, timeoutMs: 10_000, namespace: "llm", pod: `chat-7d9f8b6c5-${p}` };
}

function scrape(t: ScrapeTarget, text: string, ts: number): ScrapeResult {
  // A fresh string each scrape, as a body read from the network is.
  const parsed = parseText(`${text}\n# ${"x".repeat(fillerBytes)}\n`);
  return { target: t, timestampMs: ts, durationMs: 3, ok: true, samples: parsed.samples, families: parsed.families, parseErrors: parsed.errors };
}

const joiner = new Joiner({ identityWaitMs: 0 });
const feed = (p: number, k: number): void => {
  const ts = 1_800_000_000_000 + k * 15_000;
  joiner.join(scrape(target("vllm", p), vllmText(k), ts));
  joiner.join(scrape(target("envoy", p), sidecarText(k), ts));
};
// A warm-up pod first (compiled code, the join's first allocations).
for (let k = 0; k < scrapes; k++) feed(1000, k);
const before = heldBytes();
for (let k = 0; k < scrapes; k++) for (let p = 0; p < pods; p++) feed(p, k);
process.stdout.write(JSON.stringify({ perUnit: (heldBytes() - before) / pods }));
