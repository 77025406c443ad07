// The LLM protocols the real filter.wasm reads (emulated Envoy host), each from fixtures written
// from the protocol's own schema or server source (test/fixtures/llm/README.md names the commits):
// the OpenAI Responses API, Anthropic Messages, TGI's generate / generate_stream and the KServe v2
// generate extension. Exact token counts, finish reasons, models, content chunks and TTFT; the
// same figures whatever the chunk boundaries; a shape the reader does not know is counted and
// never breaks traffic.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { countingRandom, llmSamples, loadFilter } from "../support.js";

const T0 = 1_700_000_000_000_000_000n;
const fixture = (path: string): string => readFileSync(new URL(`../../fixtures/llm/${path}`, import.meta.url), "utf8");

/** One protocol call: the path, request body, response headers and body, and the figures it must give. */
interface ProtocolCase {
  name: string;
  path: string;
  request: string;
  responseType: string;
  responseHeaders?: Array<[string, string]>;
  body: string;
  status?: number;
  /** The model label, stream label, finish_reason label. */
  model: string;
  stream: boolean;
  finishReason: string;
  input?: number;
  output?: number;
  /** Stream events with content (tokentrace_llm_stream_chunks_total). */
  chunks?: number;
  /** Byte offset in `body` of the first content event's end: TTFT is measured there. */
  firstContentAt?: number;
}

/** The offset just past the first SSE event in `body` whose text contains `marker`. */
const eventEnd = (body: string, marker: string): number => {
  const at = body.indexOf(marker);
  return body.indexOf("\n\n", at) + 2;
};

const responsesStream = fixture("responses/stream.sse");
const anthropicStream = fixture("anthropic/stream.sse");
const tgiStream = fixture("tgi/generate_stream.sse");
const tgiStreamNoDetails = fixture("tgi/generate_stream_no_details.sse");
const kserveStream = fixture("kserve/generate_stream.sse");

const CASES: ProtocolCase[] = [
  {
    name: "OpenAI Responses API, streamed (vLLM's event: / data: framing, type last)",
    path: "/v1/responses", request: fixture("responses/request.json"), responseType: "text/event-stream", body: responsesStream,
    model: "Qwen/Qwen3-8B", stream: true, finishReason: "stop", input: 31, output: 14,
    chunks: 3, firstContentAt: eventEnd(responsesStream, "\"delta\":\"HELLO\""),
  },
  {
    name: "OpenAI Responses API, whole response cut by max_output_tokens",
    path: "/v1/responses", request: fixture("responses/request.json").replace("\"stream\":true", "\"stream\":false"), responseType: "application/json",
    body: fixture("responses/response.json"), model: "Qwen/Qwen3-8B", stream: false, finishReason: "length", input: 31, output: 64,
  },
  {
    name: "Anthropic Messages, streamed (input = input_tokens + cache reads + cache writes, cumulative output)",
    path: "/v1/messages", request: fixture("anthropic/request.json"), responseType: "text/event-stream", body: anthropicStream,
    model: "claude-sonnet-4-5", stream: true, finishReason: "stop", input: 25 + 2000 + 100, output: 9,
    chunks: 3, firstContentAt: eventEnd(anthropicStream, "\"text\":\"The capital\""),
  },
  {
    // MessageDeltaUsage in the SDK at bfa9197 (messages.ts): input_tokens and the cache counts are
    // cumulative too (or null): a message_delta that repeats them must not add them twice.
    name: "Anthropic Messages, streamed, message_delta repeating the cumulative input counts",
    path: "/v1/messages", request: fixture("anthropic/request.json"), responseType: "text/event-stream",
    body: anthropicStream.replace("\"usage\":{\"output_tokens\":9}", "\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"output_tokens\":9,\"output_tokens_details\":null,\"server_tool_use\":null}"),
    model: "claude-sonnet-4-5", stream: true, finishReason: "stop", input: 25 + 2000 + 100, output: 9,
    chunks: 3, firstContentAt: eventEnd(anthropicStream, "\"text\":\"The capital\""),
  },
  {
    name: "Anthropic Messages, streamed, message_delta with null input counts",
    path: "/v1/messages", request: fixture("anthropic/request.json"), responseType: "text/event-stream",
    body: anthropicStream.replace("\"usage\":{\"output_tokens\":9}", "\"usage\":{\"input_tokens\":null,\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":null,\"output_tokens\":9}"),
    model: "claude-sonnet-4-5", stream: true, finishReason: "stop", input: 25 + 2000 + 100, output: 9,
    chunks: 3, firstContentAt: eventEnd(anthropicStream, "\"text\":\"The capital\""),
  },
  {
    name: "Anthropic Messages, whole message stopped by max_tokens",
    path: "/v1/messages", request: fixture("anthropic/request.json").replace("\"stream\":true", "\"stream\":false"), responseType: "application/json",
    body: fixture("anthropic/message.json"), model: "claude-sonnet-4-5", stream: false, finishReason: "length", input: 25, output: 9,
  },
  {
    name: "TGI generate_stream with details (input_length, generated_tokens; the special end token is no content)",
    path: "/generate_stream", request: fixture("tgi/request.json"), responseType: "text/event-stream", body: tgiStream,
    model: "unknown", stream: true, finishReason: "stop", input: 7, output: 3, chunks: 2, firstContentAt: eventEnd(tgiStream, "Hello"),
  },
  {
    name: "TGI generate_stream without details: one token per event",
    path: "/generate_stream", request: fixture("tgi/request.json").replace("\"details\":true", "\"details\":false"), responseType: "text/event-stream",
    body: tgiStreamNoDetails, model: "unknown", stream: true, finishReason: "none", output: 3, chunks: 2, firstContentAt: eventEnd(tgiStreamNoDetails, "Hello"),
  },
  {
    name: "TGI generate with details",
    path: "/generate", request: fixture("tgi/request.json"), responseType: "application/json", body: fixture("tgi/generate.json"),
    responseHeaders: [["x-prompt-tokens", "7"], ["x-generated-tokens", "20"]], model: "unknown", stream: false, finishReason: "length", input: 7, output: 20,
  },
  {
    name: "TGI generate without details: the counts from its x-prompt-tokens and x-generated-tokens headers",
    path: "/generate", request: fixture("tgi/request.json").replace("\"details\":true", "\"details\":false"), responseType: "application/json",
    body: fixture("tgi/generate_no_details.json"), responseHeaders: [["x-prompt-tokens", "7"], ["x-generated-tokens", "20"]],
    model: "unknown", stream: false, finishReason: "none", input: 7, output: 20,
  },
  {
    name: "KServe v2 generate_stream (Triton vLLM backend: num_output_tokens per event, summed; model from the path)",
    path: "/v2/models/llama-3-8b/generate_stream", request: fixture("kserve/request.json"), responseType: "text/event-stream; charset=utf-8", body: kserveStream,
    model: "llama-3-8b", stream: true, finishReason: "stop", input: 6, output: 7, chunks: 4, firstContentAt: eventEnd(kserveStream, "Machine"),
  },
  {
    name: "KServe v2 generate with a version in the path",
    path: "/v2/models/llama-3-8b/versions/1/generate", request: fixture("kserve/request.json").replace("\"stream\":true", "\"stream\":false"), responseType: "application/json",
    body: fixture("kserve/generate.json"), model: "llama-3-8b", stream: false, finishReason: "length", input: 6, output: 7,
  },
  {
    name: "KServe v2 generate, Open Inference Protocol shape (details.finish_reason, no counts)",
    path: "/v2/models/llama-3-8b/generate", request: JSON.stringify({ text_input: "What is machine learning?" }), responseType: "application/json",
    body: fixture("kserve/generate_oip.json"), model: "llama-3-8b", stream: false, finishReason: "stop",
  },
];

// Every VM of this suite: under Envoy's rules no host call fails, so none may count host_call_failed.
const suiteVms: FilterVm[] = [];
after(() => {
  const failing = suiteVms.filter((vm) => (vm.stats.value("tokentrace_filter_errors_total", { error: "host_call_failed" }) ?? 0) > 0);
  assert.equal(failing.length, 0, `${failing.length} VMs counted host_call_failed`);
});

async function setup(config: unknown = {}): Promise<{ vm: FilterVm; clock: ManualClock }> {
  const clock = new ManualClock(T0);
  const vm = await loadFilter({ clock, random: countingRandom(), config });
  suiteVms.push(vm);
  return { vm, clock };
}

/**
 * Drives one call: the request, 100 ms to the response headers, then the body in `parts`, 10 ms
 * apart. Asserts every callback continues and nothing is held back.
 */
function drive(vm: FilterVm, clock: ManualClock, c: ProtocolCase, parts: string[], route = "llm"): void {
  const s = vm.newStream({ routeName: route });
  assert.equal(s.requestHeaders([[":method", "POST"], [":path", c.path], [":authority", "llm.svc:8080"], ["content-type", "application/json"]], false), 0);
  assert.equal(s.requestBody(c.request, true), 0);
  clock.advanceMs(100);
  assert.equal(s.responseHeaders([[":status", String(c.status ?? 200)], ["content-type", c.responseType], ...(c.responseHeaders ?? [])], false), 0);
  parts.forEach((part, i) => {
    if (i > 0) clock.advanceMs(10);
    assert.equal(s.responseBody(part, i === parts.length - 1), 0);
    assert.equal(s.lastResponseChunk.toString(), part, "the body passes as it came");
  });
  s.end();
  assert.deepEqual(s.stops, []);
}

/** The figures of one (route, model): what every case asserts. */
function figures(vm: FilterVm, c: ProtocolCase, route = "llm"): Record<string, number | undefined> {
  const labels = { route, model: c.model };
  return {
    requests: vm.stats.value("tokentrace_llm_requests_total", { ...labels, stream: String(c.stream), finish_reason: c.finishReason, status_class: "2xx" }),
    input: vm.stats.value("tokentrace_llm_input_tokens_total", labels),
    output: vm.stats.value("tokentrace_llm_output_tokens_total", labels),
    chunks: vm.stats.value("tokentrace_llm_stream_chunks_total", labels),
    usageMissing: vm.stats.value("tokentrace_llm_usage_missing_total", labels),
  };
}

const errors = (vm: FilterVm): Record<string, number | undefined> =>
  Object.fromEntries(["sse_malformed", "body_not_json", "unknown_shape", "usage_invalid"].map((e) => [e, vm.stats.value("tokentrace_filter_errors_total", { error: e })]));

describe("LLM protocols (emulated Envoy host, fixtures from each protocol's schema)", () => {
  for (const c of CASES) {
    it(`${c.name}: model, tokens, finish reason, chunks and TTFT`, async () => {
      const { vm, clock } = await setup();
      const cut = c.firstContentAt ?? c.body.length;
      drive(vm, clock, c, cut < c.body.length ? [c.body.slice(0, cut), c.body.slice(cut)] : [c.body]);
      assert.deepEqual(figures(vm, c), {
        requests: 1,
        input: c.input ?? 0,
        output: c.output ?? 0,
        chunks: c.chunks ?? 0,
        usageMissing: c.input === undefined && c.output === undefined ? 1 : 0,
      });
      const labels = { route: "llm", model: c.model };
      // TTFT: streams only, at the first event with content (the first part ends with it, 100 ms in).
      assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", labels), c.firstContentAt !== undefined ? [100] : []);
      assert.deepEqual(llmSamples(vm, "tokentrace_llm_duration_ms", labels), [c.firstContentAt !== undefined && cut < c.body.length ? 110 : 100]);
      assert.deepEqual(errors(vm), { sse_malformed: 0, body_not_json: 0, unknown_shape: 0, usage_invalid: 0 });
    });
  }

  for (const c of CASES) {
    it(`${c.name}: the same figures whatever the chunk boundaries, down to single bytes`, async () => {
      const { vm, clock } = await setup();
      let runs = 0;
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1, max: c.body.length - 1 }), { maxLength: 30 }), (cuts) => {
          const points = [...new Set(cuts)].sort((a, b) => a - b);
          drive(vm, clock, c, [0, ...points].map((p, i) => c.body.slice(p, points[i] ?? c.body.length)));
          runs++;
        }),
        { numRuns: 60, seed: 17 },
      );
      drive(vm, clock, c, [...c.body]); // one byte a chunk
      runs++;
      const f = figures(vm, c);
      assert.deepEqual(f, {
        requests: runs,
        input: (c.input ?? 0) * runs,
        output: (c.output ?? 0) * runs,
        chunks: (c.chunks ?? 0) * runs,
        usageMissing: c.input === undefined && c.output === undefined ? runs : 0,
      });
      assert.deepEqual(errors(vm), { sse_malformed: 0, body_not_json: 0, unknown_shape: 0, usage_invalid: 0 });
    });
  }
});

describe("LLM protocols: paths and shapes (emulated Envoy host)", () => {
  const generic: ProtocolCase = { ...CASES[0]!, body: "{}" };

  it("a body of a shape its protocol does not know is counted as unknown_shape and passes untouched", async () => {
    const { vm, clock } = await setup();
    const shapes: Array<[string, string, string]> = [
      ["/v1/messages", "application/json", JSON.stringify({ answer: "42", tokens: 3 })],
      ["/generate", "application/json", JSON.stringify([{ generated_text: "compat route answers an array" }])],
      ["/v2/models/m/generate_stream", "text/event-stream", "data: {\"outputs\":[1,2,3]}\n\n"],
      ["/v1/responses", "text/event-stream", "event: x\ndata: {\"foo\":{\"bar\":1}}\n\n"],
    ];
    for (const [path, type, body] of shapes) drive(vm, clock, { ...generic, path, responseType: type, request: "{}", body }, [body]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "unknown_shape" }), 4);
    // An error answer has its own shape: not counted.
    drive(vm, clock, { ...generic, path: "/v1/messages", request: "{}", responseType: "application/json", status: 429, body: "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}" }, ["{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}"]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "unknown_shape" }), 4);
    const requests = (model: string, stream: string): number | undefined =>
      vm.stats.value("tokentrace_llm_requests_total", { route: "llm", model, stream, finish_reason: "none", status_class: "2xx" });
    // Every call is still counted (the KServe one under the model its path names), the 429 under its status.
    assert.deepEqual([requests("unknown", "false"), requests("unknown", "true"), requests("m", "true")], [2, 1, 1]);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "llm", model: "unknown", stream: "false", finish_reason: "none", status_class: "4xx", error_type: "429" }), 1);
  });

  it("matches each protocol by its own paths: KServe needs its prefix, the query is ignored, first match wins", async () => {
    const { vm, clock } = await setup();
    const tgi = CASES.find((c) => c.path === "/generate" && c.input === 7)!;
    const kserve = CASES.find((c) => c.path.endsWith("/versions/1/generate"))!;
    // A TGI body on a KServe path would be an unknown shape: so the path decides.
    drive(vm, clock, { ...kserve, path: "/v2/models/llama-3-8b/generate?x=1" }, [kserve.body]);
    drive(vm, clock, { ...tgi, path: "/api/tgi/generate?stream=false" }, [tgi.body]);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "llm", model: "llama-3-8b" }), 7);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "llm", model: "unknown" }), 20);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "unknown_shape" }), 0);
    // Not LLM calls: a GET of a stored response, an info route, a path with the suffix in the middle.
    for (const path of ["/v1/responses/resp_1", "/info", "/v1/messages/batches", "/generate/x"]) {
      const s = vm.newStream({ routeName: "other" });
      s.requestHeaders([[":method", "GET"], [":path", path]], true);
      s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
      s.responseBody("{\"usage\":{\"input_tokens\":5}}", true);
      s.end();
    }
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "other", model: "unknown", stream: "false", finish_reason: "none", status_class: "2xx" }), undefined);
  });

  it("per-protocol paths from the configuration replace that protocol's defaults only; an empty list turns one off", async () => {
    const { vm, clock } = await setup({
      llm: { protocols: { anthropic: { pathSuffixes: ["/anthropic/v1/messages"] }, tgi: { pathSuffixes: [] }, kserve: { pathPrefixes: ["/triton/v2/models/"] } } },
    });
    const anthropic = CASES.find((c) => c.path === "/v1/messages" && !c.stream)!;
    const tgi = CASES.find((c) => c.path === "/generate" && c.input === 7)!;
    const kserve = CASES.find((c) => c.path.endsWith("/versions/1/generate"))!;
    drive(vm, clock, { ...anthropic, path: "/anthropic/v1/messages" }, [anthropic.body]);
    drive(vm, clock, { ...anthropic, path: "/v1/messages" }, [anthropic.body], "old");
    drive(vm, clock, tgi, [tgi.body], "tgi");
    drive(vm, clock, { ...kserve, path: "/triton/v2/models/llama-3-8b/generate" }, [kserve.body], "triton");
    drive(vm, clock, kserve, [kserve.body], "plain");
    drive(vm, clock, CASES[0]!, [CASES[0]!.body], "responses");
    const requests = (route: string, model: string, stream: string, finish: string): number | undefined =>
      vm.stats.value("tokentrace_llm_requests_total", { route, model, stream, finish_reason: finish, status_class: "2xx" });
    assert.equal(requests("llm", "claude-sonnet-4-5", "false", "length"), 1);
    assert.equal(requests("old", "claude-sonnet-4-5", "false", "length"), undefined, "the default path is replaced");
    assert.equal(requests("tgi", "unknown", "false", "length"), undefined, "TGI is off");
    assert.equal(requests("triton", "llama-3-8b", "false", "length"), 1);
    assert.equal(requests("plain", "llama-3-8b", "false", "length"), undefined, "the default prefix is replaced");
    assert.equal(requests("responses", "Qwen/Qwen3-8B", "true", "stop"), 1, "other protocols keep their defaults");
  });

  it("llm.pathSuffixes still names the OpenAI-compatible paths (policies written before per-protocol matchers)", async () => {
    const { vm, clock } = await setup({ llm: { pathSuffixes: ["/v1/chat/completions"] } });
    const chat = JSON.stringify({ model: "m", choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1 } });
    drive(vm, clock, { ...generic, path: "/v1/chat/completions", request: "{\"model\":\"m\"}", responseType: "application/json", body: chat }, [chat]);
    drive(vm, clock, { ...generic, path: "/v1/completions", request: "{\"model\":\"m\"}", responseType: "application/json", body: chat }, [chat], "legacy");
    drive(vm, clock, CASES[2]!, [CASES[2]!.body], "anthropic");
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", { route: "llm", model: "m" }), 3);
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", { route: "legacy", model: "m" }), undefined);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "anthropic", model: "claude-sonnet-4-5" }), 9);
  });
});
