// Property paths and value encodings, resolved directly (through a module: abi.test.ts and the
// conformance suite). Each case names the Envoy lookup it mirrors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WasmResult } from "./abi.js";
import { newStreamState, type StreamState } from "./context.js";
import { HeaderList } from "./header-list.js";
import { decodePairs } from "./pairs.js";
import { encodeInt64, getProperty, propertyPath, splitPropertyPath, type VmFacts } from "./properties.js";
import { encodeMetadata, encodeNode } from "./proto.js";
import { newStreamInfo, type StreamProperties } from "./stream-info.js";
import { ManualClock } from "./clock.js";

const vm: VmFacts = { rootId: "tokentrace", pluginName: "ns.tokentrace", vmId: "vm1", node: { id: "sidecar~10.0.0.1~p.ns~ns.svc.cluster.local", cluster: "p.ns", metadata: { NAMESPACE: "ns" } } };
const REQUEST: Array<[string, string]> = [[":method", "POST"], [":path", "/v1/chat?stream=1#frag"], [":authority", "llm:8000"], [":scheme", "http"], ["x-request-id", "rid-1"], ["user-agent", "ua/1"], ["x-dup", "a"], ["x-dup", "b"], ["content-length", "17"]];

/** A stream whose request headers callback is running (request_headers_ set), unless `live` is false. */
function stream(props: StreamProperties = {}, over: Partial<StreamState> = {}): StreamState {
  const s = newStreamState(2, 1, newStreamInfo(props, 1_700_000_000_000_000_000n, 0n));
  s.requestHeaders = new HeaderList(REQUEST, "request");
  s.requestHeadersSet = true;
  return Object.assign(s, over);
}
const str = (v: string): Buffer => Buffer.from(v);

test("paths are segments joined by NUL", () => {
  assert.equal(propertyPath("request", "headers", "x"), "request\0headers\0x");
  assert.deepEqual(splitPropertyPath("xds\0route_name"), ["xds", "route_name"]);
});

test("integers are int64 little-endian, 8 bytes", () => {
  assert.deepEqual([...encodeInt64(200)], [200, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual([...encodeInt64(-1)], [255, 255, 255, 255, 255, 255, 255, 255]);
  assert.deepEqual([...encodeInt64(1_700_000_000_000_000_000n)], [0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17]);
});

const cases: Array<[string, string, StreamState | undefined, Buffer | string | bigint | number]> = [
  ["Context::findValue plugin_root_id", "plugin_root_id", undefined, "tokentrace"],
  ["Context::findValue plugin_name", "plugin_name", undefined, "ns.tokentrace"],
  ["Context::findValue plugin_vm_id", "plugin_vm_id", undefined, "vm1"],
  ["XDSWrapper without stream info", "xds\0route_name", undefined, WasmResult.NotFound],
  ["XDSLookupValues route_name", "xds\0route_name", stream({ routeName: "chat" }), "chat"],
  ["XDSLookupValues route_name without a route", "xds\0route_name", stream(), WasmResult.NotFound],
  ["XDSLookupValues cluster_name", "xds\0cluster_name", stream({ clusterName: "outbound|8000||llm" }), "outbound|8000||llm"],
  ["XDSLookupValues virtual_host_name", "xds\0virtual_host_name", stream({ routeName: "r", virtualHostName: "llm:8000" }), "llm:8000"],
  ["XDSLookupValues filter_chain_name", "xds\0filter_chain_name", stream(), ""],
  ["XDSLookupValues listener_direction", "xds\0listener_direction", stream({ listenerDirection: 1 }), 1n],
  ["XDSLookupValues node.id (message field)", "xds\0node\0id", undefined, "sidecar~10.0.0.1~p.ns~ns.svc.cluster.local"],
  ["XDSLookupValues node.metadata (Struct as a map)", "xds\0node\0metadata\0NAMESPACE", undefined, "ns"],
  ["removed in 1.33: route_name", "route_name", stream({ routeName: "chat" }), WasmResult.NotFound],
  ["removed in 1.33: cluster_name", "cluster_name", stream({ clusterName: "c" }), WasmResult.NotFound],
  ["removed in 1.33: node", "node", stream(), WasmResult.NotFound],
  ["RequestLookupValues time", "request\0time", stream(), 1_700_000_000_000_000_000n],
  ["RequestLookupValues duration before completion", "request\0duration", stream(), WasmResult.NotFound],
  ["RequestLookupValues duration", "request\0duration", stream({}, { info: { ...newStreamInfo({}, 1n, 0n), durationNs: 5n } }), 5n],
  ["RequestLookupValues id (x-request-id)", "request\0id", stream(), "rid-1"],
  ["RequestLookupValues path", "request\0path", stream(), "/v1/chat?stream=1#frag"],
  ["RequestLookupValues url_path", "request\0url_path", stream(), "/v1/chat"],
  ["RequestLookupValues query (up to the fragment)", "request\0query", stream(), "stream=1"],
  ["RequestLookupValues host", "request\0host", stream(), "llm:8000"],
  ["RequestLookupValues method", "request\0method", stream(), "POST"],
  ["RequestLookupValues scheme", "request\0scheme", stream(), "http"],
  ["RequestLookupValues useragent", "request\0useragent", stream(), "ua/1"],
  ["RequestLookupValues referer absent", "request\0referer", stream(), WasmResult.NotFound],
  ["RequestLookupValues size from content-length", "request\0size", stream(), 17n],
  ["RequestLookupValues protocol", "request\0protocol", stream({ protocol: "HTTP/1.1" }), "HTTP/1.1"],
  ["HeadersWrapper: all values joined by a comma", "request\0headers\0x-dup", stream(), "a,b"],
  ["HeadersWrapper: absent", "request\0headers\0absent", stream(), WasmResult.NotFound],
  ["HeadersWrapper: an invalid header name", "request\0headers\0bad name", stream(), WasmResult.NotFound],
  ["activation headers: the request map is gone after its callback", "request\0path", stream({}, { requestHeadersSet: false }), WasmResult.NotFound],
  ["activation headers: the access-log map in proxy_on_log", "request\0path", stream({}, { requestHeadersSet: false, accessLogPhase: true }), "/v1/chat?stream=1#frag"],
  ["ResponseLookupValues code before a response", "response\0code", stream(), WasmResult.NotFound],
  ["ResponseLookupValues code", "response\0code", stream({}, { info: { ...newStreamInfo({}, 1n, 0n), responseCode: 429 } }), 429n],
  ["ResponseLookupValues grpc_status inferred from the HTTP status", "response\0grpc_status", stream({}, { info: { ...newStreamInfo({}, 1n, 0n), responseCode: 503 } }), 14n],
  ["ResponseLookupValues flags", "response\0flags", stream(), 0n],
  ["ConnectionLookupValues mtls without TLS", "connection\0mtls", stream(), str("\x00")],
  ["ConnectionLookupValues id (uint64)", "connection\0id", stream({ connectionId: 7n }), 7n],
  ["ConnectionLookupValues tls_version without TLS", "connection\0tls_version", stream(), WasmResult.NotFound],
  ["UpstreamLookupValues address", "upstream\0address", stream({ upstream: { address: "10.1.2.3:8000", port: 8000 } }), "10.1.2.3:8000"],
  ["UpstreamLookupValues request_attempt_count", "upstream\0request_attempt_count", stream({ attemptCount: 2 }), 2n],
  ["PeerWrapper source.port", "source\0port", stream({ source: { address: "10.0.0.9:51000", port: 51000 } }), 51000n],
  ["PeerWrapper destination.address", "destination\0address", stream({ destination: { address: "10.0.0.1:8000", port: 8000 } }), "10.0.0.1:8000"],
  ["FilterStateWrapper", "filter_state\0k", stream({ filterState: { k: "v" } }), str("v")],
  ["Context::findValue connection_id", "connection_id", stream({ connectionId: 9n }), 9n],
  ["a name Envoy does not serve", "request\0nope", stream(), WasmResult.NotFound],
  ["a top-level name Envoy does not serve", "custom", stream(), WasmResult.NotFound],
  ["a wrapper map cannot be serialized whole (BaseWrapper::ListKeys)", "request", stream(), WasmResult.SerializationFailure],
];
for (const [source, path, s, want] of cases) {
  test(`property ${JSON.stringify(path)}${s ? "" : " (root context)"} -> ${typeof want === "number" ? Object.entries(WasmResult).find(([, v]) => v === want)![0] : typeof want === "bigint" ? `${want} (8 bytes)` : JSON.stringify(String(want))} (${source})`, () => {
    assert.deepEqual(getProperty(path, vm, s), want);
  });
}

test("request.headers is the whole map: names once, repeated values joined (HeadersWrapper::ListKeys)", () => {
  const got = getProperty("request\0headers", vm, stream());
  assert.ok(Buffer.isBuffer(got));
  assert.deepEqual(decodePairs(got).find(([k]) => k === "x-dup"), ["x-dup", "a,b"]);
  assert.equal(decodePairs(got).filter(([k]) => k === "x-dup").length, 1);
});

test("messages are protobuf bytes: xds.node, metadata", () => {
  assert.deepEqual(getProperty("xds\0node", vm, undefined), encodeNode(vm.node));
  const md = { envoy_lb: { canary: true, weight: 2 } };
  assert.deepEqual(getProperty("metadata", vm, stream({ dynamicMetadata: md })), encodeMetadata(md));
  const weight = getProperty("metadata\0filter_metadata\0envoy_lb\0weight", vm, stream({ dynamicMetadata: md }));
  assert.ok(Buffer.isBuffer(weight) && weight.readDoubleLE(0) === 2, "a Struct number is a double");
});

test("set_property stores a CelState under wasm.<path>: readable at the top level and in filter_state (Context::setProperty)", () => {
  const s = stream();
  s.info.state.set("wasm.mine", Buffer.from("x"));
  assert.deepEqual(getProperty("mine", vm, s), Buffer.from("x"));
  assert.deepEqual(getProperty("filter_state\0wasm.mine", vm, s), Buffer.from("x"));
});

test("ManualClock moves realtime and monotonic together, from a fixed start, in whole nanoseconds", () => {
  const c = new ManualClock(10n);
  c.advanceMs(1.5);
  c.advanceNs(3n);
  assert.deepEqual([c.realtimeNs(), c.monotonicNs()], [1_500_013n, 1_500_003n]);
  assert.throws(() => c.advanceMs(-1), /advanceMs needs a finite ms >= 0, got -1/);
  assert.equal(new ManualClock().realtimeNs(), 1_767_225_600_000_000_000n);
});
