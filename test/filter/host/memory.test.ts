// Linear memory of the real filter.wasm stays flat under sustained traffic (emulated Envoy host):
// the patched SDK's malloc pins host buffers and the filter unpins them, so the incremental GC can
// reclaim every per-request allocation.
import { it } from "node:test";
import assert from "node:assert/strict";
import { countingRandom, exchange, loadFilter } from "../support.js";

it("100k requests through one VM: linear memory stops growing after warm-up (emulated Envoy host)", async () => {
  const vm = await loadFilter({ random: countingRandom(), config: { sampling: { defaultRate: 0.5 } } });
  const routes = ["chat", "completions", "embeddings", "models"];
  const request = (i: number): void => {
    const headers: Array<[string, string]> = [[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], ["x-request-id", `r${i}`]];
    if (i % 3 === 0) headers.push(["traceparent", `00-${i.toString(16).padStart(32, "a")}-00f067aa0ba902b7-01`]);
    if (i % 5 === 0) headers.push(["traceparent", "garbage"]);
    if (i % 7 === 0) headers.push(["x-token-trace-id", `tok-${i}`]);
    exchange(vm, { headers, route: routes[i % routes.length], status: i % 11 === 0 ? 503 : 200 });
  };
  for (let i = 0; i < 10_000; i++) request(i);
  const afterWarmUp = vm.memoryBytes();
  for (let i = 10_000; i < 100_000; i++) request(i);
  assert.equal(vm.memoryBytes(), afterWarmUp, `linear memory grew from ${afterWarmUp} to ${vm.memoryBytes()} bytes`);
  assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" })! + vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "5xx" })!, 25_000);
});

it("10k requests carrying 60 KiB of header values (Envoy's default limit): linear memory stays at or under 1 MiB (emulated Envoy host)", async () => {
  const vm = await loadFilter({ random: countingRandom() });
  const KiB = 1024;
  // Every value the filter reads is long: :path, a traceparent (so the whole map is read as pairs),
  // tracestate and token id lines, plus filler: 60 KiB of header values per request.
  const headers = (i: number): Array<[string, string]> => {
    const h: Array<[string, string]> = [
      [":method", "POST"],
      [":path", `/v1/chat/completions?pad=${"p".repeat(12 * KiB)}&i=${i}`],
      [":authority", "llm.svc"],
      ["traceparent", `00-${(i + 1).toString(16).padStart(32, "a")}-00f067aa0ba902b7-01`],
      ["tracestate", `k=${"v".repeat(250)}`],
      ["x-token-trace-id", `t${"x".repeat(8 * KiB)}`],
    ];
    const used = h.reduce((n, [, v]) => n + v.length, 0);
    for (let k = 0; used + k * 4 * KiB < 60 * KiB - 4 * KiB; k++) h.push([`x-fill-${k}`, "f".repeat(4 * KiB)]);
    return h;
  };
  assert.ok(headers(0).reduce((n, [, v]) => n + v.length, 0) > 56 * KiB);
  for (let i = 0; i < 10_000; i++) exchange(vm, { headers: headers(i), route: "chat", status: 200 });
  assert.ok(vm.memoryBytes() <= 1024 * KiB, `linear memory reached ${vm.memoryBytes()} bytes`);
  assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 10_000);
});
