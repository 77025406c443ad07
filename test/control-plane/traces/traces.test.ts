// The control plane's OTLP/HTTP span receiver held to the OTLP specification's rules
// (opentelemetry-proto ac2c4b5 docs/specification.md): JSON with lowerCamelCase keys and hex ids,
// partial success for rejected spans, 400 / 413 / 415 as the spec says, gzip; memory bounded to
// maxSpans; and the dashboard's reads: recent LLM calls per route, lookup by trace id or
// x-token-trace-id.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import express from "express";
import { errorHandler } from "../../../control-plane/src/api/errors.js";
import { readAccess } from "../../../control-plane/src/api/auth.js";
import { traceReadRoutes, traceReceiverRoutes } from "../../../control-plane/src/traces/routes.js";
import { TraceStore } from "../../../control-plane/src/traces/store.js";
import { vllmRequestSpan } from "../../demo/vllm-spans.js";

const NS = 1_796_000_000_000_000_000n;

/** A span as the filter encodes one (filter/spans.ts encodeSpan). */
function filterSpan(n: number, opts: { route?: string; tokenTraceId?: string; status?: number; durationMs?: number } = {}): Record<string, unknown> {
  const start = NS + BigInt(n) * 1_000_000_000n;
  const end = start + BigInt((opts.durationMs ?? 400) * 1_000_000);
  return {
    traceId: `${"ab".repeat(15)}${n.toString(16).padStart(2, "0")}`,
    spanId: `${"cd".repeat(7)}${n.toString(16).padStart(2, "0")}`,
    name: "chat tokentrace-sim-1",
    kind: 3,
    startTimeUnixNano: start.toString(),
    endTimeUnixNano: end.toString(),
    attributes: [
      { key: "gen_ai.operation.name", value: { stringValue: "chat" } },
      { key: "gen_ai.request.model", value: { stringValue: "tokentrace-sim-1" } },
      { key: "gen_ai.usage.input_tokens", value: { intValue: "16" } },
      { key: "gen_ai.usage.output_tokens", value: { intValue: "12" } },
      { key: "gen_ai.response.finish_reasons", value: { arrayValue: { values: [{ stringValue: "stop" }] } } },
      { key: "tokentrace.token_trace_id", value: { stringValue: opts.tokenTraceId ?? `ttid-${n}` } },
      { key: "http.route", value: { stringValue: opts.route ?? "chat" } },
      { key: "http.response.status_code", value: { intValue: String(opts.status ?? 200) } },
    ],
    events: [{ timeUnixNano: (start + 125_000_000n).toString(), name: "gen_ai.first_token" }],
    ...(opts.status !== undefined && opts.status >= 500 ? { status: { code: 2 } } : {}),
  };
}

const exportBody = (spans: unknown[]): string => JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: "service.name", value: { stringValue: "sidecar" } }] }, scopeSpans: [{ scope: { name: "tokentrace" }, spans }] }] });

async function withReceiver(store: TraceStore, fn: (url: string) => Promise<void>): Promise<void> {
  const app = express();
  app.use(traceReceiverRoutes({ store, maxBodyBytes: 64 * 1024 }));
  app.use(traceReadRoutes({ store, read: readAccess([], "public") }));
  app.use(errorHandler(() => undefined));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}

const post = (url: string, body: string | Buffer, headers: Record<string, string> = { "content-type": "application/json" }) => fetch(`${url}/v1/traces`, { method: "POST", headers, body });

test("OTLP/HTTP JSON export: 200 with an empty ExportTraceServiceResponse, the calls listed per route and found by trace id (any case) or x-token-trace-id", async () => {
  const store = new TraceStore(100);
  await withReceiver(store, async (url) => {
    const res = await post(url, exportBody([filterSpan(1), filterSpan(2, { route: "completions" }), filterSpan(3, { tokenTraceId: "find-me", status: 500, durationMs: 900 })]));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.deepEqual(await res.json(), {});
    const chat = (await (await fetch(`${url}/v1/dashboard/traces?route=chat`)).json()) as { held: number; items: { traceId: string; tokenTraceId: string; durationMs: number; ttftMs: number; inputTokens: number; outputTokens: number; httpStatus: number; statusCode: number; model: string; service: string; finishReasons: string[] }[] };
    assert.equal(chat.held, 3);
    assert.deepEqual(chat.items.map((c) => c.tokenTraceId), ["find-me", "ttid-1"], "newest first, chat only");
    assert.deepEqual(
      [chat.items[1]!.durationMs, chat.items[1]!.ttftMs, chat.items[1]!.inputTokens, chat.items[1]!.outputTokens, chat.items[1]!.httpStatus, chat.items[1]!.model, chat.items[1]!.service, chat.items[1]!.finishReasons],
      [400, 125, 16, 12, 200, "tokentrace-sim-1", "sidecar", ["stop"]],
    );
    const errors = (await (await fetch(`${url}/v1/dashboard/traces?route=chat&errors=true`)).json()) as { items: { statusCode: number }[] };
    assert.deepEqual(errors.items.map((c) => c.statusCode), [2]);
    const slow = (await (await fetch(`${url}/v1/dashboard/traces?minDurationMs=500`)).json()) as { items: { tokenTraceId: string }[] };
    assert.deepEqual(slow.items.map((c) => c.tokenTraceId), ["find-me"]);
    const byToken = (await (await fetch(`${url}/v1/dashboard/traces?id=find-me`)).json()) as { items: { traceId: string }[] };
    assert.deepEqual(byToken.items.map((c) => c.traceId), [`${"ab".repeat(15)}03`]);
    const byTrace = (await (await fetch(`${url}/v1/dashboard/traces?id=${"AB".repeat(15)}01`)).json()) as { items: { tokenTraceId: string }[] };
    assert.deepEqual(byTrace.items.map((c) => c.tokenTraceId), ["ttid-1"], "hex ids are case-insensitive");
    assert.equal((await fetch(`${url}/v1/dashboard/traces?limit=0`)).status, 400);
  });
});

test("OTLP/HTTP JSON export: spans breaking the encoding rules are rejected alone (partialSuccess), the rest kept", async () => {
  const store = new TraceStore(100);
  await withReceiver(store, async (url) => {
    const zeroTrace = { ...filterSpan(1), traceId: "0".repeat(32) };
    const base64Id = { ...filterSpan(2), spanId: "zc3NzM3NzM0=" };
    // Original (snake_case) field names are not OTLP/JSON: trace_id is an unknown field, so traceId is missing.
    const snake = { ...filterSpan(3), traceId: undefined, trace_id: "ab".repeat(16) };
    const enumName = { ...filterSpan(4), kind: "SPAN_KIND_CLIENT" };
    const res = await post(url, exportBody([zeroTrace, base64Id, snake, enumName, filterSpan(5)]));
    assert.equal(res.status, 200);
    const body = (await res.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    assert.equal(body.partialSuccess.rejectedSpans, "4", "int64 as a decimal string");
    assert.match(body.partialSuccess.errorMessage, /traceId must be 32 hex characters/);
    assert.match(body.partialSuccess.errorMessage, /spanId must be 16 hex characters/);
    assert.equal(store.size, 1);
  });
});

test("OTLP/HTTP: 400 for a body that is no export request, 413 over the limit (also after gunzip), 415 for another content type or an unknown encoding; gzip accepted", async () => {
  const store = new TraceStore(100);
  await withReceiver(store, async (url) => {
    const notJson = await post(url, "{");
    assert.equal(notJson.status, 400);
    assert.deepEqual(await notJson.json(), { code: 3, message: "the body is not valid JSON" });
    assert.equal((await post(url, JSON.stringify({ resourceSpans: {} }))).status, 400);
    assert.equal((await post(url, JSON.stringify([1]))).status, 400);
    const other = await post(url, "<spans/>", { "content-type": "application/xml" });
    assert.equal(other.status, 415);
    assert.match(((await other.json()) as { message: string }).message, /application\/json or application\/x-protobuf/);
    assert.equal((await post(url, exportBody([filterSpan(1)]), { "content-type": "application/json", "content-encoding": "br" })).status, 415);
    assert.equal((await post(url, "x".repeat(70 * 1024))).status, 413);
    const bomb = gzipSync(Buffer.alloc(200 * 1024, 0x20));
    assert.ok(bomb.length < 64 * 1024);
    assert.equal((await post(url, bomb, { "content-type": "application/json", "content-encoding": "gzip" })).status, 413, "the limit holds after decompression");
    assert.equal((await post(url, Buffer.from("not gzip"), { "content-type": "application/json", "content-encoding": "gzip" })).status, 400);
    const zipped = await post(url, gzipSync(exportBody([filterSpan(7)])), { "content-type": "application/json; charset=utf-8", "content-encoding": "gzip" });
    assert.equal(zipped.status, 200);
    assert.equal(store.size, 1);
  });
});

test("the store holds at most maxSpans: the oldest spans and their index entries go first", () => {
  const store = new TraceStore(3);
  const asRecord = (n: number) => ({ traceId: `${"ab".repeat(15)}${n.toString(16).padStart(2, "0")}`, spanId: "cd".repeat(8), parentSpanId: "", name: "chat", kind: 3, startMs: n, endMs: n + 1, statusCode: 0, service: "", attributes: new Map<string, string | number | boolean | string[]>([["gen_ai.operation.name", "chat"], ["tokentrace.token_trace_id", `t${n}`]]), events: [] });
  store.add([1, 2, 3, 4, 5].map(asRecord));
  assert.equal(store.size, 3);
  assert.equal(store.accepted, 5);
  assert.deepEqual(store.lookup("t1"), []);
  assert.deepEqual(store.lookup("t5").map((c) => c.startMs), [5]);
  assert.deepEqual(store.recent({ limit: 10 }).map((c) => c.tokenTraceId), ["t5", "t4", "t3"]);
  assert.throws(() => new TraceStore(0), /maxSpans must be a positive integer/);
});

interface ProtoType {
  fromObject(object: object): unknown;
  encode(message: unknown): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: object): Record<string, unknown>;
}
// The opentelemetry-proto messages as the OpenTelemetry JS project generates them (protobufjs), to
// send what a Collector's otlphttp exporter sends by default and to read the receiver's answer.
const generated = createRequire(import.meta.url)("@opentelemetry/otlp-transformer/build/src/generated/root.js") as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoType; ExportTraceServiceResponse: ProtoType } } } } };
};
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = generated.opentelemetry.proto.collector.trace.v1;

/** A JSON export body as binary protobuf (hex ids become bytes). */
function protobufOf(json: string): Buffer {
  const withBytes = JSON.parse(json, (key, value: unknown) => (["traceId", "spanId", "parentSpanId"].includes(key) && typeof value === "string" ? Buffer.from(value, "hex") : value)) as object;
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(withBytes)).finish());
}

test("OTLP/HTTP binary protobuf (a Collector's default): decoded by the same rules as JSON, answered in protobuf with partial success", async () => {
  const store = new TraceStore(100);
  await withReceiver(store, async (url) => {
    const ok = await post(url, protobufOf(exportBody([filterSpan(1, { tokenTraceId: "proto-1", status: 503 }), filterSpan(2)])), { "content-type": "application/x-protobuf" });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("content-type"), "application/x-protobuf");
    assert.equal((await ok.arrayBuffer()).byteLength, 0, "an empty ExportTraceServiceResponse");
    const [call] = store.lookup("proto-1");
    assert.deepEqual(
      [call!.traceId, call!.spanId, call!.durationMs, call!.ttftMs, call!.inputTokens, call!.httpStatus, call!.statusCode, call!.finishReasons, call!.service, call!.route],
      [`${"ab".repeat(15)}01`, `${"cd".repeat(7)}01`, 400, 125, 16, 503, 2, ["stop"], "sidecar", "chat"],
    );
    const bad = await post(url, protobufOf(exportBody([{ ...filterSpan(3), traceId: "00".repeat(16) }, filterSpan(4)])), { "content-type": "application/x-protobuf" });
    assert.equal(bad.status, 200);
    const answer = ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(new Uint8Array(await bad.arrayBuffer())), { longs: String });
    assert.deepEqual(answer, { partialSuccess: { rejectedSpans: "1", errorMessage: "traceId must be 32 hex characters, not all zero" } });
    assert.equal(store.size, 3);
    const garbage = await post(url, Buffer.from([0x0a, 0xff, 0xff]), { "content-type": "application/x-protobuf" });
    assert.equal(garbage.status, 400);
    assert.equal(garbage.headers.get("content-type"), "application/x-protobuf");
    assert.equal((await post(url, "x", { "content-type": "text/plain" })).status, 415);
  });
});

test("a call looked up by x-token-trace-id comes with the model server's own span (vLLM's llm_request, which knows no token trace id); a chart point's window and threshold select calls", async () => {
  const store = new TraceStore(100);
  await withReceiver(store, async (url) => {
    const proxy = filterSpan(7, { tokenTraceId: "walk-me", durationMs: 900 });
    // The span vLLM writes as the proxy span's child (test/demo/vllm-spans.ts follows vLLM's do_tracing).
    const startMs = Number((NS + 7n * 1_000_000_000n) / 1_000_000n);
    const child = vllmRequestSpan({
      traceparent: `00-${proxy.traceId as string}-${proxy.spanId as string}-01`,
      arrivalWallMs: startMs + 5,
      timings: { arrivalMs: 100, scheduledMs: 400, firstTokenMs: 520, finishedMs: 990, promptTokens: 16, outputTokens: 12, preemptions: 0 },
      requestId: "chatcmpl-7",
      model: "tokentrace-sim-1",
      finishReason: "stop",
    })!;
    assert.equal((await post(url, exportBody([proxy, filterSpan(8, { durationMs: 200 }), child]))).status, 200);
    const found = (await (await fetch(`${url}/v1/dashboard/traces?id=walk-me`)).json()) as { items: { name: string; parentSpanId: string; spanId: string; startMs: number; durationMs: number; attributes: Record<string, unknown> }[] };
    assert.deepEqual(found.items.map((c) => c.name), ["chat tokentrace-sim-1", "llm_request"]);
    const [p, c] = found.items as [(typeof found.items)[0], (typeof found.items)[0]];
    assert.equal(c.parentSpanId, p.spanId);
    assert.deepEqual([c.startMs - p.startMs, c.durationMs, c.attributes["gen_ai.latency.time_in_queue"], c.attributes["gen_ai.latency.time_in_model_prefill"], c.attributes["gen_ai.latency.time_in_model_decode"]], [5, 890, 0.3, 0.12, 0.47]);
    const listed = (await (await fetch(`${url}/v1/dashboard/traces`)).json()) as { items: { name: string }[] };
    assert.ok(!listed.items.some((i) => i.name === "llm_request"), "the model server's span is no LLM call of its own in the list");

    const inWindow = async (query: string): Promise<string[]> => ((await (await fetch(`${url}/v1/dashboard/traces?${query}`)).json()) as { items: { tokenTraceId: string }[] }).items.map((i) => i.tokenTraceId);
    assert.deepEqual(await inWindow(`fromMs=${startMs}&toMs=${startMs + 500}`), ["walk-me"]);
    assert.deepEqual(await inWindow(`fromMs=${startMs}`), ["ttid-8", "walk-me"]);
    assert.deepEqual(await inWindow(`toMs=${startMs + 999}&minDurationMs=100`), ["walk-me"]);
    assert.deepEqual(await inWindow(`minTtftMs=125`), ["ttid-8", "walk-me"]);
    assert.deepEqual(await inWindow(`minTtftMs=126`), []);
    const bad = await fetch(`${url}/v1/dashboard/traces?fromMs=-1`);
    assert.equal(bad.status, 400);
    assert.deepEqual(((await bad.json()) as { details: unknown[] }).details, [{ field: "fromMs", reason: 'must be a number >= 0, got "-1"' }]);
  });
});
