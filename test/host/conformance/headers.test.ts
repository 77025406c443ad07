// Conformance: header maps as Envoy's Context::getMap / getConstMap and HeaderMapImpl answer.
// One test per rule; each names the upstream function it checks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { callStore, seq } from "../support/proxy-module.js";
import { BadArgument, i, load, NotFound, Ok, out, text, u32 } from "./support.js";

const REQUEST = 0;
const REQUEST_TRAILERS = 1;
const RESPONSE = 2;
const RESPONSE_TRAILERS = 3;
const get = (status: number, map: number, keyAt: number, keyLen: number, outAt = 16) => callStore(status, "env.proxy_get_header_map_value", i(map), i(keyAt), i(keyLen), i(outAt), i(outAt + 4));
const add = (status: number, map: number, keyAt: number, keyLen: number, valueAt: number, valueLen: number) => callStore(status, "env.proxy_add_header_map_value", i(map), i(keyAt), i(keyLen), i(valueAt), i(valueLen));
const HEADER_CALLS = ["proxy_get_header_map_value", "proxy_add_header_map_value", "proxy_replace_header_map_value", "proxy_remove_header_map_value", "proxy_get_header_map_pairs", "proxy_get_header_map_size", "proxy_continue_stream", "proxy_set_effective_context"];

test("Context::decodeHeaders: request headers exist inside proxy_on_request_headers only; later callbacks get BadArgument", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, ":path")],
    callbacks: { proxy_on_request_headers: get(100, REQUEST, 1024, 5), proxy_on_request_body: get(104, REQUEST, 1024, 5), proxy_on_response_headers: get(108, REQUEST, 1024, 5) },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/a"]]);
  assert.equal(out(vm, 16, 20).toString(), "/a");
  s.requestBody("x", true);
  s.responseHeaders([[":status", "200"]], true);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [Ok, BadArgument, BadArgument]);
});

test("Context::decodeHeaders: a stream held in proxy_on_request_headers keeps its map, readable and writable, until proxy_continue_stream drops it", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    imports: HEADER_CALLS,
    data: [text(1024, "x-held"), text(1040, "1")],
    returns: { proxy_on_request_headers: 1 },
    callbacks: {
      proxy_on_tick: seq(
        callStore(100, "env.proxy_set_effective_context", i(2)),
        add(104, REQUEST, 1024, 6, 1040, 1),
        callStore(108, "env.proxy_continue_stream", i(0)),
        add(112, REQUEST, 1024, 6, 1040, 1),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  vm.tick();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112)], [Ok, Ok, Ok, BadArgument]);
  assert.deepEqual(s.request.getAll("x-held"), ["1"]);
  assert.deepEqual(s.paused, {}, "continue_stream let the request go on");
});

test("Context::continueStream: the request maps are dropped at once, even inside the callback", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, ":path")],
    callbacks: { proxy_on_request_headers: seq(get(100, REQUEST, 1024, 5), callStore(104, "env.proxy_continue_stream", i(0)), get(108, REQUEST, 1024, 5)) },
  });
  vm.newStream().requestHeaders([[":path", "/"]]);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [Ok, Ok, BadArgument]);
});

test("Context::encodeHeaders: response headers exist inside proxy_on_response_headers only", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, ":status")],
    callbacks: { proxy_on_request_headers: get(100, RESPONSE, 1024, 7), proxy_on_response_headers: get(104, RESPONSE, 1024, 7, 24), proxy_on_response_body: get(108, RESPONSE, 1024, 7) },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]], true);
  s.responseHeaders([[":status", "200"]]);
  assert.equal(out(vm, 24, 28).toString(), "200");
  s.responseBody("b", true);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [BadArgument, Ok, BadArgument]);
});

test("Context::decodeTrailers / encodeTrailers: each trailer map inside its own callback only", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, "t")],
    callbacks: {
      proxy_on_request_trailers: get(100, REQUEST_TRAILERS, 1024, 1),
      proxy_on_response_headers: get(104, REQUEST_TRAILERS, 1024, 1),
      proxy_on_response_trailers: get(108, RESPONSE_TRAILERS, 1024, 1),
      proxy_on_delete: get(112, RESPONSE_TRAILERS, 1024, 1),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.requestTrailers([["t", "1"]]);
  s.responseHeaders([[":status", "200"]]);
  s.responseTrailers([["t", "2"]]);
  s.end();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112)], [Ok, BadArgument, Ok, BadArgument]);
});

test("Context::getMap: request trailers can be added in the last request body callback, not before", async () => {
  const vm = await load({ imports: HEADER_CALLS, data: [text(1024, "x-t"), text(1040, "1")], callbacks: { proxy_on_request_body: add(100, REQUEST_TRAILERS, 1024, 3, 1040, 1) } });
  const early = vm.newStream();
  early.requestHeaders([[":path", "/"]]);
  early.requestBody("a", false);
  assert.equal(u32(vm, 100), BadArgument);
  const last = vm.newStream();
  last.requestHeaders([[":path", "/"]]);
  last.requestBody("a", true);
  assert.equal(u32(vm, 100), Ok);
  assert.deepEqual(last.requestTrailersMap.entries(), [["x-t", "1"]]);
});

test("Context::log / getConstMap: in proxy_on_log the request and response headers are the access-log maps (readable), request trailers are NotFound, nothing is writable", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, ":path"), text(1030, ":status"), text(1040, "t"), text(1044, "x")],
    callbacks: {
      proxy_on_log: seq(
        get(100, REQUEST, 1024, 5, 16),
        get(104, RESPONSE, 1030, 7, 24),
        get(108, REQUEST_TRAILERS, 1040, 1),
        add(112, REQUEST, 1044, 1, 1044, 1),
        callStore(116, "env.proxy_get_header_map_size", i(REQUEST), i(32)),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/logged"]]);
  s.requestTrailers([["t", "1"]]);
  s.responseHeaders([[":status", "204"]], true);
  s.end();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112), u32(vm, 116)], [Ok, Ok, NotFound, BadArgument, BadArgument]);
  assert.equal(out(vm, 16, 20).toString(), "/logged");
  assert.equal(out(vm, 24, 28).toString(), "204");
});

test("Context::getHeaderMapPairs: a map out of its lifetime is an empty map (Ok, pointer 0, size 0)", async () => {
  const vm = await load({ imports: HEADER_CALLS, callbacks: { proxy_on_response_headers: callStore(100, "env.proxy_get_header_map_pairs", i(REQUEST), i(16), i(20)) } });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"], ["x", "y"]], true);
  s.responseHeaders([[":status", "200"]], true);
  assert.deepEqual([u32(vm, 100), u32(vm, 16), u32(vm, 20)], [Ok, 0, 0]);
});

test("HeaderMapImpl: get gives the first value, pairs all of them, replace (setCopy) removes every value and adds one at the end, remove takes every value", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, "x-dup"), text(1030, "c"), text(1040, "x-gone")],
    callbacks: {
      proxy_on_request_headers: seq(
        get(100, REQUEST, 1024, 5, 16),
        callStore(104, "env.proxy_get_header_map_pairs", i(REQUEST), i(24), i(28)),
        callStore(108, "env.proxy_replace_header_map_value", i(REQUEST), i(1024), i(5), i(1030), i(1)),
        callStore(112, "env.proxy_remove_header_map_value", i(REQUEST), i(1040), i(6)),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"], ["x-dup", "a"], ["x-gone", "1"], ["other", "o"], ["x-dup", "b"], ["x-gone", "2"]]);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112)], [Ok, Ok, Ok, Ok]);
  assert.equal(out(vm, 16, 20).toString(), "a");
  const pairs = out(vm, 24, 28);
  assert.equal(pairs.readUInt32LE(0), 6, "every entry, duplicates included");
  assert.deepEqual(s.request.entries(), [[":path", "/"], ["other", "o"], ["x-dup", "c"]]);
});

test("HeaderMapImpl::insertByKey: Envoy's inline headers arrive joined with a comma, and add appends to them; other headers get a new entry", async () => {
  const vm = await load({
    imports: HEADER_CALLS,
    data: [text(1024, "x-forwarded-for"), text(1040, "user-agent"), text(1052, "b"), text(1056, "x-custom")],
    callbacks: { proxy_on_request_headers: seq(get(100, REQUEST, 1024, 15, 16), add(104, REQUEST, 1040, 10, 1052, 1), add(108, REQUEST, 1056, 8, 1052, 1)) },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"], ["x-forwarded-for", "10.0.0.1"], ["user-agent", "a"], ["x-custom", "a"], ["x-forwarded-for", "10.0.0.2"]]);
  assert.equal(out(vm, 16, 20).toString(), "10.0.0.1,10.0.0.2");
  assert.deepEqual(s.request.getAll("user-agent"), ["a,b"]);
  assert.deepEqual(s.request.getAll("x-custom"), ["a", "b"]);
});
