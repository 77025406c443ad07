// The Grafana panel "LoRA adapters: requests, tokens, latency by base model" under Prometheus's own
// query engine (Debian's promtool 2.42, `test rules` with promql_expr_test and no rules): two pods
// serving meta-llama/Llama-3.1-8B-Instruct with two adapters (test/support/lora-scrapes.ts) go
// through the real join, its output is the input series (what remote write stores), and each query,
// its variables interpolated as Grafana's Prometheus data source does ($__rate_interval as the
// rules' 5m), returns one series per adapter with the figures the recording rules record.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { inputSeries, promLabels, runScrapes } from "../support/promtool-case.js";
import { EVAL_SEC, expectedPerAdapter, LLAMA, loraScrapes, type AdapterFigures } from "../support/lora-scrapes.js";
import { ISTIO_DIR } from "./support.js";
import { runPromtoolTest } from "./promtool-run.js";

interface Panel { id: number; type: string; title: string; targets?: { refId: string; expr: string; legendFormat?: string }[] }
const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as { panels: Panel[]; templating: { list: { name: string; allValue?: string }[] } };
const panel = dashboard.panels.find((p) => p.title === "LoRA adapters: requests, tokens, latency by base model");
const allValue = (name: string): string => dashboard.templating.list.find((v) => v.name === name)!.allValue!;
/** Grafana's interpolation: All as the variable's allValue, a chosen value regex-escaped. */
const interpolate = (expr: string, model?: string): string =>
  expr.replaceAll("$namespace", allValue("namespace")).replaceAll("$route", allValue("route")).replaceAll("$model", model === undefined ? allValue("model") : model.replace(/[\\^$*+?.()|[\]{}]/g, "\\\\$&")).replaceAll("$__rate_interval", "5m");

let dir: string;
let input: { series: string; values: string }[];
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-lora-panels-"));
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: [] }));
  const { scrapes, adapterParents } = loraScrapes();
  const stored = new Map<string, Map<number, string>>();
  for (const p of runScrapes(scrapes, { adapterParents }).joined) {
    const key = `${p.name}${promLabels(p.labels)}`;
    if (!stored.has(key)) stored.set(key, new Map());
    stored.get(key)!.set(p.atMs / 1000, String(p.value));
  }
  input = inputSeries(stored, EVAL_SEC);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs one promtool case; rejects with its output when a query's result differs. */
async function promtool(queries: { expr: string; expected: { labels: string; value: number }[] }[]): Promise<string> {
  const test = { interval: "1s", input_series: input, promql_expr_test: queries.map((q) => ({ expr: q.expr, eval_time: `${EVAL_SEC}s`, exp_samples: q.expected })) };
  return runPromtoolTest(dir, test);
}

const FIGURES: (keyof AdapterFigures)[] = ["requests", "inputTokens", "outputTokens", "ttftP99", "durationP99"];
/** Each query of the panel with one series per adapter, the figures of test/support/lora-scrapes.ts. */
const perAdapter = (model?: string): { expr: string; expected: { labels: string; value: number }[] }[] =>
  panel!.targets!.map((t, i) => ({ expr: interpolate(t.expr, model), expected: [...expectedPerAdapter()].map(([adapter, e]) => ({ labels: `{base_model="${LLAMA}",model="${adapter}"}`, value: e[FIGURES[i]!] })) }));

describe("Grafana panel: LoRA adapters' requests, tokens and latency by base model (promtool, Prometheus's query engine)", () => {
  it("sits beside the LoRA running/waiting panel: requests, input and output tokens per second, P99 TTFT and duration, each by base_model and model", () => {
    assert.ok(panel, "the panel");
    const i = dashboard.panels.indexOf(panel);
    assert.deepEqual(dashboard.panels.slice(i - 2, i).map((p) => p.title), ["LoRA adapters: running and waiting", "Why requests wait, and the prefix cache per tier"]);
    assert.deepEqual(panel.targets!.map((t) => t.legendFormat), ["requests/s", "input tokens/s", "output tokens/s", "TTFT P99", "duration P99"].map((s) => `{{model}} ({{base_model}}) ${s}`));
  });

  it("two adapters sharing a base model, one on two pods: one series each with the rules' figures; the base model's own requests and idle adapters give none", async () => {
    const queries = perAdapter();
    assert.deepEqual(queries.map((q) => q.expected.map((e) => Math.round(e.value * 1e6) / 1e6)), [[3, 1], [768, 512], [96, 64], [2320, 490], [2455, 990]]);
    assert.match(await promtool(queries), /SUCCESS/);
  });

  it("the model variable selects by base model: the base model's adapters for it, nothing for another", async () => {
    assert.match(await promtool(perAdapter(LLAMA)), /SUCCESS/);
    assert.match(await promtool(perAdapter("Qwen/Qwen2.5-7B-Instruct").map((q) => ({ ...q, expected: [] }))), /SUCCESS/);
  });

  it("the check can fail: one adapter's figure off by a request a step", async () => {
    const queries = perAdapter();
    queries[0]!.expected[1]!.value += 1 / 64;
    await assert.rejects(promtool(queries), /FAILED/);
  });
});
