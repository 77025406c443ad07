// The Grafana dashboard's engine panels against what the pipeline writes, under Prometheus's own
// query engine (Debian's promtool 2.42, `test rules` with promql_expr_test): two models served by one
// pod on a time-sliced GPU (test/fixtures/pipeline, vLLM's current names) go through the real join,
// with a sidecar in front of one, its output is the input series (what remote write stores), and every query of the engine panels,
// its variables interpolated as Grafana's Prometheus data source does (a repeated panel's $model one
// value, regex-escaped; All as the variable's allValue), returns exactly the recorded series: one
// per signal for the repeated panel's model, with the join's values. Each query reads
// `(pipeline or rule)`, so it is run three times: on what the pipeline writes, on the same series
// under the recording rules' names (test/support/rule-names.ts; the rules-only deployment), and on
// both in one Prometheus (where `or` must not count a series twice). The per-request panels read a
// second recording: one vLLM pod exporting the families added after vllm-project/vllm#38435.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { stringify } from "yaml";
import { join } from "node:path";
import * as C from "../../control-plane/src/join/catalogue.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import { inputSeries, promLabels, runScrapes, type JoinedPoint, type Scrape } from "../support/promtool-case.js";
import { advance, fixture, relabel, sidecarText } from "../support/engine-scrapes.js";
import { RULE_FOR_SERIES, ruleFor } from "../support/rule-names.js";
import { ISTIO_DIR } from "./support.js";
import { runPromtoolTest } from "./promtool-run.js";

interface Target { refId: string; expr: string; legendFormat?: string }
interface Panel { id: number; type: string; title: string; gridPos: { x: number; y: number; w: number; h: number }; repeat?: string; targets?: Target[] }
const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as { panels: Panel[]; templating: { list: { name: string; allValue?: string }[] } };
const panel = (title: RegExp): Panel => {
  const p = dashboard.panels.find((x) => title.test(x.title));
  assert.ok(p, String(title));
  return p;
};

const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const QWEN = "Qwen/Qwen2.5-7B-Instruct";
const POD = "chat-6f8d-aaaaa";
const STEP = 10;
const STEPS = 14;

const target = (kind: ScrapeTarget["kind"], pod: string, port: number): ScrapeTarget => ({ id: `${kind}|http://${pod}:${port}/m`, kind, url: `http://${pod}:${port}/m`, intervalMs: STEP * 1000, timeoutMs: 5000, namespace: kind === "dcgm" ? "gpu-operator" : "llm", pod, node: "gpu-node-b" });
const every = (t: ScrapeTarget, offset: number, text: (k: number) => string): Scrape[] => Array.from({ length: STEPS }, (_, k) => ({ atSec: offset + STEP * k, target: t, text: text(k) }));

/** What the pipeline writes for one pod serving two models on a time-sliced GPU, one scrape of each target every STEP seconds. */
function recorded(): { points: JoinedPoint[]; end: number } {
  const scrapes = [
    ...every(target("dcgm", "dcgm-b", 9400), 0, () => fixture("dcgm-time-sliced.prom")),
    ...every(target("vllm", POD, 8000), 1, (k) => advance(fixture("vllm-v1-two-engines.prom"), k)),
    // The second model's server on another port: its hits and acceptance grow at other rates.
    ...every(target("vllm", POD, 8001), 2, (k) => advance(relabel(fixture("vllm-v1-two-engines.prom"), LLAMA, QWEN), k, 0.1)),
    ...every(target("envoy", POD, 15090), 3, (k) => sidecarText(k, [{ route: "chat", model: LLAMA, per: 40, ttft: { 6: 2, 7: 5, 8: 2, 9: 1 }, decode: { 11: 3, 12: 6, 13: 1 } }])),
  ];
  const { joined } = runScrapes(scrapes, { rateWindowMs: 60_000 });
  return { points: joined, end: 3 + STEP * (STEPS - 1) };
}

/**
 * What the pipeline writes for one vLLM pod with the per-request families (its fixture advanced 5%
 * a step): per step 50 finished requests, 14000 prompt tokens computed, 4 preemptions, and
 * time-per-output-token buckets growing 15, 40, 48, 50 up to 0.025, 0.05, 0.075 and 0.1 s.
 */
function recordedPerRequest(): { points: JoinedPoint[]; end: number } {
  const { joined } = runScrapes(every(target("vllm", "kvc-0", 8000), 1, (k) => advance(fixture("vllm-waiting-by-reason-external-cache.prom"), k)), { rateWindowMs: 60_000 });
  return { points: joined, end: 1 + STEP * (STEPS - 1) };
}

type Deployments = Record<"pipeline" | "rules" | "both", { series: string; values: string }[]>;

/** The stored series of each deployment: the pipeline's, the recording rules', both. */
function deployments(points: JoinedPoint[], end: number): Deployments {
  const stored = (names: (p: JoinedPoint) => string[]): { series: string; values: string }[] => {
    const series = new Map<string, Map<number, string>>();
    for (const p of points) {
      for (const name of names(p)) {
        const key = `${name}${promLabels(p.labels)}`;
        if (!series.has(key)) series.set(key, new Map());
        series.get(key)!.set(p.atMs / 1000, String(p.value));
      }
    }
    return inputSeries(series, end);
  };
  const rule = (p: JoinedPoint): string => RULE_FOR_SERIES.get(p.name) ?? p.name;
  return { pipeline: stored((p) => [p.name]), rules: stored((p) => [rule(p)]), both: stored((p) => [...new Set([p.name, rule(p)])]) };
}

/** Grafana's Prometheus data source regex-escapes a multi-value variable's values. */
const regexEscape = (v: string): string => v.replace(/[\\^$*+?.()|[\]{}]/g, "\\\\$&");
const allValue = (name: string): string => dashboard.templating.list.find((v) => v.name === name)!.allValue!;
const interpolate = (expr: string, model: string | undefined): string =>
  expr.replaceAll("$namespace", allValue("namespace")).replaceAll("$route", allValue("route")).replaceAll("$model", model === undefined ? allValue("model") : regexEscape(model));

/**
 * The answer Prometheus should give to `agg by (l...) (name{matchers})` (optionally `/ 100`) at the
 * end: the join's newest point of each matching series, grouped. Each group here holds one series,
 * so the aggregation is that series' value.
 */
function expectedOf(expr: string, points: JoinedPoint[], end: number): { labels: string; value: number }[] {
  const m = /^(avg|sum|max) by \(([^)]*)\) \((\w+)\{([^}]*)\} or ([\w:]+)\{([^}]*)\}\)( \/ 100)?$/.exec(expr);
  assert.ok(m, `a query of the form agg by (...) (series{...} or rule{...}): ${expr}`);
  const [, , by, name, matchers, rule, ruleMatchers, scaled] = m;
  assert.equal(rule, ruleFor(name!), `${expr}: the rule beside ${name}`);
  assert.equal(ruleMatchers, matchers, `${expr}: the same matchers on both sides`);
  const tests = [...matchers!.matchAll(/(\w+)(=~|=)"((?:[^"\\]|\\.)*)"/g)].map(([, l, op, v]) => {
    const value = JSON.parse(`"${v}"`) as string;
    return (labels: string[]): boolean => {
      const actual = labels.indexOf(l!) % 2 === 0 ? labels[labels.indexOf(l!) + 1]! : "";
      return op === "=" ? actual === value : new RegExp(`^(?:${value})$`).test(actual);
    };
  });
  const latest = new Map<string, JoinedPoint>();
  for (const p of points) if (p.name === name && p.atMs <= end * 1000 && tests.every((t) => t(p.labels))) latest.set(promLabels(p.labels), p);
  const groups = new Map<string, number[]>();
  for (const p of latest.values()) {
    const key = promLabels(by!.split(", ").flatMap((l) => [l, p.labels[p.labels.indexOf(l) + 1]!]));
    groups.set(key, [...(groups.get(key) ?? []), p.value]);
  }
  return [...groups].map(([labels, values]) => {
    assert.equal(values.length, 1, `${expr}: one series per group`);
    return { labels, value: scaled ? values[0]! / 100 : values[0]! };
  });
}

let dir: string;
let points: JoinedPoint[];
let end: number;
let inputs: Deployments;
/** The per-request recording: its points, end and deployments. */
let perRequest: { points: JoinedPoint[]; end: number; inputs: Deployments };
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-panels-"));
  // No rules: the queries read what remote write (or the ruler) stored, as Grafana does.
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: [] }));
  ({ points, end } = recorded());
  inputs = deployments(points, end);
  const r = recordedPerRequest();
  perRequest = { ...r, inputs: deployments(r.points, r.end) };
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs one promtool case; rejects with its output when a query's result differs. */
async function promtool(test: unknown): Promise<string> {
  return runPromtoolTest(dir, test);
}

/** promtool's case: each query (interpolated) at the end returns exactly `expected`, on one deployment's series (of the two-model recording unless `of` says). */
const checkCase = (queries: { expr: string; expected: { labels: string; value: number }[] }[], stored: keyof Deployments = "pipeline", of: { inputs: Deployments; end: number } = { inputs, end }): unknown => ({
  interval: "1s",
  input_series: of.inputs[stored],
  promql_expr_test: queries.map((q) => ({ expr: q.expr, eval_time: `${of.end}s`, exp_samples: q.expected })),
});

/** The queries return `expected` on the pipeline's series, on the rules', and on both. */
async function everyDeployment(queries: { expr: string; expected: { labels: string; value: number }[] }[], of?: { inputs: Deployments; end: number }): Promise<void> {
  for (const stored of ["pipeline", "rules", "both"] as const) assert.match(await promtool(checkCase(queries, stored, of)), /SUCCESS/, stored);
}

describe("Grafana engine panels return the series the pipeline records (promtool, Prometheus's query engine)", () => {
  it("the engine SLO panel repeats per model and shows GPU utilisation, prefix-cache hit ratio and speculative acceptance, each one series with the join's value", async () => {
    const slo = panel(/^Engine SLO signals: \$model$/);
    assert.equal(slo.repeat, "model");
    assert.deepEqual(slo.targets!.map((t) => t.legendFormat), ["GPU utilisation", "prefix-cache hit ratio", "speculative acceptance"]);
    const queries = [LLAMA, QWEN].flatMap((model) =>
      slo.targets!.map((t) => {
        const expr = interpolate(t.expr, model);
        const expected = expectedOf(expr, points, end);
        assert.deepEqual(expected.map((e) => e.labels), [`{model=${JSON.stringify(model)}}`], `${t.legendFormat} of ${model}: one series`);
        return { expr, expected };
      }),
    );
    // The join's own figures first, so the check cannot pass on two wrong answers that agree.
    const value = (i: number): number => queries[i]!.expected[0]!.value;
    assert.equal(value(0), 0.63, "the pod's own share of the time-sliced GPU, as a ratio");
    assert.equal(value(1), 0.95);
    assert.ok(Math.abs(value(2) - 4208 / 4950) < 1e-12, "accepted over drafted tokens of both engines");
    assert.notEqual(value(5), value(2), "each model its own acceptance");
    await everyDeployment(queries);
  });

  it("Where P99 goes and the KV-cache panel return the route's and each model's series", async () => {
    const queries = [panel(/^Where P99 goes$/), panel(/^KV cache, preemptions and queue$/)].flatMap((p) =>
      p.targets!.map((t) => {
        const expr = interpolate(t.expr, undefined);
        return { expr, expected: expectedOf(expr, points, end) };
      }),
    );
    const labelsOf = (i: number): string[] => queries[i]!.expected.map((e) => e.labels).sort();
    assert.deepEqual(labelsOf(0), ['{phase="outside_ttft",route="chat"}', '{phase="ttft",route="chat"}'], "the sidecar's P99 TTFT and what lies outside the engine");
    assert.deepEqual(labelsOf(1), [LLAMA, QWEN].flatMap((m) => ["decode", "prefill", "queue"].map((phase) => `{model=${JSON.stringify(m)},phase="${phase}"}`)).sort());
    for (const i of [2, 3, 4]) assert.deepEqual(labelsOf(i), [LLAMA, QWEN].map((m) => `{model=${JSON.stringify(m)}}`).sort());
    assert.ok(points.some((p) => p.name === C.MODEL_KV_CACHE_USAGE));
    await everyDeployment(queries);
  });

  it("the per-request panels sit beside each other at the end of the engine row and return vLLM's per-request TPOT P50/P95/P99, prompt tokens computed and preemptions per request", async () => {
    const [tpot, perRequestPanel] = [panel(/^Time per output token per request \(vLLM\)$/), panel(/^Per finished request: prompt tokens computed and preemptions \(vLLM\)$/)];
    const i = dashboard.panels.indexOf(tpot);
    assert.deepEqual(dashboard.panels.slice(i - 1, i + 3).map((p) => (p.type === "row" ? "row" : p.title)), ["LoRA adapters: requests, tokens, latency by base model", tpot.title, perRequestPanel.title, "row"], "after the LoRA panel, before the SLO row");
    assert.deepEqual([tpot.gridPos, perRequestPanel.gridPos], [{ x: 0, y: tpot.gridPos.y, w: 12, h: 8 }, { x: 12, y: tpot.gridPos.y, w: 12, h: 8 }], "side by side");
    assert.deepEqual(tpot.targets!.map((t) => t.legendFormat), ["P50", "P95", "P99"].map((q) => `{{model}} TPOT ${q}`));
    assert.deepEqual(perRequestPanel.targets!.map((t) => t.legendFormat), ["{{model}} prompt tokens computed per request", "{{model}} preemptions per request"]);
    const queries = [tpot, perRequestPanel].flatMap((p) =>
      p.targets!.map((t) => {
        const expr = interpolate(t.expr, undefined);
        const expected = expectedOf(expr, perRequest.points, perRequest.end);
        assert.deepEqual(expected.map((e) => e.labels), [`{model=${JSON.stringify(LLAMA)}}`], `${t.legendFormat}: one series`);
        return { expr, expected };
      }),
    );
    // The join's own figures first, so the check cannot pass on two wrong answers that agree.
    const values = queries.map((q) => q.expected[0]!.value);
    const figures = [0.025 + (0.025 * (25 - 15)) / (40 - 15), 0.05 + (0.025 * (47.5 - 40)) / (48 - 40), 0.075 + (0.025 * (49.5 - 48)) / (50 - 48), 14000 / 50, 4 / 50];
    figures.forEach((f, k) => assert.ok(Math.abs(values[k]! - f) < 1e-9, `${queries[k]!.expr}: ${values[k]} against ${f}`));
    await everyDeployment(queries, perRequest);
  });

  it("the check can fail: a query on vLLM's own label (model_name), not the join's (model), returns nothing", async () => {
    const t = panel(/^Engine SLO signals/).targets![1]!;
    const expr = interpolate(t.expr, LLAMA);
    const wrong = expr.replace("model=~", "model_name=~");
    await assert.rejects(promtool(checkCase([{ expr: wrong, expected: expectedOf(expr, points, end) }])), /FAILED/);
  });

  it("the check can fail: a query that reads both paths by name, without `or`, counts a series twice where both are stored", async () => {
    const t = panel(/^KV cache, preemptions and queue$/).targets!.find((x) => x.expr.includes(C.MODEL_REQUESTS_WAITING))!;
    const expected = expectedOf(interpolate(t.expr, undefined), points, end);
    assert.ok(expected.every((e) => e.value > 0), "requests waiting, so a double count shows");
    const summed = `sum by (model) ({__name__=~"${C.MODEL_REQUESTS_WAITING}|${ruleFor(C.MODEL_REQUESTS_WAITING)}"})`;
    assert.match(await promtool(checkCase([{ expr: summed, expected }], "pipeline")), /SUCCESS/);
    await assert.rejects(promtool(checkCase([{ expr: summed, expected }], "both")), /FAILED/);
  });
});
