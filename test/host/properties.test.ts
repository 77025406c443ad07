// Property paths and value encodings, resolved directly (the byte-level path through a module is in abi.test.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { HeaderList } from "./headers.js";
import { encodePairs } from "./pairs.js";
import { encodeInt64, propertyPath, resolveProperty, splitPropertyPath, type StreamFacts } from "./properties.js";
import { ManualClock } from "./clock.js";

const vm = { rootId: "tokentrace", pluginName: "ns.tokentrace", vmId: "" };
const stream = (over: Partial<StreamFacts> = {}): StreamFacts => ({
  startTimeNs: 1_700_000_000_000_000_000n,
  requestHeaders: new HeaderList([[":method", "POST"], [":path", "/v1/chat?stream=1"], [":authority", "llm:8000"], [":scheme", "http"], ["x-request-id", "rid-1"], ["user-agent", "ua/1"]]),
  ...over,
});

test("paths are segments joined by NUL", () => {
  assert.equal(propertyPath("request", "headers", "x"), "request\0headers\0x");
  assert.deepEqual(splitPropertyPath("xds\0route_name"), ["xds", "route_name"]);
});

test("integers are int64 little-endian, 8 bytes", () => {
  assert.deepEqual([...encodeInt64(200)], [200, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual([...encodeInt64(-1)], [255, 255, 255, 255, 255, 255, 255, 255]);
  assert.deepEqual([...encodeInt64(1_700_000_000_000_000_000n)], [0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17]);
});

const cases: Array<[string, StreamFacts | undefined, Buffer | string | bigint | undefined]> = [
  ["plugin_root_id", undefined, "tokentrace"],
  ["plugin_name", undefined, "ns.tokentrace"],
  ["xds\0route_name", undefined, undefined],
  ["xds\0route_name", stream({ routeName: "chat" }), "chat"],
  ["xds\0cluster_name", stream({ clusterName: "outbound|8000||llm" }), "outbound|8000||llm"],
  ["route_name", stream({ routeName: "chat" }), undefined],
  ["cluster_name", stream({ clusterName: "c" }), undefined],
  ["request\0time", stream(), 1_700_000_000_000_000_000n],
  ["request\0duration", stream(), undefined],
  ["request\0duration", stream({ durationNs: 5n }), 5n],
  ["request\0id", stream(), "rid-1"],
  ["request\0id", stream({ requestId: "given" }), "given"],
  ["request\0path", stream(), "/v1/chat?stream=1"],
  ["request\0url_path", stream(), "/v1/chat"],
  ["request\0query", stream(), "stream=1"],
  ["request\0host", stream(), "llm:8000"],
  ["request\0method", stream(), "POST"],
  ["request\0scheme", stream(), "http"],
  ["request\0useragent", stream(), "ua/1"],
  ["request\0referer", stream(), undefined],
  ["request\0headers\0x-request-id", stream(), "rid-1"],
  ["request\0headers\0absent", stream(), undefined],
  ["response\0code", stream(), undefined],
  ["response\0code", stream({ responseCode: 429 }), 429n],
  ["response\0headers\0content-type", stream({ responseHeaders: new HeaderList([[":status", "200"], ["content-type", "text/event-stream"]]) }), "text/event-stream"],
  ["request\0nope", stream(), undefined],
  ["node", stream(), undefined],
];
for (const [path, facts, want] of cases) {
  test(`property ${JSON.stringify(path)}${facts ? "" : " (root context)"} -> ${want === undefined ? "NotFound" : typeof want === "bigint" ? `${want} (int64)` : JSON.stringify(want)}`, () => {
    assert.deepEqual(resolveProperty(path, vm, facts), want);
  });
}

test("request.headers is the whole map in the pairs format", () => {
  const h = new HeaderList([[":path", "/a"], ["x", "yz"]]);
  assert.deepEqual(resolveProperty("request\0headers", vm, stream({ requestHeaders: h })), encodePairs([[":path", "/a"], ["x", "yz"]]));
});

test("ManualClock moves realtime and monotonic together, from a fixed start, in whole nanoseconds", () => {
  const c = new ManualClock(10n);
  c.advanceMs(1.5);
  c.advanceNs(3n);
  assert.deepEqual([c.realtimeNs(), c.monotonicNs()], [1_500_013n, 1_500_003n]);
  assert.throws(() => c.advanceMs(-1), /advanceMs needs a finite ms >= 0, got -1/);
  assert.equal(new ManualClock().realtimeNs(), 1_767_225_600_000_000_000n);
});
