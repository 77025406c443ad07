// Conformance: proxy_get_property / proxy_set_property through a module, as Envoy's
// Context::getProperty, findValue, setProperty and the expression library's wrappers answer.
// (Every attribute's encoding, resolved directly: ../properties.test.ts.) One test per rule.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodePairs, type StreamProperties } from "../index.js";
import { encodeNode } from "../proto.js";
import { callStore, seq } from "../support/proxy-module.js";
import { i, load, NotFound, Ok, out, text, u32 } from "./support.js";

const PROPERTY_CALLS = ["proxy_get_property", "proxy_set_property"];
const getAt = (status: number, pathAt: number, path: string, outAt: number) => callStore(status, "env.proxy_get_property", i(pathAt), i(Buffer.byteLength(path)), i(outAt), i(outAt + 4));

test("Context::findValue: request attributes that need the request headers exist only while those are readable (request.time always)", async () => {
  const vm = await load({
    imports: PROPERTY_CALLS,
    data: [text(1024, "request\0path"), text(1040, "request\0time")],
    callbacks: {
      proxy_on_request_headers: getAt(100, 1024, "request\0path", 16),
      proxy_on_response_headers: seq(getAt(104, 1024, "request\0path", 24), getAt(108, 1040, "request\0time", 32)),
      proxy_on_log: getAt(112, 1024, "request\0path", 40),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/v1/chat/completions"]], true);
  s.responseHeaders([[":status", "200"]], true);
  s.end();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112)], [Ok, NotFound, Ok, Ok], "NotFound in the response path, the access-log map in proxy_on_log");
  assert.equal(out(vm, 16, 20).toString(), "/v1/chat/completions");
  assert.equal(out(vm, 40, 44).toString(), "/v1/chat/completions");
});

test("StreamActivation::FindValue: Envoy's attribute set is served (connection, source, destination, upstream, xds, metadata, filter_state)", async () => {
  const paths = ["connection\0requested_server_name", "source\0address", "destination\0port", "upstream\0address", "xds\0virtual_host_name", "metadata\0filter_metadata\0istio\0mesh", "filter_state\0k"];
  const vm = await load({
    imports: PROPERTY_CALLS,
    data: paths.map((p, k) => text(1024 + 64 * k, p)),
    callbacks: { proxy_on_request_headers: seq(...paths.map((p, k) => getAt(100 + 4 * k, 1024 + 64 * k, p, 200 + 8 * k))) },
  });
  const facts: StreamProperties = {
    requestedServerName: "llm.example",
    source: { address: "10.0.0.9:51000", port: 51000 },
    destination: { address: "10.0.0.1:8000", port: 8000 },
    upstream: { address: "10.1.1.1:8000", port: 8000 },
    routeName: "chat",
    virtualHostName: "llm:8000",
    dynamicMetadata: { istio: { mesh: "m1" } },
    filterState: { k: "v" },
  };
  vm.newStream(facts).requestHeaders([[":path", "/"]], true);
  assert.deepEqual(paths.map((_p, k) => u32(vm, 100 + 4 * k)), paths.map(() => Ok));
  const values = paths.map((_p, k) => out(vm, 200 + 8 * k, 204 + 8 * k));
  assert.deepEqual([values[0]!.toString(), values[1]!.toString(), values[2]!.readBigInt64LE(0), values[3]!.toString(), values[4]!.toString(), values[5]!.toString(), values[6]!.toString()], ["llm.example", "10.0.0.9:51000", 8000n, "10.1.1.1:8000", "llm:8000", "m1", "v"]);
});

test("StreamProperties: a test can give facts only where Envoy serves an attribute", async () => {
  const vm = await load({});
  assert.throws(() => vm.newStream({ extra: { "x\0custom": Uint8Array.from([1]) } } as unknown as StreamProperties), /StreamProperties.extra: Envoy serves no attribute from it/);
  assert.throws(() => vm.newStream({ requestId: "r" } as unknown as StreamProperties), /StreamProperties.requestId/);
});

test("HeadersWrapper: request.headers.<name> is every value of the name joined by a comma, request.headers each name once", async () => {
  const vm = await load({
    imports: PROPERTY_CALLS,
    data: [text(1024, "request\0headers\0x-dup"), text(1060, "request\0headers")],
    callbacks: { proxy_on_request_headers: seq(getAt(100, 1024, "request\0headers\0x-dup", 16), getAt(104, 1060, "request\0headers", 24)) },
  });
  vm.newStream().requestHeaders([[":path", "/"], ["x-dup", "a"], ["x-dup", "b"]], true);
  assert.equal(out(vm, 16, 20).toString(), "a,b");
  assert.deepEqual(decodePairs(out(vm, 24, 28)), [[":path", "/"], ["x-dup", "a,b"]]);
});

test("XDSLookupValues node: xds.node is Envoy's Node message (protobuf), in a root context too; the top-level node is NotFound", async () => {
  const node = { id: "sidecar~10.0.0.1~chat-0.llm~llm.svc.cluster.local", cluster: "chat.llm" };
  const vm = await load({ tickPeriodMs: 1000, imports: PROPERTY_CALLS, data: [text(1024, "xds\0node"), text(1040, "node")], callbacks: { proxy_on_tick: seq(getAt(100, 1024, "xds\0node", 16), getAt(104, 1040, "node", 24)) } }, { node });
  vm.tick();
  assert.deepEqual([u32(vm, 100), u32(vm, 104)], [Ok, NotFound]);
  assert.deepEqual(out(vm, 16, 20), encodeNode(node));
});

test("Context::setProperty: a value set in a stream is a filter-state CelState (wasm.<name>), readable by name and under filter_state; a root context has no stream to set it on", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    imports: PROPERTY_CALLS,
    data: [text(1024, "mine"), text(1030, "v1"), text(1040, "filter_state\0wasm.mine")],
    callbacks: {
      proxy_on_request_headers: seq(callStore(100, "env.proxy_set_property", i(1024), i(4), i(1030), i(2)), getAt(104, 1024, "mine", 16), getAt(108, 1040, "filter_state\0wasm.mine", 24)),
      proxy_on_tick: callStore(112, "env.proxy_set_property", i(1024), i(4), i(1030), i(2)),
    },
  });
  vm.newStream().requestHeaders([[":path", "/"]], true);
  vm.tick();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112)], [Ok, Ok, Ok, NotFound]);
  assert.equal(out(vm, 16, 20).toString(), "v1");
  assert.equal(out(vm, 24, 28).toString(), "v1");
});

test("Context::getProperty: a path Envoy does not serve is NotFound, a wrapper asked for whole is SerializationFailure", async () => {
  const vm = await load({ imports: PROPERTY_CALLS, data: [text(1024, "x\0custom"), text(1040, "request"), text(1050, "request\0nope")], callbacks: { proxy_on_request_headers: seq(getAt(100, 1024, "x\0custom", 16), getAt(104, 1040, "request", 16), getAt(108, 1050, "request\0nope", 16)) } });
  vm.newStream().requestHeaders([[":path", "/"]], true);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [NotFound, 3, NotFound]);
});
