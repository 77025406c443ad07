// Conformance: HTTP call status, foreign functions and the module's malloc as cpp-host and Envoy
// use them (Context::onHttpCallFailure, call_foreign_function with Envoy's foreign.cc functions,
// WasmBase::allocMemory / copyToPointerSize). One test per rule.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { deflateSync } from "node:zlib";
import { AbiViolation, encodePairs, VmFailedError, WasmResult } from "../index.js";
import { callDrop, callStore, seq } from "../support/proxy-module.js";
import { op } from "../support/wasm-writer.js";
import { i, load, NotFound, Ok, out, text, u32 } from "./support.js";

test("Context::onHttpCallFailure: a reset call reads BrokenConnection / \"reset\" in its callback; after it the message is cleared, the code stays", async () => {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-length": "100" });
    res.write("partial");
    setImmediate(() => res.socket?.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const headers = encodePairs([[":method", "GET"], [":path", "/x"], [":authority", "up"]]);
    const vm = await load(
      {
        tickPeriodMs: 1000,
        imports: ["proxy_http_call", "proxy_get_status"],
        data: [text(1024, "up"), { offset: 1100, bytes: headers }],
        callbacks: {
          proxy_on_tick: seq(
            callStore(100, "env.proxy_get_status", i(120), i(124), i(128)),
            callDrop("env.proxy_http_call", i(1024), i(2), i(1100), i(headers.length), i(0), i(0), i(0), i(0), i(0), i(70)),
          ),
          proxy_on_http_call_response: callStore(104, "env.proxy_get_status", i(132), i(136), i(140)),
        },
      },
      { clusters: { up: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } },
    );
    vm.tick();
    await vm.settle();
    assert.deepEqual([u32(vm, 104), u32(vm, 132)], [Ok, WasmResult.BrokenConnection]);
    assert.equal(out(vm, 136, 140).toString(), "reset");
    vm.tick();
    assert.deepEqual([u32(vm, 120), u32(vm, 128)], [WasmResult.BrokenConnection, 0], "code kept, message cleared");
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("foreign.cc: Envoy's compress/uncompress run (zlib format); any other name is NotFound; Envoy functions not emulated fail the test", async () => {
  const payload = "token flow ".repeat(8);
  const compressed = deflateSync(Buffer.from(payload));
  const call = (status: number, nameAt: number, name: string, argsAt: number, argsLen: number, outAt: number) =>
    callStore(status, "env.proxy_call_foreign_function", i(nameAt), i(name.length), i(argsAt), i(argsLen), i(outAt), i(outAt + 4));
  const vm = await load({
    tickPeriodMs: 1000,
    imports: ["proxy_call_foreign_function"],
    data: [text(1024, "compress"), text(1040, "uncompress"), text(1060, "nope"), { offset: 1200, bytes: payload }, { offset: 1400, bytes: compressed }, text(1600, "declare_property")],
    callbacks: { proxy_on_tick: seq(call(100, 1024, "compress", 1200, payload.length, 16), call(104, 1040, "uncompress", 1400, compressed.length, 24), call(108, 1060, "nope", 1200, 1, 32)) },
  });
  vm.tick();
  assert.deepEqual([u32(vm, 100), u32(vm, 104), u32(vm, 108)], [Ok, Ok, NotFound]);
  assert.deepEqual(out(vm, 16, 20), compressed);
  assert.equal(out(vm, 24, 28).toString(), payload);
  const envoyOnly = await load({ tickPeriodMs: 1000, imports: ["proxy_call_foreign_function"], data: [text(1600, "declare_property")], callbacks: { proxy_on_tick: call(100, 1600, "declare_property", 1600, 1, 16) } });
  assert.throws(() => envoyOnly.tick(), (e: unknown) => e instanceof AbiViolation && /declare_property.*Envoy provides it, this host does not emulate it/.test(e.message));
});

test("WasmBase::copyToPointerSize: when the module's malloc answers 0 the call is InvalidMemoryAccess, not a value", async () => {
  const vm = await load({
    imports: ["proxy_get_header_map_value"],
    data: [text(1024, ":path")],
    malloc: () => op.i32(0),
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_get_header_map_value", i(0), i(1024), i(5), i(16), i(20)) },
  });
  vm.newStream().requestHeaders([[":path", "/a"]]);
  assert.equal(u32(vm, 100), WasmResult.InvalidMemoryAccess);
});

test("WasmBase::allocMemory: while the host runs the module's malloc only logging and clocks may be called (restricted_callback)", async () => {
  const vm = await load({
    imports: ["proxy_get_header_map_value", "proxy_set_tick_period_milliseconds"],
    data: [text(1024, ":path")],
    malloc: (fn) => [...op.i32(5), ...op.call(fn("env.proxy_set_tick_period_milliseconds")), ...op.drop, ...op.i32(8192)],
    callbacks: { proxy_on_request_headers: callStore(100, "env.proxy_get_header_map_value", i(0), i(1024), i(5), i(16), i(20)) },
  });
  assert.throws(() => vm.newStream().requestHeaders([[":path", "/a"]]), (e: unknown) => e instanceof VmFailedError && /proxy_set_tick_period_milliseconds called during malloc/.test(e.message));
});
