// The control plane dashboard's GPU health panel family: the batches the real join makes of three
// nodes' dcgm-exporter scrapes (test/fixtures/pipeline: the default counters with a starved GPU, a
// tensor-parallel pod with SM_ACTIVE and a straggler, an H100 throttled for heat with an XID and
// double-bit errors) and of each pod's sidecar go to DashboardSeries as the pipeline hands them over,
// and GET /v1/dashboard/gpus answers per pod exactly the join's figures, what they were measured on,
// its GPUs' problems, the alert thresholds (those of gpu-health-rules.yaml) and what each panel needs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { GPU_THRESHOLDS, GpuHealthPanels, MAX_EXPORTER_NOTES } from "../../../control-plane/src/dashboard/gpu-health.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { fixture } from "../../support/engine-scrapes.js";
import { serveDashboard } from "./serve-dashboard.js";

const T0 = Date.UTC(2026, 11, 3, 6, 0, 0);
const STEP_MS = 2000;
const PODS: [string, string, string][] = [
  ["chat-5d6f-eeeee", "gpu-node-d", "dcgm-default-counters.prom"],
  ["embed-8b2c-fffff", "gpu-node-d", "dcgm-default-counters.prom"],
  ["llama70b-tp4-0", "gpu-node-t", "dcgm-profiling-tp4.prom"],
  ["chat-1f2e-iiiii", "gpu-node-h", "dcgm-health-h100.prom"],
];

/** Runs the scrapes through one Joiner, handing every batch to `observe` as the pipeline does. */
function feed(observe: (batch: ReturnType<Joiner["join"]>, source: { target: ScrapeTarget; timestampMs: number }) => void, steps: number): void {
  const dcgm = (node: string): ScrapeTarget => ({ id: `dcgm|${node}`, kind: "dcgm", url: `http://${node}:9400/metrics`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: "gpu-operator", pod: `dcgm-${node}`, node });
  const envoy = (pod: string, node: string): ScrapeTarget => ({ id: `envoy|${pod}`, kind: "envoy", url: `http://${pod}:15090/stats/prometheus`, intervalMs: STEP_MS, timeoutMs: 1000, namespace: "llm", pod, node });
  const joiner = new Joiner();
  const exporters = new Map(PODS.map(([, node, file]) => [node, { target: dcgm(node), file }]));
  joiner.setTargets([...exporters.values()].map((e) => e.target));
  const scrape = (t: ScrapeTarget, text: string, timestampMs: number): void => {
    const p = parseText(text);
    observe(joiner.join({ target: t, timestampMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors }), { target: t, timestampMs });
  };
  for (let k = 0; k < steps; k++) {
    for (const { target, file } of exporters.values()) scrape(target, fixture(file), T0 + k * STEP_MS);
    for (const [pod, node] of PODS) scrape(envoy(pod, node), 'tokentrace_requests_total{route="chat",status_class="2xx"} 1\n', T0 + k * STEP_MS + 100);
  }
}


interface GpusBody {
  stepSeconds: number;
  thresholds: typeof GPU_THRESHOLDS;
  needs: Record<string, string>;
  pods: { namespace: string; pod: string; gpuCount: number; smSource: string | null; basis: string | null; problems: string[]; columns: Record<string, (number | null)[]> }[];
}

test("GET /v1/dashboard/gpus: per pod the join's GPU figures (last step), what they were measured on, its GPUs' problems, and what each panel needs", async () => {
  const dashboard = new DashboardSeries();
  feed((batch, source) => dashboard.observe(batch, source), 6);
  const { url, close } = await serveDashboard(dashboard, T0 + 5 * STEP_MS + 500);
  try {
    const res = await fetch(`${url}/v1/dashboard/gpus?namespace=llm&range=300`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as GpusBody;
    assert.deepEqual(body.pods.map((p) => [p.pod, p.gpuCount, p.smSource, p.basis]), [
      ["chat-1f2e-iiiii", 1, null, null],
      ["chat-5d6f-eeeee", 1, "gr_engine_active", "tensor_dram"],
      ["embed-8b2c-fffff", 1, "gr_engine_active", "tensor_dram"],
      ["llama70b-tp4-0", 4, "sm_active", "sm_active"],
    ]);
    const last = (pod: string): Record<string, number | null | undefined> => Object.fromEntries(Object.entries(body.pods.find((p) => p.pod === pod)!.columns).map(([k, v]) => [k, v.at(-1)]));
    const { t: _t, ...starved } = last("chat-5d6f-eeeee");
    assert.deepEqual(starved, { utilization: 0.97, smActive: 0.962, tensorActive: 0.041, dramActive: 0.118, smOccupancy: null, activityWhileBusy: 0.118 / (97 / 100), utilizationSpreadPercent: null, memorySpreadRatio: null, thermalThrottled: null, powerThrottled: null, temperatureC: 58 });
    const tp4 = last("llama70b-tp4-0");
    assert.equal(tp4.utilization, (0.61 + 0.62 + 0.99 + 0.6) / 4);
    assert.deepEqual([tp4.activityWhileBusy, tp4.utilizationSpreadPercent, tp4.memorySpreadRatio, tp4.temperatureC], [0.541 / (60 / 100), 39, (80112 - 71230) / 80112, 83], "the least active card, the spreads, the hottest card");
    const hot = last("chat-1f2e-iiiii");
    assert.deepEqual([hot.thermalThrottled, hot.powerThrottled, hot.temperatureC, hot.activityWhileBusy], [1, 0, 88, null]);
    assert.deepEqual(body.pods.find((p) => p.pod === "chat-1f2e-iiiii")!.problems, ["GPU 0 on gpu-node-h: XID 48 (devastating)", "GPU 0 on gpu-node-h: 2 volatile double-bit ECC errors"], "its own GPU's, not the unmapped GPU 1's failed remap");
    assert.deepEqual(body.pods.find((p) => p.pod === "chat-5d6f-eeeee")!.problems, []);
    assert.deepEqual(Object.keys(body.needs).sort(), ["activity", "errors", "starved", "stragglers", "throttling"]);
    assert.match(body.needs.throttling!, /DCGM_FI_DEV_CLOCKS_EVENT_REASONS/);
    assert.match(body.needs.activity!, /DCGM_FI_PROF_SM_ACTIVE/);
    assert.equal(body.pods[0]!.columns.utilization![0], null, "nothing before the first scrape");
    assert.deepEqual(((await (await fetch(`${url}/v1/dashboard/gpus?namespace=other&range=300`)).json()) as GpusBody).pods, []);
    const bad = await fetch(`${url}/v1/dashboard/gpus?range=7`);
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: "invalid query", details: [{ field: "range", reason: 'must be one of 300, 900, 1800, 3600 (seconds), got "7"' }] });
  } finally {
    await close();
  }
});

test("GPU panels: a value stops counting after the lookback (a pod gone is a gap), and the collector holds at most maxPods pods", async () => {
  const dashboard = new DashboardSeries();
  feed((batch, source) => dashboard.observe(batch, source), 3);
  const { url, close } = await serveDashboard(dashboard, T0 + 2 * STEP_MS + 60_000);
  try {
    const col = ((await (await fetch(`${url}/v1/dashboard/gpus?range=300`)).json()) as GpusBody).pods[0]!.columns.temperatureC!;
    assert.equal(col.at(-1), null, "a minute after the last scrape");
    assert.ok(col.some((v) => v !== null));
  } finally {
    await close();
  }
  const bounded = new GpuHealthPanels({ retentionMs: 3_600_000, maxPods: 2, maxGpus: 512, maxPointsPerKey: 8_000 });
  feed((batch, source) => bounded.observe(batch, source), 2);
  assert.equal(bounded.podKeys().length, 2);
});

test("the panels' thresholds are the alert rules' parameters (tokentrace:gpu_threshold:parameter in gpu-health-rules.yaml)", () => {
  const rules = parseAllDocuments(readFileSync(new URL("../../../istio/observability/gpu-health-rules.yaml", import.meta.url), "utf8")).flatMap((d) => (d.toJS() as { spec: { groups: { rules: { record?: string; expr: string; labels?: Record<string, string> }[] }[] } }).spec.groups);
  const params = rules.flatMap((g) => g.rules).filter((r) => r.record === "tokentrace:gpu_threshold:parameter");
  const value = (signal: string, basis?: string): number => Number(/^vector\(([0-9.]+)\)$/.exec(params.find((r) => r.labels!.signal === signal && r.labels!.basis === basis)!.expr)![1]);
  assert.deepEqual(GPU_THRESHOLDS, {
    busyUtilizationPercent: value("busy_utilization_percent"),
    starvedActivityRatio: { sm_active: value("starved_activity_ratio", "sm_active"), tensor_dram: value("starved_activity_ratio", "tensor_dram") },
    stragglerUtilizationSpreadPercent: value("straggler_utilization_spread_percent"),
    stragglerMemorySpreadRatio: value("straggler_memory_spread_ratio"),
  });
});

test("GET /v1/dashboard/gpus lists the dcgm-exporters labelled other than their default way, with the flag to change, until they change it or go", async () => {
  const dashboard = new DashboardSeries();
  const joiner = new Joiner({ onExporterLabels: (t, notes) => dashboard.gpu.noteExporterLabels(t.url, notes) });
  const old: ScrapeTarget = { id: "dcgm|gpu-node-e", kind: "dcgm", url: "http://gpu-node-e:9400/metrics", intervalMs: STEP_MS, timeoutMs: 1000, namespace: "gpu-operator", pod: "dcgm-e", node: "gpu-node-e" };
  const renamed: ScrapeTarget = { ...old, id: "dcgm|gpu-node-d", url: "http://gpu-node-d:9400/metrics", pod: "dcgm-d", node: "gpu-node-d" };
  joiner.setTargets([old, renamed]);
  const scrape = (t: ScrapeTarget, text: string, k: number): void => {
    const p = parseText(text);
    joiner.join({ target: t, timestampMs: T0 + k * STEP_MS, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors });
  };
  // A Prometheus scrape with honor_labels false moved the exporter's pod and namespace to exported_*.
  const honorFalse = fixture("dcgm-default-counters.prom").replace(/\bpod="/g, 'exported_pod="').replace(/\bnamespace="/g, 'exported_namespace="');
  scrape(old, fixture("dcgm-old-namespace.prom"), 0);
  scrape(renamed, honorFalse, 0);
  const { url, close } = await serveDashboard(dashboard, T0 + 500);
  const notes = async (): Promise<{ url: string; spelling: string; message: string }[]> => ((await (await fetch(`${url}/v1/dashboard/gpus?range=300`)).json()) as { exporterNotes: { url: string; spelling: string; message: string }[] }).exporterNotes;
  try {
    const rows = await notes();
    assert.deepEqual(rows.map((r) => [r.url, r.spelling]), [
      [renamed.url, "honor_labels_renamed"],
      [old.url, "old_namespace"],
    ]);
    assert.match(rows[0]!.message, /serviceMonitor\.honorLabels: true/);
    assert.match(rows[1]!.message, /--use-old-namespace/);
    scrape(old, fixture("dcgm-default-counters.prom"), 1);
    assert.deepEqual((await notes()).map((r) => r.url), [renamed.url], "the exporter runs without the flag now");
    joiner.removeTarget(renamed);
    assert.deepEqual(await notes(), [], "an exporter that went away says nothing more");
  } finally {
    await close();
  }
});

test("GPU panels list at most MAX_EXPORTER_NOTES exporters: a new one past the bound is left out, a listed one still updates", () => {
  const panels = new GpuHealthPanels();
  for (let i = 0; i < MAX_EXPORTER_NOTES + 5; i++) panels.noteExporterLabels(`http://n${String(i).padStart(3, "0")}:9400/metrics`, new Set(["old_namespace"] as const));
  assert.equal(panels.exporterNoteRows().length, MAX_EXPORTER_NOTES);
  panels.noteExporterLabels("http://n000:9400/metrics", new Set(["old_namespace", "honor_labels_renamed"] as const));
  assert.deepEqual(panels.exporterNoteRows().filter((r) => r.url === "http://n000:9400/metrics").map((r) => r.spelling), ["honor_labels_renamed", "old_namespace"]);
});
