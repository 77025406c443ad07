// Conformance: proxy_send_local_response as cpp-host (send_local_response, stopNextIteration) and
// Envoy (Context::sendLocalResponse, FilterManager::sendLocalReply) run it. One test per rule.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodePairs } from "../index.js";
import { callDrop, callStore, seq } from "../support/proxy-module.js";
import { i, load, Ok, out, text, u32 } from "./support.js";

const CALLS = ["proxy_send_local_response", "proxy_get_header_map_value", "proxy_get_property", "proxy_get_buffer_status", "proxy_log"];
const EXTRA = encodePairs([["x-reason", "quota"]]);
const reply = (at: number, code: number) => callStore(at, "env.proxy_send_local_response", i(code), i(1024), i(6), i(1040), i(4), i(1100), i(EXTRA.length), i(-1));
const DATA = [text(1024, "denied"), text(1040, "nope"), { offset: 1100, bytes: EXTRA }, text(1200, ":status"), text(1210, "response\0code"), text(1230, "req"), text(1234, "resp"), text(1240, "body"), text(1246, "log")];
const logAt = (offset: number, len: number) => callDrop("env.proxy_log", i(2), i(offset), i(len));

test("FilterManager::sendLocalReplyViaFilterChain: a reply sent in proxy_on_request_headers goes through this filter's response callbacks, then the stream ends", async () => {
  const vm = await load({
    imports: CALLS,
    data: DATA,
    callbacks: {
      proxy_on_request_headers: seq(logAt(1230, 3), reply(100, 429)),
      proxy_on_response_headers: seq(logAt(1234, 4), callStore(104, "env.proxy_get_header_map_value", i(2), i(1200), i(7), i(16), i(20))),
      proxy_on_response_body: seq(logAt(1240, 4), callStore(108, "env.proxy_get_buffer_status", i(1), i(24), i(28))),
      proxy_on_log: logAt(1246, 3),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":method", "GET"], [":path", "/"]], true);
  assert.deepEqual(vm.logs.map((l) => l.message), ["req", "resp", "body", "log"]);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 24)], [Ok, Ok, Ok, 4]);
  assert.equal(out(vm, 16, 20).toString(), "429");
  assert.deepEqual(s.response.entries(), [[":status", "429"], ["content-length", "4"], ["content-type", "text/plain"], ["x-reason", "quota"]]);
  assert.equal(s.lastResponseChunk.toString(), "nope");
  assert.equal(s.ended, true);
});

test("send_local_response / convertVmCallResultToFilterHeadersStatus: the callback's status is forced to StopAllIterationAndWatermark", async () => {
  const vm = await load({ imports: CALLS, data: DATA, callbacks: { proxy_on_request_headers: reply(100, 403) } });
  const s = vm.newStream();
  assert.equal(s.requestHeaders([[":path", "/"]], true), 4);
  assert.deepEqual(s.stops, [{ callback: "proxy_on_request_headers", status: 0, filterStatus: 4 }]);
});

test("ResponseLookupValues code: at proxy_on_log response.code is the local reply's status", async () => {
  const vm = await load({ imports: CALLS, data: DATA, callbacks: { proxy_on_request_headers: reply(100, 403), proxy_on_log: callStore(104, "env.proxy_get_property", i(1210), i(13), i(16), i(20)) } });
  vm.newStream().requestHeaders([[":path", "/"]], true);
  assert.equal(u32(vm, 104), Ok);
  assert.equal(out(vm, 16, 20).readBigInt64LE(0), 403n);
});

test("FilterManager::sendDirectLocalReply: a reply sent in proxy_on_response_headers replaces the response around the filter, no more callbacks", async () => {
  const vm = await load({
    imports: CALLS,
    data: DATA,
    callbacks: { proxy_on_response_headers: reply(100, 503), proxy_on_response_body: logAt(1240, 4), proxy_on_log: callStore(104, "env.proxy_get_property", i(1210), i(13), i(16), i(20)) },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]], true);
  assert.equal(s.responseHeaders([[":status", "200"], ["content-type", "application/json"]]), 4);
  assert.equal(s.ended, true);
  assert.equal(s.response.get(":status"), "503");
  assert.equal(s.lastResponseChunk.toString(), "nope");
  assert.deepEqual(vm.logs, [], "no proxy_on_response_body");
  assert.equal(out(vm, 16, 20).readBigInt64LE(0), 503n);
  assert.throws(() => s.responseBody("late", true), /the stream has ended/);
});

test("Context::sendLocalResponse: a HEAD request's reply has no body callback", async () => {
  const vm = await load({ imports: CALLS, data: DATA, callbacks: { proxy_on_request_headers: reply(100, 404), proxy_on_response_body: logAt(1240, 4) } });
  const s = vm.newStream();
  s.requestHeaders([[":method", "HEAD"], [":path", "/"]], true);
  assert.deepEqual(vm.logs, []);
  assert.equal(s.response.get("content-length"), "4");
  assert.equal(s.lastResponseChunk.length, 0);
});
