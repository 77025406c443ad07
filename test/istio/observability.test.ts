// istio/observability/: the Grafana dashboard and the PrometheusRule alerts. Valid structure, and
// every PromQL expression names only series the project produces, with labels those series carry
// (the catalogue comes from running the filter, the join and the control plane's registries).
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import * as joinCatalogue from "../../control-plane/src/join/catalogue.js";
import { FILTER_STAT_TAGS, WAYPOINT_STAT_TAGS } from "../filter/catalogue.js";
import { checkExpression } from "./promql.js";
import { controlPlaneSeries, filterAndPipelineSeries, merge, recordedSeries, recordRules as ruleFileRecords, type SeriesCatalogue } from "./produced-series.js";
import { ISTIO_DIR, REPO, manifests, one } from "./support.js";

interface Target { refId: string; expr: string; legendFormat?: string; datasource?: { uid: string } }
interface Panel { id: number; type: string; title: string; gridPos: { x: number; y: number; w: number; h: number }; datasource?: { type: string; uid: string }; targets?: Target[]; fieldConfig?: { defaults: { unit?: string } } }
interface Dashboard { uid: string; title: string; schemaVersion: number; panels: Panel[]; templating: { list: Array<{ name: string; type: string; query: unknown; definition?: string }> } }

const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as Dashboard;
const rules = one(manifests(), "PrometheusRule", "tokentrace");
// GPU health, starvation and stragglers (gpu-health-rules.yaml), over the same produced series.
const gpuRules = one(manifests(), "PrometheusRule", "tokentrace-gpu-health");
const plugin = one(manifests(), "WasmPlugin", "tokentrace");
const operator = one(manifests(), "IstioOperator", "tokentrace");
const queryPanels = dashboard.panels.filter((p) => p.type !== "row");
const ruleEntries = [rules, gpuRules].flatMap((r) => r.spec.groups as Array<{ name: string; rules: Array<{ alert?: string; record?: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }> }>).flatMap((g) => g.rules);
const allRules = ruleEntries.filter((r): r is typeof r & { alert: string } => r.alert !== undefined);
// Series the alert file records itself (its threshold parameters): what the alerts may also name.
const recordRules = ruleEntries.filter((r): r is typeof r & { record: string } => r.record !== undefined);

let sidecar: SeriesCatalogue;
let joined: SeriesCatalogue;
let produced: SeriesCatalogue;

before(async () => {
  // The filter runs with the shipped default pluginConfig and the mesh's extraStatTags.
  ({ sidecar, joined } = await filterAndPipelineSeries(plugin.spec.pluginConfig, operator.spec.meshConfig.defaultConfig.extraStatTags));
  produced = merge(sidecar, joined, controlPlaneSeries());
  // What every rule file records (the alert files' parameters, the recording rules' outputs):
  // a query that reads `(pipeline or rule)` must name both correctly.
  produced = merge(produced, recordedSeries(produced));
});

describe("the produced-series catalogue the checks rely on (filter.wasm under the emulated Envoy host, emulated dcgm-exporter and vLLM scrapes)", () => {
  it("holds every series filter/telemetry/metrics.ts defines, histograms with Envoy's _bucket/_sum/_count", () => {
    const source = readFileSync(join(REPO, "filter/telemetry/metrics.ts"), "utf8");
    const names = [...source.matchAll(/^export const \w+ = "(tokentrace_\w+)";$/gm)].map((m) => m[1]!);
    assert.ok(names.length >= 19, `read ${names.length} names from filter/telemetry/metrics.ts`);
    for (const name of names) {
      const histogram = /_(ms|us)$/.test(name);
      for (const s of histogram ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name]) assert.ok(sidecar.has(s), `${s} is exported by the sidecar`);
    }
    assert.deepEqual([...sidecar.get("tokentrace_llm_ttft_ms_bucket")!].sort(), ["input_length", "le", "model", "route"]);
    assert.deepEqual([...sidecar.get("tokentrace_llm_decode_ms_bucket")!].sort(), ["le", "model", "output_length", "route"]);
    assert.deepEqual([...sidecar.get("tokentrace_llm_requests_total")!].sort(), ["error_type", "finish_reason", "model", "route", "status_class", "stream"]);
    const tags = new Set([...sidecar.values()].flatMap((s) => [...s]));
    tags.delete("le");
    assert.deepEqual([...tags].sort(), FILTER_STAT_TAGS.filter((t) => !WAYPOINT_STAT_TAGS.includes(t)).sort());
  });

  it("holds every derived series join/catalogue.ts names, with the pod identity on the filter's series", () => {
    for (const [constant, name] of Object.entries(joinCatalogue)) {
      // POD_GPU_INFO is named in the catalogue but the joiner does not emit it (yet), so nothing here may use it.
      if (typeof name !== "string" || constant === "POD_GPU_INFO") continue;
      // A histogram family (the GenAI ones) comes out as its _bucket, _sum and _count series.
      const out = joined.has(name) || ["_bucket", "_sum", "_count"].every((suffix) => joined.has(name + suffix));
      assert.ok(out, `${constant} = ${name} came out of the join`);
    }
    for (const l of ["namespace", "pod", "gpu", "gpu_model"]) assert.ok(joined.get("tokentrace_llm_ttft_ms_bucket")!.has(l), l);
    assert.deepEqual([...joined.get(joinCatalogue.ROUTE_LATENCY)!].sort(), ["model", "namespace", "phase", "pod", "route"]);
  });
});

describe("Grafana dashboard (queries checked against the emulated-stack catalogue)", () => {
  it("is a dashboard with a uid, a schema version, a Prometheus datasource variable and namespace/route variables", () => {
    assert.match(dashboard.uid, /^[a-z0-9-]{1,40}$/);
    assert.ok(dashboard.title.length > 0);
    assert.ok(Number.isInteger(dashboard.schemaVersion) && dashboard.schemaVersion >= 36);
    const vars = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
    assert.equal(vars.datasource?.type, "datasource");
    assert.equal(vars.datasource?.query, "prometheus");
    assert.equal(vars.namespace?.type, "query");
    assert.equal(vars.route?.type, "query");
  });

  it("panels have unique ids, sit on the 24-column grid without overlapping, and query the datasource variable", () => {
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    const cells = new Map<string, number>();
    for (const p of dashboard.panels) {
      const { x, y, w, h } = p.gridPos;
      assert.ok([x, y, w, h].every(Number.isInteger) && x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24, `${p.title} gridPos`);
      for (let i = x; i < x + w; i++) for (let j = y; j < y + h; j++) {
        const key = `${i},${j}`;
        assert.equal(cells.get(key), undefined, `${p.title} overlaps panel ${cells.get(key)}`);
        cells.set(key, p.id);
      }
    }
    for (const p of queryPanels) {
      assert.deepEqual(p.datasource, { type: "prometheus", uid: "${datasource}" }, p.title);
      assert.ok(p.targets && p.targets.length > 0, `${p.title} has queries`);
      const refIds = p.targets.map((t) => t.refId);
      assert.equal(new Set(refIds).size, refIds.length, `${p.title} refIds`);
      // Grafana unit ids (its valueFormats): a typo renders as a plain number.
      assert.ok(["ms", "µs", "s", "percent", "percentunit", "watt", "short", "reqps", "cps", "bytes", "celsius"].includes(p.fieldConfig?.defaults.unit ?? ""), `${p.title} unit ${p.fieldConfig?.defaults.unit}`);
    }
  });

  it("every query and variable names only produced series and labels, and legends use labels the result keeps", () => {
    const problems: string[] = [];
    for (const p of queryPanels) {
      for (const t of p.targets!) {
        const r = checkExpression(t.expr, produced);
        problems.push(...r.problems.map((x) => `${p.title} ${t.refId}: ${x}`));
        for (const m of (t.legendFormat ?? "").matchAll(/\{\{\s*(\w+)\s*\}\}/g)) if (!r.outputLabels.has(m[1]!)) problems.push(`${p.title} ${t.refId}: legend uses ${m[1]}, which the result does not carry`);
      }
    }
    for (const v of dashboard.templating.list.filter((x) => x.type === "query")) {
      const m = /^label_values\((.+), (\w+)\)$/.exec(v.definition ?? "");
      if (!m) {
        problems.push(`variable ${v.name}: not a label_values(selector, label) query`);
        continue;
      }
      // label_values takes a selector, not an expression: `(pipeline or rule)` is written
      // {__name__=~"pipeline|rule", ...}, and each alternative is checked as its own selector.
      const either = /^\{__name__=~"([^"]+)", (.*)\}$/.exec(m[1]!);
      for (const selector of either ? either[1]!.split("|").map((name) => `${name}{${either[2]}}`) : [m[1]!]) {
        const r = checkExpression(selector, produced);
        problems.push(...r.problems.map((x) => `variable ${v.name}: ${x}`));
        if (!r.outputLabels.has(m[2]!)) problems.push(`variable ${v.name}: ${m[2]} is not a label of ${selector}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("has an SLO row whose queries read the SLO records (every query above is checked against them; test/istio/slo-panels.test.ts runs them)", () => {
    const start = dashboard.panels.findIndex((p) => p.type === "row" && /^SLO\b/.test(p.title));
    assert.ok(start >= 0, "an SLO row");
    const end = dashboard.panels.findIndex((p, i) => i > start && p.type === "row");
    const row = dashboard.panels.slice(start + 1, end);
    const records = new Set(recordRules.map((r) => r.record));
    const read = row.flatMap((p) => p.targets!.flatMap((t) => checkExpression(t.expr, produced).series));
    assert.deepEqual(row.map((p) => p.title), ["TTFT goodput", "Error goodput", "Burn rate", "30-day error budget left", "Bad requests by status class"]);
    assert.equal(read.filter((s) => records.has(s)).length, 18, "every query but the status classes' reads a record of the rule file");
  });

  it("shows TTFT, decode, TPOT and duration P50/P95/P99 per route from the filter histograms", () => {
    for (const metric of ["tokentrace_llm_ttft_ms", "tokentrace_llm_decode_ms", "tokentrace_llm_tpot_us", "tokentrace_llm_duration_ms"]) {
      const panel = queryPanels.find((p) => p.targets!.some((t) => t.expr.includes(`${metric}_bucket`)));
      assert.ok(panel, metric);
      const quantiles = panel.targets!.map((t) => /histogram_quantile\(([0-9.]+), sum by \(le, route\)/.exec(t.expr)?.[1]);
      assert.deepEqual(quantiles, ["0.5", "0.95", "0.99"], metric);
    }
  });

  it("has a Latency by length class row: P99 of TTFT by input_length, of decode and duration by output_length, each saying it needs its tag in extraStatTags", () => {
    const start = dashboard.panels.findIndex((p) => p.type === "row" && /^Latency by length class\b/.test(p.title));
    assert.ok(start >= 0, "a Latency by length class row");
    const end = dashboard.panels.findIndex((p, i) => i > start && p.type === "row");
    const row = dashboard.panels.slice(start + 1, end) as (Panel & { description: string })[];
    const shape = row.map((p) => [p.type, p.fieldConfig?.defaults.unit, p.targets!.map((t) => [t.expr, t.legendFormat])]);
    const p99 = (metric: string, tag: string): [string, string][] => [[`histogram_quantile(0.99, sum by (le, route, model, ${tag}) (rate(${metric}_bucket{namespace=~"$namespace", route=~"$route"}[$__rate_interval])))`, `{{route}} {{model}} {{${tag}}}`]];
    assert.deepEqual(shape, [
      ["timeseries", "ms", p99("tokentrace_llm_ttft_ms", "input_length")],
      ["timeseries", "ms", p99("tokentrace_llm_decode_ms", "output_length")],
      ["timeseries", "ms", p99("tokentrace_llm_duration_ms", "output_length")],
    ]);
    // Each description names the rule that records the same P99 per (namespace, route, model).
    const recorded = ruleFileRecords().filter((r) => r.file === "recording-rules.yaml");
    for (const [i, tag] of ["input_length", "output_length", "output_length"].entries()) {
      const p = row[i]!;
      assert.match(p.description, new RegExp(`Needs the filter's ${tag} tag in Istio's extraStatTags`), p.title);
      const metric = /\((\w+)_bucket/.exec(p.targets![0]!.expr)![1]!;
      const record = `namespace_route_model_${tag}:${metric}:histogram_quantile_rate5m`;
      assert.ok(p.description.includes(record), `${p.title} names ${record}`);
      assert.deepEqual(recorded.filter((r) => r.record === record).map((r) => [r.expr, r.labels]), [[`histogram_quantile(0.99, sum by (namespace, route, model, ${tag}, le) (rate(${metric}_bucket[5m]))) >= 0`, { quantile: "0.99" }]]);
    }
  });

  it("puts GPU utilisation and power in the row of the latency attribution, and shows tokens/s, sampled vs requests and errors by error", () => {
    const find = (re: RegExp): Panel => {
      const p = queryPanels.find((x) => x.targets!.some((t) => re.test(t.expr)));
      assert.ok(p, String(re));
      return p;
    };
    const latency = find(/tokentrace_route_latency_seconds/);
    assert.equal(find(/tokentrace_route_gpu_utilization_percent/).gridPos.y, latency.gridPos.y);
    assert.equal(find(/tokentrace_pod_gpu_power_watts/).gridPos.y, latency.gridPos.y);
    assert.match(find(/rate\(tokentrace_llm_output_tokens_total/).title, /Tokens per second/);
    const sampled = find(/tokentrace_traces_sampled_total/);
    assert.ok(sampled.targets!.some((t) => /rate\(tokentrace_requests_total/.test(t.expr)), "sampled beside requests");
    assert.ok(find(/tokentrace_filter_errors_total/).targets!.some((t) => /sum by \(error\)/.test(t.expr)));
  });
});

describe("PrometheusRule alerts (queries checked against the emulated-stack catalogue)", () => {
  it("every alert has a unique CamelCase name, a severity, a summary and a description; durations are Prometheus durations", () => {
    const names = allRules.map((r) => r.alert);
    assert.equal(new Set(names).size, names.length);
    for (const r of allRules) {
      assert.match(r.alert, /^Tokentrace[A-Z][A-Za-z0-9]+$/);
      assert.ok(["info", "warning", "critical"].includes(r.labels.severity!), `${r.alert} severity`);
      assert.ok(r.annotations.summary && r.annotations.description, `${r.alert} annotations`);
      if (r.for !== undefined) assert.match(r.for, /^[0-9]+[smh]$/);
    }
  });

  it("every expression names only produced series and labels, and annotations use labels the alert keeps", () => {
    const problems: string[] = [];
    for (const r of recordRules) problems.push(...checkExpression(r.expr, produced).problems.map((x) => `record ${r.record}: ${x}`));
    for (const r of allRules) {
      const result = checkExpression(r.expr, produced);
      problems.push(...result.problems.map((x) => `${r.alert}: ${x}`));
      for (const text of Object.values(r.annotations)) {
        for (const m of text.matchAll(/\$labels\.(\w+)/g)) if (!result.outputLabels.has(m[1]!)) problems.push(`${r.alert}: annotation uses $labels.${m[1]}, which the alert does not carry`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("the checker catches an unknown series, a label a series lacks, and an annotation label the alert drops", () => {
    assert.deepEqual(checkExpression("rate(tokentrace_llm_ttft_seconds_bucket[5m])", produced).problems, ["tokentrace_llm_ttft_seconds_bucket is not a series the project produces"]);
    assert.deepEqual(checkExpression('tokentrace_route_latency_seconds{gpu="0"}', produced).problems, ["tokentrace_route_latency_seconds has no label gpu"]);
    assert.equal(checkExpression("sum by (namespace) (rate(tokentrace_requests_total[5m]))", produced).outputLabels.has("route"), false);
    // Recorded names are produced only as the rule files spell them.
    assert.deepEqual(checkExpression('tokentrace_model_requests_running{model="m"} or namespace_pod_model:tokentrace_model_requests_running:sum{model="m"}', produced).problems, []);
    assert.deepEqual(checkExpression("tokentrace_model_requests_running or namespace_pod_model:tokentrace_model_requests_running:summ", produced).problems, ["namespace_pod_model:tokentrace_model_requests_running:summ is not a series the project produces"]);
    assert.deepEqual(checkExpression('namespace_pod_model:tokentrace_model_requests_running:sum{route="chat"}', produced).problems, ["namespace_pod_model:tokentrace_model_requests_running:sum has no label route"]);
    // The SLO row reads the SLO records by name: one the rule file does not write, or a label its rule drops, is caught.
    const budget = checkExpression('namespace_route_model:tokentrace_slo_ttft_error_budget_remaining:ratio_rate30d{route=~"chat"}', produced);
    assert.deepEqual([budget.problems, [...budget.outputLabels].sort()], [[], ["model", "namespace", "route"]]);
    assert.deepEqual(checkExpression('namespace_route_model:tokentrace_slo_ttft_goodput:ratio_rate1w{route=~"chat"}', produced).problems, ["namespace_route_model:tokentrace_slo_ttft_goodput:ratio_rate1w is not a series the project produces"]);
    assert.deepEqual(checkExpression('namespace_route:tokentrace_slo_errors_burn_rate:rate1h{model=~"m"}', produced).problems, ["namespace_route:tokentrace_slo_errors_burn_rate:rate1h has no label model"]);
  });

  it("covers queueing-not-compute, filter errors, span export, remote-write queue growth and scrape targets down", () => {
    const exprOf = (alert: string): string => allRules.find((r) => r.alert === alert)?.expr ?? "";
    const queueing = exprOf("TokentraceTTFTHighGPUIdle");
    assert.match(queueing, /histogram_quantile\(0\.95, sum by \(namespace, route, le\) \(rate\(tokentrace_llm_ttft_ms_bucket\[5m\]\)\)\) > \d+/);
    assert.match(queueing, /and on \(namespace, route\)\s+avg by \(namespace, route\) \(tokentrace_route_gpu_utilization_percent or namespace_pod_route_model:tokentrace_gpu_utilization_percent:avg\) < \d+/);
    assert.match(exprOf("TokentraceFilterErrorRateHigh"), /tokentrace_filter_errors_total/);
    assert.match(exprOf("TokentraceSpanExportFailing"), /tokentrace_span_export_failures_total/);
    assert.match(exprOf("TokentraceRemoteWriteQueueGrowing"), /deriv\(tokentrace_remote_write_queue_bytes/);
    assert.match(exprOf("TokentraceScrapeTargetDown"), /^up\{job=~"envoy\|dcgm\|vllm"\} == 0$/);
  });
});

describe("point fixes checked with the real rule engine and the pipeline's own names", () => {
  it("TokentraceRemoteWriteQueueGrowing reports the queue's size as $value (promtool test rules, real Prometheus rule engine)", () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-rules-"));
    try {
      writeFileSync(join(dir, "rules.yaml"), stringify({ groups: rules.spec.groups }));
      // 70 MiB growing by 1 MiB a minute: at 40 m the queue holds 110 MiB, growing at ~17 KiB/s.
      const mib = 1024 * 1024;
      writeFileSync(join(dir, "test.yaml"), stringify({
        rule_files: ["rules.yaml"],
        evaluation_interval: "1m",
        tests: [{
          interval: "1m",
          input_series: [{ series: 'tokentrace_remote_write_queue_bytes{target="mimir"}', values: `${70 * mib}+${mib}x60` }],
          alert_rule_test: [{
            eval_time: "40m",
            alertname: "TokentraceRemoteWriteQueueGrowing",
            exp_alerts: [{
              exp_labels: { severity: "warning", target: "mimir" },
              exp_annotations: {
                summary: "Remote-write queue for mimir keeps growing (110MiB)",
                description: allRules.find((r) => r.alert === "TokentraceRemoteWriteQueueGrowing")!.annotations.description!,
              },
            }],
          }],
        }],
      }));
      const result = spawnSync("promtool", ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8" });
      assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the targets-up panel counts only the jobs the control plane's scrapes write (its target kinds), not every Prometheus job", () => {
    const source = readFileSync(join(REPO, "control-plane/src/scrape/targets.ts"), "utf8");
    const kinds = /export type TargetKind = ([^;]+);/.exec(source)![1]!.split("|").map((k) => k.trim().replace(/"/g, ""));
    const panel = queryPanels.find((p) => p.title === "Scrape targets up")!;
    const selectors = panel.targets!.flatMap((t) => [...t.expr.matchAll(/\bup\{([^}]*)\}/g)].map((m) => m[1]!));
    assert.equal(selectors.length, 2);
    for (const s of selectors) assert.match(s, new RegExp(`(^|, )job=~"${kinds.join("\\|")}"(,|$)`));
  });

  it("the PrometheusRule carries the label kube-prometheus-stack's default ruleSelector matches (release), and says how to change it", () => {
    assert.equal(rules.metadata.labels?.release, "kube-prometheus-stack");
    assert.equal(gpuRules.metadata.labels?.release, "kube-prometheus-stack");
    assert.match(readFileSync(join(ISTIO_DIR, "observability/prometheus-rules.yaml"), "utf8"), /kubectl -n tokentrace-system label prometheusrule tokentrace release=<release> --overwrite/);
  });
});
