// Conformance: Envoy's callback order and statuses (Context::decodeHeaders ... onDestroy, cpp-host
// ContextBase::on* and convertVmCallResultTo*Status, ConnectionManagerImpl::doDeferredStreamDestroy),
// closing, and ticks per root context (Wasm::setTimerPeriod / tickHandler). One test per rule.
import { test } from "node:test";
import assert from "node:assert/strict";
import { callDrop, callStore, seq } from "../support/proxy-module.js";
import { op } from "../support/wasm-writer.js";
import { i, load, NotFound, Ok, text, u32 } from "./support.js";

const logAt = (offset: number, len: number) => callDrop("env.proxy_log", i(2), i(offset), i(len));
const NAMES = ["create", "request_headers", "request_body", "response_headers", "response_body", "log", "done", "delete"];
const NAME_DATA = NAMES.map((n, k) => text(1024 + 32 * k, n));
const logs = (name: string) => logAt(1024 + 32 * NAMES.indexOf(name), name.length);
const ORDER_CALLBACKS = {
  proxy_on_context_create: logs("create"),
  proxy_on_request_headers: logs("request_headers"),
  proxy_on_request_body: logs("request_body"),
  proxy_on_response_headers: logs("response_headers"),
  proxy_on_response_body: logs("response_body"),
  proxy_on_log: logs("log"),
  proxy_on_done: logs("done"),
  proxy_on_delete: logs("delete"),
};

test("Context::decodeHeaders -> onCreate: a stream's context is created with its request headers, not when the stream starts", async () => {
  const vm = await load({ imports: ["proxy_log"], data: NAME_DATA, callbacks: ORDER_CALLBACKS });
  const before = vm.logs.length;
  const s = vm.newStream();
  assert.deepEqual(vm.logs.slice(before), []);
  s.requestHeaders([[":path", "/"]], true);
  assert.deepEqual(vm.logs.slice(before).map((l) => l.message), ["create", "request_headers"]);
});

test("doDeferredStreamDestroy: a stream reset before its response gets proxy_on_log (no response headers there), proxy_on_done, proxy_on_delete", async () => {
  const vm = await load({
    imports: ["proxy_log", "proxy_get_header_map_value", "proxy_get_property"],
    data: [...NAME_DATA, text(1400, ":status"), text(1410, "response\0code")],
    callbacks: {
      ...ORDER_CALLBACKS,
      proxy_on_log: seq(logs("log"), callStore(100, "env.proxy_get_header_map_value", i(2), i(1400), i(7), i(16), i(20)), callStore(104, "env.proxy_get_property", i(1410), i(13), i(16), i(20))),
    },
  });
  const before = vm.logs.length;
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.requestBody("partial", false);
  s.end();
  assert.deepEqual(vm.logs.slice(before).map((l) => l.message), ["create", "request_headers", "request_body", "log", "done", "delete"]);
  assert.deepEqual([u32(vm, 100), u32(vm, 104)], [NotFound, NotFound]);
});

test("Context::encodeHeaders / log: a stream whose request headers never reached the filter skips its callbacks; proxy_on_log creates the context", async () => {
  const vm = await load({ imports: ["proxy_log"], data: NAME_DATA, callbacks: ORDER_CALLBACKS });
  const before = vm.logs.length;
  const s = vm.newStream();
  assert.equal(s.responseHeaders([[":status", "503"]], false), 0);
  assert.equal(s.responseBody("upstream connect error", true), 0);
  s.end();
  assert.deepEqual(vm.logs.slice(before).map((l) => l.message), ["create", "log", "done", "delete"]);
});

const headerStatuses: Array<[number, number, boolean]> = [
  [0, 0, false],
  [1, 4, true],
  [2, 0, false],
  [3, 3, true],
  [4, 4, true],
  [7, 4, true],
];
for (const [returned, acted, held] of headerStatuses) {
  test(`convertVmCallResultToFilterHeadersStatus: proxy_on_request_headers returning ${returned} is filter status ${acted}${held ? ", holding the request" : ""}`, async () => {
    const vm = await load({ returns: { proxy_on_request_headers: returned } });
    const s = vm.newStream();
    assert.equal(s.requestHeaders([[":path", "/"]]), acted);
    assert.equal(s.paused.request !== undefined, held);
  });
}

test("convertVmCallResultToFilterDataStatus: a body callback's result above 3 is StopIterationNoBuffer (the chunk does not go on)", async () => {
  const vm = await load({ returns: { proxy_on_request_body: 9 } });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  assert.equal(s.requestBody("abc", false), 3);
  assert.equal(s.lastRequestChunk.length, 0);
});

test("Context::closeStream: closing the request resets the stream after the callback: proxy_on_log, proxy_on_done, proxy_on_delete follow at once", async () => {
  const vm = await load({ imports: ["proxy_log", "proxy_close_stream"], data: NAME_DATA, callbacks: { ...ORDER_CALLBACKS, proxy_on_request_headers: seq(logs("request_headers"), callStore(100, "env.proxy_close_stream", i(0))) } });
  const before = vm.logs.length;
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  assert.equal(u32(vm, 100), Ok);
  assert.equal(s.ended, true);
  assert.deepEqual(vm.logs.slice(before).map((l) => l.message), ["create", "request_headers", "log", "done", "delete"]);
});

test("Wasm::setTimerPeriod / tickHandler: each root context has its own tick period; a root that set none is never ticked", async () => {
  const storeRoot = () => [...op.i32(200), ...op.get(0), ...op.store];
  const vm = await load(
    {
      imports: ["proxy_set_tick_period_milliseconds"],
      callbacks: {
        // Only the first root (configuration "a") sets a period.
        proxy_on_configure: (fn) => [...op.get(1), ...op.i32(1), ...op.sub, ...op.eqz, ...op.call(fn("env.proxy_set_tick_period_milliseconds")), ...op.drop],
        proxy_on_tick: storeRoot,
      },
    },
    { pluginConfig: "a" },
  );
  assert.equal(vm.tickPeriodMs, 1);
  vm.tick();
  assert.equal(u32(vm, 200), 1);
  assert.equal(vm.updatePluginConfig("bb"), true);
  assert.equal(vm.tickPeriodMs, 0, "the new root set no period");
  assert.throws(() => vm.tick(), /set no tick period, so Envoy never calls its proxy_on_tick/);
});
