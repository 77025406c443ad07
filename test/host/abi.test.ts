// The host's ABI semantics, one host call at a time, through hand-built modules (no filter involved).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AbiViolation, FilterVm, ManualClock, VmFailedError, encodePairs } from "./index.js";
import { callDrop, callStore, proxyModule, seq, loadAt, type ProxyModuleSpec } from "./support/proxy-module.js";
import { op } from "./support/wasm-writer.js";

const i = op.i32;
const load = (spec: ProxyModuleSpec, extra: Partial<Parameters<typeof FilterVm.load>[0]> = {}): Promise<FilterVm> =>
  FilterVm.load({ wasm: proxyModule(spec), clock: new ManualClock(), ...extra });
const u32 = (vm: FilterVm, addr: number): number => vm.readMemory(addr, 4).readUInt32LE(0);
const outBytes = (vm: FilterVm, ptrAddr: number, sizeAddr: number): Buffer => vm.readMemory(u32(vm, ptrAddr), u32(vm, sizeAddr));
const text = (offset: number, s: string): { offset: number; bytes: string } => ({ offset, bytes: s });
const violation = (re: RegExp) => (e: unknown): boolean => e instanceof AbiViolation && re.test(e.message);
const TWO_PAIRS = encodePairs([[":path", "/a"], ["x", "yz"]]);

test("get_header_map_pairs hands the module the exact pairs bytes through its malloc", async () => {
  const vm = await load({
    imports: ["proxy_get_header_map_pairs"],
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_get_header_map_pairs", i(0), i(16), i(20)) },
  });
  vm.newStream().requestHeaders([[":path", "/a"], ["X", "yz"]]);
  assert.equal(u32(vm, 100), 0);
  assert.equal(u32(vm, 16), 8192, "the buffer comes from the module's malloc (heap start)");
  assert.deepEqual([...outBytes(vm, 16, 20)], [
    2, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0,
    0x3a, 0x70, 0x61, 0x74, 0x68, 0, 0x2f, 0x61, 0, 0x78, 0, 0x79, 0x7a, 0,
  ]);
});

test("set_header_map_pairs replaces the whole map with the decoded pairs", async () => {
  const vm = await load({
    imports: ["proxy_set_header_map_pairs"],
    data: [{ offset: 1024, bytes: TWO_PAIRS }],
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_set_header_map_pairs", i(0), i(1024), i(TWO_PAIRS.length)) },
  });
  const s = vm.newStream();
  s.requestHeaders([[":method", "GET"], ["x", "old"]]);
  assert.equal(u32(vm, 100), 0);
  assert.deepEqual(s.request.entries(), [[":path", "/a"], ["x", "yz"]]);
});

test("a malformed pairs buffer from the module is an ABI violation that fails the VM", async () => {
  const bad = Buffer.from(TWO_PAIRS);
  bad[25] = 0x41; // the NUL after ":path"
  const vm = await load({
    imports: ["proxy_set_header_map_pairs"],
    data: [{ offset: 1024, bytes: bad }],
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_set_header_map_pairs", i(0), i(1024), i(bad.length)) },
  });
  assert.throws(() => vm.newStream().requestHeaders([]), violation(/bad header-map pairs buffer: pair 0: key at offset 20 is not followed by NUL/));
  assert.equal(vm.failed, true);
  assert.throws(() => vm.newStream(), VmFailedError);
});

test("add, replace, remove, get and size follow Envoy's header-map semantics with lower-cased names", async () => {
  const vm = await load({
    imports: ["proxy_add_header_map_value", "proxy_replace_header_map_value", "proxy_remove_header_map_value", "proxy_get_header_map_value", "proxy_get_header_map_size"],
    data: [text(1024, "X-Dup"), text(1030, "v2"), text(1040, "x-gone"), text(1050, "new"), text(1060, "missing")],
    callbacks: {
      proxy_on_request_headers: seq(
        callStore(100, "env.proxy_add_header_map_value", i(0), i(1024), i(5), i(1030), i(2)),
        callStore(104, "env.proxy_remove_header_map_value", i(0), i(1040), i(6)),
        callStore(108, "env.proxy_replace_header_map_value", i(0), i(1050), i(3), i(1030), i(2)),
        callStore(112, "env.proxy_get_header_map_value", i(0), i(1024), i(5), i(16), i(20)),
        callStore(116, "env.proxy_get_header_map_value", i(0), i(1060), i(7), i(24), i(28)),
        callStore(120, "env.proxy_get_header_map_size", i(0), i(32)),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([["x-dup", "v1"], ["x-gone", "a"], ["x-gone", "b"]]);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 112), u32(vm, 116), u32(vm, 120)], [0, 0, 0, 0, 1, 0]);
  assert.deepEqual(s.request.entries(), [["x-dup", "v1"], ["x-dup", "v2"], ["new", "v2"]]);
  assert.equal(outBytes(vm, 16, 20).toString(), "v1", "the first value of a repeated header");
  assert.equal(u32(vm, 32), 5 + 2 + 5 + 2 + 3 + 2, "Envoy's size is the byte size of keys and values");
});

test("header calls from the root context get BadArgument: a root context points at no stream map", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    imports: ["proxy_get_header_map_value"],
    data: [text(1024, "x")],
    callbacks: { proxy_on_tick: callStore(100, "env.proxy_get_header_map_value", i(0), i(1024), i(1), i(16), i(20)) },
  });
  vm.tick();
  assert.equal(u32(vm, 100), 2);
});

test("response headers asked for during the request phase get BadArgument", async () => {
  const vm = await load({
    imports: ["proxy_get_header_map_value"],
    data: [text(1024, ":status")],
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_get_header_map_value", i(2), i(1024), i(7), i(16), i(20)) },
  });
  vm.newStream().requestHeaders([]);
  assert.equal(u32(vm, 100), 2);
});

test("header maps are not writable in proxy_on_log (BadArgument)", async () => {
  const vm = await load({
    imports: ["proxy_add_header_map_value"],
    data: [text(1024, "x")],
    callbacks: { proxy_on_log: callStore(100, "env.proxy_add_header_map_value", i(0), i(1024), i(1), i(1024), i(1)) },
  });
  const s = vm.newStream();
  s.requestHeaders([]);
  s.end();
  assert.equal(u32(vm, 100), 2);
  assert.deepEqual(s.request.entries(), []);
});

test("a pointer outside linear memory is an ABI violation", async () => {
  const vm = await load({ imports: ["proxy_log"], callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_log", i(2), i(200_000), i(10)) } });
  assert.throws(() => vm.newStream().requestHeaders([]), violation(/proxy_log: pointer 200000 \+ length 10 is outside linear memory \(131072 bytes\)/));
});

test("a log level above critical is an ABI violation", async () => {
  const vm = await load({ imports: ["proxy_log"], data: [text(1024, "m")], callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_log", i(6), i(1024), i(1)) } });
  assert.throws(() => vm.newStream().requestHeaders([]), violation(/proxy_log: level 6 is not 0..5/));
});

test("Envoy's callback order: headers, then proxy_on_log before proxy_on_done before proxy_on_delete", async () => {
  const logAt = (offset: number, len: number) => callDrop("env.proxy_log", i(2), i(offset), i(len));
  const vm = await load({
    imports: ["proxy_log"],
    data: [text(1024, "create"), text(1040, "request_headers"), text(1060, "response_headers"), text(1080, "log"), text(1090, "done"), text(1100, "delete")],
    callbacks: {
      proxy_on_context_create: logAt(1024, 6),
      proxy_on_request_headers: logAt(1040, 15),
      proxy_on_response_headers: logAt(1060, 16),
      proxy_on_log: logAt(1080, 3),
      proxy_on_done: logAt(1090, 4),
      proxy_on_delete: logAt(1100, 6),
    },
  });
  const before = vm.logs.length; // the root context's own create
  const s = vm.newStream();
  s.requestHeaders([]);
  s.responseHeaders([[":status", "200"]]);
  s.end();
  s.end();
  assert.deepEqual(vm.logs.slice(before).map((l) => l.message), ["create", "request_headers", "response_headers", "log", "done", "delete"]);
  assert.deepEqual(vm.logs.slice(0, before).map((l) => l.message), ["create"]);
});

test("proxy_log below the log level is dropped, at or above it kept", async () => {
  const vm = await load(
    { imports: ["proxy_log"], data: [text(1024, "dbg"), text(1030, "wrn")], callbacks: { proxy_on_request_headers: seq(callDrop("env.proxy_log", i(1), i(1024), i(3)), callDrop("env.proxy_log", i(3), i(1030), i(3))) } },
    { logLevel: 2 },
  );
  vm.newStream().requestHeaders([]);
  assert.deepEqual(vm.logs, [{ level: 3, message: "wrn" }]);
});

test("a headers stop is recorded and pauses the stream until the test resumes it", async () => {
  const vm = await load({ returns: { proxy_on_request_headers: 1 } });
  const s = vm.newStream();
  assert.equal(s.requestHeaders([]), 4, "StopIteration becomes StopAllIterationAndWatermark (cpp-host)");
  assert.equal(s.lastStatus, 1);
  assert.deepEqual(s.paused, { request: "proxy_on_request_headers returned 1" });
  assert.throws(() => s.requestBody("x", true), /requestBody: the stream is paused because proxy_on_request_headers returned 1/);
  assert.throws(() => s.responseHeaders([[":status", "200"]]), /paused/);
  s.resume();
  assert.equal(s.responseHeaders([[":status", "200"]]), 0);
  assert.deepEqual(s.stops, [{ callback: "proxy_on_request_headers", status: 1, filterStatus: 4 }]);
  s.end();
});

test("proxy_continue_stream in the stopping callback wins, as Envoy defers it until the callback returns", async () => {
  const vm = await load({ imports: ["proxy_continue_stream"], callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_continue_stream", i(0)) }, returns: { proxy_on_request_headers: 1 } });
  const s = vm.newStream();
  assert.equal(s.requestHeaders([]), 4);
  assert.deepEqual([u32(vm, 100), ...s.continueCalls], [0, 0]);
  assert.deepEqual(s.paused, {});
});

test("proxy_continue_stream from the root context is an ABI violation", async () => {
  const vm = await load({ tickPeriodMs: 1000, imports: ["proxy_continue_stream"], callbacks: { proxy_on_tick: callStore(100, "env.proxy_continue_stream", i(0)) } });
  assert.throws(() => vm.tick(), violation(/proxy_continue_stream called from the root context/));
});

test("a local response is recorded and goes through the filter's response path, which ends the stream", async () => {
  const extra = encodePairs([["x-reason", "policy"]]);
  const vm = await load({
    imports: ["proxy_send_local_response"],
    data: [text(1024, "denied"), text(1040, "no"), { offset: 1100, bytes: extra }],
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_send_local_response", i(403), i(1024), i(6), i(1040), i(2), i(1100), i(extra.length), i(-1)) },
  });
  const s = vm.newStream();
  assert.equal(s.requestHeaders([]), 4, "the callback's status is forced to a stop");
  assert.deepEqual(s.localResponse, { statusCode: 403, details: "denied", body: Buffer.from("no"), headers: [["x-reason", "policy"]], grpcStatus: -1 });
  assert.deepEqual(s.stops, [{ callback: "proxy_on_request_headers", status: 0, filterStatus: 4 }]);
  assert.deepEqual(s.response.entries(), [[":status", "403"], ["content-length", "2"], ["content-type", "text/plain"], ["x-reason", "policy"]]);
  assert.equal(s.lastResponseChunk.toString(), "no");
  assert.equal(s.ended, true);
  assert.throws(() => s.requestBody("x", true), /the stream has ended \(the filter sent a local reply\)/);
});

// ---- properties ----

const PROP_DATA = [
  text(1024, "request\0time"),
  text(1040, "xds\0route_name"),
  text(1060, "route_name"),
  text(1080, "request\0duration"),
  text(1100, "response\0code"),
  text(1120, "plugin_root_id"),
  text(1140, "request\0path"),
  text(1160, "filter_state\0custom"),
];
const getProp = (status: number, offset: number, len: number, out: number) => callStore(status, "env.proxy_get_property", i(offset), i(len), i(out), i(out + 4));

test("properties: NUL-joined paths, strings raw, integers and times as 8-byte little-endian, removed names NotFound", async () => {
  const clock = new ManualClock(1_700_000_000_123_456_789n);
  const vm = await FilterVm.load({
    wasm: proxyModule({
      imports: ["proxy_get_property"],
      data: PROP_DATA,
      callbacks: {
        proxy_on_request_headers: seq(getProp(200, 1024, 12, 16), getProp(204, 1040, 14, 24), getProp(208, 1060, 10, 32), getProp(212, 1080, 16, 40), getProp(216, 1120, 14, 48), getProp(220, 1140, 12, 56), getProp(224, 1160, 19, 64)),
        proxy_on_log: seq(getProp(228, 1080, 16, 72), getProp(232, 1100, 13, 80)),
      },
    }),
    clock,
  });
  const s = vm.newStream({ routeName: "chat", filterState: { custom: Uint8Array.from([7, 8]) } });
  s.requestHeaders([[":path", "/v1/models?x=1"]]);
  assert.deepEqual([200, 204, 208, 212, 216, 220, 224].map((a) => u32(vm, a)), [0, 0, 1, 1, 0, 0, 0]);
  assert.equal(outBytes(vm, 16, 20).readBigInt64LE(0), 1_700_000_000_123_456_789n);
  assert.equal(u32(vm, 20), 8);
  assert.equal(outBytes(vm, 24, 28).toString(), "chat");
  assert.equal(outBytes(vm, 48, 52).toString(), "tokentrace");
  assert.equal(outBytes(vm, 56, 60).toString(), "/v1/models?x=1");
  assert.deepEqual([...outBytes(vm, 64, 68)], [7, 8]);
  clock.advanceMs(250);
  s.responseHeaders([[":status", "201"]]);
  s.end();
  assert.deepEqual([u32(vm, 228), u32(vm, 232)], [0, 0]);
  assert.equal(outBytes(vm, 72, 76).readBigInt64LE(0), 250_000_000n, "request.duration in ns from the clock");
  assert.equal(outBytes(vm, 80, 84).readBigInt64LE(0), 201n, "response.code as an integer");
});

// ---- metrics ----

const METRIC_DATA = [text(1024, "c"), text(1028, "h"), text(1032, "g")];
const defineAll = seq(
  callStore(100, "env.proxy_define_metric", i(0), i(1024), i(1), i(40)),
  callStore(104, "env.proxy_define_metric", i(2), i(1028), i(1), i(44)),
  callStore(108, "env.proxy_define_metric", i(1), i(1032), i(1), i(48)),
);
const metricModule = (onRequest: ReturnType<typeof seq>): Uint8Array =>
  proxyModule({
    imports: ["proxy_define_metric", "proxy_increment_metric", "proxy_record_metric", "proxy_get_metric"],
    data: METRIC_DATA,
    callbacks: { proxy_on_configure: defineAll, proxy_on_request_headers: onRequest },
  });
const inc = (idAddr: number, delta: number) => callStore(120, "env.proxy_increment_metric", loadAt(idAddr), op.i64(delta));
const rec = (idAddr: number, v: number) => callStore(124, "env.proxy_record_metric", loadAt(idAddr), op.i64(v));

test("metrics: counters increment, gauges move both ways and set, histograms record, a second definition is a new id of the same stat", async () => {
  const vm = await FilterVm.load({
    wasm: metricModule(
      seq(
        inc(40, 3), inc(40, 2), rec(44, 7), rec(44, 9), rec(48, 5), inc(48, -2),
        callStore(128, "env.proxy_get_metric", loadAt(40), i(56)),
        callStore(132, "env.proxy_define_metric", i(0), i(1024), i(1), i(64)),
      ),
    ),
  });
  vm.newStream().requestHeaders([]);
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108), u32(vm, 128), u32(vm, 132)], [0, 0, 0, 0, 0]);
  assert.deepEqual(vm.stats.names(), ["c", "h", "g"]);
  assert.equal(vm.stats.counter("c"), 5);
  assert.deepEqual(vm.stats.histogram("h"), [7, 9]);
  assert.equal(vm.stats.gauge("g"), 3);
  assert.equal(vm.readMemory(56, 8).readBigUInt64LE(0), 5n);
  assert.notEqual(u32(vm, 64), u32(vm, 40), "Context::defineMetric takes the next id every time");
  assert.equal(u32(vm, 64) & 3, 0);
  assert.equal(u32(vm, 40) & 3, 0, "counter ids carry type 0 in the low bits");
  assert.equal(u32(vm, 44) & 3, 2, "histogram ids carry type 2");
});

const metricMisuse: Array<[string, ReturnType<typeof seq>, RegExp]> = [
  ["a counter incremented by 0", inc(40, 0), /proxy_increment_metric on counter "c" with delta 0: Envoy requires > 0/],
  ["a counter incremented by -1", inc(40, -1), /with delta -1: Envoy requires > 0/],
  ["a counter recorded", rec(40, 1), /proxy_record_metric on counter "c": counters take proxy_increment_metric only/],
  ["a histogram incremented", inc(44, 1), /proxy_increment_metric on histogram "h"/],
  ["an unknown metric id", callStore(120, "env.proxy_increment_metric", i(999), op.i64(1)), /proxy_increment_metric: unknown metric id 999/],
  ["a gauge taken below 0", inc(48, -1), /takes it below 0/],
];
for (const [what, body, message] of metricMisuse) {
  test(`metrics: ${what} is an ABI violation`, async () => {
    const vm = await FilterVm.load({ wasm: metricModule(body) });
    assert.throws(() => vm.newStream().requestHeaders([]), violation(message));
    assert.equal(vm.failed, true);
  });
}

test("metrics: an unknown metric type is an ABI violation", async () => {
  await assert.rejects(
    FilterVm.load({ wasm: proxyModule({ imports: ["proxy_define_metric"], data: METRIC_DATA, callbacks: { proxy_on_configure: callStore(100, "env.proxy_define_metric", i(3), i(1024), i(1), i(40)) } }) }),
    violation(/metric type 3 is not 0 \(counter\), 1 \(gauge\) or 2 \(histogram\)/),
  );
});

// ---- loading and failure ----

test("an import the host does not provide fails the load, naming it", async () => {
  await assert.rejects(load({ imports: ["proxy_nonexistent_call"] }), /module imports env.proxy_nonexistent_call \(function\), which the host does not provide/);
});

test("an import named like an Object.prototype member is not mistaken for a host function", async () => {
  await assert.rejects(load({ imports: ["toString"] }), /module imports env.toString \(function\), which the host does not provide/);
});

test("newStream after shutdown is refused: the root context is gone", async () => {
  const vm = await load({});
  vm.shutdown();
  assert.throws(() => vm.newStream(), /newStream after shutdown/);
});

test("proxy_get_log_level exists for ABI 0.2.1 only, as Envoy registers it", async () => {
  await assert.rejects(load({ imports: ["proxy_get_log_level"] }), /env.proxy_get_log_level/);
  const vm = await load({ abi: "0_2_1", imports: ["proxy_get_log_level"], callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_get_log_level", i(16)) } }, { logLevel: 1 });
  vm.newStream().requestHeaders([]);
  assert.deepEqual([u32(vm, 100), u32(vm, 16)], [0, 1]);
});

test("a module without malloc or an ABI marker is refused like Envoy refuses it", async () => {
  await assert.rejects(load({ withoutMalloc: true }), /neither malloc nor proxy_on_memory_allocate/);
});

test("during _initialize only Envoy's start-up calls are allowed", async () => {
  await assert.rejects(
    load({ imports: ["proxy_set_tick_period_milliseconds"], initialize: callDrop("env.proxy_set_tick_period_milliseconds", i(10)) }),
    /env.proxy_set_tick_period_milliseconds called during _initialize\/_start/,
  );
  const vm = await load({ imports: ["proxy_log"], data: [text(1024, "init")], initialize: callDrop("env.proxy_log", i(2), i(1024), i(4)) });
  assert.deepEqual(vm.logs, [{ level: 2, message: "init" }]);
  assert.equal(vm.hostCalls, 1);
  assert.deepEqual(vm.hostCallsByName(), { "env.proxy_log": 1 });
});

test("proc_exit fails the VM: the call throws and so does every later one", async () => {
  const vm = await load({ imports: ["proc_exit", "proxy_log"], data: [text(1024, "boom")], callbacks: { proxy_on_request_headers: seq(callDrop("env.proxy_log", i(5), i(1024), i(4)), (fn) => [...i(255), ...op.call(fn("wasi_snapshot_preview1.proc_exit"))]) } });
  assert.throws(() => vm.newStream().requestHeaders([]), (e: unknown) => e instanceof VmFailedError && /proc_exit\(255\): boom/.test(e.message));
  assert.equal(vm.failed, true);
  assert.throws(() => vm.tick(), VmFailedError);
  assert.throws(() => vm.newStream(), VmFailedError);
});

test("a trap fails the VM", async () => {
  const vm = await load({ callbacks: { proxy_on_request_headers: () => op.unreachable } });
  assert.throws(() => vm.newStream().requestHeaders([]), (e: unknown) => e instanceof VmFailedError && /the VM trapped: unreachable/.test(e.message));
  assert.equal(vm.failed, true);
});

test("proxy_on_vm_start returning false fails the load", async () => {
  await assert.rejects(load({ returns: { proxy_on_vm_start: 0 } }), /proxy_on_vm_start returned false/);
});

test("configure: the first result is kept, later ones are ECDS updates with the new bytes", async () => {
  const vm = await load(
    {
      imports: ["proxy_get_buffer_bytes", "proxy_log"],
      callbacks: { proxy_on_configure: seq(callStore(100, "env.proxy_get_buffer_bytes", i(7), i(0), op.get(1), i(16), i(20)), callDrop("env.proxy_log", i(2), loadAt(16), loadAt(20))) },
      returns: { proxy_on_configure: 0 },
    },
    { pluginConfig: '{"a":1}' },
  );
  assert.equal(vm.configureAccepted, false);
  assert.equal(vm.configure('{"b":2}'), false);
  assert.deepEqual(vm.logs.map((l) => l.message), ['{"a":1}', '{"b":2}']);
});

test("the plugin configuration buffer exists only during proxy_on_configure", async () => {
  const vm = await load({ tickPeriodMs: 1000, imports: ["proxy_get_buffer_bytes"], callbacks: { proxy_on_tick: callStore(100, "env.proxy_get_buffer_bytes", i(7), i(0), i(10), i(16), i(20)) } }, { pluginConfig: "x" });
  vm.tick();
  assert.equal(u32(vm, 100), 1, "NotFound outside on_configure");
});

test("body buffers: the current chunk is readable and set_buffer_bytes prepends, replaces or appends", async () => {
  const vm = await load({
    imports: ["proxy_set_buffer_bytes", "proxy_get_buffer_status"],
    data: [text(1024, "pre-"), text(1030, "NEW")],
    callbacks: {
      proxy_on_request_body: seq(callStore(100, "env.proxy_get_buffer_status", i(0), i(16), i(20)), callStore(104, "env.proxy_set_buffer_bytes", i(0), i(0), i(0), i(1024), i(4))),
      proxy_on_response_body: callStore(108, "env.proxy_set_buffer_bytes", i(1), i(0), i(1000), i(1030), i(3)),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([]);
  s.requestBody("body", true);
  assert.deepEqual([u32(vm, 100), u32(vm, 16), u32(vm, 20), u32(vm, 104)], [0, 4, 0, 0]);
  assert.equal(s.lastRequestChunk.toString(), "pre-body");
  s.responseHeaders([[":status", "200"]]);
  s.responseBody("old", true);
  assert.equal(s.lastResponseChunk.toString(), "NEW");
});

test("set_buffer_bytes in the middle of a body is refused as Envoy refuses it (BadArgument)", async () => {
  const vm = await load({ imports: ["proxy_set_buffer_bytes"], data: [text(1024, "x")], callbacks: { proxy_on_request_body: callStore(100, "env.proxy_set_buffer_bytes", i(0), i(1), i(1), i(1024), i(1)) } });
  const s = vm.newStream();
  s.requestHeaders([]);
  s.requestBody("body", true);
  assert.equal(u32(vm, 100), 2);
  assert.equal(s.lastRequestChunk.toString(), "body");
});

// ---- WASI ----

test("WASI: clocks from the injected clock, random from the injected source, stdout/stderr to the log, environ from env", async () => {
  const iov = Buffer.alloc(16);
  iov.writeUInt32LE(1300, 0);
  iov.writeUInt32LE(3, 4);
  iov.writeUInt32LE(1310, 8);
  iov.writeUInt32LE(4, 12);
  const clock = new ManualClock(5_000n);
  clock.advanceNs(7n);
  const vm = await FilterVm.load({
    wasm: proxyModule({
      imports: ["clock_time_get", "random_get", "fd_write", "unstable_fd_write", "environ_sizes_get", "environ_get"],
      data: [{ offset: 1280, bytes: iov }, text(1300, "hi\n"), text(1310, "err\n")],
      callbacks: {
        proxy_on_request_headers: seq(
          callStore(100, "wasi_snapshot_preview1.clock_time_get", i(0), op.i64(0), i(300)),
          callStore(104, "wasi_snapshot_preview1.clock_time_get", i(1), op.i64(0), i(308)),
          callStore(108, "wasi_snapshot_preview1.clock_time_get", i(2), op.i64(0), i(316)),
          callStore(112, "wasi_snapshot_preview1.random_get", i(330), i(4)),
          callStore(116, "wasi_snapshot_preview1.fd_write", i(1), i(1280), i(1), i(340)),
          callStore(120, "wasi_unstable.fd_write", i(2), i(1288), i(1), i(344)),
          callStore(124, "wasi_snapshot_preview1.fd_write", i(3), i(1280), i(1), i(348)),
          callStore(128, "wasi_snapshot_preview1.environ_sizes_get", i(352), i(356)),
          callStore(132, "wasi_snapshot_preview1.environ_get", i(360), i(400)),
          callStore(136, "wasi_snapshot_preview1.random_get", i(330), i(65537)),
        ),
      },
    }),
    clock,
    random: (out) => out.set([1, 2, 3, 4].slice(0, out.length)),
    env: { A: "1", BB: "22" },
  });
  vm.newStream().requestHeaders([]);
  assert.deepEqual([100, 104, 108, 112, 116, 120, 124, 128, 132, 136].map((a) => u32(vm, a)), [0, 0, 58, 0, 0, 0, 8, 0, 0, 28]);
  assert.equal(vm.readMemory(300, 8).readBigUInt64LE(0), 5_007n);
  assert.equal(vm.readMemory(308, 8).readBigUInt64LE(0), 7n);
  assert.deepEqual([...vm.readMemory(330, 4)], [1, 2, 3, 4]);
  assert.deepEqual(vm.logs, [{ level: 2, message: "hi" }, { level: 4, message: "err" }]);
  assert.deepEqual([u32(vm, 340), u32(vm, 344), u32(vm, 352), u32(vm, 356)], [3, 4, 2, 10]);
  assert.deepEqual([u32(vm, 360), u32(vm, 364)], [400, 404]);
  assert.equal(vm.readMemory(400, 10).toString(), "A=1\0BB=22\0");
});

test("tick period set by the module is exposed and tick() reaches proxy_on_tick", async () => {
  const vm = await load({
    imports: ["proxy_set_tick_period_milliseconds", "proxy_log"],
    data: [text(1024, "tick")],
    callbacks: { proxy_on_vm_start: callDrop("env.proxy_set_tick_period_milliseconds", i(500)), proxy_on_tick: callDrop("env.proxy_log", i(2), i(1024), i(4)) },
  });
  assert.equal(vm.tickPeriodMs, 500);
  vm.tick();
  vm.tick();
  assert.deepEqual(vm.logs.map((l) => l.message), ["tick", "tick"]);
});

test("shutdown runs proxy_on_done then proxy_on_delete on the root context, or waits for proxy_done", async () => {
  const vm = await load({ tickPeriodMs: 1000, imports: ["proxy_log", "proxy_done"], data: [text(1024, "done"), text(1030, "delete")], callbacks: { proxy_on_done: callDrop("env.proxy_log", i(2), i(1024), i(4)), proxy_on_delete: callDrop("env.proxy_log", i(2), i(1030), i(6)), proxy_on_tick: callStore(100, "env.proxy_done") }, returns: { proxy_on_done: 0 } });
  vm.shutdown();
  assert.deepEqual(vm.logs.map((l) => l.message), ["done"]);
  vm.tick();
  assert.equal(u32(vm, 100), 0);
  assert.deepEqual(vm.logs.map((l) => l.message), ["done", "delete"]);
});

// ---- HTTP calls ----

async function withServer(fn: (base: string, seen: string[]) => Promise<void>): Promise<void> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} host=${req.headers.host}`);
    res.setHeader("x-up", "1");
    res.end("pong");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}

const CALL_HEADERS = encodePairs([[":method", "GET"], [":path", "/ping"], [":authority", "up.local"]]);
const NO_AUTHORITY = encodePairs([[":method", "GET"], [":path", "/ping"]]);
const httpModule = (cluster: string, headers: Buffer): Uint8Array =>
  proxyModule({
    tickPeriodMs: 1000,
    imports: ["proxy_http_call", "proxy_get_buffer_bytes", "proxy_get_header_map_value", "proxy_log"],
    data: [text(1024, cluster), text(1040, ":status"), { offset: 1100, bytes: headers }],
    callbacks: {
      proxy_on_tick: callStore(74, "env.proxy_http_call", i(1024), i(cluster.length), i(1100), i(headers.length), i(0), i(0), i(0), i(0), i(5000), i(70)),
      proxy_on_http_call_response: seq(
        callStore(100, "env.proxy_get_buffer_bytes", i(4), i(0), op.get(3), i(80), i(84)),
        callDrop("env.proxy_log", i(2), loadAt(80), loadAt(84)),
        callStore(104, "env.proxy_get_header_map_value", i(6), i(1040), i(7), i(88), i(92)),
        callDrop("env.proxy_log", i(2), loadAt(88), loadAt(92)),
      ),
    },
  });

test("proxy_http_call makes a real request to the cluster and delivers the response later", async () => {
  await withServer(async (base, seen) => {
    const vm = await FilterVm.load({ wasm: httpModule("up", CALL_HEADERS), clusters: { up: base } });
    vm.tick();
    assert.deepEqual([u32(vm, 74), u32(vm, 70)], [0, 1]);
    assert.equal(vm.pendingHttpCalls(), 1);
    await vm.settle();
    assert.equal(vm.pendingHttpCalls(), 0);
    assert.deepEqual(seen, ["GET /ping host=up.local"]);
    assert.deepEqual(vm.logs.map((l) => l.message), ["pong", "200"]);
  });
});

test("proxy_http_call to an unknown cluster or without :authority answers BadArgument, as Envoy does", async () => {
  for (const [cluster, headers] of [["nope", CALL_HEADERS], ["up", NO_AUTHORITY]] as const) {
    const vm = await FilterVm.load({ wasm: httpModule(cluster, headers), clusters: { up: "http://127.0.0.1:9" } });
    vm.tick();
    assert.equal(u32(vm, 74), 2);
    assert.equal(vm.pendingHttpCalls(), 0);
  }
});

test("the log keeps the newest entries past maxLogEntries and reports each to onLog", async () => {
  const seen: string[] = [];
  const vm = await load(
    { tickPeriodMs: 1000, imports: ["proxy_log"], data: [text(1024, "abcd")], callbacks: { proxy_on_tick: callDrop("env.proxy_log", i(2), i(1024), i(1)) } },
    { maxLogEntries: 4, onLog: (e) => seen.push(e.message) },
  );
  for (let n = 0; n < 5; n++) vm.tick();
  assert.equal(seen.length, 5);
  assert.equal(vm.logs.length, 3, "half of the full log dropped once, then one more kept");
});

test("proxy_set_effective_context lets a root callback act on a stream held at this filter; an unknown id is BadArgument", async () => {
  const vm = await load({
    tickPeriodMs: 1000,
    returns: { proxy_on_request_headers: 1 },
    imports: ["proxy_set_effective_context", "proxy_add_header_map_value"],
    data: [text(1024, "x-eff"), text(1030, "1")],
    callbacks: {
      proxy_on_tick: seq(
        callStore(100, "env.proxy_set_effective_context", i(99)),
        callStore(104, "env.proxy_set_effective_context", i(2)),
        callStore(108, "env.proxy_add_header_map_value", i(0), i(1024), i(5), i(1030), i(1)),
      ),
    },
  });
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  vm.tick();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [2, 0, 0]);
  assert.deepEqual(s.request.entries(), [[":path", "/"], ["x-eff", "1"]]);
});

test("proxy_http_call timing out gets Envoy's local 504 reply", async () => {
  const server: Server = createServer(() => {
    // never answers
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const headers = encodePairs([[":method", "GET"], [":path", "/slow"], [":authority", "up"]]);
    const vm = await FilterVm.load({
      wasm: proxyModule({
        tickPeriodMs: 1000,
        imports: ["proxy_http_call", "proxy_get_buffer_bytes", "proxy_get_header_map_value", "proxy_log"],
        data: [text(1024, "up"), text(1040, ":status"), { offset: 1100, bytes: headers }],
        callbacks: {
          proxy_on_tick: callStore(74, "env.proxy_http_call", i(1024), i(2), i(1100), i(headers.length), i(0), i(0), i(0), i(0), i(20), i(70)),
          proxy_on_http_call_response: seq(
            callStore(100, "env.proxy_get_buffer_bytes", i(4), i(0), op.get(3), i(80), i(84)),
            callDrop("env.proxy_log", i(2), loadAt(80), loadAt(84)),
            callStore(104, "env.proxy_get_header_map_value", i(6), i(1040), i(7), i(88), i(92)),
            callDrop("env.proxy_log", i(2), loadAt(88), loadAt(92)),
          ),
        },
      }),
      clusters: { up: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
    });
    vm.tick();
    await vm.settle();
    assert.deepEqual(vm.logs.map((l) => l.message), ["upstream request timeout", "504"]);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("proxy_http_call reset after the response started: no headers, and proxy_get_status says BrokenConnection", async () => {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-length": "100" });
    res.write("partial");
    setImmediate(() => res.socket?.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const headers = encodePairs([[":method", "GET"], [":path", "/x"], [":authority", "up"]]);
    const vm = await FilterVm.load({
      wasm: proxyModule({
        tickPeriodMs: 1000,
        imports: ["proxy_http_call", "proxy_get_status"],
        data: [text(1024, "up"), { offset: 1100, bytes: headers }],
        callbacks: {
          proxy_on_tick: callStore(74, "env.proxy_http_call", i(1024), i(2), i(1100), i(headers.length), i(0), i(0), i(0), i(0), i(0), i(70)),
          proxy_on_http_call_response: seq(
            () => [...i(140), ...op.get(2), ...op.store, ...i(144), ...op.get(3), ...op.store],
            callStore(100, "env.proxy_get_status", i(120), i(124), i(128)),
          ),
        },
      }),
      clusters: { up: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
    });
    vm.tick();
    await vm.settle();
    assert.deepEqual([u32(vm, 140), u32(vm, 144), u32(vm, 100), u32(vm, 120)], [0, 0, 0, 11]);
    assert.equal(outBytes(vm, 124, 128).toString(), "reset");
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("options the host cannot honour are refused, naming the option and the value", async () => {
  const cases: Array<[Partial<Parameters<typeof FilterVm.load>[0]>, RegExp]> = [
    [{ logLevel: 6 }, /FilterVmOptions.logLevel=6: must be an integer 0..5/],
    [{ statTags: ["ok", "a.b"] }, /FilterVmOptions.statTags=\["ok","a.b"\]: every tag must be an identifier/],
    [{ histogramBuckets: [1, 1] }, /FilterVmOptions.histogramBuckets=\[1,1\]: must be finite, > 0 and strictly increasing/],
    [{ clusters: { up: "127.0.0.1:80" } }, /FilterVmOptions.clusters.up="127.0.0.1:80": must be a base URL/],
    [{ maxLogEntries: 0 }, /FilterVmOptions.maxLogEntries=0/],
  ];
  for (const [opts, message] of cases) await assert.rejects(load({}, opts), message);
});

test("callbacks after end_of_stream are refused: Envoy never calls them", async () => {
  const vm = await load({});
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]], true);
  assert.throws(() => s.requestBody("late", true), /requestBody after the request ended \(end_of_stream was set\)/);
  s.responseHeaders([[":status", "200"]]);
  s.responseBody("a", false);
  s.responseBody("b", true);
  assert.throws(() => s.responseTrailers([]), /responseTrailers after the response ended/);
  s.end();
});

test("request body may still flow after the response started, as in Envoy", async () => {
  const vm = await load({});
  const s = vm.newStream();
  s.requestHeaders([[":path", "/"]]);
  s.responseHeaders([[":status", "200"]]);
  assert.equal(s.requestBody("late", true), 0);
  s.end();
});

test("updatePluginConfig follows Envoy's ECDS path: a new root context, the old one retired after its streams", async () => {
  const logAt = (offset: number, len: number) => callDrop("env.proxy_log", i(2), i(offset), i(len));
  const storeParam = (addr: number, param: number) => () => [...i(addr), ...op.get(param), ...op.store];
  const vm = await load(
    {
      imports: ["proxy_log"],
      data: [text(1024, "create"), text(1032, "vm_start"), text(1042, "configure"), text(1052, "done"), text(1058, "delete")],
      callbacks: {
        proxy_on_context_create: seq(logAt(1024, 6), storeParam(200, 0), storeParam(204, 1)),
        proxy_on_vm_start: seq(logAt(1032, 8), storeParam(208, 0)),
        proxy_on_configure: seq(logAt(1042, 9), storeParam(212, 0)),
        proxy_on_done: seq(logAt(1052, 4), storeParam(216, 0)),
        proxy_on_delete: seq(logAt(1058, 6), storeParam(220, 0)),
      },
      // accept any non-empty configuration
      computed: { proxy_on_configure: () => [...op.get(1), ...op.eqz, ...op.eqz] },
    },
    { pluginConfig: "a" },
  );
  const messages = (): string[] => vm.logs.map((l) => l.message);
  assert.deepEqual(messages(), ["create", "vm_start", "configure"]);
  assert.equal(vm.configureAccepted, true);
  const first = vm.newStream();
  first.requestHeaders([]);
  assert.deepEqual([first.contextId, u32(vm, 200), u32(vm, 204)], [2, 2, 1], "stream 2 created (with its request headers) under root 1");

  assert.equal(vm.updatePluginConfig("bb"), true);
  assert.equal(vm.rootContextId, 3);
  assert.deepEqual(messages().slice(3), ["create", "create", "vm_start", "configure"], "stream 2, then root 3");
  assert.deepEqual([u32(vm, 200), u32(vm, 204), u32(vm, 208), u32(vm, 212)], [3, 0, 3, 3]);
  const second = vm.newStream();
  second.requestHeaders([]);
  assert.deepEqual([second.contextId, u32(vm, 204)], [4, 3], "new streams get the new root");

  first.end();
  assert.deepEqual(messages().slice(8), ["done", "delete", "done", "delete"], "stream 2 ends, then root 1 is torn down");
  assert.deepEqual([u32(vm, 216), u32(vm, 220)], [1, 1]);

  assert.equal(vm.updatePluginConfig(""), false, "a rejected update");
  assert.equal(vm.rootContextId, 3, "the last good root stays");
  assert.deepEqual(messages().slice(12), ["create", "vm_start", "configure", "done", "delete"]);
  assert.deepEqual([u32(vm, 216), u32(vm, 220)], [5, 5]);
  second.end();
  assert.equal(u32(vm, 220), 4, "root 3 lives on after its stream ends");
});
