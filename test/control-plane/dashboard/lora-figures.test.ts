// The LoRA adapters table's figures per adapter (requests, tokens, P99 TTFT and duration): two pods
// scraped every 2 s through the real join into DashboardSeries, as the pipeline hands them over.
// Pod lora-0 serves meta-llama/Llama-3.1-8B-Instruct with sql-lora and chat-de; pod lora-1 serves
// Qwen/Qwen2.5-7B-Instruct with an adapter of the same name, sql-lora. Their sidecars carry the
// traffic of test/support/lora-scrapes.ts (sql-lora on both pods, chat-de on lora-0, the base model's
// own calls on lora-0), so each figure below is known by hand: an adapter's row counts only the pods
// that load it for that base model, never another adapter's calls nor the base model's own.
// Also: the states the table reads stay within their byte budget and forget pods past the retention.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { LoraAdapterStates } from "../../../control-plane/src/dashboard/lora-adapters.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { fixture, relabel } from "../../support/engine-scrapes.js";
import { LLAMA, sidecarText } from "../../support/lora-scrapes.js";
import { serveDashboard } from "./serve-dashboard.js";

const QWEN = "Qwen/Qwen2.5-7B-Instruct";
const T0 = Date.UTC(2026, 11, 4, 6, 0, 0);
const STEP_MS = 2000;
const STEPS = 10;
const target = (kind: "vllm" | "envoy", pod: string): ScrapeTarget => {
  const url = `http://${pod}:${kind === "vllm" ? 8000 : 15090}/m`;
  return { id: `${kind}|${url}`, kind, url, intervalMs: STEP_MS, timeoutMs: 1000, namespace: "llm", pod, node: "gpu-node-a" };
};
const PARENTS = new Map<string, ReadonlyMap<string, string>>([
  [target("vllm", "lora-0").id, new Map([["sql-lora", LLAMA], ["chat-de", LLAMA], ["support-fr", LLAMA]])],
  [target("vllm", "lora-1").id, new Map([["sql-lora", QWEN]])],
]);
// lora-0: the fixture (running sql-lora and chat-de, support-fr waiting); lora-1: the Qwen server, sql-lora running.
const VLLM_TEXT = new Map([
  ["lora-0", fixture("vllm-lora.prom")],
  ["lora-1", relabel(fixture("vllm-lora.prom"), LLAMA, QWEN).replace(/^vllm:lora_requests_info.*$/gm, "") + 'vllm:lora_requests_info{max_lora="1",running_lora_adapters="sql-lora",waiting_lora_adapters=""} 1.78e+09\n'],
]);

function fed(): DashboardSeries {
  const dashboard = new DashboardSeries();
  const targets = ["lora-0", "lora-1"].flatMap((pod) => [target("vllm", pod), target("envoy", pod)]);
  const joiner = new Joiner({ rateWindowMs: 30_000, adapterParents: (id) => PARENTS.get(id) });
  joiner.setTargets(targets);
  for (let k = 0; k < STEPS; k++) {
    for (const [n, t] of targets.entries()) {
      const p = parseText(t.kind === "vllm" ? VLLM_TEXT.get(t.pod!)! : sidecarText(t.pod!, k));
      const timestampMs = T0 + k * STEP_MS + n * 50;
      dashboard.observe(joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }), { target: t, timestampMs });
    }
  }
  return dashboard;
}

interface Row {
  adapter: string;
  pods: string[];
  requestsPerSecond: number | null;
  inputTokensPerSecond: number | null;
  outputTokensPerSecond: number | null;
  ttftP99Ms: number | null;
  durationP99Ms: number | null;
}

async function models(dashboard: DashboardSeries, nowMs: number): Promise<{ adapterWindowSeconds: number; models: { model: string; adapters: Row[] }[] }> {
  const { url, close } = await serveDashboard(dashboard, nowMs);
  try {
    const res = await fetch(`${url}/v1/dashboard/models?namespace=llm&range=300`);
    assert.equal(res.status, 200);
    return (await res.json()) as { adapterWindowSeconds: number; models: { model: string; adapters: Row[] }[] };
  } finally {
    await close();
  }
}

const NOW = T0 + (STEPS - 1) * STEP_MS + 500;

test("GET /v1/dashboard/models: each adapter's requests, tokens and P99s come from the pods that load it for that base model, never summed across adapters or base models", async () => {
  const body = await models(fed(), NOW);
  assert.equal(body.adapterWindowSeconds, 300);
  const figures = (m: { adapters: Row[] }): unknown[] => m.adapters.map((a) => [a.adapter, a.pods, a.requestsPerSecond, a.inputTokensPerSecond, a.outputTokensPerSecond, a.ttftP99Ms, a.durationP99Ms]);
  // Sorted by name: "Q" before "m".
  assert.deepEqual(body.models.map((m) => m.model), [QWEN, LLAMA]);
  // Per 2 s step on lora-0: sql-lora 128 calls (96 2xx, 32 5xx), 256 tokens in and 32 out each; chat-de
  // 64 calls, 512 in and 64 out each. P99s by hand from the buckets (100, 250, 500, 1000, 2500 ms):
  // sql-lora TTFT 1000 + 1500 x 14.72/16 = 2380, duration 1000 + 1500 x 30.72/32 = 2440; chat-de TTFT
  // 250 + 250 x 15.36/16 = 490, duration 500 + 500 x 31.36/32 = 990. support-fr is loaded (waiting), with no call.
  assert.deepEqual(figures(body.models[1]!), [
    ["chat-de", ["lora-0"], 32, 16384, 2048, 490, 990],
    ["sql-lora", ["lora-0"], 64, 16384, 2048, 2380, 2440],
    ["support-fr", ["lora-0"], null, null, null, null, null],
  ]);
  // lora-1's sql-lora extends Qwen: 64 calls a step, TTFT 250 + 250 x 31.36/32 = 495, duration 1000 + 1500 x 31.36/32 = 2470.
  assert.deepEqual(figures(body.models[0]!), [["sql-lora", ["lora-1"], 32, 8192, 1024, 495, 2470]]);
  // The base model's own calls on lora-0 (64 a step) are no adapter's.
  assert.ok(body.models.every((m) => m.adapters.every((a) => a.adapter !== LLAMA)));
  // The page asks this every 2 s: a row is a few hundred bytes.
  for (const m of body.models) for (const a of m.adapters) assert.ok(JSON.stringify(a).length < 300, JSON.stringify(a));
});

test("the figures cover the last 5 minutes: an adapter whose calls ended before that has none, while its pod still reports it", async () => {
  const dashboard = fed();
  // Six minutes on, lora-0's vLLM still reports its adapters, its sidecar no call of them.
  const targets = [target("vllm", "lora-0"), target("envoy", "lora-0")];
  const joiner = new Joiner({ rateWindowMs: 30_000, adapterParents: (id) => PARENTS.get(id) });
  joiner.setTargets(targets);
  const later = T0 + 6 * 60_000;
  for (const [k, t] of [0, 1].flatMap((k) => targets.map((t) => [k, t] as const))) {
    const p = parseText(t.kind === "vllm" ? VLLM_TEXT.get("lora-0")! : "# TYPE tokentrace_requests_total counter\ntokentrace_requests_total{route=\"chat\",status_class=\"2xx\"} 1\n");
    dashboard.observe(joiner.join({ target: t, timestampMs: later + k * STEP_MS, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }), { target: t, timestampMs: later + k * STEP_MS });
  }
  const body = await models(dashboard, later + STEP_MS + 500);
  assert.deepEqual(body.models.find((m) => m.model === LLAMA)!.adapters.map((a) => [a.adapter, a.requestsPerSecond, a.ttftP99Ms]), [["chat-de", null, null], ["sql-lora", null, null], ["support-fr", null, null]]);
});

test("LoraAdapterStates: within its byte budget the newest pod states stay and the oldest go; a pod past the retention is forgotten", () => {
  const states = new LoraAdapterStates({ maxBytes: 20_000, retentionMs: 600_000 });
  const batch = (pod: string, tMs: number) => [
    { labels: ["__name__", C.MODEL_LORA_ADAPTER_RUNNING, "namespace", "llm", "pod", pod, "model", "sql-lora", "base_model", LLAMA], samples: [{ value: 1, timestampMs: tMs }] },
    { labels: ["__name__", C.MODEL_LORA_ADAPTER_WAITING, "namespace", "llm", "pod", pod, "model", "sql-lora", "base_model", LLAMA], samples: [{ value: 0, timestampMs: tMs }] },
  ];
  // A rollout every 2 s for 1,000 pods: far more than 20 kB of pod states.
  for (let n = 0; n < 1000; n++) {
    states.observe(batch(`llm-7d9f${String(n).padStart(4, "0")}`, T0 + n * 2000), { target: { kind: "vllm", id: `vllm|${n}`, namespace: "llm" } });
    assert.ok(states.bytes <= 20_000, `${states.bytes} bytes after pod ${n}`);
  }
  const rows = states.adapters("llm", LLAMA, T0 + 999 * 2000, 3_600_000);
  assert.equal(rows.length, 1);
  const kept = rows[0]!.pods;
  assert.ok(kept.length > 10 && kept.length < 1000, `${kept.length} pods kept`);
  assert.equal(kept.at(-1), "llm-7d9f0999", "the newest pod stays");
  assert.deepEqual(kept, [...kept].sort(), "and those kept are the newest ones");
  assert.equal(kept[0], `llm-7d9f${String(1000 - kept.length).padStart(4, "0")}`);
  // Ten minutes later only a new pod reports: every other state is past the retention.
  const after = T0 + 999 * 2000 + 601_000;
  states.observe(batch("llm-new", after), { target: { kind: "vllm", id: "vllm|new", namespace: "llm" } });
  assert.deepEqual(states.adapters("llm", LLAMA, after, 3_600_000).map((r) => r.pods), [["llm-new"]]);
});
