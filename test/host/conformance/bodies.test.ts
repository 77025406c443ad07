// Conformance: body buffers as Envoy's Context::getBuffer, Context::decodeData/encodeData and
// Buffer::copyFrom answer. One test per rule.
import { test } from "node:test";
import assert from "node:assert/strict";
import { callStore, seq } from "../support/proxy-module.js";
import { op } from "../support/wasm-writer.js";
import { BadArgument, i, load, Ok, out, text, u32 } from "./support.js";

const REQUEST_BODY = 0;
const RESPONSE_BODY = 1;
const BODY_CALLS = ["proxy_get_buffer_status", "proxy_get_buffer_bytes", "proxy_set_buffer_bytes", "proxy_set_effective_context", "proxy_continue_stream"];
const status = (at: number, type: number, lengthAt: number) => callStore(at, "env.proxy_get_buffer_status", i(type), i(lengthAt), i(lengthAt + 4));
const storeParam = (addr: number, param: number) => () => [...op.i32(addr), ...op.get(param), ...op.store];

test("Context::decodeData: while the filter buffers (StopIterationAndBuffer) its body is everything held, shown again with each chunk and readable between callbacks", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    imports: BODY_CALLS,
    returns: { proxy_on_request_body: 1 },
    callbacks: {
      proxy_on_request_body: storeParam(200, 1),
      proxy_on_tick: seq(callStore(100, "env.proxy_set_effective_context", i(2)), status(104, REQUEST_BODY, 16)),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.requestBody("ab", false);
  vm.tick();
  assert.deepEqual([u32(vm, 200), u32(vm, 104), u32(vm, 16)], [2, Ok, 2]);
  s.requestBody("cd", false);
  vm.tick();
  assert.deepEqual([u32(vm, 200), u32(vm, 16)], [4, 4], "the callback was given the whole buffered body");
  assert.equal(s.lastRequestChunk.length, 0, "nothing went upstream yet");
});

test("Context::getBuffer: outside its callback (once the filter continued) a body is an empty buffer, and set_buffer_bytes on it is BadArgument", async () => {
  const vm = await load({
    imports: BODY_CALLS,
    data: [text(1024, "x")],
    callbacks: { proxy_on_response_headers: seq(status(100, REQUEST_BODY, 16), callStore(104, "env.proxy_set_buffer_bytes", i(REQUEST_BODY), i(0), i(0), i(1024), i(1))) },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.requestBody("body", true);
  s.responseHeaders([[":status", "200"]], true);
  assert.deepEqual([u32(vm, 100), u32(vm, 16), u32(vm, 104)], [Ok, 0, BadArgument]);
  assert.equal(s.lastRequestChunk.toString(), "body");
});

test("Buffer::copyFrom: start 0 drains `length` bytes then prepends; start inside the body is BadArgument; start at the end appends", async () => {
  const vm = await load({
    imports: BODY_CALLS,
    data: [text(1024, "XY"), text(1030, "!")],
    callbacks: {
      proxy_on_request_body: seq(
        callStore(100, "env.proxy_set_buffer_bytes", i(REQUEST_BODY), i(0), i(2), i(1024), i(2)),
        callStore(104, "env.proxy_set_buffer_bytes", i(REQUEST_BODY), i(1), i(1), i(1030), i(1)),
        callStore(108, "env.proxy_set_buffer_bytes", i(REQUEST_BODY), i(4), i(0), i(1030), i(1)),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.requestBody("abcd", true);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [Ok, BadArgument, Ok]);
  assert.equal(s.lastRequestChunk.toString(), "XYcd!");
});

test("Context::encodeData: StopIterationAndWatermark holds the chunk without showing it again; Continue sends what was held with the new chunk", async () => {
  const vm = await load({
    imports: BODY_CALLS,
    callbacks: { proxy_on_response_body: storeParam(200, 1) },
    // Watermark (2) until the end of the body, then Continue.
    computed: { proxy_on_response_body: () => [...op.i32(2), ...op.get(2), ...op.i32(2), ...op.mul, ...op.sub] },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]], true);
  s.responseHeaders([[":status", "200"]]);
  s.responseBody("one", false);
  assert.equal(s.lastResponseChunk.length, 0);
  s.responseBody("two", true);
  assert.equal(u32(vm, 200), 3, "only the new chunk was shown");
  assert.equal(s.lastResponseChunk.toString(), "onetwo");
});

test("get_buffer_bytes: reads are clipped to the body, and nothing to copy is pointer 0, size 0", async () => {
  const vm = await load({
    imports: BODY_CALLS,
    callbacks: {
      proxy_on_response_body: seq(
        callStore(100, "env.proxy_get_buffer_bytes", i(RESPONSE_BODY), i(2), i(100), i(16), i(20)),
        callStore(104, "env.proxy_get_buffer_bytes", i(RESPONSE_BODY), i(9), i(1), i(24), i(28)),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]], true);
  s.responseHeaders([[":status", "200"]]);
  s.responseBody("hello", true);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 24), u32(vm, 28)], [Ok, Ok, 0, 0]);
  assert.equal(out(vm, 16, 20).toString(), "llo");
});

test("ActiveStreamDecoderFilter::requestDataTooLarge: a filter that buffers the request body (StopIterationAndBuffer) past the buffer limit gets Envoy's 413, and the VM is not called again", async () => {
  const vm = await load({ imports: BODY_CALLS, returns: { proxy_on_request_body: 1 }, callbacks: { proxy_on_request_body: storeParam(200, 1) } }, { bufferLimitBytes: 10 });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  assert.equal(s.requestBody("123456", false), 1);
  assert.equal(u32(vm, 200), 6);
  // Context::decodeData adds the chunk to the buffered body before the VM call: 12 bytes > 10.
  assert.equal(s.requestBody("789012", false), 1);
  assert.equal(u32(vm, 200), 6, "the filter never saw the chunk that crossed the limit");
  assert.deepEqual(s.localResponse, { statusCode: 413, details: "request_payload_too_large", body: Buffer.from("Payload Too Large"), headers: [], grpcStatus: -1 });
  assert.equal(s.ended, true);
});

test("ActiveStreamDecoderFilter::requestDataTooLarge: exactly at the limit is not over it, and a body the filter lets stream (StopIterationAndWatermark) is never answered 413", async () => {
  const atLimit = await load({ imports: BODY_CALLS, returns: { proxy_on_request_body: 1 } }, { bufferLimitBytes: 10 });
  const a = atLimit.newStream();
  a.requestHeaders([[":path", "/"]]);
  a.requestBody("12345", false);
  a.requestBody("67890", false);
  assert.equal(a.localResponse, undefined, "10 bytes at a limit of 10");
  const watermark = await load({ imports: BODY_CALLS, returns: { proxy_on_request_body: 2 } }, { bufferLimitBytes: 10 });
  const w = watermark.newStream();
  w.requestHeaders([[":path", "/"]]);
  for (let i = 0; i < 4; i++) w.requestBody("123456", false);
  assert.equal(w.localResponse, undefined, "decoder_filters_streaming_: over the limit only pauses the downstream");
});

test("commonHandleAfterDataCallback: Continue after a buffering stop adds the chunk to the buffered body first, so the chunk that crosses the limit still gets 413", async () => {
  const vm = await load({
    imports: BODY_CALLS,
    // Buffer (1) until end of stream, then Continue (0).
    computed: { proxy_on_request_body: () => [...op.i32(1), ...op.get(2), ...op.sub] },
  }, { bufferLimitBytes: 10 });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.requestBody("1234", false);
  s.requestBody("5678", false);
  s.requestBody("90ab", true);
  assert.equal(s.localResponse?.statusCode, 413);
  assert.equal(s.lastRequestChunk.length, 0, "nothing went upstream");
});
