import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner, type JoinerOptions } from "../../../control-plane/src/join/joiner.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");

const CHAT: ScrapeTarget = { id: "envoy|http://10.0.0.5:15090/stats/prometheus|llm/chat-7d9f-abcde", kind: "envoy", url: "http://10.0.0.5:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "chat-7d9f-abcde", node: "gpu-node-a" };
const T0 = 1_800_000_000_000;

function result(target: ScrapeTarget, text: string, ts: number): ScrapeResult {
  const p = parseText(text);
  return { target, timestampMs: ts, durationMs: 12, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}

const labelsOf = (s: WriteSeries): Record<string, string> => Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!]));

function joined(text: string, options: JoinerOptions = {}): WriteSeries[] {
  return new Joiner(options).join(result(CHAT, text, T0));
}

/** The GenAI series of one model as [name without the family, le, value] rows, in emission order. */
function rows(out: WriteSeries[], family: string, model: string): [string, string, number][] {
  return out
    .filter((s) => labelsOf(s).__name__!.startsWith(family + "_") && labelsOf(s).gen_ai_request_model === model)
    .map((s) => [labelsOf(s).__name__!.slice(family.length + 1), labelsOf(s).le ?? "", s.samples[0]!.value]);
}

const buckets = (pairs: [string, number][], sum: number, count: number): [string, string, number][] => [...pairs.map(([le, v]): [string, string, number] => ["bucket", le, v]), ["sum", "", sum], ["count", "", count]];

/**
 * The exposition with each TTFT line split into three input_length classes and each decode and
 * duration line into three output_length classes: class i holds floor((v + i) / 3) of a value v,
 * so every class stays cumulative and monotone and the three add up to v.
 */
function splitIntoClasses(text: string): string {
  const tagOf = (name: string): string | undefined => (name.startsWith("tokentrace_llm_ttft_ms_") ? "input_length" : /^tokentrace_llm_(decode|duration)_ms_/.test(name) ? "output_length" : undefined);
  return text.split("\n").flatMap((line) => {
    const m = /^(\w+)\{(.*)\} (\d+)$/.exec(line);
    const tag = m && tagOf(m[1]!);
    if (!m || tag === undefined) return [line];
    const [, name, labels, value] = m as unknown as [string, string, string, string];
    // Before `le`, where Envoy puts an extracted tag.
    const at = labels.indexOf(",le=");
    return ["le512", "le2048", "unknown"].map((cls, i) => {
      const classed = at < 0 ? `${labels},${tag}="${cls}"` : `${labels.slice(0, at)},${tag}="${cls}"${labels.slice(at)}`;
      return `${name}{${classed}} ${Math.floor((Number(value) + i) / 3)}`;
    });
  }).join("\n");
}

describe("join: OpenTelemetry GenAI histograms from the filter's", () => {
  const out = joined(fixture("envoy-sidecar-genai.prom"));

  it("gen_ai_client_operation_duration_seconds has the conventions' 14 boundaries, each the filter's bucket at that bound in ms, and the sum in seconds", () => {
    assert.deepEqual(rows(out, "gen_ai_client_operation_duration_seconds", "llama-3-8b"), buckets([
      ["0.01", 0], ["0.02", 0], ["0.04", 1], ["0.08", 2], ["0.16", 3], ["0.32", 6], ["0.64", 14], ["1.28", 40], ["2.56", 92], ["5.12", 152],
      ["10.24", 191], ["20.48", 198], ["40.96", 199], ["81.92", 200], ["+Inf", 200],
    ], 900, 200));
    // Four non-streamed calls of 90, 300, 700 and 3000 ms on another route.
    assert.deepEqual(rows(out, "gen_ai_client_operation_duration_seconds", "mistral-7b"), buckets([
      ["0.01", 0], ["0.02", 0], ["0.04", 0], ["0.08", 0], ["0.16", 1], ["0.32", 2], ["0.64", 2], ["1.28", 3], ["2.56", 3], ["5.12", 4],
      ["10.24", 4], ["20.48", 4], ["40.96", 4], ["81.92", 4], ["+Inf", 4],
    ], 4.09, 4));
  });

  it("gen_ai_server_time_to_first_token_seconds has the 16 TTFT boundaries from tokentrace_llm_ttft_ms", () => {
    assert.deepEqual(rows(out, "gen_ai_server_time_to_first_token_seconds", "llama-3-8b"), buckets([
      ["0.001", 0], ["0.005", 0], ["0.01", 0], ["0.02", 2], ["0.04", 5], ["0.06", 9], ["0.08", 14], ["0.1", 20], ["0.25", 60], ["0.5", 110],
      ["0.75", 128], ["1", 135], ["2.5", 147], ["5", 149], ["7.5", 150], ["10", 150], ["+Inf", 150],
    ], 61.5, 150));
    assert.deepEqual(rows(out, "gen_ai_server_time_to_first_token_seconds", "mistral-7b"), [], "no streamed call, no TTFT");
  });

  it("gen_ai_server_time_per_output_token_seconds has the 13 TPOT boundaries from tokentrace_llm_tpot_us (µs)", () => {
    assert.deepEqual(rows(out, "gen_ai_server_time_per_output_token_seconds", "llama-3-8b"), buckets([
      ["0.01", 10], ["0.025", 90], ["0.05", 138], ["0.075", 145], ["0.1", 148], ["0.15", 149], ["0.2", 150], ["0.3", 150], ["0.4", 150],
      ["0.5", 150], ["0.75", 150], ["1", 150], ["2.5", 150], ["+Inf", 150],
    ], 4.125, 150));
  });

  it("labels each with the route, the pod, gen_ai_request_model and the operation and provider the conventions require; no token usage without length classes", () => {
    const s = out.find((x) => labelsOf(x).__name__ === "gen_ai_client_operation_duration_seconds_bucket" && labelsOf(x).le === "2.56")!;
    assert.deepEqual(labelsOf(s), {
      route: "chat", gen_ai_request_model: "llama-3-8b", namespace: "llm", pod: "chat-7d9f-abcde",
      gen_ai_operation_name: "chat", gen_ai_provider_name: "vllm", __name__: "gen_ai_client_operation_duration_seconds_bucket", le: "2.56",
    });
    assert.deepEqual(s.samples, [{ value: 92, timestampMs: T0 }]);
    assert.equal(labelsOf(out.find((x) => labelsOf(x).__name__ === "gen_ai_server_time_to_first_token_seconds_count")!).gen_ai_provider_name, "vllm");
    const names = new Set(out.map((x) => labelsOf(x).__name__!).filter((n) => n.startsWith("gen_ai_")));
    assert.deepEqual([...names].sort(), [
      "gen_ai_client_operation_duration_seconds_bucket", "gen_ai_client_operation_duration_seconds_count", "gen_ai_client_operation_duration_seconds_sum",
      "gen_ai_server_time_per_output_token_seconds_bucket", "gen_ai_server_time_per_output_token_seconds_count", "gen_ai_server_time_per_output_token_seconds_sum",
      "gen_ai_server_time_to_first_token_seconds_bucket", "gen_ai_server_time_to_first_token_seconds_count", "gen_ai_server_time_to_first_token_seconds_sum",
    ]);
    assert.equal(joined(fixture("envoy-sidecar-genai.prom"), { genai: { providerName: "openai" } }).filter((x) => labelsOf(x).gen_ai_provider_name === "openai").length, 15 + 2 + 15 + 2 + 17 + 2 + 14 + 2);
  });

  it("emits only the GenAI boundaries the mesh's buckets contain: never an interpolated one", () => {
    // envoy-sidecar-chat.prom: ttft le 50, 250; tpot le 25000; duration le 1000, 10000.
    const old = joined(fixture("envoy-sidecar-chat.prom"));
    assert.deepEqual(rows(old, "gen_ai_server_time_to_first_token_seconds", "llama-3-8b"), buckets([["0.25", 380], ["+Inf", 400]], 48, 400));
    assert.deepEqual(rows(old, "gen_ai_server_time_per_output_token_seconds", "llama-3-8b"), buckets([["0.025", 250], ["+Inf", 300]], 6, 300));
    assert.deepEqual(rows(old, "gen_ai_client_operation_duration_seconds", "llama-3-8b"), buckets([["+Inf", 400]], 800, 400));
  });

  it("sums the filter's length classes away: three input_length (TTFT) and output_length (duration) classes give the unsplit series, value for value", () => {
    // The token-usage histogram is made of the classes (genai-token-usage.test.ts); the unsplit fixture has none.
    const genAi = (x: WriteSeries[]): WriteSeries[] => x.filter((s) => labelsOf(s).__name__!.startsWith("gen_ai_") && !labelsOf(s).__name__!.startsWith("gen_ai_client_token_usage"));
    const split = joined(splitIntoClasses(fixture("envoy-sidecar-genai.prom")));
    assert.ok(split.some((s) => labelsOf(s).__name__ === "tokentrace_llm_ttft_ms_bucket" && labelsOf(s).input_length === "unknown"), "the fixture is split");
    assert.deepEqual(genAi(split), genAi(out));
  });

  it("leaves the tokentrace series as they were, and emits none with genai: false", () => {
    const off = joined(fixture("envoy-sidecar-genai.prom"), { genai: false });
    assert.equal(off.filter((x) => labelsOf(x).__name__!.startsWith("gen_ai_")).length, 0);
    assert.deepEqual(out.filter((x) => !labelsOf(x).__name__!.startsWith("gen_ai_")), off);
  });
});
