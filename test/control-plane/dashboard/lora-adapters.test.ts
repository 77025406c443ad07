// The control plane dashboard's LoRA adapters under each base model's engine panel: the batches the
// real join makes of a vLLM scrape with LoRA (test/fixtures/pipeline/vllm-lora.prom: vLLM 005a810's
// vllm:lora_requests_info, past states kept, the newest the largest value) go to DashboardSeries as
// the pipeline hands them over; GET /v1/dashboard/models lists, per base model, each adapter with the
// pods it has running and waiting requests on, and forgets a pod's state after the lookback.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { advance, fixture } from "../../support/engine-scrapes.js";
import { serveDashboard } from "./serve-dashboard.js";

const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const T0 = Date.UTC(2026, 11, 4, 6, 0, 0);
const STEP_MS = 2000;
const target = (pod: string): ScrapeTarget => ({ id: `vllm|http://${pod}:8000/m`, kind: "vllm", url: `http://${pod}:8000/m`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: "llm", pod, node: "cpu-node" });

function feed(dashboard: DashboardSeries, steps: number): void {
  const pods = [target("lora-a"), target("lora-b")];
  const joiner = new Joiner({ rateWindowMs: 30_000 });
  joiner.setTargets(pods);
  for (let k = 0; k < steps; k++) {
    for (const [i, t] of pods.entries()) {
      // Pod b: only sql-lora in use, running, nothing waiting.
      const text = i === 0 ? fixture("vllm-lora.prom") : fixture("vllm-lora.prom").replace(/^vllm:lora_requests_info.*$/gm, "") + 'vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora",waiting_lora_adapters=""} 1.78e+09\n';
      const p = parseText(advance(text, k));
      const timestampMs = T0 + k * STEP_MS + i * 100;
      const batch = joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors });
      dashboard.observe(batch, { target: t, timestampMs });
    }
  }
}

async function models(dashboard: DashboardSeries, nowMs: number): Promise<{ model: string; adapters: unknown[] }[]> {
  const { url, close } = await serveDashboard(dashboard, nowMs);
  try {
    const res = await fetch(`${url}/v1/dashboard/models?namespace=llm&range=300`);
    assert.equal(res.status, 200);
    return ((await res.json()) as { models: { model: string; adapters: unknown[] }[] }).models;
  } finally {
    await close();
  }
}

test("GET /v1/dashboard/models: each base model's LoRA adapters, with the pods they run and wait on now", async () => {
  const dashboard = new DashboardSeries();
  feed(dashboard, 6);
  const body = await models(dashboard, T0 + 5 * STEP_MS + 500);
  assert.deepEqual(body.map((m) => m.model), [LLAMA]);
  // No sidecar scrapes here: the adapters' call figures (lora-figures.test.ts) are null.
  const none = { requestsPerSecond: null, inputTokensPerSecond: null, outputTokensPerSecond: null, ttftP99Ms: null, durationP99Ms: null };
  assert.deepEqual(body[0]!.adapters, [
    { adapter: "chat-de", runningPods: ["lora-a"], waitingPods: [], pods: ["lora-a"], ...none },
    { adapter: "sql-lora", runningPods: ["lora-a", "lora-b"], waitingPods: [], pods: ["lora-a", "lora-b"], ...none },
    { adapter: "support-fr", runningPods: [], waitingPods: ["lora-a"], pods: ["lora-a"], ...none },
  ]);
});

test("a pod's adapter state stops counting after the lookback", async () => {
  const dashboard = new DashboardSeries();
  feed(dashboard, 3);
  const body = await models(dashboard, T0 + 2 * STEP_MS + 10 * 60_000);
  assert.deepEqual(body.flatMap((m) => m.adapters), []);
});
