// The recording rules and the pipeline can feed one Prometheus: no rule records a name the
// pipeline writes (a rule's sample at evaluation time and the pipeline's older sample of the same
// series make Prometheus answer the pipeline's push with 400 out-of-order and drop the batch), every
// record is Prometheus's level:metric:operations, and the table between the two paths
// (test/support/rule-names.ts) is what the rule files, the join's catalogue and the consumers say.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as joinCatalogue from "../../control-plane/src/join/catalogue.js";
import { RULE_FOR_SERIES, RULE_NAME_SHAPE, SERIES_FOR_RULE } from "../support/rule-names.js";
import { controlPlaneSeries, filterAndPipelineSeries, merge, recordRules, type SeriesCatalogue } from "./produced-series.js";
import { ISTIO_DIR, manifests, one } from "./support.js";

const rules = recordRules();
const joinNames: ReadonlySet<string> = new Set<string>(Object.values(joinCatalogue));
let pipelineWrites: SeriesCatalogue;

before(async () => {
  const plugin = one(manifests(), "WasmPlugin", "tokentrace");
  const operator = one(manifests(), "IstioOperator", "tokentrace");
  // Everything the pipeline ships: the sidecars' series it forwards, what the join derives, the
  // model servers' and dcgm-exporter's series it forwards, and the control plane's own /metrics.
  const { sidecar, joined } = await filterAndPipelineSeries(plugin.spec.pluginConfig, operator.spec.meshConfig.defaultConfig.extraStatTags);
  pipelineWrites = merge(sidecar, joined, controlPlaneSeries());
});

/** Word-bounded occurrences of a metric name in PromQL text (`:` is part of a name). */
const occurrences = (text: string, name: string): number => text.split(new RegExp(`(?<![\\w:])${name.replace(/[:]/g, "\\:")}(?![\\w:])`)).length - 1;

/** Every PromQL text a consumer runs: dashboard queries and variables, alert and record expressions, summary query templates. */
function consumerQueries(): { where: string; text: string }[] {
  const out: { where: string; text: string }[] = [];
  const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as { panels: { title: string; targets?: { refId: string; expr: string }[] }[]; templating: { list: { name: string; definition?: string }[] } };
  for (const p of dashboard.panels) for (const t of p.targets ?? []) out.push({ where: `dashboard ${p.title} ${t.refId}`, text: t.expr });
  for (const v of dashboard.templating.list) if (v.definition) out.push({ where: `dashboard variable ${v.name}`, text: v.definition });
  for (const name of ["tokentrace", "tokentrace-gpu-health"]) {
    for (const g of one(manifests(), "PrometheusRule", name).spec.groups as { rules: { alert?: string; record?: string; expr: string; annotations?: Record<string, string> }[] }[]) {
      for (const r of g.rules) {
        out.push({ where: `${name} ${r.alert ?? r.record}`, text: r.expr });
        for (const m of (r.annotations?.summary ?? "").matchAll(/`([^`]*)`/g)) out.push({ where: `${name} ${r.alert} summary`, text: m[1]! });
      }
    }
  }
  return out;
}

describe("recording rule names (level:metric:operations, never a name the pipeline writes)", () => {
  it("reads the record rules of every rule file", () => {
    assert.deepEqual([...new Set(rules.map((r) => r.file))], ["gpu-health-rules.yaml", "prometheus-rules.yaml", "recording-rules.yaml"]);
    assert.ok(rules.length >= 60, `${rules.length} record rules`);
  });

  it("every record is level:metric:operations", () => {
    const bad = [...new Set(rules.filter((r) => !RULE_NAME_SHAPE.test(r.record)).map((r) => `${r.file}: ${r.record}`))];
    assert.deepEqual(bad, []);
  });

  it("no record is a series the pipeline writes, nor a name in the join's catalogue", () => {
    assert.ok(pipelineWrites.has("tokentrace_route_latency_seconds") && pipelineWrites.has("vllm:num_requests_waiting") && pipelineWrites.has("DCGM_FI_DEV_GPU_UTIL"), "the catalogue holds derived and forwarded series");
    const colliding = [...new Set(rules.filter((r) => pipelineWrites.has(r.record) || joinNames.has(r.record)).map((r) => `${r.file}: ${r.record}`))];
    assert.deepEqual(colliding, []);
  });

  it("the table maps join series to records of recording-rules.yaml, one to one", () => {
    const recorded = new Set(rules.filter((r) => r.file === "recording-rules.yaml").map((r) => r.record));
    for (const [series, rule] of RULE_FOR_SERIES) {
      assert.ok(joinNames.has(series), `${series} is in the join's catalogue`);
      assert.ok(recorded.has(rule), `${rule} is recorded by recording-rules.yaml`);
      assert.match(rule, RULE_NAME_SHAPE);
    }
    assert.equal(SERIES_FOR_RULE.size, RULE_FOR_SERIES.size, "no two series share a rule");
  });

  it("consumers read a rule output only through the table, and a pipeline series the rules compute always together with its rule", () => {
    const intermediates = new Set(rules.filter((r) => r.file === "recording-rules.yaml" && !SERIES_FOR_RULE.has(r.record)).map((r) => r.record));
    const problems: string[] = [];
    for (const { where, text } of consumerQueries()) {
      for (const name of intermediates) if (occurrences(text, name) > 0) problems.push(`${where}: reads ${name}, which has no pipeline twin`);
      for (const [series, rule] of RULE_FOR_SERIES) {
        const [s, r] = [occurrences(text, series), occurrences(text, rule)];
        if (s !== r) problems.push(`${where}: ${series} ${s} times, ${rule} ${r} times`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("the check catches a query that reads only the pipeline's name", () => {
    assert.equal(occurrences('avg by (model) (tokentrace_model_kv_cache_usage_ratio{model="m"})', joinCatalogue.MODEL_KV_CACHE_USAGE), 1);
    assert.equal(occurrences("namespace_pod_model:tokentrace_model_kv_cache_usage_ratio:avg", joinCatalogue.MODEL_KV_CACHE_USAGE), 0, "a rule name holding the series name is not the series");
  });
});
