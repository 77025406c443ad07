// The cause panels' "where the cache hits" and "why requests wait" columns of GET
// /v1/dashboard/engine-causes: fixture scrapes of vLLM (waiting by reason, the external KV-connector
// cache, per-request prompt tokens computed and preemptions) and SGLang (cached tokens per
// cache_source) through the real Joiner into the dashboard, each tier and reason its own line per
// model, added up over pods as the Grafana board's queries do; and how the store bounds the label
// values it keeps and counts their bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { ENGINE_COLUMNS, EngineSignals, MAX_LABEL_VALUES, pointBytes } from "../../../control-plane/src/dashboard/engine-signals.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { advance, fixture, relabel } from "../../support/engine-scrapes.js";
import { serveDashboard } from "./serve-dashboard.js";

const T0 = Date.UTC(2026, 11, 7, 6, 0, 0);
const STEP_MS = 2000;
const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const QWEN = "Qwen/Qwen2.5-7B-Instruct";
const QWEN3 = "Qwen/Qwen3-30B-A3B";
const DEEPSEEK = "deepseek-ai/DeepSeek-V2-Lite-Chat";


interface CausesModel {
  namespace: string;
  model: string;
  pods: string[];
  columns: Record<string, (number | null)[]>;
  waitingByReason: { reason: string; values: (number | null)[] }[];
  prefixCacheHitsByTier: { tier: string; values: (number | null)[] }[];
}

const target = (pod: string, port: number): ScrapeTarget => ({ id: `vllm|http://${pod}:${port}/metrics`, kind: "vllm", url: `http://${pod}:${port}/metrics`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: "llm", pod, node: "gpu-node-b" });

/** vLLM's waiting gauges by reason set to `reasons` (the fixture's other series as they are). */
const waiting = (reasons: Record<string, number>) => (name: string, labels: string, v: number): number => {
  if (name !== "vllm:num_requests_waiting_by_reason") return v;
  const reason = /reason="([^"]*)"/.exec(labels)![1]!;
  return reasons[reason] ?? v;
};

test("engine-causes from the real join: vLLM's waiting requests per reason summed over a model's pods, SGLang's hits per tier averaged over its pods, each model its own lines (none summed across reasons, tiers or models)", async () => {
  const vllmText = fixture("vllm-waiting-by-reason-external-cache.prom");
  // A second SGLang pod of Qwen3 with more host hits and a storage tier the first lacks.
  const sglText = fixture("sglang-priority.prom");
  const sglOther = sglText
    .replace('sglang:cached_tokens_total{cache_source="host",model_name="Qwen/Qwen3-30B-A3B"} 90000.0', 'sglang:cached_tokens_total{cache_source="host",model_name="Qwen/Qwen3-30B-A3B"} 190000.0')
    .replace("# HELP sglang:inter_token_latency_seconds", 'sglang:cached_tokens_total{cache_source="storage_file",model_name="Qwen/Qwen3-30B-A3B"} 40000.0\n# HELP sglang:inter_token_latency_seconds');
  assert.notEqual(sglOther, sglText);
  const scrapes: [ScrapeTarget, (k: number) => string][] = [
    [target("kvc-0", 8000), (k) => advance(vllmText, k, 0.05, waiting({ capacity: 6, deferred: 3 }))],
    [target("kvc-1", 8000), (k) => advance(vllmText, k, 0.05, waiting({ capacity: 2, deferred: 1 }))],
    // Another model on kvc-0's second port: its reasons must not reach Llama's lines.
    [target("kvc-0", 8001), (k) => advance(relabel(vllmText, LLAMA, QWEN), k, 0.05, waiting({ capacity: 1, deferred: 7 }))],
    [target("sgl-0", 30000), (k) => advance(sglText, k, 0.25)],
    [target("sgl-1", 30000), (k) => advance(sglOther, k, 0.25)],
    // Another SGLang model, only its device tier (300000 of 500000 prompt tokens).
    [target("sgl-dpa-0", 30000), (k) => advance(fixture("sglang-dp-attention.prom"), k, 0.25)],
  ];
  const d = new DashboardSeries();
  const joiner = new Joiner({ rateWindowMs: 30_000 });
  joiner.setTargets(scrapes.map(([t]) => t));
  for (let k = 0; k < 20; k++) {
    scrapes.forEach(([t, text], i) => {
      const p = parseText(text(k));
      assert.deepEqual(p.errors, [], t.id);
      const timestampMs = T0 + k * STEP_MS + 50 * i;
      d.observe(joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }), { target: t, timestampMs });
    });
  }
  const { url, close } = await serveDashboard(d, T0 + 19 * STEP_MS + 500);
  try {
    const body = (await (await fetch(`${url}/v1/dashboard/engine-causes?namespace=llm&range=300`)).json()) as { needs: Record<string, string>; models: CausesModel[] };
    const byModel = new Map(body.models.map((m) => [m.model, m]));
    assert.deepEqual([...byModel.keys()], [QWEN, QWEN3, DEEPSEEK, LLAMA].sort());
    const lastOf = <K extends "reason" | "tier">(rows: ({ values: (number | null)[] } & Record<K, string>)[], key: K): [string, number | null][] => rows.map((r) => [r[key], r.values.at(-1)!]);
    const reasons = (model: string): [string, number | null][] => lastOf(byModel.get(model)!.waitingByReason, "reason");
    const tiers = (model: string): [string, number | null][] => lastOf(byModel.get(model)!.prefixCacheHitsByTier, "tier");
    // Summed over Llama's two pods per reason: 6 + 2 and 3 + 1 (one line of 12 if the reasons were
    // added together, 9 and 11 with Qwen's 1 and 7 mixed in).
    assert.deepEqual(reasons(LLAMA), [["capacity", 8], ["deferred", 4]]);
    assert.deepEqual(reasons(QWEN), [["capacity", 1], ["deferred", 7]]);
    // Per tier over all prompt tokens, averaged over Qwen3's pods: device 62500 of 100000 a step on
    // both; host 22500 and 47500; storage_file 10000 on sgl-1 only (a tier one pod lacks is the
    // other's alone, as avg by (model, cache_source) gives it). DeepSeek's device tier stays its own.
    assert.deepEqual(tiers(QWEN3), [["device", 0.625], ["host", 0.35], ["storage_file", 0.1]]);
    assert.deepEqual(tiers(DEEPSEEK), [["device", 0.6]]);
    assert.deepEqual(tiers(LLAMA), [], "vLLM has no tiers");
    assert.deepEqual(reasons(QWEN3), [], "SGLang has no waiting reasons");
    const last = (model: string, column: string): number | null => byModel.get(model)!.columns[column]!.at(-1)!;
    // 80000 of 320000 external tokens; 14000 prompt tokens computed over 50 requests a step; 4 preemptions over 50 finished requests.
    assert.deepEqual([last(LLAMA, "externalPrefixCacheHitRatio"), last(LLAMA, "promptTokensComputedPerRequest"), last(LLAMA, "preemptionsPerRequest")], [0.25, 280, 0.08]);
    assert.deepEqual([last(QWEN3, "externalPrefixCacheHitRatio"), last(QWEN3, "promptTokensComputedPerRequest"), last(QWEN3, "preemptionsPerRequest")], [null, null, null], "SGLang exports none of vLLM's");
    // One point per scrape after the first: the rates need two.
    assert.equal(byModel.get(LLAMA)!.waitingByReason[0]!.values.filter((v) => v !== null).length, 20, "gauges from the first scrape");
    // Null before the first scrape, a value at every step from the second scrapes on (the rates need two).
    const steps = byModel.get(QWEN3)!.columns.t!.map((sec) => sec! * 1000);
    for (const values of [byModel.get(LLAMA)!.waitingByReason[0]!.values, byModel.get(QWEN3)!.prefixCacheHitsByTier[0]!.values]) {
      assert.deepEqual(steps.filter((ms, i) => ms < T0 && values[i] !== null), [], "nothing before the first scrape");
      assert.deepEqual(steps.filter((ms, i) => ms >= T0 + STEP_MS + 300 && values[i] === null), [], "every step once both pods have a rate");
    }
    assert.match(body.needs.cacheTiers!, /--enable-hierarchical-cache/);
    assert.match(body.needs.cacheTiers!, /vllm:external_prefix_cache_queries_total/);
    assert.match(body.needs.waitReasons!, /vllm:num_requests_waiting_by_reason.*vllm-project\/vllm#38435/);
  } finally {
    await close();
  }
});

/** A model server's joined batch of one model with the given tiers (ratio) and reasons (requests). */
function labelledBatch(model: string, ts: number, tiers: Record<string, number>, reasons: Record<string, number> = {}): WriteSeries[] {
  const ml = ["namespace", "llm", "pod", "pod-a", "model", model];
  const out: WriteSeries[] = [{ labels: ["__name__", C.MODEL_REQUESTS_WAITING, ...ml], samples: [{ value: 1, timestampMs: ts }] }];
  for (const [tier, v] of Object.entries(tiers)) out.push({ labels: ["__name__", C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, ...ml, "cache_source", tier], samples: [{ value: v, timestampMs: ts }] });
  for (const [reason, v] of Object.entries(reasons)) out.push({ labels: ["__name__", C.MODEL_REQUESTS_WAITING_BY_REASON, ...ml, "reason", reason], samples: [{ value: v, timestampMs: ts }] });
  return out;
}

const source = (ts: number) => ({ target: { kind: "vllm", namespace: "llm", pod: "pod-a", id: "vllm|pod-a" }, timestampMs: ts });
const query = (nowMs: number) => ({ nowMs, rangeMs: 300_000, stepMs: STEP_MS, lookbackMs: 8000 });

test("engine signals store: at most MAX_LABEL_VALUES tiers (and reasons) per model in the order first seen, values of another shape not kept, and a tier no kept point has any more makes room", () => {
  const store = new EngineSignals({ retentionMs: 60_000, maxModels: 4, maxPointsPerModel: 1000, maxBytes: 1 << 20 });
  const key = { namespace: "llm", model: "m" };
  const tiers = (nowMs: number): string[] => store.labelled(key, query(nowMs), "prefixCacheHitRatioByTier").map((x) => x.value);
  // Six values at once: two of a shape no model server writes, then four kept, the fifth too many.
  store.observe(labelledBatch("m", T0, { "host memory": 0.1, ["x".repeat(33)]: 0.1, storage_file: 0.1, host: 0.2, device: 0.5, "storage_3fs.v2": 0.05, storage_mooncake: 0.01 }, { capacity: 2, deferred: 1 }), source(T0));
  assert.equal(MAX_LABEL_VALUES, 4);
  assert.deepEqual(tiers(T0), ["device", "host", "storage_3fs.v2", "storage_file"], "the first four valid values, sorted");
  assert.deepEqual(store.labelled(key, query(T0), "waitingByReason").map((x) => [x.value, x.values.at(-1)]), [["capacity", 2], ["deferred", 1]], "reasons have slots of their own");
  // Only device and host go on; storage_mooncake is still refused while the first point is kept.
  for (let k = 1; k <= 29; k++) store.observe(labelledBatch("m", T0 + k * STEP_MS, { device: 0.5, host: 0.2, storage_mooncake: 0.01 }), source(T0 + k * STEP_MS));
  assert.deepEqual(tiers(T0 + 29 * STEP_MS), ["device", "host", "storage_3fs.v2", "storage_file"]);
  // 60 s on, the first point leaves with the only values of storage_file and storage_3fs.v2: the new tier takes a slot.
  for (let k = 30; k <= 34; k++) store.observe(labelledBatch("m", T0 + k * STEP_MS, { device: 0.5, host: 0.2, storage_mooncake: 0.01 }), source(T0 + k * STEP_MS));
  assert.deepEqual(tiers(T0 + 34 * STEP_MS), ["device", "host", "storage_mooncake"], "the gone tiers leave the answer, the new one has its points");
  assert.deepEqual(store.labelled(key, query(T0 + 34 * STEP_MS), "prefixCacheHitRatioByTier").find((x) => x.value === "storage_mooncake")!.values.slice(-3), [0.01, 0.01, 0.01]);
});

test("engine signals store: a point's bytes count its labelled values (8 a slot up to the last it carries), and leave with it", () => {
  const store = new EngineSignals({ retentionMs: 10_000, maxModels: 4, maxPointsPerModel: 1000, maxBytes: 1 << 20 });
  store.observe(labelledBatch("m", T0, {}, { capacity: 2, deferred: 1 }), source(T0));
  assert.equal(store.bytes, pointBytes(ENGINE_COLUMNS.length + 2));
  store.observe(labelledBatch("m", T0 + STEP_MS, { device: 0.5 }), source(T0 + STEP_MS));
  assert.equal(store.bytes, pointBytes(ENGINE_COLUMNS.length + 2) + pointBytes(ENGINE_COLUMNS.length + 3), "device's slot after the two reasons'");
  store.observe(labelledBatch("m", T0 + 2 * STEP_MS, {}), source(T0 + 2 * STEP_MS));
  assert.equal(store.bytes, pointBytes(ENGINE_COLUMNS.length + 2) + pointBytes(ENGINE_COLUMNS.length + 3) + pointBytes(ENGINE_COLUMNS.length), "a point without any stays short");
  store.observe(labelledBatch("m", T0 + 6 * STEP_MS, {}), source(T0 + 6 * STEP_MS));
  assert.equal(store.bytes, pointBytes(ENGINE_COLUMNS.length) * 2, "past the retention the two long points go, with their bytes");
});
