// Per-route stats of the real filter.wasm (emulated Envoy host): exact counter and histogram values,
// Istio's tag convention, label sanitising, the route cap, and the Prometheus rendering.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../host/index.js";
import { baseRequest, countingRandom, exchange, loadFilter } from "../support.js";

describe("per-route stats (emulated Envoy host)", () => {
  it("counts requests by route and response code class and records durations in ms", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom() });
    const plan: Array<[string | undefined, number | undefined, number]> = [
      ["chat", 200, 120],
      ["chat", 201, 80],
      ["chat", 503, 5],
      ["embed", 404, 2],
      [undefined, 200, 1],
      ["chat", undefined, 7], // reset before any response
    ];
    for (const [route, status, durationMs] of plan) exchange(vm, { headers: baseRequest(), route, status, durationMs, clock });

    const v = (labels: Record<string, string>): number | undefined => vm.stats.value("tokentrace_requests_total", labels);
    assert.equal(v({ route: "chat", status_class: "2xx" }), 2);
    assert.equal(v({ route: "chat", status_class: "5xx" }), 1);
    assert.equal(v({ route: "chat", status_class: "none" }), 1);
    assert.equal(v({ route: "embed", status_class: "4xx" }), 1);
    assert.equal(v({ route: "default", status_class: "2xx" }), 1);
    assert.equal(v({ route: "embed", status_class: "2xx" }), undefined, "stats are defined only when used");
    assert.deepEqual(vm.stats.samples("tokentrace_request_duration_ms", { route: "chat" }), [120, 80, 5, 7]);
    assert.deepEqual(vm.stats.samples("tokentrace_request_duration_ms", { route: "embed" }), [2]);
    assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 4);
  });

  it("names stats with Istio's TAG=.=VALUE;.; convention", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
    assert.ok(vm.stats.names().includes("route=.=chat;.;status_class=.=2xx;.;tokentrace_requests_total"));
    assert.ok(vm.stats.names().includes("route=.=chat;.;tokentrace_request_duration_ms"));
    assert.ok(vm.stats.names().includes("error=.=invalid_traceparent;.;tokentrace_filter_errors_total"));
    const text = vm.stats.prometheus();
    assert.match(text, /^tokentrace_requests_total\{route="chat",status_class="2xx"\} 1$/m);
    assert.match(text, /^# TYPE tokentrace_request_duration_ms histogram$/m);
  });

  it("sanitises route labels so they cannot break the tag convention", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    const cases: Array<[string, string]> = [
      ["a;.;b=.=c", "a_._b_._c"],
      ["llama-3.1/8b:chat", "llama-3.1/8b:chat"],
      ["caf\u00e9 route", "caf__route"],
      ["r".repeat(100), "r".repeat(64)],
    ];
    for (const [route] of cases) exchange(vm, { headers: baseRequest(), route, status: 200 });
    for (const [, label] of cases) {
      assert.equal(vm.stats.value("tokentrace_requests_total", { route: label, status_class: "2xx" }), 1, label);
    }
  });

  it("caps distinct routes and counts the rest under route=\"other\"", async () => {
    const vm = await loadFilter({ random: countingRandom(), config: { stats: { maxRoutes: 3 } } });
    for (const route of ["a", "b", "c", "d", "e", "a", "d"]) exchange(vm, { headers: baseRequest(), route, status: 200 });
    const v = (route: string): number | undefined => vm.stats.value("tokentrace_requests_total", { route, status_class: "2xx" });
    assert.deepEqual([v("a"), v("b"), v("c"), v("d"), v("e"), v("other")], [2, 1, 1, undefined, undefined, 3]);
    assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "route_overflow" }), 3);
  });

  it("caps routes at 64 by default", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    for (let i = 0; i < 66; i++) exchange(vm, { headers: baseRequest(), route: `r${i}`, status: 200 });
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "r63", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "r64", status_class: "2xx" }), undefined);
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "other", status_class: "2xx" }), 2);
  });

  it("defines every error reason up front, at zero", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    exchange(vm, { headers: baseRequest(), status: 200 });
    const reasons = ["invalid_traceparent", "invalid_tracestate", "invalid_token_trace_id", "host_call_failed", "config_rejected", "route_overflow", "random_unavailable"];
    for (const reason of reasons) assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: reason }), 0, reason);
  });
});

describe("counter flushing (emulated Envoy host)", () => {
  it("holds counter increments until the tick (1 s by default) and sends each counter once; histograms go at once", async () => {
    const vm = await loadFilter({ random: countingRandom(), config: { stats: { flushIntervalMs: 1000 } } });
    assert.equal(vm.tickPeriodMs, 1000);
    const callsBefore = vm.hostCalls;
    for (let i = 0; i < 5; i++) exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 0, "defined, not sent yet");
    assert.equal(vm.stats.samples("tokentrace_request_duration_ms", { route: "chat" })?.length, 5, "histograms are recorded at once");
    const increments = (): number => vm.hostCallsByName()["env.proxy_increment_metric"] ?? 0;
    const beforeTick = increments();
    vm.tick();
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 5);
    assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 5);
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "unknown", stream: "false", finish_reason: "none", status_class: "2xx" }), 5);
    assert.equal(increments() - beforeTick, 3, "one call per counter that moved: requests, traces started, LLM requests");
    assert.ok(vm.hostCalls > callsBefore);
  });

  it("sends what it holds when the VM shuts down", async () => {
    const vm = await loadFilter({ random: countingRandom(), config: { stats: { flushIntervalMs: 60000 } } });
    exchange(vm, { headers: baseRequest(), route: "chat", status: 503 });
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "5xx" }), 0);
    vm.shutdown();
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "5xx" }), 1);
  });

  it("with flushIntervalMs 0 every increment is sent as it happens and no tick is needed", async () => {
    const vm = await loadFilter({ random: countingRandom(), config: { stats: { flushIntervalMs: 0 } } });
    assert.equal(vm.tickPeriodMs, 0);
    exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
    assert.equal(vm.stats.value("tokentrace_requests_total", { route: "chat", status_class: "2xx" }), 1);
  });
});
