// Token-flow spans from the real filter.wasm (emulated Envoy host) to a real OTLP/HTTP receiver on
// 127.0.0.1 through proxy_http_call: every field, parent-child links across two chained proxies,
// and a receiver that is down or slow never blocking or failing traffic.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterStream, type FilterVm } from "../../host/index.js";
import { otlpJsonProblems } from "../../support/otlp-json.js";
import { attr, startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "../../support/otlp-receiver.js";
import { countingRandom, llmSamples, loadFilter } from "../support.js";

const T0 = 1_700_000_000_000_000_000n;
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const spansConfig = (extra: Record<string, unknown> = {}): unknown => ({
  sampling: { defaultRate: 1 },
  spans: { cluster: "otel", serviceName: "edge-proxy", providerName: "vllm", ...extra },
});

/** Every attribute of a span as a plain value. */
const attributes = (span: OtlpSpan): Record<string, unknown> => Object.fromEntries(span.attributes.map((a) => [a.key, attr(span, a.key)]));

const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
const STREAM = sse([
  { id: "chatcmpl-7", model: "llama-3.1-8b-instruct", choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] },
  { id: "chatcmpl-7", model: "llama-3.1-8b-instruct", choices: [{ index: 0, delta: { content: " there" }, finish_reason: "stop" }] },
  { id: "chatcmpl-7", model: "llama-3.1-8b-instruct", choices: [], usage: { prompt_tokens: 11, completion_tokens: 2 } },
]);

/** One streamed chat completion through `vm`: 120 ms to the first byte, 30 ms more to the end (the first content event is whole then). */
function streamedChat(vm: FilterVm, clock: ManualClock, headers: Array<[string, string]> = [], status = 200): FilterStream {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], ["x-token-trace-id", "tok-1"], ...headers], false);
  s.requestBody(JSON.stringify({ model: "llama-3.1-8b", stream: true, messages: [{ role: "user", content: "hello" }] }), true);
  clock.advanceMs(120);
  s.responseHeaders([[":status", String(status)], ["content-type", "text/event-stream"]], false);
  s.responseBody(STREAM.slice(0, 50), false);
  clock.advanceMs(30);
  s.responseBody(STREAM.slice(50), true);
  s.end();
  return s;
}

describe("token-flow spans over OTLP/HTTP (emulated Envoy host, real receiver)", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());
  const reset = (): void => {
    receiver.spans.length = 0;
    receiver.requests.length = 0;
    receiver.problems.length = 0;
    receiver.respondWith = { status: 200, delayMs: 0 };
  };

  it("exports one span per sampled LLM request with every GenAI field, and nests the model server under it", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    const s = streamedChat(vm, clock, [["traceparent", `00-${TRACE}-${PARENT}-01`]]);
    assert.equal(vm.tickPeriodMs, 5000);
    vm.tick();
    await vm.settle();
    assert.equal(receiver.spans.length, 1);
    const span = receiver.spans[0]!;
    assert.equal(span.traceId, TRACE);
    assert.equal(span.parentSpanId, PARENT);
    assert.match(span.spanId, /^[0-9a-f]{16}$/);
    assert.equal(s.request.get("traceparent"), `00-${TRACE}-${span.spanId}-01`, "the upstream's parent is this proxy's span");
    assert.equal(span.name, "chat llama-3.1-8b", "{gen_ai.operation.name} {gen_ai.request.model}");
    assert.equal(span.kind, 3, "CLIENT");
    assert.equal(span.startTimeUnixNano, String(T0));
    assert.equal(span.endTimeUnixNano, String(T0 + 150_000_000n));
    assert.equal(span.events, undefined, "time to first chunk is an attribute, not an event");
    // The first chunk (120 ms) held no whole event; the first content came 30 ms later. The span's
    // time to first chunk is to the first chunk received, as the convention defines it; TTFT is to the content.
    assert.deepEqual(llmSamples(vm, "tokentrace_llm_ttft_ms", { route: "chat", model: "llama-3.1-8b" }), [150]);
    assert.deepEqual(attributes(span), {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "vllm",
      "gen_ai.request.model": "llama-3.1-8b",
      "gen_ai.request.stream": true,
      "gen_ai.response.id": "chatcmpl-7",
      "gen_ai.response.model": "llama-3.1-8b-instruct",
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.response.time_to_first_chunk": 0.12,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 2,
      "server.address": "llm.svc",
      "server.port": 80,
      "http.response.status_code": 200,
      "tokentrace.token_trace_id": "tok-1",
      "tokentrace.route": "chat",
    });
    assert.equal(span.status, undefined);
    assert.deepEqual(receiver.requests, [{ path: "/v1/traces", contentType: "application/json", service: "edge-proxy", spans: 1 }]);
    assert.equal(vm.stats.value("tokentrace_spans_exported_total"), 1);
    const text = JSON.stringify(receiver.spans);
    assert.ok(!text.includes("hello") && !text.includes("there"), "no prompt or completion text in spans");
    assert.deepEqual(receiver.problems, []);
  });

  it("reports the request parameters the body states, with their types; no stop sequences (caller's text)", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    const body = {
      model: "llama-3.1-8b", messages: [], max_completion_tokens: 256, temperature: 0.7, top_p: 1, top_k: 40, frequency_penalty: 0.5,
      presence_penalty: -1.25e-1, seed: -42, n: 2, stop: ["a secret stop"], response_format: { type: "json_schema", json_schema: {} },
    };
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions?x=1"], [":authority", "llm.svc:8443"], [":scheme", "https"]], false);
    s.requestBody(JSON.stringify(body), true);
    clock.advanceMs(300);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({
      id: "chatcmpl-9", model: "llama-3.1-8b-instruct", choices: [{ index: 0, finish_reason: "length" }, { index: 1, finish_reason: "length" }],
      usage: { prompt_tokens: 20, completion_tokens: 512, prompt_tokens_details: { cached_tokens: 16 }, completion_tokens_details: { reasoning_tokens: 100 } },
    }), true);
    s.end();
    vm.tick();
    await vm.settle();
    const span = receiver.spans[0]!;
    const a = attributes(span);
    assert.deepEqual(
      Object.fromEntries(Object.entries(a).filter(([k]) => k.startsWith("gen_ai.request.") || k.startsWith("gen_ai.output.") || k.startsWith("gen_ai.usage.") || k.startsWith("server."))),
      {
        "gen_ai.request.model": "llama-3.1-8b",
        "gen_ai.request.max_tokens": 256,
        "gen_ai.request.temperature": 0.7,
        "gen_ai.request.top_p": 1,
        "gen_ai.request.top_k": 40,
        "gen_ai.request.frequency_penalty": 0.5,
        "gen_ai.request.presence_penalty": -0.125,
        "gen_ai.request.seed": -42,
        "gen_ai.request.choice.count": 2,
        "gen_ai.output.type": "json",
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 16,
        "gen_ai.usage.output_tokens": 512,
        "gen_ai.usage.reasoning.output_tokens": 100,
        "server.address": "llm.svc",
        "server.port": 8443,
      },
    );
    assert.equal(a["gen_ai.request.stream"], undefined, "set only when the request streams");
    assert.equal(a["gen_ai.response.time_to_first_chunk"], undefined, "streaming only");
    assert.equal(span.attributes.find((x) => x.key === "gen_ai.request.max_tokens")!.value.intValue, "256", "ints are intValue");
    assert.equal(span.attributes.find((x) => x.key === "gen_ai.request.top_p")!.value.doubleValue, 1, "doubles are doubleValue");
    assert.ok(!JSON.stringify(receiver.spans).includes("secret"), "stop sequences are not recorded");
    assert.deepEqual(receiver.problems, []);
  });

  const failures: Array<[string, number | undefined, boolean, string]> = [
    ["a 429 (an error on a CLIENT span)", 429, true, "429"],
    ["a 503", 503, true, "503"],
    ["a reset before any response", undefined, false, "reset_before_response"],
    ["a stream cut after its response began", 200, false, "reset_during_response"],
  ];
  for (const [name, status, complete, errorType] of failures) {
    it(`marks a failed call ERROR with error.type, and finish_reasons ["error"]: ${name}`, async () => {
      reset();
      const clock = new ManualClock(T0);
      const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
      const s = vm.newStream({ routeName: "chat" });
      s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"]], false);
      s.requestBody(JSON.stringify({ model: "m", stream: true, messages: [] }), true);
      clock.advanceMs(40);
      if (status !== undefined) {
        s.responseHeaders([[":status", String(status)], ["content-type", status === 200 ? "text/event-stream" : "application/json"]], false);
        s.responseBody(status === 200 ? 'data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n' : '{"error":{"message":"busy"}}', complete);
      }
      s.end();
      vm.tick();
      await vm.settle();
      const span = receiver.spans[0]!;
      assert.deepEqual(span.status, { code: 2 });
      const a = attributes(span);
      assert.equal(a["error.type"], errorType);
      assert.deepEqual(a["gen_ai.response.finish_reasons"], ["error"]);
      assert.equal(a["http.response.status_code"], status);
      assert.deepEqual(receiver.problems, []);
    });
  }

  it("marks a Responses stream ending in response.failed ERROR under its 200, error.type _OTHER (no custom value defined), finish_reasons [\"error\"]", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/responses"], [":authority", "llm.svc"]], false);
    s.requestBody(JSON.stringify({ model: "m", stream: true, input: "hi" }), true);
    clock.advanceMs(40);
    s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    // openai/openai-openapi@f85dbe2 ResponseFailedEvent: the response, its status "failed".
    const response = { error: { code: "server_error", message: "failed" }, id: "resp_1", model: "m", object: "response", output: [], status: "failed", usage: null };
    s.responseBody(`event: response.failed\ndata: ${JSON.stringify({ response, sequence_number: 0, type: "response.failed" })}\n\n`, true);
    s.end();
    vm.tick();
    await vm.settle();
    const span = receiver.spans[0]!;
    assert.deepEqual(span.status, { code: 2 });
    const a = attributes(span);
    assert.equal(a["error.type"], "_OTHER");
    assert.deepEqual(a["gen_ai.response.finish_reasons"], ["error"]);
    assert.equal(a["http.response.status_code"], 200);
    assert.deepEqual(receiver.problems, []);
  });

  it("names the span by the requested model only (the operation alone without one), and decodes escapes in it", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    for (const requestBody of ['{"messages":[]}', '{"model":"caf\\u00e9 \\"v2\\"","messages":[]}']) {
      const s = vm.newStream({ routeName: "chat" });
      s.requestHeaders([[":method", "POST"], [":path", "/v1/completions"], [":authority", "llm.svc"]], false);
      s.requestBody(requestBody, true);
      s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
      s.responseBody('{"model":"served-model","choices":[{"finish_reason":"stop"}]}', true);
      s.end();
    }
    vm.tick();
    await vm.settle();
    assert.deepEqual(receiver.spans.map((x) => x.name), ["text_completion", 'text_completion café "v2"']);
    assert.equal(attributes(receiver.spans[1]!)["gen_ai.request.model"], 'café "v2"');
    assert.equal(attributes(receiver.spans[0]!)["gen_ai.response.model"], "served-model");
    assert.deepEqual(receiver.problems, []);
  });

  it("an embeddings call is an embeddings CLIENT span: dimensions, encoding formats, input tokens, no finish reasons", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    const s = vm.newStream({ routeName: "embed" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/embeddings"], [":authority", "embed.svc:9000"]], false);
    s.requestBody(JSON.stringify({ model: "bge-m3", input: ["a secret text"], dimensions: 512, encoding_format: "float" }), true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ object: "list", model: "bge-m3", data: [], usage: { prompt_tokens: 7, total_tokens: 7 } }), true);
    s.end();
    vm.tick();
    await vm.settle();
    const span = receiver.spans[0]!;
    assert.equal(span.name, "embeddings bge-m3");
    const a = attributes(span);
    assert.equal(a["gen_ai.operation.name"], "embeddings");
    assert.equal(a["gen_ai.embeddings.dimension.count"], 512);
    assert.deepEqual(a["gen_ai.request.encoding_formats"], ["float"]);
    assert.equal(a["gen_ai.usage.input_tokens"], 7);
    assert.equal(a["gen_ai.usage.output_tokens"], undefined);
    assert.equal(a["gen_ai.response.finish_reasons"], undefined);
    assert.equal(a["server.port"], 9000);
    assert.deepEqual(receiver.problems, []);
  });

  it("starts a root span when it starts the trace, and links two chained proxies parent to child", async () => {
    reset();
    const clock = new ManualClock(T0);
    const edge = await loadFilter({ clock, random: countingRandom(1), config: spansConfig({ serviceName: "edge" }), clusters: { otel: receiver.url } });
    const sidecar = await loadFilter({ clock, random: countingRandom(101), config: spansConfig({ serviceName: "sidecar" }), clusters: { otel: receiver.url } });
    const first = streamedChat(edge, clock);
    const forwarded = first.request.entries().filter(([k]) => !k.startsWith(":") && k !== "content-length");
    const second = streamedChat(sidecar, clock, forwarded);
    edge.tick();
    sidecar.tick();
    await Promise.all([edge.settle(), sidecar.settle()]);
    // One span per export request here, so requests and spans line up by index.
    assert.deepEqual(receiver.requests.map((r) => r.spans), [1, 1]);
    const byService = new Map(receiver.requests.map((r, i) => [r.service, receiver.spans[i]!]));
    const root = byService.get("edge")!;
    const child = byService.get("sidecar")!;
    assert.equal(root.parentSpanId, undefined, "the proxy that starts the trace exports its root span");
    assert.equal(first.request.get("traceparent"), `00-${root.traceId}-${root.spanId}-03`);
    assert.equal(child.traceId, root.traceId);
    assert.equal(child.parentSpanId, root.spanId);
    assert.equal(second.request.get("traceparent"), `00-${root.traceId}-${child.spanId}-03`);
    assert.notEqual(child.spanId, root.spanId);
  });

  it("exports nothing for unsampled requests and forwards their parent-id unchanged", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    const s = streamedChat(vm, clock, [["traceparent", `00-${TRACE}-${PARENT}-00`]]);
    vm.tick();
    await vm.settle();
    assert.equal(s.request.get("traceparent"), `00-${TRACE}-${PARENT}-00`);
    assert.equal(receiver.spans.length, 0);
  });

  it("sends a full batch at once, without waiting for a tick", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig({ batchSize: 2 }), clusters: { otel: receiver.url } });
    streamedChat(vm, clock);
    assert.equal(vm.pendingHttpCalls(), 0);
    streamedChat(vm, clock);
    assert.equal(vm.pendingHttpCalls(), 1);
    await vm.settle();
    assert.deepEqual(receiver.requests.map((r) => r.spans), [2]);
  });

  it("a partial batch waits for spans.flushIntervalMs when a shorter stats interval sets the tick", async () => {
    reset();
    const clock = new ManualClock(T0);
    const config = { ...(spansConfig({ flushIntervalMs: 3000 }) as object), stats: { flushIntervalMs: 1000 } };
    const vm = await loadFilter({ clock, random: countingRandom(), config, clusters: { otel: receiver.url } });
    assert.equal(vm.tickPeriodMs, 1000);
    streamedChat(vm, clock);
    const sentAfterTicks: number[] = [];
    for (let tick = 1; tick <= 4; tick++) {
      clock.advanceMs(1000);
      vm.tick();
      if (vm.pendingHttpCalls() > 0) sentAfterTicks.push(tick);
      await vm.settle();
    }
    assert.deepEqual(sentAfterTicks, [3], "sent at the third one-second tick, not the first");
    assert.deepEqual(receiver.requests.map((r) => r.spans), [1]);
  });

  it("a receiver that is down never fails traffic: the batch is dropped and counted", async () => {
    const down = await startOtlpReceiver();
    await down.close();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: down.url } });
    for (let i = 0; i < 3; i++) streamedChat(vm, clock);
    vm.tick();
    await vm.settle();
    assert.equal(vm.failed, false);
    assert.equal(vm.stats.value("tokentrace_span_export_failures_total"), 1);
    assert.equal(vm.stats.value("tokentrace_spans_dropped_total"), 3);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "llama-3.1-8b", stream: "true", finish_reason: "stop", status_class: "2xx" }), 3);
  });

  it("a slow receiver never blocks traffic: requests flow while one export is in flight, the buffer is bounded", async () => {
    reset();
    receiver.respondWith = { status: 200, delayMs: 400 };
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig({ batchSize: 1, maxBufferedSpans: 3, timeoutMs: 5000 }), clusters: { otel: receiver.url } });
    for (let i = 0; i < 6; i++) {
      const s = streamedChat(vm, clock);
      assert.ok(s.request.get("traceparent"), "each request went through at once");
    }
    // One in flight, three buffered, two dropped; the rest goes once the receiver answers.
    assert.equal(vm.pendingHttpCalls(), 1);
    assert.equal(vm.stats.value("tokentrace_spans_dropped_total"), 2);
    await vm.settle();
    for (let i = 0; i < 3; i++) {
      vm.tick();
      await vm.settle();
    }
    assert.equal(vm.stats.value("tokentrace_spans_exported_total"), 4);
    assert.equal(receiver.spans.length, 4);
  });

  it("counts an export the receiver rejects", async () => {
    reset();
    receiver.respondWith = { status: 503, delayMs: 0 };
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    streamedChat(vm, clock);
    vm.tick();
    await vm.settle();
    assert.equal(vm.stats.value("tokentrace_span_export_failures_total"), 1);
    assert.equal(vm.stats.value("tokentrace_spans_dropped_total"), 1);
    assert.equal(vm.stats.value("tokentrace_spans_exported_total"), 0);
  });
});

describe("the OTLP/JSON reader the span tests use (opentelemetry-proto definitions)", () => {
  const body = (span: Record<string, unknown>): unknown => ({
    resourceSpans: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "s" } }] }, scopeSpans: [{ scope: { name: "tokentrace" }, spans: [span] }] }],
  });
  const good = {
    traceId: TRACE, spanId: PARENT, name: "chat m", kind: 3, startTimeUnixNano: "1700000000000000000", endTimeUnixNano: "1700000000150000000",
    attributes: [
      { key: "gen_ai.usage.input_tokens", value: { intValue: "11" } },
      { key: "gen_ai.request.temperature", value: { doubleValue: 0.7 } },
      { key: "gen_ai.request.stream", value: { boolValue: true } },
      { key: "gen_ai.response.finish_reasons", value: { arrayValue: { values: [{ stringValue: "stop" }] } } },
    ],
    status: { code: 2 },
  };
  it("reads a well-formed export back unchanged", () => {
    assert.deepEqual(otlpJsonProblems(body(good)), []);
  });
  const bad: Array<[string, Record<string, unknown>]> = [
    ["an unknown span field", { ...good, firstTokenTime: "1" }],
    ["an enum written as its name", { ...good, kind: "SPAN_KIND_CLIENT" }],
    ["a span id in base64", { ...good, spanId: Buffer.from(PARENT, "hex").toString("base64") }],
    ["an int64 that is no number", { ...good, attributes: [{ key: "k", value: { intValue: "eleven" } }] }],
    ["an attribute value of an unknown kind", { ...good, attributes: [{ key: "k", value: { floatValue: 1 } }] }],
    ["a misspelt status field", { ...good, status: { statusCode: 2 } }],
  ];
  for (const [name, span] of bad) {
    it(`names what the definitions do not hold: ${name}`, () => {
      assert.notDeepEqual(otlpJsonProblems(body(span)), []);
    });
  }
});
