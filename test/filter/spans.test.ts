// Token-flow spans from the real filter.wasm (emulated Envoy host) to a real OTLP/HTTP receiver on
// 127.0.0.1 through proxy_http_call: every field, parent-child links across two chained proxies,
// and a receiver that is down or slow never blocking or failing traffic.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterStream, type FilterVm } from "../host/index.js";
import { attr, startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.js";
import { countingRandom, loadFilter } from "./support.js";

const T0 = 1_700_000_000_000_000_000n;
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const spansConfig = (extra: Record<string, unknown> = {}): unknown => ({
  sampling: { defaultRate: 1 },
  spans: { cluster: "otel", serviceName: "edge-proxy", providerName: "vllm", ...extra },
});

const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
const STREAM = sse([
  { model: "llama-3.1-8b-instruct", choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] },
  { model: "llama-3.1-8b-instruct", choices: [{ index: 0, delta: { content: " there" }, finish_reason: "stop" }] },
  { model: "llama-3.1-8b-instruct", choices: [], usage: { prompt_tokens: 11, completion_tokens: 2 } },
]);

/** One streamed chat completion through `vm`: 120 ms to the first byte, 30 ms more to the end. */
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
    receiver.respondWith = { status: 200, delayMs: 0 };
  };

  it("exports one span per sampled LLM request with every GenAI field, and nests the model server under it", async () => {
    reset();
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: spansConfig(), clusters: { otel: receiver.url } });
    const s = streamedChat(vm, clock, [["traceparent", `00-${TRACE}-${PARENT}-01`]]);
    assert.equal(vm.tickPeriodMs, 1000);
    vm.tick();
    await vm.settle();
    assert.equal(receiver.spans.length, 1);
    const span = receiver.spans[0]!;
    assert.equal(span.traceId, TRACE);
    assert.equal(span.parentSpanId, PARENT);
    assert.match(span.spanId, /^[0-9a-f]{16}$/);
    assert.equal(s.request.get("traceparent"), `00-${TRACE}-${span.spanId}-01`, "the upstream's parent is this proxy's span");
    assert.equal(span.name, "chat llama-3.1-8b");
    assert.equal(span.kind, 3);
    assert.equal(span.startTimeUnixNano, String(T0));
    assert.equal(span.endTimeUnixNano, String(T0 + 150_000_000n));
    assert.deepEqual(span.events, [{ timeUnixNano: String(T0 + 150_000_000n), name: "gen_ai.first_token" }], "the first content event is whole in the second chunk");
    const expected: Record<string, unknown> = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "vllm",
      "gen_ai.request.model": "llama-3.1-8b",
      "gen_ai.response.model": "llama-3.1-8b-instruct",
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 2,
      "gen_ai.response.finish_reasons": ["stop"],
      "tokentrace.token_trace_id": "tok-1",
      "http.route": "chat",
      "http.response.status_code": 200,
    };
    for (const [key, value] of Object.entries(expected)) assert.deepEqual(attr(span, key), value, key);
    assert.equal(span.status, undefined);
    assert.deepEqual(receiver.requests, [{ path: "/v1/traces", contentType: "application/json", service: "edge-proxy", spans: 1 }]);
    assert.equal(vm.stats.value("tokentrace_spans_exported_total"), 1);
    const text = JSON.stringify(receiver.spans);
    assert.ok(!text.includes("hello") && !text.includes("there"), "no prompt or completion text in spans");
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
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "llama-3.1-8b", stream: "true", finish_reason: "stop" }), 3);
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
