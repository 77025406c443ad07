// The Grafana dashboard's GPU health panels against what the pipeline writes, under Prometheus's own
// query engine (Debian's promtool 2.42, `test rules` with promql_expr_test and gpu-health-rules.yaml
// loaded for its recorded thresholds): three nodes' dcgm-exporters in their formats (the default
// counters with a starved GPU, a tensor-parallel pod with SM_ACTIVE and a straggler, an H100 with the
// health fields and thermal throttling) go through the real join with a sidecar in front of each
// pod, its output is the input series (what remote write stores), and each panel's queries, their
// variables at All, return the pipeline's figures.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import { inputSeries, promLabels, runScrapes, type JoinedPoint, type Scrape } from "../support/promtool-case.js";
import { fixture, sidecarText } from "../support/engine-scrapes.js";
import { ISTIO_DIR } from "./support.js";
import { runPromtoolTest } from "./promtool-run.js";

interface Target { refId: string; expr: string; legendFormat?: string }
interface Panel { id: number; type: string; title: string; description?: string; targets?: Target[] }
const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as { panels: Panel[]; templating: { list: { name: string; allValue?: string }[] } };
const panel = (title: RegExp): Panel => {
  const p = dashboard.panels.find((x) => title.test(x.title));
  assert.ok(p, String(title));
  return p;
};
const allValue = (name: string): string => dashboard.templating.list.find((v) => v.name === name)!.allValue!;
const at = (p: Panel, refId: string): string => p.targets!.find((t) => t.refId === refId)!.expr.replaceAll("$namespace", allValue("namespace")).replaceAll("$model", allValue("model")).replaceAll("$__rate_interval", "1m");

const STEP = 10;
const STEPS = 8;
let dir: string;
let points: JoinedPoint[];
let end: number;
let input: { series: string; values: string }[];

before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-gpu-panels-"));
  const groups = parseAllDocuments(readFileSync(join(ISTIO_DIR, "observability/gpu-health-rules.yaml"), "utf8")).flatMap((d) => (d.toJS() as { spec: { groups: unknown[] } }).spec.groups);
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups }));
  const dcgm = (node: string): ScrapeTarget => ({ id: `dcgm|${node}`, kind: "dcgm", url: `http://${node}:9400/metrics`, intervalMs: STEP * 1000, timeoutMs: 5000, namespace: "gpu-operator", pod: `dcgm-${node}`, node });
  const podTarget = (kind: "envoy" | "vllm", pod: string, node: string): ScrapeTarget => ({ id: `${kind}|${pod}`, kind, url: `http://${pod}:${kind === "envoy" ? 15090 : 8000}/metrics`, intervalMs: STEP * 1000, timeoutMs: 5000, namespace: "llm", pod, node });
  const every = (t: ScrapeTarget, offset: number, text: (k: number) => string): Scrape[] => Array.from({ length: STEPS }, (_, k) => ({ atSec: offset + STEP * k, target: t, text: text(k) }));
  const sidecar = (k: number): string => sidecarText(k, [{ route: "chat", model: "llama-3-8b", per: 20, ttft: { 6: 2, 7: 5 }, decode: { 11: 3, 12: 6 } }]);
  const scrapes: Scrape[] = [
    ...every(dcgm("gpu-node-d"), 0, () => fixture("dcgm-default-counters.prom")),
    ...every(dcgm("gpu-node-t"), 0, () => fixture("dcgm-profiling-tp4.prom")),
    ...every(dcgm("gpu-node-h"), 0, () => fixture("dcgm-health-h100.prom")),
    ...[["chat-5d6f-eeeee", "gpu-node-d"], ["embed-8b2c-fffff", "gpu-node-d"], ["llama70b-tp4-0", "gpu-node-t"], ["chat-1f2e-iiiii", "gpu-node-h"]].flatMap(([pod, node]) => every(podTarget("envoy", pod!, node!), 2, sidecar)),
    ...every(podTarget("vllm", "chat-5d6f-eeeee", "gpu-node-d"), 3, () => fixture("vllm-chat.prom")),
  ];
  ({ joined: points } = runScrapes(scrapes, { rateWindowMs: 60_000 }));
  end = 3 + STEP * (STEPS - 1);
  const series = new Map<string, Map<number, string>>();
  for (const p of points) {
    const key = `${p.name}${promLabels(p.labels)}`;
    if (!series.has(key)) series.set(key, new Map());
    series.get(key)!.set(p.atMs / 1000, String(p.value));
  }
  input = inputSeries(series, end);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Prometheus's round(v, 1e-9) (promql/functions.go funcRound: floor(v * (1/to) + 0.5) / (1/to)), computed the same way here. */
const TO = 1e-9;
const rounded = (v: number): number => Math.floor(v * (1 / TO) + 0.5) / (1 / TO);

/**
 * Runs one promtool case (each query at the end returns exactly its expected samples); rejects with
 * promtool's output otherwise. A query marked `mean` averages several series: Prometheus's running
 * mean depends on the order it meets them, which is not fixed, so both sides are rounded to 1e-9.
 */
async function check(queries: { expr: string; expected: { labels: string; value: number }[]; mean?: boolean }[]): Promise<string> {
  const exp = (q: (typeof queries)[number]): { expr: string; eval_time: string; exp_samples: { labels: string; value: number }[] } =>
    q.mean
      ? { expr: `round(${q.expr}, ${TO})`, eval_time: `${end}s`, exp_samples: q.expected.map((e) => ({ labels: e.labels, value: rounded(e.value) })) }
      : { expr: q.expr, eval_time: `${end}s`, exp_samples: q.expected };
  const test = { interval: "1s", input_series: input, promql_expr_test: queries.map(exp) };
  return runPromtoolTest(dir, test);
}

/** The join's newest point of every series named `name` at the end, as promtool's exp_samples. */
const newest = (name: string): { labels: string; value: number }[] => {
  const latest = new Map<string, JoinedPoint>();
  for (const p of points) if (p.name === name && p.atMs <= end * 1000) latest.set(promLabels(p.labels), p);
  return [...latest.values()].map((p) => ({ labels: `${name}${promLabels(p.labels)}`, value: p.value }));
};

describe("Grafana GPU health panels return what the pipeline records (promtool, Prometheus's query engine)", () => {
  it("every GPU panel says what it needs the exporter to export", () => {
    const row = dashboard.panels.findIndex((p) => p.type === "row" && /^GPU health/.test(p.title));
    const gpuPanels = dashboard.panels.slice(row + 1).filter((p) => p.type !== "row");
    // Seven of the join's GPU series, and the exporters it read another way.
    assert.equal(gpuPanels.length, 8);
    for (const p of gpuPanels) assert.match(p.description ?? "", /(Needs|needs|default counters)/, p.title);
  });

  it("utilisation beside activity: SM activity per pod labelled with its source (GR_ENGINE_ACTIVE on the default counters, SM_ACTIVE where added)", async () => {
    const p = panel(/^GPU utilisation beside SM, tensor and DRAM activity$/);
    const out = await check([
      {
        expr: at(p, "B"),
        expected: [
          { labels: '{pod="chat-5d6f-eeeee",source="gr_engine_active"}', value: 0.962 },
          { labels: '{pod="embed-8b2c-fffff",source="gr_engine_active"}', value: 0.874 },
          { labels: '{pod="llama70b-tp4-0",source="sm_active"}', value: (0.552 + 0.561 + 0.948 + 0.541) / 4 },
        ],
        mean: true,
      },
      { expr: at(p, "E"), expected: [{ labels: '{pod="llama70b-tp4-0"}', value: (0.231 + 0.235 + 0.377 + 0.229) / 4 }], mean: true },
    ]);
    assert.match(out, /SUCCESS/);
  });

  it("busy but starved: the join's activity per busy second with both thresholds, and the starved model beside its pod", async () => {
    const starved = panel(/^Busy but starved/);
    const perModel = panel(/^Per model: GPU activity beside utilisation$/);
    const ratios = newest("tokentrace_pod_gpu_activity_while_busy_ratio");
    assert.equal(ratios.length, 6, "two default-counter GPUs and four SM_ACTIVE cards (the health node exports no activity)");
    const out = await check([
      { expr: at(starved, "A"), expected: ratios },
      { expr: at(starved, "B"), expected: [{ labels: 'tokentrace:gpu_threshold:parameter{basis="sm_active",signal="starved_activity_ratio"}', value: 0.5 }, { labels: 'tokentrace:gpu_threshold:parameter{basis="tensor_dram",signal="starved_activity_ratio"}', value: 0.3 }] },
      // The join's unrounded ratio (DRAM 0.118 over 97% busy), through the recording rules and min by.
      { expr: at(perModel, "E"), expected: [{ labels: '{model="llama-3-8b"}', value: 0.118 / (97 / 100) }] },
      { expr: at(perModel, "C"), expected: [{ labels: '{model="llama-3-8b"}', value: 0.041 }] },
    ]);
    assert.match(out, /SUCCESS/);
  });

  it("stragglers: the tensor-parallel pod's spreads", async () => {
    const p = panel(/^Stragglers/);
    const out = await check([
      { expr: at(p, "A"), expected: [{ labels: 'tokentrace_pod_gpu_utilization_spread_percent{namespace="llm",pod="llama70b-tp4-0"}', value: 39 }] },
      { expr: at(p, "B"), expected: [{ labels: 'tokentrace_pod_gpu_memory_used_spread_ratio{namespace="llm",pod="llama70b-tp4-0"}', value: (80112 - 71230) / 80112 }] },
    ]);
    assert.match(out, /SUCCESS/);
  });

  it("throttling, temperature and errors of the namespace's GPUs: the throttled H100's reasons, every mapped GPU's temperature, its XID; the unmapped GPU left out", async () => {
    const reasons = ["power_cap", "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake"];
    const out = await check([
      {
        expr: at(panel(/^Throttling/), "A"),
        expected: reasons.map((reason) => ({ labels: `{gpu="0",hostname="gpu-node-h",reason="${reason}"}`, value: reason.endsWith("_thermal") ? 1 : 0 })),
      },
      {
        expr: at(panel(/^GPU temperature$/), "A"),
        expected: [
          ["gpu-node-d", "0", "gpu", 58], ["gpu-node-d", "0", "memory", 61], ["gpu-node-d", "1", "gpu", 66], ["gpu-node-d", "1", "memory", 70],
          ["gpu-node-t", "0", "gpu", 64], ["gpu-node-t", "1", "gpu", 65], ["gpu-node-t", "2", "gpu", 83], ["gpu-node-t", "3", "gpu", 63],
          ["gpu-node-h", "0", "gpu", 88], ["gpu-node-h", "0", "memory", 94],
        ].map(([host, gpu, sensor, v]) => ({ labels: `{gpu="${gpu}",hostname="${host}",sensor="${sensor}"}`, value: v as number })),
      },
      { expr: at(panel(/^XIDs, memory errors/), "A"), expected: [{ labels: '{gpu="0",hostname="gpu-node-h",xid="48",xid_class="devastating"}', value: 1 }] },
      { expr: at(panel(/^XIDs, memory errors/), "B"), expected: [{ labels: '{gpu="0",hostname="gpu-node-h"}', value: 2 }] },
    ]);
    assert.match(out, /SUCCESS/);
  });

  it("the check can fail: expecting the unmapped GPU's failed row remap on the errors panel is refused", async () => {
    await assert.rejects(check([{ expr: at(panel(/^XIDs, memory errors/), "E"), expected: [{ labels: '{gpu="0",hostname="gpu-node-h"}', value: 0 }, { labels: '{gpu="1",hostname="gpu-node-h"}', value: 1 }] }]), /FAILED/);
  });
});
