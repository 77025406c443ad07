// The cause panels' endpoint, GET /v1/dashboard/engine-causes: per model, the waiting queue, the
// running batch, KV-cache usage, preemptions, cache hits, TPOT and the engine's queue/prefill/decode
// P99 beside the sidecars' TTFT P99, added up over pods the way each column says; the store's
// retention and byte budget; and the page's JSON per refresh under the 200 KB with 15
// minutes of data. Batches are made by hand (exact values) or by the real join of fixture scrapes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { EngineSignals, POINT_BYTES } from "../../../control-plane/src/dashboard/engine-signals.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { labelValue } from "../../../control-plane/src/scrape/sample.js";
import { advance, fixture, relabel, sidecarText } from "../../support/engine-scrapes.js";
import { serveDashboard } from "./serve-dashboard.js";

const T0 = Date.UTC(2026, 11, 5, 6, 0, 0);
const STEP_MS = 2000;


interface CausesBody {
  rangeSeconds: number;
  stepSeconds: number;
  lookbackSeconds: number;
  needs: Record<string, string>;
  models: { namespace: string; model: string; pods: string[]; tpotSource: string | null; columns: Record<string, (number | null)[]>; waitingByReason: { reason: string; values: (number | null)[] }[]; prefixCacheHitsByTier: { tier: string; values: (number | null)[] }[] }[];
}

/** One model server's joined batch for one model, as the join writes it (seconds for latencies). */
function engineBatch(
  pod: string,
  model: string,
  ts: number,
  v: { waiting: number; running: number; kv: number; preempt: number; prefix?: number; spec?: number; tpot?: [number, number, number]; itl?: [number, number, number]; phases?: Record<string, number>; external?: number; computed?: number; preemptPerRequest?: number; reasons?: Record<string, number>; tiers?: Record<string, number> },
): WriteSeries[] {
  const ml = ["namespace", "llm", "pod", pod, "model", model];
  const out: WriteSeries[] = [];
  const put = (name: string, value: number, extra: string[] = []): void => void out.push({ labels: ["__name__", name, ...ml, ...extra], samples: [{ value, timestampMs: ts }] });
  put(C.MODEL_REQUESTS_WAITING, v.waiting);
  put(C.MODEL_REQUESTS_RUNNING, v.running);
  put(C.MODEL_KV_CACHE_USAGE, v.kv);
  put(C.MODEL_PREEMPTIONS_PER_SECOND, v.preempt);
  if (v.prefix !== undefined) put(C.MODEL_PREFIX_CACHE_HIT_RATIO, v.prefix);
  if (v.spec !== undefined) put(C.MODEL_SPEC_DECODE_ACCEPTANCE, v.spec);
  ["0.5", "0.95", "0.99"].forEach((q, i) => {
    if (v.tpot) put(C.MODEL_REQUEST_TPOT_QUANTILE, v.tpot[i]!, ["quantile", q]);
    if (v.itl) put(C.MODEL_LATENCY_QUANTILE, v.itl[i]!, ["phase", "inter_token", "quantile", q]);
  });
  for (const [phase, s] of Object.entries(v.phases ?? {})) {
    put(C.MODEL_LATENCY_QUANTILE, s, ["phase", phase, "quantile", "0.99"]);
    put(C.MODEL_LATENCY_QUANTILE, s / 2, ["phase", phase, "quantile", "0.5"]);
  }
  if (v.external !== undefined) put(C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO, v.external);
  if (v.computed !== undefined) put(C.MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN, v.computed);
  if (v.preemptPerRequest !== undefined) put(C.MODEL_REQUEST_PREEMPTIONS_MEAN, v.preemptPerRequest);
  for (const [reason, n] of Object.entries(v.reasons ?? {})) put(C.MODEL_REQUESTS_WAITING_BY_REASON, n, ["reason", reason]);
  for (const [tier, r] of Object.entries(v.tiers ?? {})) put(C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, r, ["cache_source", tier]);
  return out;
}

const vllm = (pod: string) => ({ target: { kind: "vllm", namespace: "llm", pod, id: `vllm|${pod}` } });

/** A sidecar's cumulative TTFT histogram of `model` on route chat: every call between 250 and 500 ms. */
function sidecarBatch(model: string, calls: number, ts: number): WriteSeries[] {
  const text = ["# TYPE tokentrace_llm_ttft_ms histogram", ...["100", "250", "500", "+Inf"].map((le) => `tokentrace_llm_ttft_ms_bucket{route="chat",model="${model}",le="${le}"} ${le === "100" || le === "250" ? 0 : calls}`), `tokentrace_llm_ttft_ms_count{route="chat",model="${model}"} ${calls}`, ""].join("\n");
  return parseText(text).samples.map((s) => ({ labels: [...s.labels, "__name__", s.name], samples: [{ value: s.value, timestampMs: ts }] }));
}

test("GET /v1/dashboard/engine-causes: per model, queue and batch and preemptions summed over pods, ratios averaged, percentiles the worst pod's, beside the sidecars' TTFT P99", async () => {
  const d = new DashboardSeries();
  for (let k = 0; k < 10; k++) {
    const ts = T0 + k * STEP_MS;
    d.observe(engineBatch("pod-a", "big", ts, { waiting: 3, running: 8, kv: 0.5, preempt: 0.25, prefix: 0.9, tpot: [0.02, 0.04, 0.05], phases: { queue: 0.1, prefill: 0.2, decode: 1.5 }, external: 0.3, computed: 250.04, preemptPerRequest: 0.1, reasons: { capacity: 2, deferred: 1 } }), { ...vllm("pod-a"), timestampMs: ts });
    d.observe(engineBatch("pod-b", "big", ts + 100, { waiting: 1, running: 4, kv: 0.9, preempt: 0.5, prefix: 0.7, tpot: [0.03, 0.035, 0.045], phases: { queue: 0.3, prefill: 0.15, decode: 1.25 }, external: 0.2, computed: 300, preemptPerRequest: 0.3, reasons: { capacity: 1 } }), { ...vllm("pod-b"), timestampMs: ts + 100 });
    // A model whose server exports no per-request TPOT: its inter-token latency stands in.
    d.observe(engineBatch("pod-c", "small", ts + 200, { waiting: 0, running: 2, kv: 0.1, preempt: 0, itl: [0.008, 0.012, 0.0151234] }), { ...vllm("pod-c"), timestampMs: ts + 200 });
    d.observe(sidecarBatch("big", 100 * (k + 1), ts + 300), { target: { kind: "envoy", namespace: "llm", pod: "pod-a", id: "envoy|pod-a" }, timestampMs: ts + 300 });
  }
  const nowMs = T0 + 9 * STEP_MS + 500;
  const { url, close } = await serveDashboard(d, nowMs);
  try {
    const res = await fetch(`${url}/v1/dashboard/engine-causes?namespace=llm&range=300`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as CausesBody;
    assert.deepEqual([body.stepSeconds, body.lookbackSeconds], [2, 8]);
    assert.deepEqual(body.models.map((m) => [m.model, m.pods, m.tpotSource]), [["big", ["pod-a", "pod-b"], "request_tpot"], ["small", ["pod-c"], "inter_token"]]);
    const last = (m: number): Record<string, number | null> => Object.fromEntries(Object.entries(body.models[m]!.columns).filter(([k]) => k !== "t").map(([k, v]) => [k, v.at(-1)!]));
    assert.deepEqual(last(0), {
      requestsWaiting: 4,
      requestsRunning: 12,
      kvCacheUsage: 0.7,
      preemptionsPerSecond: 0.75,
      prefixCacheHitRatio: 0.8,
      specDecodeAcceptance: null,
      queueP99Ms: 300,
      prefillP99Ms: 200,
      decodeP99Ms: 1500,
      // Means per finished request, averaged over pods; tokens to 0.1.
      externalPrefixCacheHitRatio: 0.25,
      promptTokensComputedPerRequest: 275,
      preemptionsPerRequest: 0.2,
      tpotP50Ms: 30,
      tpotP95Ms: 40,
      tpotP99Ms: 50,
      // 100 calls a scrape all in (250, 500] ms: 250 + 250 * 0.99.
      sidecarTtftP99Ms: 497.5,
    });
    assert.deepEqual(last(1), {
      requestsWaiting: 0,
      requestsRunning: 2,
      kvCacheUsage: 0.1,
      preemptionsPerSecond: 0,
      prefixCacheHitRatio: null,
      specDecodeAcceptance: null,
      queueP99Ms: null,
      prefillP99Ms: null,
      decodeP99Ms: null,
      externalPrefixCacheHitRatio: null,
      promptTokensComputedPerRequest: null,
      preemptionsPerRequest: null,
      tpotP50Ms: 8,
      tpotP95Ms: 12,
      tpotP99Ms: 15.1,
      sidecarTtftP99Ms: null,
    });
    const big = body.models[0]!.columns;
    assert.equal(big.t!.length, 150, "300 s in 2 s steps");
    assert.equal(big.t!.at(-1), (T0 + 9 * STEP_MS) / 1000, "the last step at or before now");
    assert.equal(big.requestsWaiting!.filter((v) => v !== null).length, 10, "one point a scrape, none before the first");
    // Waiting requests per reason summed over pods (pod-b reports no deferred ones).
    assert.deepEqual(body.models[0]!.waitingByReason.map((r) => [r.reason, r.values.at(-1)]), [["capacity", 3], ["deferred", 1]]);
    assert.deepEqual([body.models[0]!.prefixCacheHitsByTier, body.models[1]!.waitingByReason, body.models[1]!.prefixCacheHitsByTier], [[], [], []]);
    assert.deepEqual(Object.keys(body.needs), ["queue", "kvCache", "cacheHits", "tpot", "phases", "cacheTiers", "waitReasons"]);
    assert.ok(body.needs.phases!.includes("vllm:request_queue_time_seconds"));
    assert.deepEqual(((await (await fetch(`${url}/v1/dashboard/engine-causes?namespace=other`)).json()) as CausesBody).models, [], "another namespace's page shows none");
    const bad = await fetch(`${url}/v1/dashboard/engine-causes?range=7`);
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: "invalid query", details: [{ field: "range", reason: 'must be one of 300, 900, 1800, 3600 (seconds), got "7"' }] });
  } finally {
    await close();
  }
});

test("engine-causes from the real join of vLLM v1 scrapes: each column the join's newest value for that model, latencies in ms to 0.1 ms, the rest to 3 decimals", async () => {
  const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
  const QWEN = "Qwen/Qwen2.5-7B-Instruct";
  const POD = "chat-6f8d-aaaaa";
  const target = (pod: string, port: number): ScrapeTarget => ({ id: `vllm|http://${pod}:${port}/m`, kind: "vllm", url: `http://${pod}:${port}/m`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: "llm", pod, node: "gpu-node-b" });
  const d = new DashboardSeries();
  const joiner = new Joiner({ rateWindowMs: 30_000 });
  const llama = target(POD, 8000);
  const qwen = target(POD, 8001);
  joiner.setTargets([llama, qwen]);
  const joined: WriteSeries[] = [];
  for (let k = 0; k < 20; k++) {
    for (const [t, text, offsetMs] of [
      [llama, advance(fixture("vllm-v1-two-engines.prom"), k), 100],
      [qwen, advance(relabel(fixture("vllm-v1-two-engines.prom"), LLAMA, QWEN), k, 0.1), 200],
    ] as const) {
      const p = parseText(text);
      const timestampMs = T0 + k * STEP_MS + offsetMs;
      const batch = joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors });
      d.observe(batch, { target: t, timestampMs });
      joined.push(...batch);
    }
  }
  const newest = (model: string, name: string, labels: Record<string, string> = {}): number | undefined =>
    joined.filter((x) => labelValue(x.labels, "__name__") === name && labelValue(x.labels, "model") === model && Object.entries(labels).every(([k, v]) => labelValue(x.labels, k) === v)).at(-1)?.samples.at(-1)?.value;
  const r3 = (v: number | undefined): number | null => (v === undefined ? null : Math.round(v * 1000) / 1000);
  const ms = (v: number | undefined): number | null => (v === undefined ? null : Math.round(v * 1000 * 10) / 10);
  const { url, close } = await serveDashboard(d, T0 + 19 * STEP_MS + 500);
  try {
    const body = (await (await fetch(`${url}/v1/dashboard/engine-causes?range=300`)).json()) as CausesBody;
    assert.deepEqual(body.models.map((m) => [m.model, m.tpotSource]), [[QWEN, "inter_token"], [LLAMA, "inter_token"]], "the fixture's vLLM exports inter-token latency, no per-request TPOT");
    for (const m of body.models) {
      const last = (c: string): number | null => m.columns[c]!.at(-1)!;
      const expected = {
        requestsWaiting: r3(newest(m.model, C.MODEL_REQUESTS_WAITING)),
        requestsRunning: r3(newest(m.model, C.MODEL_REQUESTS_RUNNING)),
        kvCacheUsage: r3(newest(m.model, C.MODEL_KV_CACHE_USAGE)),
        preemptionsPerSecond: r3(newest(m.model, C.MODEL_PREEMPTIONS_PER_SECOND)),
        queueP99Ms: ms(newest(m.model, C.MODEL_LATENCY_QUANTILE, { phase: "queue", quantile: "0.99" })),
        prefillP99Ms: ms(newest(m.model, C.MODEL_LATENCY_QUANTILE, { phase: "prefill", quantile: "0.99" })),
        decodeP99Ms: ms(newest(m.model, C.MODEL_LATENCY_QUANTILE, { phase: "decode", quantile: "0.99" })),
        tpotP95Ms: ms(newest(m.model, C.MODEL_LATENCY_QUANTILE, { phase: "inter_token", quantile: "0.95" })),
      };
      for (const [k, v] of Object.entries(expected)) assert.notEqual(v, null, `${m.model}: the join wrote ${k}`);
      assert.deepEqual(Object.fromEntries(Object.keys(expected).map((k) => [k, last(k)])), expected, m.model);
    }
    assert.notEqual(body.models[0]!.columns.queueP99Ms!.at(-1), body.models[1]!.columns.decodeP99Ms!.at(-1));
  } finally {
    await close();
  }
});

test("engine signals store: a model whose servers stop reporting leaves after the retention, freeing its place among maxModels", () => {
  const store = new EngineSignals({ retentionMs: 60_000, maxModels: 2, maxPointsPerModel: 1000, maxBytes: 1 << 20 });
  const v = { waiting: 1, running: 1, kv: 0.5, preempt: 0 };
  for (let k = 0; k < 5; k++) {
    store.observe(engineBatch("pod-a", "old", T0 + k * STEP_MS, v), { ...vllm("pod-a"), timestampMs: T0 + k * STEP_MS });
    store.observe(engineBatch("pod-b", "stays", T0 + k * STEP_MS, v), { ...vllm("pod-b"), timestampMs: T0 + k * STEP_MS });
  }
  // "old" stops; "stays" goes on past the retention, then a third model appears.
  for (let k = 5; k < 40; k++) store.observe(engineBatch("pod-b", "stays", T0 + k * STEP_MS, v), { ...vllm("pod-b"), timestampMs: T0 + k * STEP_MS });
  assert.deepEqual(store.models().map((m) => m.model), ["stays"], "old's last point is 70 s old");
  assert.equal(store.bytes, 30 * POINT_BYTES, "stays keeps its last 60 s of 2 s scrapes");
  store.observe(engineBatch("pod-c", "new", T0 + 40 * STEP_MS, v), { ...vllm("pod-c"), timestampMs: T0 + 40 * STEP_MS });
  assert.deepEqual(store.models().map((m) => m.model), ["new", "stays"]);
});

test("engine signals store: the estimate of a point (pointBytes) is at least what one costs V8 and at most twice it, with waiting reasons and cache tiers, label values parsed from each scrape's text (measured with --expose-gc)", { timeout: 120_000 }, (t) => {
  const child = fileURLToPath(new URL("./engine-signals-memory-child.ts", import.meta.url));
  const r = JSON.parse(execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", child, "3000"], { encoding: "utf8" })) as { held: number; measuredPerPoint: number; estimatedPerPoint: number };
  t.diagnostic(`measured ${r.measuredPerPoint.toFixed(0)} B, estimated ${r.estimatedPerPoint.toFixed(0)} B per point`);
  assert.equal(r.held, 3000);
  // A pod name kept as the label's slice of the scrape text would keep that whole text alive: kilobytes a point.
  assert.ok(r.estimatedPerPoint >= r.measuredPerPoint, `estimate ${r.estimatedPerPoint} below the measured ${r.measuredPerPoint}`);
  // Twice, not 1.5 times: a collection of the warm-up's leftovers during the run shows as less growth (179 B once, 240-264 B usually).
  assert.ok(r.estimatedPerPoint <= 2 * r.measuredPerPoint, `estimate ${r.estimatedPerPoint} far above the measured ${r.measuredPerPoint}`);
});

test("engine signals store: over the byte budget the oldest points of any model go first, and a model left with none is dropped", () => {
  const store = new EngineSignals({ retentionMs: 3_600_000, maxModels: 8, maxPointsPerModel: 1000, maxBytes: 10 * POINT_BYTES });
  const v = { waiting: 1, running: 1, kv: 0.5, preempt: 0 };
  for (let k = 0; k < 4; k++) store.observe(engineBatch("pod-a", "a", T0 + k * STEP_MS, v), { ...vllm("pod-a"), timestampMs: T0 + k * STEP_MS });
  for (let k = 4; k < 14; k++) store.observe(engineBatch("pod-b", "b", T0 + k * STEP_MS, v), { ...vllm("pod-b"), timestampMs: T0 + k * STEP_MS });
  assert.equal(store.bytes, 10 * POINT_BYTES);
  assert.deepEqual(store.models().map((m) => m.model), ["b"], "a's four points were the oldest");
  assert.deepEqual(store.points({ namespace: "llm", model: "b" }).map((p) => (p.tMs - T0) / STEP_MS), [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
});

test("the page's JSON per refresh with 15 minutes of data stays under 200 KB (issue #25's bar): two models with every cause signal, their sidecar route, the GPU", async () => {
  const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
  const QWEN = "Qwen/Qwen2.5-7B-Instruct";
  const POD = "chat-6f8d-aaaaa";
  const target = (kind: ScrapeTarget["kind"], pod: string, port: number): ScrapeTarget => ({ id: `${kind}|http://${pod}:${port}/m`, kind, url: `http://${pod}:${port}/m`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: kind === "dcgm" ? "gpu-operator" : "llm", pod, node: "gpu-node-b" });
  const dcgm = target("dcgm", "dcgm-b", 9400);
  const envoy = target("envoy", POD, 15090);
  const d = new DashboardSeries();
  // The sidecar and the GPU through the real join; the model servers' joined series made by hand
  // with every column set and values that change each scrape (the join of two vLLM scrapes a step
  // would take most of this test's time).
  const joiner = new Joiner({ rateWindowMs: 30_000 });
  joiner.setTargets([dcgm, envoy]);
  const dcgmText = fixture("dcgm-time-sliced.prom");
  const steps = (15 * 60_000) / STEP_MS;
  for (let k = 0; k < steps; k++) {
    for (const [model, port] of [[LLAMA, 8000], [QWEN, 8001]] as const) {
      const ts = T0 + k * STEP_MS + port - 7900;
      const f = 1 + ((k * 7919 + port) % 97) / 97;
      const v = {
        waiting: Math.round(5 * f),
        running: Math.round(16 * f),
        kv: 0.61234 * f,
        preempt: 0.3 * f,
        prefix: 0.4 * f,
        spec: 0.45 * f,
        tpot: [0.0123 * f, 0.0234 * f, 0.0345 * f] as [number, number, number],
        itl: [0.01 * f, 0.02 * f, 0.03 * f] as [number, number, number],
        phases: { queue: 1.234 * f, prefill: 0.345 * f, decode: 7.891 * f },
        // Every cause signal, vLLM's and SGLang's alike (no server has both: the answer's worst case).
        external: 0.2345 * f,
        computed: 1234.5678 * f,
        preemptPerRequest: 0.0789 * f,
        reasons: { capacity: Math.round(4 * f), deferred: Math.round(1 * f) },
        tiers: { device: 0.3456 * f, host: 0.1234 * f, storage_file: 0.0567 * f },
      };
      const batch = engineBatch(POD, model, ts, v);
      batch.push({ labels: ["__name__", C.MODEL_GPU_UTILIZATION, "namespace", "llm", "pod", POD, "model", model], samples: [{ value: 63.25 * f, timestampMs: ts }] });
      d.observe(batch, { ...vllm(POD), target: { ...vllm(POD).target, id: `vllm|${port}` }, timestampMs: ts });
    }
    for (const [t, text, offsetMs] of [
      [dcgm, () => dcgmText, 0],
      [envoy, () => sidecarText(k, [{ route: "chat", model: LLAMA, per: 40, ttft: { 6: 2, 7: 5, 8: 2, 9: 1 }, decode: { 11: 3, 12: 6, 13: 1 } }, { route: "chat", model: QWEN, per: 20, ttft: { 5: 1, 6: 3, 7: 1 }, decode: { 10: 1, 11: 2 } }]), 300],
    ] as const) {
      const p = parseText(text());
      const timestampMs = T0 + k * STEP_MS + offsetMs;
      d.observe(joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }), { target: t, timestampMs });
    }
  }
  const { url, close } = await serveDashboard(d, T0 + (steps - 1) * STEP_MS + 500);
  try {
    // What the page fetches every 2 s (app.js, engine.js, gpu.js, keep.js, alerts.js) at its default range.
    const paths = ["/v1/dashboard/series?range=900&namespace=llm&route=chat", "/v1/dashboard/models?range=900&namespace=llm", "/v1/dashboard/engine-causes?range=900&namespace=llm", "/v1/dashboard/gpus?range=900&namespace=llm", "/v1/dashboard/keep?range=900&namespace=llm&route=chat", "/v1/dashboard/alerts"];
    const sizes: Record<string, number> = {};
    for (const path of paths) {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.status, 200, path);
      sizes[path.split("?")[0]!] = (await res.arrayBuffer()).byteLength;
    }
    const causes = (await (await fetch(`${url}/v1/dashboard/engine-causes?range=900&namespace=llm`)).json()) as CausesBody;
    assert.equal(causes.models.length, 2);
    assert.ok(causes.models.every((m) => m.columns.queueP99Ms!.filter((v) => v !== null).length >= 295 && m.columns.t!.length === 300), "15 minutes of points in 3 s steps");
    assert.ok(causes.models.some((m) => m.columns.sidecarTtftP99Ms!.at(-1) !== null), "the sidecars' TTFT beside the engine's");
    assert.ok(causes.models.every((m) => m.waitingByReason.length === 2 && m.prefixCacheHitsByTier.length === 3 && m.columns.promptTokensComputedPerRequest!.filter((v) => v !== null).length >= 295), "the tiers, reasons and per-request columns in full");
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    console.log(`JSON per refresh at 15 min of data: ${total} bytes ${JSON.stringify(sizes)}`);
    assert.ok(total < 200 * 1024, `${total} bytes per refresh: ${JSON.stringify(sizes)}`);
  } finally {
    await close();
  }
});
