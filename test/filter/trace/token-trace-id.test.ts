// x-token-trace-id through the real filter.wasm (emulated Envoy host).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { baseRequest, exchange, loadFilter, scriptedRandom } from "../support.js";

const VALID_TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const uuidBytes = Uint8Array.from({ length: 16 }, (_, i) => i * 17);
// Bytes 00 11 22 .. ff with the version nibble set to 4 and the variant bits to 10.
const EXPECTED_UUID = "00112233-4455-4677-8899-aabbccddeeff";

describe("x-token-trace-id (emulated Envoy host)", () => {
  const kept = ["req-123", "0f8fad5b-d9cb-469f-a165-70867728950e", "A.b_c:d-e", "x".repeat(128)];
  for (const id of kept) {
    it(`keeps a well-formed id upstream and returns it downstream: ${id.slice(0, 40)}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", VALID_TRACEPARENT], ["x-token-trace-id", id]]), status: 200 });
      assert.equal(s.request.get("x-token-trace-id"), id);
      assert.deepEqual(s.response.getAll("x-token-trace-id"), [id]);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_token_trace_id" }), 0);
    });
  }

  const replaced = ["", "x".repeat(129), "has space", "semi;colon", "caf\u00e9", "a/b"];
  for (const id of replaced) {
    it(`replaces a malformed id with a new UUIDv4 and counts it: ${JSON.stringify(id.slice(0, 20))}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", VALID_TRACEPARENT], ["x-token-trace-id", id]]), status: 200 });
      assert.equal(s.request.get("x-token-trace-id"), EXPECTED_UUID);
      assert.deepEqual(s.response.getAll("x-token-trace-id"), [EXPECTED_UUID]);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_token_trace_id" }), 1);
    });
  }

  it("creates a UUIDv4 when the header is absent, without counting an error", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
    const s = exchange(vm, { headers: baseRequest([["traceparent", VALID_TRACEPARENT]]), status: 200 });
    assert.equal(s.request.get("x-token-trace-id"), EXPECTED_UUID);
    assert.match(EXPECTED_UUID, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_token_trace_id" }), 0);
  });

  it("replaces an id the upstream sent back with the request's own id", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]) });
    const s = exchange(vm, {
      headers: baseRequest([["traceparent", VALID_TRACEPARENT], ["x-token-trace-id", "mine"]]),
      status: 200,
      responseHeaders: [["x-token-trace-id", "theirs"]],
    });
    assert.deepEqual(s.response.getAll("x-token-trace-id"), ["mine"]);
  });

  it("uses the configured header name", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]), config: { headers: { tokenTraceId: "x-request-lineage" } } });
    const s = exchange(vm, { headers: baseRequest([["traceparent", VALID_TRACEPARENT], ["x-request-lineage", "abc"], ["x-token-trace-id", "ignored"]]), status: 200 });
    assert.equal(s.request.get("x-request-lineage"), "abc");
    assert.deepEqual(s.response.getAll("x-request-lineage"), ["abc"]);
    assert.equal(s.response.get("x-token-trace-id"), undefined);
  });
});
