// The filter reads most header and property values in place, into fixed slots of its own memory
// (filter/host/host-memory.ts); a value longer than its slot must still arrive whole, in a buffer of its
// own that is freed afterwards. Real filter.wasm, emulated Envoy host.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { baseRequest, countingRandom, exchange, loadFilter, scriptedRandom } from "../support.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const uuidBytes = Uint8Array.from({ length: 16 }, (_, i) => 0x50 + i);
// 32 members of 25 bytes: 831 bytes, longer than any slot, and valid.
const LONG_TRACESTATE = Array.from({ length: 32 }, (_, i) => `k${String(i).padStart(2, "0")}=${"v".repeat(20)}`).join(",");

describe("values longer than the in-place read slots (emulated Envoy host)", () => {
  it("keeps an 831-byte valid tracestate unchanged", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
    const s = exchange(vm, { headers: baseRequest([["traceparent", `00-${TRACE}-${PARENT}-01`], ["tracestate", LONG_TRACESTATE]]), status: 200 });
    assert.equal(s.request.get("tracestate"), LONG_TRACESTATE);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_tracestate" }), 0);
  });

  it("drops an 831-byte tracestate whose last key is upper-case", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
    const state = LONG_TRACESTATE.replace("k31=", "K31=");
    const s = exchange(vm, { headers: baseRequest([["traceparent", `00-${TRACE}-${PARENT}-01`], ["tracestate", state]]), status: 200 });
    assert.equal(s.request.get("tracestate"), undefined);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_tracestate" }), 1);
  });

  it("reads a later-version traceparent with 400 bytes of trailing fields", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
    const s = exchange(vm, { headers: baseRequest([["traceparent", `01-${TRACE}-${PARENT}-03-${"f".repeat(400)}`]]), status: 200 });
    assert.equal(s.request.get("traceparent"), `00-${TRACE}-${PARENT}-03`);
  });

  it("recognises an LLM call by a 2,000-byte :path", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    exchange(vm, { headers: baseRequest([], `/v1/chat/completions?pad=${"x".repeat(1975)}`), route: "chat", status: 200 });
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "unknown", stream: "false", finish_reason: "none", status_class: "2xx" }), 1);
  });

  it("matches a 1,024-byte path-prefix rule on a 2,000-byte :path", async () => {
    const vm = await loadFilter({ random: countingRandom(), config: { sampling: { defaultRate: 0, routes: [{ pathPrefix: `/batch/${"p".repeat(1017)}`, rate: 1 }] } } });
    const s = exchange(vm, { headers: baseRequest([], `/batch/${"p".repeat(1993)}`), route: "r", status: 200 });
    assert.match(s.request.get("traceparent") ?? "", /-03$/);
    assert.equal(vm.stats.value("tokentrace_traces_sampled_total", { route: "r" }), 1);
  });

  it("counts a 300-byte route name under its sanitised 64-byte label", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    exchange(vm, { headers: baseRequest(), route: "r".repeat(300), status: 200 });
    exchange(vm, { headers: baseRequest(), route: "r".repeat(300), status: 200 });
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "r".repeat(64), status_class: "2xx" }), 2);
  });

  it("frees what long values arrive in: linear memory stops growing after warm-up", async () => {
    const vm = await loadFilter({ random: countingRandom(), config: { sampling: { defaultRate: 0.5 } } });
    const request = (i: number): void => {
      exchange(vm, {
        headers: baseRequest(
          [["traceparent", `01-${TRACE}-${PARENT}-01-${"f".repeat(200 + (i % 50))}`], ["tracestate", LONG_TRACESTATE], ["x-token-trace-id", "t".repeat(129)]],
          `/v1/chat/completions?pad=${"x".repeat(1000 + (i % 100))}`,
        ),
        route: `route-${"r".repeat(200)}-${i % 4}`,
        status: 200,
      });
    };
    for (let i = 0; i < 5_000; i++) request(i);
    const afterWarmUp = vm.memoryBytes();
    for (let i = 5_000; i < 30_000; i++) request(i);
    assert.equal(vm.memoryBytes(), afterWarmUp, `linear memory grew from ${afterWarmUp} to ${vm.memoryBytes()} bytes`);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_token_trace_id" }), 30_000);
  });
});
