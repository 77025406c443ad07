// The simulated vLLM's spans follow vLLM's do_tracing (vllm@d078226 output_processor.py) and the
// OpenTelemetry SDK's default sampler: a child of the incoming traceparent, dropped when that
// parent is not sampled, a root of its own when there is none; sent in batches over OTLP/HTTP JSON.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { vllmRequestSpan, VllmSpanExporter } from "./vllm-spans.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const input = (traceparent: string | undefined) => ({
  traceparent,
  arrivalWallMs: 1_796_000_000_000,
  timings: { arrivalMs: 10, scheduledMs: 250, firstTokenMs: 400, finishedMs: 1_010, promptTokens: 900, outputTokens: 64, preemptions: 0 },
  requestId: "chatcmpl-1",
  model: "m",
  finishReason: "length",
});

test("vLLM's request span: llm_request, SERVER, a child of a sampled traceparent, its latencies in seconds from the engine's timestamps", () => {
  const span = vllmRequestSpan(input(`00-${TRACE}-${PARENT}-01`))!;
  assert.deepEqual([span.name, span.kind, span.traceId, span.parentSpanId, span.startTimeUnixNano, span.endTimeUnixNano], ["llm_request", 2, TRACE, PARENT, "1796000000000000000", "1796000001000000000"]);
  const attrs = Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
  assert.deepEqual(attrs, {
    "gen_ai.latency.time_to_first_token": 0.39,
    "gen_ai.latency.e2e": 1,
    "gen_ai.latency.time_in_queue": 0.24,
    "gen_ai.usage.prompt_tokens": "900",
    "gen_ai.usage.completion_tokens": "64",
    "gen_ai.latency.time_in_model_prefill": 0.15,
    "gen_ai.latency.time_in_model_decode": 0.61,
    "gen_ai.latency.time_in_model_inference": 0.76,
    "gen_ai.request.id": "chatcmpl-1",
    "gen_ai.response.finish_reasons": '["length"]',
    "gen_ai.response.model": "m",
  });
});

test("vLLM's sampler (ParentBased(ALWAYS_ON)): an unsampled parent exports nothing; no parent, or one the propagator cannot read, starts a trace", () => {
  assert.equal(vllmRequestSpan(input(`00-${TRACE}-${PARENT}-00`)), undefined);
  for (const traceparent of [undefined, "garbage", `00-${"0".repeat(32)}-${PARENT}-01`, `ff-${TRACE}-${PARENT}-01`]) {
    const span = vllmRequestSpan(input(traceparent))!;
    assert.equal(span.parentSpanId, undefined, String(traceparent));
    assert.match(span.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(span.traceId, TRACE);
  }
});

test("the exporter sends full batches at once and the rest at the interval, as OTLP/HTTP JSON with service.name vllm; nothing after close", async () => {
  const bodies: { resourceSpans: { resource: { attributes: { key: string; value: { stringValue: string } }[] }; scopeSpans: { spans: unknown[] }[] }[] }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      assert.equal(req.headers["content-type"], "application/json");
      bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const exporter = new VllmSpanExporter({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, batchSize: 2, flushIntervalMs: 60_000 });
    for (let i = 0; i < 3; i++) exporter.add(vllmRequestSpan(input(`00-${TRACE}-${PARENT}-01`))!);
    await exporter.close();
    exporter.add(vllmRequestSpan(input(`00-${TRACE}-${PARENT}-01`))!);
    await exporter.flush();
    assert.deepEqual(bodies.map((b) => b.resourceSpans[0]!.scopeSpans[0]!.spans.length), [2, 1]);
    assert.deepEqual(bodies[0]!.resourceSpans[0]!.resource.attributes, [{ key: "service.name", value: { stringValue: "vllm" } }]);
    assert.deepEqual(exporter.counts, { exported: 3, dropped: 0 });
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
