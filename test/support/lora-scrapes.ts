// LoRA traffic for the per-adapter rules and panel tests: two pods serving
// meta-llama/Llama-3.1-8B-Instruct with the adapters of test/fixtures/pipeline/vllm-lora-models.json
// (all four extend it), their sidecars' filter series carrying `model` = the adapter (sql-lora on
// both pods, chat-de on one) or the base model itself, TTFT and duration split into length classes.
// Every target is scraped every 64 s from 0 to 640 s and counters start at ten steps' worth, so at
// 640 s a 5 min rate holds 256 s of samples, extrapolates 44 s to the window's start, and is the
// per-step increase / 64 exactly; the expected P99s follow Prometheus's own arithmetic.
import { readFileSync } from "node:fs";
import { parseModelList } from "../../control-plane/src/engine/model-list.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import type { Scrape } from "./promtool-case.js";

export const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
export const STEP_SEC = 64;
export const EVAL_SEC = 640;
const BOUNDS = [100, 250, 500, 1000, 2500, Infinity];

/** One (pod, model)'s filter series per 64 s step: requests by status class, tokens, cumulative bucket counts per length class. */
interface Traffic {
  pod: string;
  model: string;
  requests: Record<string, number>;
  inputTokens: number;
  outputTokens: number;
  ttft: Record<string, number[]>;
  duration: Record<string, number[]>;
}

export const TRAFFIC: Traffic[] = [
  // The base model's own requests: no adapter, so no per-adapter series.
  { pod: "lora-0", model: LLAMA, requests: { "2xx": 64 }, inputTokens: 6400, outputTokens: 3200, ttft: { le512: [64, 64, 64, 64, 64, 64] }, duration: { le64: [0, 64, 64, 64, 64, 64] } },
  { pod: "lora-0", model: "sql-lora", requests: { "2xx": 96, "5xx": 32 }, inputTokens: 128 * 256, outputTokens: 128 * 32, ttft: { le512: [64, 96, 96, 96, 96, 96], gt8192: [0, 0, 0, 16, 32, 32] }, duration: { le64: [0, 32, 96, 96, 96, 96], gt1024: [0, 0, 0, 0, 32, 32] } },
  { pod: "lora-0", model: "chat-de", requests: { "2xx": 64 }, inputTokens: 64 * 512, outputTokens: 64 * 64, ttft: { le512: [32, 48, 64, 64, 64, 64] }, duration: { le64: [0, 0, 32, 64, 64, 64] } },
  { pod: "lora-1", model: "sql-lora", requests: { "2xx": 64 }, inputTokens: 64 * 256, outputTokens: 64 * 32, ttft: { le512: [0, 32, 64, 64, 64, 64] }, duration: { gt1024: [0, 0, 0, 32, 64, 64] } },
];

/** The sidecar exposition of `pod` after `k` steps (counters start at ten steps' worth). */
export function sidecarText(pod: string, k: number): string {
  const n = k + 10;
  const lines: string[] = [];
  const mine = TRAFFIC.filter((t) => t.pod === pod);
  lines.push("# TYPE tokentrace_llm_requests_total counter");
  for (const t of mine) for (const [cls, per] of Object.entries(t.requests)) lines.push(`tokentrace_llm_requests_total{route="chat",model="${t.model}",status_class="${cls}"} ${n * per}`);
  lines.push("# TYPE tokentrace_llm_input_tokens_total counter");
  for (const t of mine) lines.push(`tokentrace_llm_input_tokens_total{route="chat",model="${t.model}"} ${n * t.inputTokens}`);
  lines.push("# TYPE tokentrace_llm_output_tokens_total counter");
  for (const t of mine) lines.push(`tokentrace_llm_output_tokens_total{route="chat",model="${t.model}"} ${n * t.outputTokens}`);
  for (const [name, key, tag] of [["tokentrace_llm_ttft_ms", "ttft", "input_length"], ["tokentrace_llm_duration_ms", "duration", "output_length"]] as const) {
    lines.push(`# TYPE ${name} histogram`);
    for (const t of mine) {
      for (const [cls, cum] of Object.entries(t[key])) {
        const base = `route="chat",model="${t.model}",${tag}="${cls}"`;
        BOUNDS.forEach((le, i) => lines.push(`${name}_bucket{${base},le="${le === Infinity ? "+Inf" : le}"} ${n * cum[i]!}`));
        lines.push(`${name}_sum{${base}} ${n * cum.at(-1)! * 100}`, `${name}_count{${base}} ${n * cum.at(-1)!}`);
      }
    }
  }
  return lines.join("\n") + "\n";
}

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/pipeline/${name}`, import.meta.url), "utf8");

const target = (kind: ScrapeTarget["kind"], pod: string, port: number): ScrapeTarget => ({
  id: `${kind}|http://${pod}:${port}/m`, kind, url: `http://${pod}:${port}/m`, intervalMs: STEP_SEC * 1000, timeoutMs: 5000, namespace: "llm", pod, node: "gpu-node-a",
});

/** Both pods' vLLM and sidecar scrapes, and the adapters' parents as the model list gives them. */
export function loraScrapes(): { scrapes: Scrape[]; adapterParents: (targetId: string) => ReadonlyMap<string, string> | undefined } {
  const list = parseModelList(fixture("vllm-lora-models.json"));
  if (!list.ok) throw new Error("vllm-lora-models.json does not parse");
  const scrapes: Scrape[] = [];
  for (let k = 0; k * STEP_SEC <= EVAL_SEC; k++) {
    for (const pod of ["lora-0", "lora-1"]) {
      scrapes.push({ atSec: k * STEP_SEC, target: target("vllm", pod, 8000), text: fixture("vllm-lora.prom") });
      scrapes.push({ atSec: k * STEP_SEC, target: target("envoy", pod, 15090), text: sidecarText(pod, k) });
    }
  }
  return { scrapes, adapterParents: (id) => (id.startsWith("vllm|") ? list.parents : undefined) };
}

/** Prometheus's histogram_quantile over cumulative bucket rates (promql/quantile.go bucketQuantile, monotonic buckets). */
function bucketQuantile(q: number, cum: number[]): number {
  let rank = q * cum.at(-1)!;
  const b = cum.findIndex((c) => c >= rank);
  if (b === BOUNDS.length - 1) return BOUNDS[b - 1]!;
  let start = 0;
  let count = cum[b]!;
  if (b > 0) {
    start = BOUNDS[b - 1]!;
    count -= cum[b - 1]!;
    rank -= cum[b - 1]!;
  }
  return start + (BOUNDS[b]! - start) * (rank / count);
}

/** One adapter's figures: requests/s, input and output tokens/s, P99 TTFT and duration (ms). */
export interface AdapterFigures { requests: number; inputTokens: number; outputTokens: number; ttftP99: number; durationP99: number }

/** Per adapter (namespace llm, base model LLAMA), summed over pods, status and length classes. */
export function expectedPerAdapter(): Map<string, AdapterFigures> {
  const out = new Map<string, AdapterFigures>();
  for (const adapter of ["sql-lora", "chat-de"]) {
    const mine = TRAFFIC.filter((t) => t.model === adapter);
    const sum = (f: (t: Traffic) => number): number => mine.reduce((a, t) => a + f(t), 0);
    // Bucket rates are each series' per-step count / 64, added as Prometheus adds them.
    const buckets = (key: "ttft" | "duration"): number[] => BOUNDS.map((_, i) => mine.flatMap((t) => Object.values(t[key]).map((cum) => cum[i]! / STEP_SEC)).reduce((a, b) => a + b, 0));
    out.set(adapter, {
      requests: sum((t) => Object.values(t.requests).reduce((a, b) => a + b, 0)) / STEP_SEC,
      inputTokens: sum((t) => t.inputTokens) / STEP_SEC,
      outputTokens: sum((t) => t.outputTokens) / STEP_SEC,
      ttftP99: bucketQuantile(0.99, buckets("ttft")),
      durationP99: bucketQuantile(0.99, buckets("duration")),
    });
  }
  return out;
}
