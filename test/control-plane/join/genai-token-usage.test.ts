// gen_ai_client_token_usage (issue #26 item 7): the OpenTelemetry GenAI token-usage histogram, made by
// the join from the filter's calls per length class and its token counters, with no histogram of
// its own in the filter (derivations/genai-token-usage.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

const CHAT: ScrapeTarget = { id: "envoy|http://10.0.0.5:15090/stats/prometheus|llm/chat-7d9f-abcde", kind: "envoy", url: "http://10.0.0.5:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "chat-7d9f-abcde", node: "gpu-node-a" };
const T0 = 1_800_000_000_000;

/** What a sidecar exports after 10 calls with usage (4 short prompts, 5 of 513-2048 tokens, 1 past 8192; 3/6/1 answers per output class) and 2 without. */
const SIDECAR = `# TYPE tokentrace_llm_prompts_total counter
tokentrace_llm_prompts_total{route="chat",model="llama",input_length="le512"} 4
tokentrace_llm_prompts_total{route="chat",model="llama",input_length="le2048"} 5
tokentrace_llm_prompts_total{route="chat",model="llama",input_length="gt8192"} 1
# TYPE tokentrace_llm_input_tokens_total counter
tokentrace_llm_input_tokens_total{route="chat",model="llama"} 16000
# TYPE tokentrace_llm_output_tokens_total counter
tokentrace_llm_output_tokens_total{route="chat",model="llama"} 1900
# TYPE tokentrace_llm_duration_ms histogram
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="le64",le="1000"} 3
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="le64",le="+Inf"} 3
tokentrace_llm_duration_ms_sum{route="chat",model="llama",output_length="le64"} 900
tokentrace_llm_duration_ms_count{route="chat",model="llama",output_length="le64"} 3
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="le256",le="1000"} 0
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="le256",le="+Inf"} 6
tokentrace_llm_duration_ms_sum{route="chat",model="llama",output_length="le256"} 18000
tokentrace_llm_duration_ms_count{route="chat",model="llama",output_length="le256"} 6
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="gt1024",le="1000"} 0
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="gt1024",le="+Inf"} 1
tokentrace_llm_duration_ms_sum{route="chat",model="llama",output_length="gt1024"} 40000
tokentrace_llm_duration_ms_count{route="chat",model="llama",output_length="gt1024"} 1
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="unknown",le="1000"} 2
tokentrace_llm_duration_ms_bucket{route="chat",model="llama",output_length="unknown",le="+Inf"} 2
tokentrace_llm_duration_ms_sum{route="chat",model="llama",output_length="unknown"} 20
tokentrace_llm_duration_ms_count{route="chat",model="llama",output_length="unknown"} 2
`;

function joined(text: string, genai?: false): WriteSeries[] {
  const p = parseText(text);
  return new Joiner(genai === false ? { genai } : {}).join({ target: CHAT, timestampMs: T0, durationMs: 12, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors });
}

const labelsOf = (s: WriteSeries): Record<string, string> => Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!]));

/** The token-usage series of one token type as [part, le, value]. */
function usage(out: WriteSeries[], type: string): [string, string, number][] {
  return out
    .filter((s) => labelsOf(s).__name__!.startsWith("gen_ai_client_token_usage_") && labelsOf(s).gen_ai_token_type === type)
    .map((s) => [labelsOf(s).__name__!.slice("gen_ai_client_token_usage_".length), labelsOf(s).le ?? "", s.samples[0]!.value]);
}

describe("join: gen_ai_client_token_usage from the filter's length classes and token counters", () => {
  const out = joined(SIDECAR);

  it("input: a cumulative bucket per le class, gt classes in +Inf only, the token counter as _sum", () => {
    assert.deepEqual(usage(out, "input"), [["bucket", "512", 4], ["bucket", "2048", 9], ["bucket", "+Inf", 10], ["sum", "", 16000], ["count", "", 10]]);
  });

  it("output: the duration histogram's _count per output class, `unknown` (no usage reported) left out", () => {
    assert.deepEqual(usage(out, "output"), [["bucket", "64", 3], ["bucket", "256", 9], ["bucket", "+Inf", 10], ["sum", "", 1900], ["count", "", 10]]);
  });

  it("labelled as the conventions' other GenAI histograms, with gen_ai_token_type", () => {
    const s = out.find((x) => labelsOf(x).__name__ === "gen_ai_client_token_usage_count" && labelsOf(x).gen_ai_token_type === "input")!;
    assert.deepEqual(labelsOf(s), {
      route: "chat", gen_ai_request_model: "llama", namespace: "llm", pod: "chat-7d9f-abcde", gen_ai_operation_name: "chat", gen_ai_provider_name: "vllm",
      gen_ai_token_type: "input", __name__: "gen_ai_client_token_usage_count",
    });
    assert.deepEqual(s.samples, [{ value: 10, timestampMs: T0 }]);
  });

  it("no classes (llm.lengthClasses off, or only `unknown`): no histogram, since the token sum alone says nothing of the counts", () => {
    const text = `tokentrace_llm_input_tokens_total{route="chat",model="llama"} 16000
tokentrace_llm_duration_ms_count{route="chat",model="llama"} 10
tokentrace_llm_duration_ms_count{route="chat",model="llama",output_length="unknown"} 2
tokentrace_llm_prompts_total{route="chat",model="llama",input_length="le512x"} 3
`;
    assert.deepEqual(joined(text).filter((s) => labelsOf(s).__name__!.startsWith("gen_ai_client_token_usage")), []);
  });

  it("classes of two pods' configurations add at their own bounds and stay cumulative; past 16 bounds a class is dropped", () => {
    const lines = [`tokentrace_llm_prompts_total{route="chat",model="m",input_length="le100"} 1`, `tokentrace_llm_prompts_total{route="chat",model="m",input_length="le512"} 2`, `tokentrace_llm_prompts_total{route="chat",model="m",input_length="le1000"} 4`];
    for (let b = 1; b <= 20; b++) lines.push(`tokentrace_llm_prompts_total{route="chat",model="m",input_length="le${100_000 + b}"} 1`);
    const rows = usage(joined(lines.join("\n") + "\n"), "input");
    const buckets = rows.filter(([part]) => part === "bucket");
    assert.deepEqual(buckets.slice(0, 3), [["bucket", "100", 1], ["bucket", "512", 3], ["bucket", "1000", 7]]);
    assert.equal(buckets.length, 16 + 1, "16 bounds and +Inf");
    assert.ok(buckets.every(([, , v], i) => i === 0 || v >= buckets[i - 1]![2]), "cumulative");
    assert.deepEqual(rows.at(-1), ["count", "", 7 + 13]);
  });

  it("none with genai: false", () => {
    assert.equal(joined(SIDECAR, false).filter((s) => labelsOf(s).__name__!.startsWith("gen_ai_")).length, 0);
  });
});
