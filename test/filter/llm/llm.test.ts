// Token-flow telemetry of the real filter.wasm (emulated Envoy host): OpenAI-compatible requests and
// responses, streaming (SSE) and not, with exact token counts, TTFT, TPOT and durations.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock, WasmResult, type FilterVm, type HostFault } from "../../host/index.js";
import { countingRandom, llmSamples, loadFilter } from "../support.js";

const T0 = 1_700_000_000_000_000_000n;

interface Call {
  path?: string;
  route?: string;
  requestBody?: string | string[];
  status?: number;
  contentType?: string;
  responseHeaders?: Array<[string, string]>;
  /** Response body chunks, each sent `gapMs` after the previous (the first `ttftMs` after the request). */
  chunks?: string[];
  ttftMs?: number;
  gapMs?: number;
  /** Stop before the response ends (a client cancel): no end_of_stream. */
  cancel?: boolean;
}

// Every VM of this suite, and whether its test injected host failures: under Envoy's rules the filter
// makes no host call that fails, so after the suite none may have counted host_call_failed.
const suiteVms: Array<{ vm: FilterVm; injected: boolean }> = [];
const hostCallFailures = (vm: FilterVm): number => vm.stats.value("tokentrace_filter_errors_total", { error: "host_call_failed" }) ?? 0;
after(() => {
  const failing = suiteVms.filter((v) => !v.injected && hostCallFailures(v.vm) > 0);
  assert.equal(failing.length, 0, `${failing.length} of ${suiteVms.length} VMs counted host_call_failed without an injected failure`);
});

async function setup(config: unknown = {}, faults?: HostFault[]): Promise<{ vm: FilterVm; clock: ManualClock }> {
  const clock = new ManualClock(T0);
  const vm = await loadFilter({ clock, random: countingRandom(), config, faults });
  suiteVms.push({ vm, injected: faults !== undefined });
  return { vm, clock };
}

/** Drives one LLM call through the filter, asserting every callback continues. */
function call(vm: FilterVm, clock: ManualClock, c: Call): void {
  const s = vm.newStream({ routeName: c.route ?? "chat" });
  const body = c.requestBody === undefined ? [] : Array.isArray(c.requestBody) ? c.requestBody : [c.requestBody];
  const ok = (status: number, what: string): void => assert.equal(status, 0, `${what} must continue`);
  ok(s.requestHeaders([[":method", "POST"], [":path", c.path ?? "/v1/chat/completions"], [":authority", "llm.svc"], ["content-type", "application/json"]], body.length === 0), "request headers");
  body.forEach((chunk, i) => ok(s.requestBody(chunk, i === body.length - 1), "request body"));
  clock.advanceMs(c.ttftMs ?? 0);
  const chunks = c.chunks ?? [];
  ok(s.responseHeaders([[":status", String(c.status ?? 200)], ["content-type", c.contentType ?? "application/json"], ...(c.responseHeaders ?? [])], chunks.length === 0), "response headers");
  chunks.forEach((chunk, i) => {
    if (i > 0) clock.advanceMs(c.gapMs ?? 0);
    ok(s.responseBody(chunk, !c.cancel && i === chunks.length - 1), "response body");
  });
  s.end();
}

const sse = (events: unknown[], done = true): string =>
  events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + (done ? "data: [DONE]\n\n" : "");
const chunk = (content: string | null, finish: string | null = null, model = "llama-3.1-8b-instruct"): unknown => ({
  id: "cmpl-1", object: "chat.completion.chunk", model,
  choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }],
});
const usageChunk = (prompt: number, completion: number): unknown => ({
  id: "cmpl-1", object: "chat.completion.chunk", model: "llama-3.1-8b-instruct", choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});
const chatRequest = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: "llama-3.1-8b", messages: [{ role: "user", content: "a secret prompt" }], ...extra });
const completionResponse = JSON.stringify({
  id: "chatcmpl-1", object: "chat.completion", model: "llama-3.1-8b-instruct",
  choices: [{ index: 0, message: { role: "assistant", content: "a secret completion" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 12, completion_tokens: 34, total_tokens: 46 },
});

const L = { route: "chat", model: "llama-3.1-8b" };

describe("LLM telemetry, non-streaming (emulated Envoy host)", () => {
  it("records model, tokens, finish reason, TTFT and duration of a chat completion", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: chatRequest(), ttftMs: 150, chunks: [completionResponse.slice(0, 40), completionResponse.slice(40)], gapMs: 50 });
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...L, stream: "false", finish_reason: "stop", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", L), 12);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", L), 34);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", L), [], "TTFT is for streams only: this first byte is the whole generation");
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_decode_ms", L), [], "decode is for streams only");
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_duration_ms", L), [200]);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_tpot_us", L), [], "TPOT is for streams only");
    assert.equal(vm.stats.value("tokentrace_llm_usage_missing_total", L), 0);
  });

  it("reads an embeddings call (input tokens only)", async () => {
    const { vm, clock } = await setup();
    const response = JSON.stringify({ object: "list", model: "bge-m3", data: [{ object: "embedding", index: 0, embedding: [0.1, -0.2] }], usage: { prompt_tokens: 7, total_tokens: 7 } });
    call(vm, clock, { path: "/v1/embeddings", route: "embed", requestBody: JSON.stringify({ model: "bge-m3", input: "text" }), chunks: [response] });
    const labels = { route: "embed", model: "bge-m3" };
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", labels), 7);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", labels), 0);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...labels, stream: "false", finish_reason: "none", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_usage_missing_total", labels), 0);
  });

  it("takes the model from the response when the request body was not readable", async () => {
    const { vm, clock } = await setup({ llm: { maxRequestBodyBytes: 10 } });
    call(vm, clock, { requestBody: chatRequest(), chunks: [completionResponse] });
    const labels = { route: "chat", model: "llama-3.1-8b-instruct" };
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", labels), 34);
    assert.equal(vm.stats.value("tokentrace_llm_body_limit_exceeded_total", { route: "chat" }), 1);
  });
});

describe("LLM telemetry, streaming (emulated Envoy host)", () => {
  const stream = sse([chunk(""), chunk("Hel"), chunk("lo"), chunk(" wor"), chunk("ld"), chunk("!"), chunk(null, "length"), usageChunk(9, 5)]);

  it("counts content chunks and takes usage from the final chunk: TTFT to the first content, decode, TPOT, duration", async () => {
    const { vm, clock } = await setup();
    const events = stream.split(/(?<=\n\n)/);
    call(vm, clock, { requestBody: chatRequest({ stream: true, stream_options: { include_usage: true } }), ttftMs: 100, chunks: events, gapMs: 10, contentType: "text/event-stream" });
    // 9 events: the first (empty content) at 100 ms, the first content at 110 ms, the end at
    // 100 + 8 * 10 ms; decode = 180 - 110 ms; TPOT = 70 ms / (5 - 1) tokens.
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...L, stream: "true", finish_reason: "length", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", L), 5);
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", L), 9);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", L), 5);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", L), [110]);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_decode_ms", L), [70]);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_tpot_us", L), [17_500]);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_duration_ms", L), [180]);
    assert.equal(vm.stats.value("tokentrace_llm_usage_missing_total", L), 0);
  });

  it("still records TTFT, duration and chunks when usage is absent, and counts it missing", async () => {
    const { vm, clock } = await setup();
    const noUsage = sse([chunk("a"), chunk("b"), chunk(null, "stop")]);
    call(vm, clock, { requestBody: chatRequest({ stream: true }), ttftMs: 40, chunks: [noUsage], contentType: "text/event-stream; charset=utf-8" });
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...L, stream: "true", finish_reason: "stop", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", L), 2);
    assert.equal(vm.stats.value("tokentrace_llm_usage_missing_total", L), 1);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", L), [40]);
    assert.deepEqual(vm.stats.samples("tokentrace_llm_tpot_us", L), []);
  });

  it("a stream cancelled midway ends with consistent stats (proxy_on_log)", async () => {
    const { vm, clock } = await setup();
    const events = stream.split(/(?<=\n\n)/).slice(0, 3);
    call(vm, clock, { requestBody: chatRequest({ stream: true }), ttftMs: 30, chunks: events, gapMs: 5, cancel: true, contentType: "text/event-stream" });
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...L, stream: "true", finish_reason: "none", status_class: "2xx", error_type: "reset_during_response" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", L), 2);
    assert.equal(vm.stats.value("tokentrace_llm_usage_missing_total", L), 1);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_duration_ms", L), [40]);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", L), [35], "the first content did arrive");
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_decode_ms", L), [], "a cut stream has no decode time");
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 1);
  });

  it("records decode time per request, from the first content chunk to the last byte", async () => {
    const { vm, clock } = await setup();
    for (const [ttftMs, gapMs] of [[200, 5], [50, 100], [900, 1]] as const) {
      call(vm, clock, { requestBody: chatRequest({ stream: true }), ttftMs, chunks: [sse([chunk("a")]).replace("data: [DONE]\n\n", ""), sse([chunk("b"), chunk(null, "stop")])], gapMs, contentType: "text/event-stream" });
    }
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", L), [200, 50, 900]);
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_decode_ms", L), [5, 100, 1]);
  });

  it("handles CRLF line endings, multi-line data, comments and other fields", async () => {
    const { vm, clock } = await setup();
    const body = ": keep-alive\r\n\r\nevent: message\r\nid: 1\r\ndata: {\"model\":\"m2\",\"choices\":[{\"delta\":\r\ndata: {\"content\":\"x\"}}]}\r\n\r\n" +
      "data:{\"choices\":[{\"delta\":{\"content\":\"y\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\r\n\r\ndata: [DONE]\r\n\r\n";
    call(vm, clock, { requestBody: JSON.stringify({ stream: true }), chunks: [body], contentType: "text/event-stream" });
    const labels = { route: "chat", model: "m2" };
    assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", labels), 2);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", labels), 2);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...labels, stream: "true", finish_reason: "stop", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "sse_malformed" }), 0);
  });

  it("gives the same figures whatever the chunk boundaries, down to single bytes", async () => {
    const { vm, clock } = await setup();
    const body = stream;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: body.length - 1 }), { maxLength: 40 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const parts = [0, ...points].map((p, i) => body.slice(p, points[i] ?? body.length));
        call(vm, clock, { requestBody: chatRequest({ stream: true }), chunks: parts, contentType: "text/event-stream" });
      }),
      { numRuns: 150, seed: 3 },
    );
    // Every byte boundary once, in one more run: each split point gets its own two-chunk call.
    for (let p = 1; p < body.length; p++) call(vm, clock, { requestBody: chatRequest({ stream: true }), chunks: [body.slice(0, p), body.slice(p)], contentType: "text/event-stream" });
    const runs = 150 + body.length - 1;
    assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", L), 5 * runs);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", L), 5 * runs);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...L, stream: "true", finish_reason: "length", status_class: "2xx" }), runs);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "sse_malformed" }), 0);
  });
});

describe("LLM telemetry, what is not read (emulated Envoy host)", () => {
  it("never reads bodies of other traffic", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { path: "/v1/models", requestBody: "{}", chunks: [completionResponse] });
    call(vm, clock, { path: "/v1/chat/completions/other", requestBody: "{}", chunks: [completionResponse] });
    assert.deepEqual(vm.stats.names().filter((n) => n.includes("tokentrace_llm_")), []);
  });

  it("matches the path without its query string", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { path: "/openai/v1/chat/completions?api-version=1", requestBody: chatRequest(), chunks: [completionResponse] });
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", L), 34);
  });

  it("counts and skips a gzip-encoded response", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: chatRequest(), chunks: ["\x1f\x8b\x08binary"], responseHeaders: [["content-encoding", "gzip"]] });
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "body_encoded" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", L), 0);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { ...L, stream: "false", finish_reason: "none", status_class: "2xx" }), 1);
  });

  it("counts a request body that is not JSON and leaves the model unknown", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: "model=llama&stream=true", chunks: [completionResponse] });
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "body_not_json" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "chat", model: "llama-3.1-8b-instruct" }), 34);
  });

  it("does not read a response whose content type is not configured", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: chatRequest(), chunks: ["plain text"], contentType: "text/plain" });
    assert.equal(vm.stats.value("tokentrace_llm_usage_missing_total", L), 0);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "body_not_json" }), 0);
  });

  it("caps distinct models and counts the rest as model=\"other\"", async () => {
    const { vm, clock } = await setup({ stats: { maxModels: 2 } });
    for (const model of ["a", "b", "c", "a", "d"]) call(vm, clock, { requestBody: JSON.stringify({ model }), chunks: [completionResponse] });
    const out = (model: string): number | undefined => vm.stats.value("tokentrace_llm_output_tokens_total", { route: "chat", model });
    assert.deepEqual([out("a"), out("b"), out("c"), out("other")], [68, 34, undefined, 68]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "model_overflow" }), 2);
  });

  it("never records prompt or completion text in stats or logs", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: chatRequest(), chunks: [completionResponse] });
    call(vm, clock, { requestBody: chatRequest({ stream: true }), chunks: [stream(["a secret completion"])], contentType: "text/event-stream" });
    const everything = vm.stats.prometheus() + vm.logs.map((l) => l.message).join("\n");
    assert.ok(!everything.includes("secret"), "no prompt or completion text");
  });
});

describe("values read from bodies (emulated Envoy host)", () => {
  const usage = (prompt: string, completion: string): string =>
    `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop"}],"usage":{"prompt_tokens":${prompt},"completion_tokens":${completion}}}`;
  const M = { route: "chat", model: "m" };

  const notCounts: Array<[string, string]> = [
    ["2^64 (20 digits)", "18446744073709551616"],
    ["16 digits", "1000000000000000"],
    ["a negative number", "-5"],
    ["a fraction", "12.5"],
    ["an exponent", "1e3"],
  ];
  for (const [name, value] of notCounts) {
    it(`drops a usage number that is no token count and counts it: ${name}`, async () => {
      const { vm, clock } = await setup();
      call(vm, clock, { requestBody: JSON.stringify({ model: "m" }), chunks: [usage(value, "7")] });
      assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", M), 0, "nothing added for the bad count");
      assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", M), 7, "the good count in the same body is kept");
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "usage_invalid" }), 1);
    });
  }

  it("keeps a 15-digit token count whole, without an error", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: JSON.stringify({ model: "m" }), chunks: [usage("999999999999999", "1")] });
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", M), 999999999999999);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "usage_invalid" }), 0);
  });

  it("drops and counts a bad count in a stream's usage chunk too", async () => {
    const { vm, clock } = await setup();
    const body = `data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}\n\ndata: {"model":"m","choices":[],"usage":{"prompt_tokens":18446744073709551616,"completion_tokens":3}}\n\ndata: [DONE]\n\n`;
    call(vm, clock, { requestBody: JSON.stringify({ model: "m", stream: true }), chunks: [body], contentType: "text/event-stream" });
    assert.equal(vm.stats.value("tokentrace_llm_input_tokens_total", M), 0);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", M), 3);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "usage_invalid" }), 1);
  });

  const escapes: Array<[string, string, string]> = [
    ["a \\u escape of a Latin letter", '"caf\\u00e9-7b"', "caf_-7b"],
    ["a surrogate pair (one code point, one _)", '"m\\ud83d\\ude00x"', "m_x"],
    ["one-character escapes", '"a\\/b\\\\c"', "a/b_c"],
    ["plain text beside an escape", '"llama\\u002d3"', "llama-3"],
  ];
  for (const [name, literal, label] of escapes) {
    it(`decodes escapes in the model before it becomes a label: ${name}`, async () => {
      const { vm, clock } = await setup();
      // Byte by byte, so every escape is split across chunks.
      const body = `{"model":${literal},"messages":[]}`;
      const s = vm.newStream({ routeName: "chat" });
      s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"]], false);
      for (let i = 0; i < body.length; i++) s.requestBody(body[i]!, i === body.length - 1);
      clock.advanceMs(5);
      s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
      s.responseBody(`{"model":${literal},"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`, true);
      s.end();
      assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "chat", model: label }), 2);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "body_not_json" }), 0);
    });
  }

  it("counts a body with an escape JSON does not have as not JSON", async () => {
    const { vm, clock } = await setup();
    call(vm, clock, { requestBody: '{"model":"a\\qb"}', chunks: [completionResponse] });
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "body_not_json" }), 1);
  });
});

function stream(contents: string[]): string {
  return sse([...contents.map((c) => chunk(c)), chunk(null, "stop")]);
}

describe("asking for usage in streams (llm.requestUsageInStream, emulated Envoy host)", () => {
  const config = { llm: { requestUsageInStream: true } };
  const send = (vm: FilterVm, chunks: string[], length: "content-length" | "chunked" = "content-length"): { statuses: number[]; released: string; contentLength: string | undefined; localResponse: number | undefined } => {
    const s = vm.newStream({ routeName: "chat" });
    const framing: [string, string] = length === "chunked" ? ["transfer-encoding", "chunked"] : ["content-length", String(Buffer.byteLength(chunks.join("")))];
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], framing], false);
    const statuses: number[] = [];
    let released = "";
    chunks.forEach((c, i) => {
      statuses.push(s.requestBody(c, i === chunks.length - 1));
      released += s.lastRequestChunk.toString("utf8");
    });
    const contentLength = s.request.get("content-length");
    const localResponse = s.localResponse?.statusCode;
    if (!s.ended) {
      s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], true);
      s.end();
    }
    return { statuses, released, contentLength, localResponse };
  };

  it("buffers a streaming request and adds stream_options.include_usage before it goes upstream", async () => {
    const { vm } = await setup(config);
    const body = chatRequest({ stream: true });
    const r = send(vm, [body.slice(0, 10), body.slice(10, 30), body.slice(30)]);
    assert.deepEqual(r.statuses, [1, 1, 0], "StopIterationAndBuffer until the end of the body, then Continue");
    assert.deepEqual(JSON.parse(r.released), { stream_options: { include_usage: true }, ...JSON.parse(body) });
    assert.equal(r.contentLength, undefined, "the length is Envoy's to recompute");
  });

  const unchanged: Array<[string, string]> = [
    ["a streaming request that sets stream_options itself", chatRequest({ stream: true, stream_options: { include_usage: false } })],
    ["a non-streaming request", chatRequest({ stream: false })],
    ["a body that is not JSON", "stream=true"],
  ];
  for (const [name, body] of unchanged) {
    it(`leaves ${name} as it came`, async () => {
      const { vm } = await setup(config);
      const r = send(vm, [body.slice(0, 5), body.slice(5)]);
      assert.equal(r.released, body);
    });
  }

  it("lets a body larger than the look-ahead through unchanged, never held, and counts it", async () => {
    const { vm } = await setup({ llm: { requestUsageInStream: true, maxRequestBodyBytes: 40 } });
    const body = chatRequest({ stream: true });
    const r = send(vm, [body.slice(0, 30), body.slice(30, 60), body.slice(60)]);
    assert.deepEqual(r.statuses, [0, 0, 0], "its content-length says it is over the look-ahead: nothing is held");
    assert.equal(r.released, body);
    assert.equal(r.contentLength, String(body.length), "an unchanged body keeps its length");
    assert.equal(vm.stats.value("tokentrace_llm_body_limit_exceeded_total", { route: "chat" }), 1);
  });

  // Envoy answers 413 to a body a filter holds past its buffer limit (the listener's
  // per_connection_buffer_limit_bytes, 1 MiB by default), and adds each chunk to what it holds
  // before the filter sees it: the emulated host does the same (test/host/lifecycle.ts).
  const MiB = 1024 * 1024;
  const longContext = (bytes: number): string => {
    const head = '{"model":"m","stream":true,"messages":[{"role":"user","content":"';
    const tail = '"}]}';
    return head + "x".repeat(bytes - head.length - tail.length) + tail;
  };
  const chunksOf = (body: string, size: number): string[] => Array.from({ length: Math.ceil(body.length / size) }, (_, i) => body.slice(i * size, (i + 1) * size));

  it("never causes a 413: a long-context request over Envoy's buffer limit passes untouched and is counted", async () => {
    const { vm } = await setup({ llm: { requestUsageInStream: true, maxRequestBodyBytes: MiB } });
    for (const framing of ["content-length", "chunked"] as const) {
      const body = longContext(2 * MiB);
      const r = send(vm, chunksOf(body, 64 * 1024), framing);
      assert.equal(r.localResponse, undefined, `${framing}: no 413`);
      assert.ok(r.statuses.every((x) => x === 0), `${framing}: nothing held`);
      assert.equal(r.released.length, body.length, `${framing}: every byte went upstream`);
      assert.equal(r.released, body, `${framing}: unchanged`);
    }
    assert.equal(vm.stats.value("tokentrace_llm_body_limit_exceeded_total", { route: "chat" }), 2);
  });

  it("holds a body only when its length is known and fits Envoy's buffer with the added member: up to the limit exactly", async () => {
    const { vm } = await setup({ llm: { requestUsageInStream: true, maxRequestBodyBytes: MiB } });
    const member = '"stream_options":{"include_usage":true},'.length;
    const fits = longContext(MiB - member);
    const held = send(vm, chunksOf(fits, 64 * 1024));
    assert.equal(held.localResponse, undefined);
    assert.equal(held.released.length, MiB, "held, and grown to exactly the limit");
    assert.deepEqual(JSON.parse(held.released).stream_options, { include_usage: true });
    const over = longContext(MiB - member + 1);
    const passed = send(vm, chunksOf(over, 64 * 1024));
    assert.equal(passed.localResponse, undefined);
    assert.equal(passed.released, over, "one byte more: read as it passes, not held, not changed");
    assert.equal(passed.contentLength, String(over.length));
    const chunked = send(vm, chunksOf(longContext(1000), 300), "chunked");
    assert.deepEqual(chunked.statuses, [0, 0, 0, 0], "no content-length: never held");
    assert.equal(vm.stats.value("tokentrace_llm_body_limit_exceeded_total", { route: "chat" }), undefined, "none of these is over the look-ahead");
  });
});

describe("LLM telemetry properties (emulated Envoy host)", () => {
  const split = (body: string, cuts: number[]): string[] => {
    const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].filter((c) => c > 0 && c < body.length).sort((a, b) => a - b);
    return [0, ...points].map((p, i) => body.slice(p, points[i] ?? body.length));
  };

  it("never traps and always continues on arbitrary JSON, arbitrary bytes and truncated streams", async () => {
    const { vm, clock } = await setup();
    const anyBody = fc.oneof(
      fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)),
      fc.string({ unit: "binary", maxLength: 300 }),
      fc.nat(stream(["x", "y", "z"]).length).map((n) => stream(["x", "y", "z"]).slice(0, n)),
    );
    fc.assert(
      fc.property(anyBody, anyBody, fc.array(fc.nat(400), { maxLength: 6 }), fc.constantFrom("application/json", "text/event-stream"), (req, resp, cuts, contentType) => {
        call(vm, clock, { requestBody: split(req, cuts).length > 0 ? split(req, cuts) : undefined, chunks: split(resp, cuts), contentType });
        assert.equal(vm.failed, false);
      }),
      { numRuns: 400, seed: 21 },
    );
  });

  it("a truncated stream counts exactly the content events that arrived whole", async () => {
    const { vm, clock } = await setup();
    const events = [chunk("a"), chunk("b"), chunk("c"), chunk(null, "stop")].map((e) => `data: ${JSON.stringify(e)}\n\n`);
    let expected = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: events.join("").length }), (cut) => {
        const body = events.join("").slice(0, cut);
        let whole = 0;
        let at = 0;
        for (const e of events.slice(0, 3)) {
          at += e.length;
          // an event counts once its JSON is complete, even without the blank line that ends it
          if (cut >= at - 2) whole++;
        }
        expected += whole;
        call(vm, clock, { requestBody: chatRequest({ stream: true }), chunks: body.length > 0 ? [body] : [], contentType: "text/event-stream", cancel: true });
        assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", L) ?? 0, expected);
      }),
      { numRuns: 120, seed: 5 },
    );
  });

  it("a huge response (8 MiB of SSE) passes through with exact counts and bounded memory", async () => {
    const { vm, clock } = await setup();
    const one = `data: ${JSON.stringify(chunk("word "))}\n\n`;
    const count = Math.ceil((8 * 1024 * 1024) / one.length);
    const body = one.repeat(count);
    const chunks: string[] = [];
    for (let at = 0; at < body.length; at += 16384) chunks.push(body.slice(at, at + 16384));
    const before = vm.memoryBytes();
    call(vm, clock, { requestBody: chatRequest({ stream: true }), chunks, contentType: "text/event-stream" });
    assert.equal(vm.stats.value("tokentrace_llm_stream_chunks_total", L), count);
    assert.ok(vm.memoryBytes() - before <= 2 * 1024 * 1024, `linear memory grew by ${vm.memoryBytes() - before} bytes for an 8 MiB body`);
  });
});

describe("host failures (emulated Envoy host, injected faults)", () => {
  it("counts an injected failing header read (:path) as host_call_failed, and the request still counts", async () => {
    const faults: HostFault[] = [{ call: "proxy_get_header_map_value", status: WasmResult.InternalFailure, times: 1 }];
    const { vm, clock } = await setup({}, faults);
    call(vm, clock, { requestBody: chatRequest(), chunks: [completionResponse] });
    assert.equal(hostCallFailures(vm), 1);
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 1);
  });
});
