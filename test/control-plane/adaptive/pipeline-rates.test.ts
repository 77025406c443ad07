// Adaptive sampling's rate source fed by the control plane's own pipeline: the filter's request
// counter in joined Envoy batches, per route, per policy namespace.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { PipelineRateSource, type RateBatchSource } from "../../../control-plane/src/adaptive/pipeline-rates.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

const T0 = 1_700_000_000_000;

/** A joined request-counter series as the pipeline ships it. */
function requests(route: string, statusClass: string, value: number, namespace: string, pod: string): WriteSeries {
  return { labels: ["__name__", "tokentrace_requests_total", "namespace", namespace, "pod", pod, "route", route, "status_class", statusClass], samples: [{ value, timestampMs: T0 }] };
}

function batch(id: string, namespace: string | undefined, timestampMs: number, kind = "envoy"): RateBatchSource {
  return { target: { id, kind, ...(namespace === undefined ? {} : { namespace }) }, timestampMs };
}

function source(now: { ms: number }, namespaces: Record<string, string> = { chat: "llm", batch: "offline" }): PipelineRateSource {
  return new PipelineRateSource({ namespaceOf: (policy) => namespaces[policy], now: () => now.ms, maxAgeMs: 30_000 });
}

const sorted = (rates: { route: string; requestsPerSecond: number }[]): [string, number][] =>
  rates.map((r): [string, number] => [r.route, r.requestsPerSecond]).sort(([a], [b]) => (a < b ? -1 : 1));

describe("pipeline rate source", () => {
  it("sums status classes and the pods of a policy's namespace per route, over two scrapes of each pod", async () => {
    const now = { ms: T0 + 10_000 };
    const rates = source(now);
    rates.observe([requests("chat", "2xx", 100, "llm", "a"), requests("chat", "5xx", 10, "llm", "a"), requests("embed", "2xx", 50, "llm", "a")], batch("envoy/llm/a", "llm", T0));
    rates.observe([requests("chat", "2xx", 40, "llm", "b")], batch("envoy/llm/b", "llm", T0));
    rates.observe([requests("chat", "2xx", 7, "offline", "c")], batch("envoy/offline/c", "offline", T0));
    assert.deepEqual(await rates.requestRates("chat"), [], "one scrape per pod gives no rate yet");

    rates.observe([requests("chat", "2xx", 180, "llm", "a"), requests("chat", "5xx", 30, "llm", "a"), requests("embed", "2xx", 55, "llm", "a")], batch("envoy/llm/a", "llm", T0 + 10_000));
    rates.observe([requests("chat", "2xx", 90, "llm", "b"), requests("new", "2xx", 3, "llm", "b")], batch("envoy/llm/b", "llm", T0 + 5_000));
    rates.observe([requests("chat", "2xx", 27, "offline", "c")], batch("envoy/offline/c", "offline", T0 + 10_000));
    // a: chat (210 - 110) / 10 s = 10, embed 0.5; b: chat 50 / 5 s = 10, "new" has no earlier point.
    assert.deepEqual(sorted(await rates.requestRates("chat")), [["chat", 20], ["embed", 0.5]]);
    assert.deepEqual(sorted(await rates.requestRates("batch")), [["chat", 2]]);
    assert.deepEqual(await rates.requestRates("gone"), []);
  });

  it("reads a counter that went down as reset to zero, and ignores batches of other target kinds or without a namespace", async () => {
    const now = { ms: T0 + 10_000 };
    const rates = source(now);
    rates.observe([requests("chat", "2xx", 500, "llm", "a")], batch("envoy/llm/a", "llm", T0));
    rates.observe([requests("chat", "2xx", 20, "llm", "a")], batch("envoy/llm/a", "llm", T0 + 10_000));
    rates.observe([requests("chat", "2xx", 1, "llm", "g")], batch("dcgm/node", "llm", T0, "dcgm"));
    rates.observe([requests("chat", "2xx", 1_001, "llm", "g")], batch("dcgm/node", "llm", T0 + 10_000, "dcgm"));
    rates.observe([requests("chat", "2xx", 1, "llm", "x")], batch("static/x", undefined, T0, "static"));
    rates.observe([requests("chat", "2xx", 1_001, "llm", "x")], batch("static/x", undefined, T0 + 10_000, "static"));
    assert.deepEqual(sorted(await rates.requestRates("chat")), [["chat", 2]]);
  });

  it("drops the rates of a target not scraped for longer than maxAgeMs", async () => {
    const now = { ms: T0 + 10_000 };
    const rates = source(now);
    rates.observe([requests("chat", "2xx", 0, "llm", "a")], batch("envoy/llm/a", "llm", T0));
    rates.observe([requests("chat", "2xx", 100, "llm", "a")], batch("envoy/llm/a", "llm", T0 + 10_000));
    now.ms = T0 + 40_000;
    assert.deepEqual(sorted(await rates.requestRates("chat")), [["chat", 10]]);
    now.ms = T0 + 40_001;
    assert.deepEqual(await rates.requestRates("chat"), []);
    // Scraped again later: the old totals are gone too, so it needs two fresh scrapes.
    rates.observe([requests("chat", "2xx", 400, "llm", "a")], batch("envoy/llm/a", "llm", T0 + 50_000));
    assert.deepEqual(await rates.requestRates("chat"), []);
  });

  it("forgets the pods gone (a rollout's old ones) even when no rate is asked for (adaptive sampling off): it holds the pods scraped within maxAgeMs", () => {
    const rates = source({ ms: T0 });
    // A rollout every minute for an hour: each pod scraped for a minute, then gone.
    for (let minute = 0; minute < 60; minute++) {
      for (let s = 0; s < 60; s += 15) rates.observe([requests("chat", "2xx", s, "llm", `p${minute}`)], batch(`envoy/llm/p${minute}`, "llm", T0 + minute * 60_000 + s * 1000));
    }
    assert.ok(rates.targets <= 2, `${rates.targets} pods held`);
  });
});
