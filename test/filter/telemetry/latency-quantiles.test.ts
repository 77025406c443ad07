// The filter's latency histograms read the way the dashboards read them: the real filter.wasm
// (emulated Envoy host, Envoy's histogram binning) under a mixed load, its /stats/prometheus text
// remote-written to a real Prometheus, and histogram_quantile asked for P50, P95 and P99 of every
// latency series. The quantiles must be ordered and mean what their names say: non-streaming calls
// (whose first byte is the whole generation) stay out of TTFT, and decode is a per-request figure.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { encodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { normalizeLabels, type WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { snappyCompress } from "../../../control-plane/src/remote-write/snappy.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { PrometheusInstance } from "../../support/prometheus.js";
import { countingRandom, loadFilter } from "../support.js";

const LATENCY_SERIES = ["tokentrace_llm_ttft_ms", "tokentrace_llm_decode_ms", "tokentrace_llm_tpot_us", "tokentrace_llm_duration_ms", "tokentrace_request_duration_ms"];
const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");
const content = (text: string, finish: string | null = null): unknown => ({ model: "m", choices: [{ index: 0, delta: { content: text }, finish_reason: finish }] });

/** A streamed chat completion: the first content after `ttftMs`, then `tokens` events `gapMs` apart. */
function streamed(vm: FilterVm, clock: ManualClock, ttftMs: number, tokens: number, gapMs: number): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"]], false);
  s.requestBody(JSON.stringify({ model: "m", stream: true, messages: [] }), true);
  clock.advanceMs(ttftMs);
  s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
  s.responseBody(sse([{ model: "m", choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }, content("t0")]), false);
  for (let i = 1; i < tokens; i++) {
    clock.advanceMs(gapMs);
    s.responseBody(sse([content(`t${i}`, i === tokens - 1 ? "stop" : null)]), false);
  }
  s.responseBody(sse([{ model: "m", choices: [], usage: { prompt_tokens: 10, completion_tokens: tokens } }]) + "data: [DONE]\n\n", true);
  s.end();
}

/** A non-streaming completion: the whole body after `durationMs`. */
function whole(vm: FilterVm, clock: ManualClock, durationMs: number): void {
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"]], false);
  s.requestBody(JSON.stringify({ model: "m", messages: [] }), true);
  clock.advanceMs(durationMs);
  s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
  s.responseBody(JSON.stringify({ model: "m", choices: [{ index: 0, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 300 } }), true);
  s.end();
}

describe("latency percentiles of the filter's histograms (emulated Envoy host, real Prometheus)", () => {
  let prom: PrometheusInstance;
  before(async () => {
    prom = await PrometheusInstance.start();
  });
  after(async () => prom.destroy());

  it("P50 <= P95 <= P99 for every latency series; non-streaming calls stay out of TTFT; decode is per request", async () => {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    const vm = await loadFilter({ clock, random: countingRandom() });
    // 300 streams: TTFT 100..397 ms, 20 tokens 10..39 ms apart (decode 190..741 ms); one call in
    // four is non-streaming and takes 8 s, the pattern that once set TTFT's P95 and P99 alone.
    for (let i = 0; i < 300; i++) {
      streamed(vm, clock, 100 + ((i * 37) % 298), 20, 10 + (i % 30));
      if (i % 3 === 0) whole(vm, clock, 8000);
    }
    const nowMs = Date.now();
    const series: WriteSeries[] = [];
    for (const sample of parseText(vm.stats.prometheus()).samples) {
      if (!LATENCY_SERIES.some((name) => sample.name.startsWith(`${name}_`))) continue;
      const labels = normalizeLabels(["__name__", sample.name, ...sample.labels]);
      assert.ok(Array.isArray(labels), `labels of ${sample.name}`);
      series.push({ labels, samples: [{ value: sample.value, timestampMs: nowMs }] });
    }
    const res = await fetch(prom.writeUrl, {
      method: "POST",
      body: snappyCompress(encodeWriteRequestV1(series)),
      headers: { "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Write-Version": "0.1.0" },
    });
    assert.equal(res.status, 204, await res.text());

    const quantiles = new Map<string, number[]>();
    for (const name of LATENCY_SERIES) {
      const values: number[] = [];
      for (const q of [0.5, 0.95, 0.99]) {
        const result = await prom.query(`histogram_quantile(${q}, sum by (le) (${name}_bucket{route="chat"}))`, nowMs / 1000);
        assert.equal(result.length, 1, `${name} P${q * 100}: one result`);
        const v = Number(result[0]!.value![1]);
        assert.ok(Number.isFinite(v) && v > 0, `${name} P${q * 100} = ${v}`);
        values.push(v);
      }
      const [p50, p95, p99] = values as [number, number, number];
      assert.ok(p50 <= p95 && p95 <= p99, `${name}: P50 ${p50} <= P95 ${p95} <= P99 ${p99}`);
      quantiles.set(name, values);
    }
    // Bucket bounds are Envoy's defaults (0.5 .. 3600000), so a quantile lies within its bucket.
    const ttft = quantiles.get("tokentrace_llm_ttft_ms")!;
    assert.ok(ttft[2]! <= 500, `TTFT P99 ${ttft[2]} comes from streams (<= 397 ms), not from the 8 s non-streaming calls`);
    const decode = quantiles.get("tokentrace_llm_decode_ms")!;
    assert.ok(decode[0]! >= 250 && decode[0]! <= 1000, `decode P50 ${decode[0]} is a per-request figure (190..741 ms)`);
    assert.ok(decode[2]! <= 1000, `decode P99 ${decode[2]}`);
    const duration = quantiles.get("tokentrace_llm_duration_ms")!;
    assert.ok(duration[2]! >= 5000, `duration P99 ${duration[2]} does include the 8 s calls`);
  });
});
