// Every configuration default the filter documents (docs/filter.md, filter/config.schema.json), each
// observed through the real filter.wasm (emulated Envoy host) rather than read back from the code.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ManualClock } from "../../host/index.js";
import { countingRandom, exchange, loadFilter, baseRequest } from "../support.js";

interface SchemaNode { default?: unknown; properties?: Record<string, SchemaNode> }
const schema = JSON.parse(readFileSync(new URL("../../../filter/config.schema.json", import.meta.url), "utf8")) as SchemaNode;
const schemaDefault = (...path: string[]): unknown => path.reduce<SchemaNode | undefined>((n, k) => n?.properties?.[k], schema)?.default;

describe("configuration defaults (emulated Envoy host)", () => {
  it("stats.maxModels: 32 models get their own label, the 33rd is \"other\"", async () => {
    assert.equal(schemaDefault("stats", "maxModels"), 32);
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom() });
    for (let i = 0; i < 33; i++) {
      const s = vm.newStream({ routeName: "chat" });
      s.requestHeaders(baseRequest(), false);
      s.requestBody(JSON.stringify({ model: `m${i}` }), true);
      s.responseHeaders([[":status", "200"]], true);
      s.end();
    }
    const n = (model: string): number | undefined =>
      vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model, stream: "false", finish_reason: "none", status_class: "2xx" });
    assert.equal(n("m31"), 1);
    assert.equal(n("m32"), undefined);
    assert.equal(n("other"), 1);
  });

  it("llm.maxRequestBodyBytes: a 65536-byte body is read, one byte more is not", async () => {
    assert.equal(schemaDefault("llm", "maxRequestBodyBytes"), 65536);
    const vm = await loadFilter({ random: countingRandom() });
    const body = (size: number): string => {
      const head = '{"model":"big","messages":"';
      return head + "x".repeat(size - head.length - 2) + '"}';
    };
    for (const size of [65536, 65537]) {
      const s = vm.newStream({ routeName: "chat" });
      s.requestHeaders(baseRequest(), false);
      s.requestBody(body(size), true);
      s.responseHeaders([[":status", "200"]], true);
      s.end();
    }
    assert.equal(vm.stats.value("tokentrace_llm_requests_total", { route: "chat", model: "big", stream: "false", finish_reason: "none", status_class: "2xx" }), 1);
    assert.equal(vm.stats.value("tokentrace_llm_body_limit_exceeded_total", { route: "chat" }), 1);
  });

  it("llm.requestUsageInStream is off: a streaming request body passes as it came", async () => {
    assert.equal(schemaDefault("llm", "requestUsageInStream"), false);
    const vm = await loadFilter({ random: countingRandom() });
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders(baseRequest([["content-length", "30"]]), false);
    assert.equal(s.requestBody('{"model":"m","stream":true}', true), 0);
    assert.equal(s.lastRequestChunk.toString(), '{"model":"m","stream":true}');
    assert.equal(s.request.get("content-length"), "30");
  });

  it("spans: batches of 32, a partial one every 5000 ms (as Envoy's OpenTelemetry tracer flushes), at most 1024 buffered, path /v1/traces", async () => {
    assert.deepEqual(
      ["batchSize", "flushIntervalMs", "maxBufferedSpans", "path", "timeoutMs"].map((k) => schemaDefault("spans", k)),
      [32, 5000, 1024, "/v1/traces", 5000],
    );
    const vm = await loadFilter({ random: countingRandom(), config: { sampling: { defaultRate: 1 }, spans: { cluster: "nowhere" } } });
    // loadFilter sends counters at once (stats.flushIntervalMs 0), so the span interval sets the tick.
    assert.equal(vm.tickPeriodMs, 5000);
    for (let i = 0; i < 31; i++) exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
    assert.equal(vm.stats.value("tokentrace_span_export_failures_total"), 0, "31 spans wait for the tick");
    exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
    // The 32nd fills a batch, which goes at once: to a cluster the host does not know, so it fails.
    assert.equal(vm.stats.value("tokentrace_span_export_failures_total"), 1);
    assert.equal(vm.stats.value("tokentrace_spans_dropped_total"), 32);
    // With the default stats interval (1000 ms) the VM ticks each second, and a partial batch waits for the fifth tick.
    const batched = await loadFilter({ random: countingRandom(), config: { sampling: { defaultRate: 1 }, stats: { flushIntervalMs: 1000 }, spans: { cluster: "nowhere" } } });
    assert.equal(batched.tickPeriodMs, 1000);
    exchange(batched, { headers: baseRequest(), route: "chat", status: 200 });
    const exports = (): number => batched.hostCallsByName()["env.proxy_http_call"] ?? 0;
    for (let i = 0; i < 4; i++) batched.tick();
    assert.equal(exports(), 0);
    batched.tick();
    assert.equal(exports(), 1);
  });

  it("policySource: polls every 10000 ms", async () => {
    assert.equal(schemaDefault("policySource", "intervalMs"), 10000);
    const vm = await loadFilter({ random: countingRandom(), config: { stats: { flushIntervalMs: 0 }, policySource: { cluster: "cp", workload: "llm.chat" } } });
    assert.equal(vm.tickPeriodMs, 10000);
  });

  it("stats.flushIntervalMs: counters are sent on a 1000 ms tick", async () => {
    assert.equal(schemaDefault("stats", "flushIntervalMs"), 1000);
    const vm = await loadFilter({ random: countingRandom(), pluginConfig: "" });
    assert.equal(vm.tickPeriodMs, 1000);
  });
});
