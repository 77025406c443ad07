// The control plane dashboard's engine SLO panel per model: the batches the real join makes of
// model-server scrapes (test/fixtures/pipeline, vLLM's current names: two models on one pod, a
// time-sliced GPU) go to DashboardSeries as the pipeline hands them over, and GET /v1/dashboard/models
// answers, per model, exactly the series the join recorded (GPU utilisation as a ratio), with the
// thresholds the alert rules use.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { SLO_THRESHOLDS } from "../../../control-plane/src/dashboard/engine-signals.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { labelValue } from "../../../control-plane/src/scrape/sample.js";
import { advance, fixture, relabel } from "../../support/engine-scrapes.js";
import { serveDashboard } from "./serve-dashboard.js";

const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const QWEN = "Qwen/Qwen2.5-7B-Instruct";
const POD = "chat-6f8d-aaaaa";
const T0 = Date.UTC(2026, 11, 3, 6, 0, 0);
const STEP_MS = 2000;

const target = (kind: ScrapeTarget["kind"], pod: string, port: number): ScrapeTarget => ({ id: `${kind}|http://${pod}:${port}/m`, kind, url: `http://${pod}:${port}/m`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: kind === "dcgm" ? "gpu-operator" : "llm", pod, node: "gpu-node-b" });

/** Runs the scrapes through one Joiner, handing every batch to the dashboard as the pipeline does; returns every joined series. */
function feed(dashboard: DashboardSeries, steps: number): WriteSeries[] {
  const dcgm = target("dcgm", "dcgm-b", 9400);
  const llama = target("vllm", POD, 8000);
  const qwen = target("vllm", POD, 8001);
  const joiner = new Joiner({ rateWindowMs: 30_000 });
  joiner.setTargets([dcgm, llama, qwen]);
  const all: WriteSeries[] = [];
  for (let k = 0; k < steps; k++) {
    for (const [t, text, offsetMs] of [
      [dcgm, fixture("dcgm-time-sliced.prom"), 0],
      [llama, advance(fixture("vllm-v1-two-engines.prom"), k), 100],
      [qwen, advance(relabel(fixture("vllm-v1-two-engines.prom"), LLAMA, QWEN), k, 0.1), 200],
    ] as const) {
      const p = parseText(text);
      const timestampMs = T0 + k * STEP_MS + offsetMs;
      const batch = joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors });
      dashboard.observe(batch, { target: t, timestampMs });
      all.push(...batch);
    }
  }
  return all;
}


interface ModelsBody {
  stepSeconds: number;
  thresholds: Record<string, number>;
  models: { namespace: string; model: string; pods: string[]; columns: Record<string, (number | null)[]> }[];
}

test("GET /v1/dashboard/models: one panel's columns per model, each signal the join's newest value for that model (GPU utilisation as a ratio), null before any scrape", async () => {
  const dashboard = new DashboardSeries();
  const joined = feed(dashboard, 20);
  const nowMs = T0 + 19 * STEP_MS + 500;
  const newest = (name: string, model: string): number => {
    const s = joined.filter((x) => labelValue(x.labels, "__name__") === name && labelValue(x.labels, "model") === model).at(-1);
    assert.ok(s, `${name} of ${model} in the join's output`);
    return s.samples.at(-1)!.value;
  };
  // The answer's ratios are rounded to 4 decimals.
  const r4 = (v: number): number => Math.round(v * 10_000) / 10_000;
  const { url, close } = await serveDashboard(dashboard, nowMs);
  try {
    const res = await fetch(`${url}/v1/dashboard/models?namespace=llm&range=300`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as ModelsBody;
    assert.deepEqual(body.models.map((m) => [m.namespace, m.model, m.pods]), [["llm", QWEN, [POD]], ["llm", LLAMA, [POD]]], "one panel per model, sorted by name");
    assert.deepEqual(body.thresholds, { gpuUtilization: 0.85, prefixCacheHitRatio: 0.92, specDecodeAcceptance: 0.8 });
    for (const m of body.models) {
      const last = (key: string): number | null | undefined => m.columns[key]!.at(-1);
      assert.equal(last("gpuUtilization"), r4(newest(C.MODEL_GPU_UTILIZATION, m.model) / 100), `${m.model}: GPU utilisation`);
      assert.equal(last("prefixCacheHitRatio"), r4(newest(C.MODEL_PREFIX_CACHE_HIT_RATIO, m.model)), `${m.model}: prefix-cache hit ratio`);
      assert.equal(last("specDecodeAcceptance"), r4(newest(C.MODEL_SPEC_DECODE_ACCEPTANCE, m.model)), `${m.model}: speculative acceptance`);
      assert.equal(m.columns.t!.length, Math.floor(300 / body.stepSeconds), "the range in steps");
      assert.equal(m.columns.gpuUtilization![0], null, "nothing before the first scrape");
    }
    for (const m of body.models) assert.equal(m.columns.gpuUtilization!.at(-1), 0.63, "the pod's own share of the time-sliced GPU");
    assert.notEqual(body.models[0]!.columns.specDecodeAcceptance!.at(-1), body.models[1]!.columns.specDecodeAcceptance!.at(-1), "each model its own acceptance");
    assert.deepEqual(((await (await fetch(`${url}/v1/dashboard/models?namespace=other&range=300`)).json()) as ModelsBody).models, [], "another namespace's page shows none");
    const bad = await fetch(`${url}/v1/dashboard/models?range=7`);
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: "invalid query", details: [{ field: "range", reason: 'must be one of 300, 900, 1800, 3600 (seconds), got "7"' }] });
  } finally {
    await close();
  }
});

test("engine panel: a pod's value stops counting after the lookback (a model server gone is a gap, not its last value forever)", async () => {
  const dashboard = new DashboardSeries();
  feed(dashboard, 5);
  const { url, close } = await serveDashboard(dashboard, T0 + 4 * STEP_MS + 60_000);
  try {
    const body = (await (await fetch(`${url}/v1/dashboard/models?range=300`)).json()) as ModelsBody;
    const col = body.models[0]!.columns.prefixCacheHitRatio!;
    assert.equal(col.at(-1), null, "a minute after the last scrape");
    assert.ok(col.some((v) => v !== null), "the scrapes themselves are shown");
  } finally {
    await close();
  }
});

test("the panel's thresholds are the alert rules' parameters (tokentrace:slo_threshold:parameter in prometheus-rules.yaml)", () => {
  const rules = parse(readFileSync(new URL("../../../istio/observability/prometheus-rules.yaml", import.meta.url), "utf8")) as { spec: { groups: { name: string; rules: { record?: string; expr: string; labels?: Record<string, string> }[] }[] } };
  const params = new Map(rules.spec.groups.flatMap((g) => g.rules).filter((r) => r.record === "tokentrace:slo_threshold:parameter").map((r) => [r.labels!.signal!, Number(/^vector\(([0-9.]+)\)$/.exec(r.expr)![1])]));
  assert.deepEqual(
    { gpuUtilization: params.get("gpu_utilization_percent")! / 100, prefixCacheHitRatio: params.get("prefix_cache_hit_ratio"), specDecodeAcceptance: params.get("spec_decode_acceptance_ratio") },
    { ...SLO_THRESHOLDS },
  );
});
