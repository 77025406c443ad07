// W3C Trace Context level 2 through the real filter.wasm (emulated Envoy host).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { baseRequest, exchange, loadFilter, scriptedRandom } from "./support.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const VALID = `00-${TRACE}-${PARENT}-01`;

// Fixed randomness for traces the filter starts: trace-id bytes 0x10.., span-id bytes 0x30..,
// token-trace-id bytes 0x50...
const traceBytes = Uint8Array.from({ length: 24 }, (_, i) => (i < 16 ? 0x10 + i : 0x30 + i - 16));
const uuidBytes = Uint8Array.from({ length: 16 }, (_, i) => 0x50 + i);
const NEW_TRACE_ID = "101112131415161718191a1b1c1d1e1f";
const NEW_SPAN_ID = "3031323334353637";

describe("traceparent through filter.wasm (emulated Envoy host)", () => {
  const kept: Array<[string, string, string]> = [
    ["a sampled version-00 header is forwarded unchanged", VALID, VALID],
    ["an unsampled one keeps its flags", `00-${TRACE}-${PARENT}-00`, `00-${TRACE}-${PARENT}-00`],
    ["unknown flag bits are kept", `00-${TRACE}-${PARENT}-ff`, `00-${TRACE}-${PARENT}-ff`],
    ["surrounding spaces and tabs are tolerated", ` \t${VALID} `, VALID],
    ["a later version is re-read with the 00 layout and re-emitted as 00", `cc-${TRACE}-${PARENT}-01`, VALID],
    ["a later version may append fields after a dash", `01-${TRACE}-${PARENT}-03-what-the-future-holds`, `00-${TRACE}-${PARENT}-03`],
  ];
  for (const [name, incoming, outgoing] of kept) {
    it(`keeps the trace: ${name}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", incoming]]), route: "chat", status: 200 });
      assert.equal(s.request.get("traceparent"), outgoing);
      assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 0);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_traceparent" }), 0);
    });
  }

  const invalid: Array<[string, string]> = [
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ["an all-zero trace-id", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["an all-zero parent-id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${TRACE}-${PARENT}-01`],
    ["version 00 with trailing data", `${VALID}-extra`],
    ["a later version with trailing data not after a dash", `01-${TRACE}-${PARENT}-01x`],
    ["a short trace-id", `00-${TRACE.slice(1)}-${PARENT}-01`],
    ["a long parent-id", `00-${TRACE}-${PARENT}0-01`],
    ["a non-hex version", `0g-${TRACE}-${PARENT}-01`],
    ["wrong separators", `00_${TRACE}_${PARENT}_01`],
    ["a one-digit flags field", `00-${TRACE}-${PARENT}-1`],
    ["an empty value", ""],
    ["two headers joined by a comma", `${VALID},${VALID}`],
  ];
  for (const [name, incoming] of invalid) {
    it(`starts a new trace on an invalid traceparent: ${name}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([traceBytes, uuidBytes]), config: { sampling: { defaultRate: 1 } } });
      const s = exchange(vm, { headers: baseRequest([["traceparent", incoming], ["tracestate", "vendor=abc"]]), route: "chat", status: 200 });
      assert.equal(s.request.get("traceparent"), `00-${NEW_TRACE_ID}-${NEW_SPAN_ID}-03`);
      assert.equal(s.request.get("tracestate"), "ot=th:0", "the incoming tracestate belongs to no valid trace and is dropped");
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_traceparent" }), 1);
      assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 1);
    });
  }

  it("starts a new trace when there is none, with flag 0x02 and an unsampled bit at rate 0", async () => {
    const vm = await loadFilter({ random: scriptedRandom([traceBytes, uuidBytes]), config: { sampling: { defaultRate: 0 } } });
    const s = exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
    assert.equal(s.request.get("traceparent"), `00-${NEW_TRACE_ID}-${NEW_SPAN_ID}-02`);
    assert.equal(s.request.get("tracestate"), undefined);
    assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 1);
    assert.equal(vm.stats.value("tokentrace_traces_sampled_total", { route: "chat" }), 0);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_traceparent" }), 0);
  });

  it("never emits an all-zero id even when the random source returns zeros", async () => {
    const vm = await loadFilter({ random: scriptedRandom([new Uint8Array(24), uuidBytes]), config: { sampling: { defaultRate: 0 } } });
    const s = exchange(vm, { headers: baseRequest(), status: 200 });
    assert.equal(s.request.get("traceparent"), `00-${"0".repeat(31)}1-${"0".repeat(15)}1-02`);
  });
});

describe("tracestate through filter.wasm (emulated Envoy host)", () => {
  const validStates = [
    "congo=t61rcWkgMzE",
    "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    "a=1 , b=2",
    "tenant1@vendor=value,other=x",
    "k=v,,k2=v2",
    Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(","),
    `k=${"x".repeat(256)}`,
  ];
  for (const state of validStates) {
    it(`keeps a valid tracestate unchanged: ${state.slice(0, 40)}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", VALID], ["tracestate", state]]), status: 200 });
      assert.equal(s.request.get("tracestate"), state);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_tracestate" }), 0);
    });
  }

  const invalidStates = [
    "Upper=1",
    "k=v,k=w",
    "k=",
    "=v",
    "k=v=w",
    "1k=v",
    "k=a\u0001b",
    Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(","),
    `k=${"x".repeat(257)}`,
    "tenant@Vendor=v",
    "k=caf\u00e9",
  ];
  for (const state of invalidStates) {
    it(`drops an invalid tracestate and counts it, keeping the traceparent: ${state.slice(0, 40)}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", VALID], ["tracestate", state]]), status: 200 });
      assert.equal(s.request.get("tracestate"), undefined);
      assert.equal(s.request.get("traceparent"), VALID);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_tracestate" }), 1);
    });
  }
});

describe("ids the filter writes (emulated Envoy host)", () => {
  it("writes every byte value of new trace, span and token ids as lower-case hex", async () => {
    // Sixteen requests whose trace-ids together hold all 256 byte values; span and token ids get others.
    const blocks: Uint8Array[] = [];
    for (let k = 0; k < 16; k++) {
      blocks.push(Uint8Array.from({ length: 24 }, (_, i) => (i < 16 ? k * 16 + i : 255 - k * 8 - (i - 16))));
      blocks.push(Uint8Array.from({ length: 16 }, (_, i) => (k * 37 + i * 11) & 0xff));
    }
    const vm = await loadFilter({ random: scriptedRandom(blocks), config: { sampling: { defaultRate: 1 } } });
    for (let k = 0; k < 16; k++) {
      const s = exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
      const ids = blocks[2 * k]!;
      const token = Buffer.from(blocks[2 * k + 1]!);
      token[6] = (token[6]! & 0x0f) | 0x40;
      token[8] = (token[8]! & 0x3f) | 0x80;
      const hex = token.toString("hex");
      assert.equal(s.request.get("traceparent"), `00-${Buffer.from(ids.subarray(0, 16)).toString("hex")}-${Buffer.from(ids.subarray(16)).toString("hex")}-03`);
      assert.equal(s.request.get("x-token-trace-id"), `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
    }
  });
});

