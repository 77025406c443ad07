// The real filter.wasm when the host answers wrongly on purpose (FilterVmOptions.faults, never Envoy's
// behaviour): an unreadable plugin_root_id, pointers and sizes that are not what the host allocated.
// The VM must keep running and count the failure (emulated Envoy host with injected faults).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WasmResult, type FilterVm, type HostFault } from "../../host/index.js";
import { baseRequest, countingRandom, exchange, loadFilter } from "../support.js";

const hostFailures = (vm: FilterVm): number => vm.stats.value("tokentrace_filter_errors_total", { error: "host_call_failed" }) ?? 0;
// A refused route name counts the request under route "default".
const requests = (vm: FilterVm): number => ["chat", "default"].reduce((n, route) => n + (vm.stats.value("tokentrace_requests_total", { route, status_class: "2xx" }) ?? 0), 0);
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("the SDK's root context set-up (patched; emulated Envoy host, injected faults)", () => {
  it("does not abort the VM when plugin_root_id cannot be read: the only registered root context is used", async () => {
    // The first property read of the VM is the SDK's plugin_root_id, when the root context is created.
    const vm = await loadFilter({ faults: [{ call: "proxy_get_property", status: WasmResult.InternalFailure, times: 1 }] });
    assert.equal(vm.failed, false, vm.failureReason);
    assert.equal(vm.configureAccepted, true);
    exchange(vm, { route: "chat", status: 200 });
    assert.equal(requests(vm), 1);
    assert.ok(vm.logs.some((l) => l.level === 3 && l.message === 'plugin_root_id "" is not registered; using the only registered root context'));
  });

  it("does not abort the VM when the root id is not the one registered (a WasmPlugin pluginName that differs)", async () => {
    const vm = await loadFilter({ rootId: "ns.other-name" });
    assert.equal(vm.failed, false, vm.failureReason);
    exchange(vm, { route: "chat", status: 200 });
    assert.equal(requests(vm), 1);
    assert.ok(vm.logs.some((l) => l.message.includes('plugin_root_id "ns.other-name" is not registered')));
  });
});

describe("answers the host did not allocate are refused and counted, never read (emulated Envoy host, injected faults)", () => {
  const cases: Array<[string, HostFault]> = [
    ["a header value with an absurd size", { call: "proxy_get_header_map_value", size: 0xffff_fff0, times: 1 }],
    ["a header value one byte longer than allocated", { call: "proxy_get_header_map_value", size: "/v1/chat/completions?q=12345678".length + 1, times: 1 }],
    ["a header value pointing elsewhere", { call: "proxy_get_header_map_value", pointer: 8, times: 1 }],
    ["a header value with a size but no pointer", { call: "proxy_get_header_map_value", pointer: 0, size: 12, times: 1 }],
    ["a property with an absurd size", { call: "proxy_get_property", skip: 1, size: 0x7fff_ffff, times: 1 }],
    ["a property pointing outside linear memory", { call: "proxy_get_property", skip: 1, pointer: 0xffff_0000, times: 1 }],
    ["the header pairs with an absurd size", { call: "proxy_get_header_map_pairs", size: 0xffff_ffff, times: 1 }],
  ];
  for (const [what, fault] of cases) {
    it(`${what}: counted as host_call_failed; the VM and the request go on`, async () => {
      // The fault hits the first matching call of the first request (skip: the SDK's plugin_root_id read at start-up).
      const vm = await loadFilter({ random: countingRandom(), faults: [fault] });
      exchange(vm, { headers: baseRequest([["traceparent", TRACEPARENT], ["x-pad", "p".repeat(100)]], "/v1/chat/completions?q=12345678"), route: "chat", status: 200 });
      assert.equal(vm.failed, false, vm.failureReason);
      assert.equal(hostFailures(vm), 1);
      assert.equal(requests(vm), 1);
      // The next request is served normally.
      exchange(vm, { headers: baseRequest([["traceparent", TRACEPARENT]]), route: "chat", status: 200 });
      assert.equal(requests(vm), 2);
      assert.equal(hostFailures(vm), 1);
    });
  }

  it("a response body chunk with an absurd size: counted, the stream and its stats go on", async () => {
    const vm = await loadFilter({ random: countingRandom(), faults: [{ call: "proxy_get_buffer_bytes", size: 0xffff_0000, times: 1 }] });
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders(baseRequest(), false);
    s.requestBody('{"model":"m"}', true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody('{"usage":{"prompt_tokens":1,"completion_tokens":2}}', true);
    s.end();
    assert.equal(vm.failed, false, vm.failureReason);
    assert.equal(hostFailures(vm), 1);
    assert.equal(vm.stats.value("tokentrace_llm_output_tokens_total", { route: "chat", model: "m" }), 2, "the request body was refused, the response body read");
  });
});
