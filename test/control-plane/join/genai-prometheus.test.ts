// The GenAI histograms the join writes, in a real Prometheus (Debian's, as a remote-write receiver):
// the query a dashboard built for the OpenTelemetry GenAI conventions runs answers from them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import { encodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { snappyCompress } from "../../../control-plane/src/remote-write/snappy.js";
import { HttpTransport } from "../../../control-plane/src/remote-write/transport.js";
import { normalizeLabels, type WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { PrometheusInstance } from "../../support/prometheus.js";

const CHAT: ScrapeTarget = { id: "envoy|http://10.0.0.5:15090/stats/prometheus|llm/chat-7d9f-abcde", kind: "envoy", url: "http://10.0.0.5:15090/stats/prometheus", intervalMs: 60000, timeoutMs: 5000, namespace: "llm", pod: "chat-7d9f-abcde" };
// And a model whose calls fell in length classes (prompts 4 x le512, 6 x le2048; answers 7 x le64, 3 x gt1024, 2 without usage): the token usage.
const classed = `
tokentrace_llm_prompts_total{route="chat",model="qwen",input_length="le512"} 4
tokentrace_llm_prompts_total{route="chat",model="qwen",input_length="le2048"} 6
tokentrace_llm_input_tokens_total{route="chat",model="qwen"} 9000
tokentrace_llm_output_tokens_total{route="chat",model="qwen"} 4000
tokentrace_llm_duration_ms_count{route="chat",model="qwen",output_length="le64"} 7
tokentrace_llm_duration_ms_count{route="chat",model="qwen",output_length="gt1024"} 3
tokentrace_llm_duration_ms_count{route="chat",model="qwen",output_length="unknown"} 2
`;
const text = readFileSync(new URL("../../fixtures/pipeline/envoy-sidecar-genai.prom", import.meta.url), "utf8") + classed;
// The same sidecar just started: every count and sum 0.
const zeroed = text.split("\n").map((l) => (l.startsWith("#") || l === "" ? l : l.replace(/ [^ ]+$/, " 0"))).join("\n");

let prom: PrometheusInstance;
// Whole seconds, a few minutes back: inside the TSDB head's accepted window.
const baseMs = Math.floor(Date.now() / 1000) * 1000 - 5 * 60_000;
const atSec = (baseMs + 60_000) / 1000;

before(async () => {
  prom = await PrometheusInstance.start();
  const j = new Joiner();
  const series: WriteSeries[] = [];
  for (const [body, ts] of [[zeroed, baseMs], [text, baseMs + 60_000]] as const) {
    const p = parseText(body);
    series.push(...j.join({ target: CHAT, timestampMs: ts, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }));
  }
  // One series per label set, its two samples in time order.
  const byKey = new Map<string, WriteSeries>();
  for (const s of series) {
    const labels = normalizeLabels(s.labels);
    assert.ok(typeof labels !== "string", String(labels));
    const key = labels.join("\xff");
    const had = byKey.get(key);
    if (had) had.samples.push(...s.samples);
    else byKey.set(key, { labels, samples: [...s.samples] });
  }
  const sent = await new HttpTransport({ url: prom.writeUrl, headers: {}, timeoutMs: 10_000 }).send(snappyCompress(encodeWriteRequestV1([...byKey.values()])), "1.0");
  assert.equal(sent.kind, "success", JSON.stringify(sent));
});
after(async () => {
  await prom.destroy();
});

const values = async (q: string): Promise<Map<string, number>> =>
  new Map((await prom.query(q, atSec)).map((r) => [r.metric.gen_ai_request_model ?? "", Number(r.value![1])]));

describe("GenAI histograms in a real Prometheus", () => {
  it("answers histogram_quantile(0.99) of gen_ai_client_operation_duration_seconds by model, in seconds", async () => {
    const p99 = await values("histogram_quantile(0.99, sum by (le, gen_ai_request_model) (rate(gen_ai_client_operation_duration_seconds_bucket[90s])))");
    assert.deepEqual([...p99.keys()].sort(), ["llama-3-8b", "mistral-7b"]);
    // llama: the 198th of 200 calls is the last of the (10.24, 20.48] bucket's; mistral: the 3.96th of
    // 4 lies in (2.56, 5.12], which holds one call.
    assert.ok(Math.abs(p99.get("llama-3-8b")! - 20.48) < 1e-9, String(p99.get("llama-3-8b")));
    assert.ok(Math.abs(p99.get("mistral-7b")! - (2.56 + 2.56 * 0.96)) < 1e-9, String(p99.get("mistral-7b")));
  });

  it("answers the TTFT median and the mean TPOT from _sum / _count", async () => {
    const p50 = await values("histogram_quantile(0.5, sum by (le, gen_ai_request_model) (rate(gen_ai_server_time_to_first_token_seconds_bucket[90s])))");
    // The 75th of 150 in (0.25, 0.5], which holds calls 61 to 110.
    assert.ok(Math.abs(p50.get("llama-3-8b")! - (0.25 + 0.25 * 15 / 50)) < 1e-9, String(p50.get("llama-3-8b")));
    const mean = await values("sum by (gen_ai_request_model) (rate(gen_ai_server_time_per_output_token_seconds_sum[90s])) / sum by (gen_ai_request_model) (rate(gen_ai_server_time_per_output_token_seconds_count[90s]))");
    assert.ok(Math.abs(mean.get("llama-3-8b")! - 4.125 / 150) < 1e-12, String(mean.get("llama-3-8b")));
  });

  it("answers the median input tokens per call and the tokens per second by type from gen_ai_client_token_usage", async () => {
    // The 5th of 10 prompts is the first of the (512, 2048] class's 6.
    const p50 = await values('histogram_quantile(0.5, sum by (le, gen_ai_request_model) (rate(gen_ai_client_token_usage_bucket{gen_ai_token_type="input"}[90s])))');
    assert.ok(Math.abs(p50.get("qwen")! - (512 + 1536 / 6)) < 1e-9, String(p50.get("qwen")));
    const perType = new Map((await prom.query("sum by (gen_ai_token_type) (rate(gen_ai_client_token_usage_sum[90s]))", atSec)).map((r) => [r.metric.gen_ai_token_type, Number(r.value![1])]));
    // Both rates over the same two scrapes: their ratio is the tokens'.
    assert.deepEqual([...perType.keys()].sort(), ["input", "output"]);
    assert.ok(Math.abs(perType.get("input")! / perType.get("output")! - 9000 / 4000) < 1e-9, JSON.stringify([...perType]));
    const calls = await values('sum by (gen_ai_request_model) (rate(gen_ai_client_token_usage_count{gen_ai_token_type="output"}[90s])) / sum by (gen_ai_request_model) (rate(gen_ai_client_token_usage_count{gen_ai_token_type="input"}[90s]))');
    assert.equal(calls.get("qwen"), 1, "the calls without usage are in neither count");
  });
});
