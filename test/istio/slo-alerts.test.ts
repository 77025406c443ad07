// The three-signal SLO alert family of istio/observability/prometheus-rules.yaml under Prometheus's
// own rule engine (Debian's promtool 2.42, `test rules`): every combination of the three signals
// (GPU utilisation above, prefix-cache hit ratio below, speculative acceptance below their
// thresholds), each a model of its own, fires exactly the alert it should, or none; a model without
// speculative decoding; values on the thresholds; the `for` durations; a changed threshold
// parameter; and the annotations as Prometheus renders them (with the other signals' values).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { ruleFor } from "../support/rule-names.js";
import { ISTIO_DIR } from "./support.js";

const FILE = join(ISTIO_DIR, "observability/prometheus-rules.yaml");
interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
const groups = (parse(readFileSync(FILE, "utf8")) as { spec: { groups: { name: string; rules: Rule[] }[] } }).spec.groups;
const family = groups.find((g) => g.name === "tokentrace.engine-slo")!.rules;

const ALL3 = "TokentraceGPUBusyKVCacheMissSpecRejected";
const GPU_CACHE = "TokentraceGPUBusyKVCacheMiss";
const GPU_SPEC = "TokentraceGPUBusySpecRejected";
const CACHE_SPEC = "TokentraceKVCacheMissSpecRejected";

/** Each model's three signals: true = past its threshold (GPU 92% > 85, hits 0.8 < 0.92, acceptance 0.55 < 0.80). */
const VALUES = { gpu: [60, 92], hit: [0.97, 0.8], acc: [0.9, 0.55] } as const;
const combos: { model: string; gpu: number; hit: number; acc?: number; fires: string | null }[] = [];
for (const a of [0, 1]) for (const b of [0, 1]) for (const c of [0, 1]) {
  const n = a + b + c;
  const fires = n === 3 ? ALL3 : n < 2 ? null : !c ? GPU_CACHE : !b ? GPU_SPEC : CACHE_SPEC;
  combos.push({ model: `m-${"gpu".repeat(a)}${a && b ? "-" : ""}${"hit".repeat(b)}${(a || b) && c ? "-" : ""}${"spec".repeat(c) || (a || b ? "" : "none")}`, gpu: VALUES.gpu[a]!, hit: VALUES.hit[b]!, acc: VALUES.acc[c]!, fires });
}
// No speculative decoding on this model: the acceptance series is absent.
combos.push({ model: "m-no-spec-decoding", gpu: 92, hit: 0.8, fires: GPU_CACHE });
// Exactly on the thresholds: not past them.
combos.push({ model: "m-on-thresholds", gpu: 85, hit: 0.92, acc: 0.8, fires: null });

const labelsOf = (model: string): string => `{model="${model}",namespace="llm",pod="vllm-0"}`;

/** %.4g as Go's fmt prints it, for the values used here. */
const g4 = (v: number): string => String(Number(v.toPrecision(4)));
const FORMAT: Record<string, (v: number) => string> = { humanize: g4, humanizePercentage: (v) => `${g4(v * 100)}%` };

/** An annotation template rendered for one model, the way the rule's templates read its series. */
function render(template: string, c: (typeof combos)[number], value: number): string {
  const series: Record<string, number | undefined> = { tokentrace_model_gpu_utilization_percent: c.gpu, tokentrace_model_prefix_cache_hit_ratio: c.hit, tokentrace_model_spec_decode_acceptance_ratio: c.acc };
  return template
    .replace(/\{\{ with printf `\(?(\w+)\{[^`]*` \$labels\.namespace \$labels\.pod \$labels\.model \| query \}\}\{\{ \. \| first \| value \| (\w+) \}\}\{\{ end \}\}/g, (_m, name: string, fn: string) => FORMAT[fn]!(series[name]!))
    .replace(/\{\{ \$value \| (\w+) \}\}/g, (_m, fn: string) => FORMAT[fn]!(value))
    .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, l: string) => ({ model: c.model, namespace: "llm", pod: "vllm-0" })[l]!);
}

/** The three signals of every combination, as the pipeline writes them or (`rules`) under the recording rules' names. */
function input(path: "pipeline" | "rules" = "pipeline"): { series: string; values: string }[] {
  const out: { series: string; values: string }[] = [];
  const name = (series: string): string => (path === "rules" ? ruleFor(series) : series);
  for (const c of combos) {
    out.push({ series: `${name("tokentrace_model_gpu_utilization_percent")}${labelsOf(c.model)}`, values: `${c.gpu}x60` });
    out.push({ series: `${name("tokentrace_model_prefix_cache_hit_ratio")}${labelsOf(c.model)}`, values: `${c.hit}x60` });
    if (c.acc !== undefined) out.push({ series: `${name("tokentrace_model_spec_decode_acceptance_ratio")}${labelsOf(c.model)}`, values: `${c.acc}x60` });
  }
  return out;
}

/** The alerts expected at `minute` (those whose `for` has elapsed), with labels and rendered annotations. */
function expected(alert: string, minute: number): { exp_labels: Record<string, string>; exp_annotations: Record<string, string> }[] {
  const rule = family.find((r) => r.alert === alert)!;
  const forMinutes = Number(/^(\d+)m$/.exec(rule.for!)![1]);
  if (minute < forMinutes) return [];
  return combos
    .filter((c) => c.fires === alert)
    .map((c) => ({
      exp_labels: { model: c.model, namespace: "llm", pod: "vllm-0", severity: rule.labels!.severity! },
      // $value is the left-most signal's: GPU utilisation, or the hit ratio where the GPU is not part.
      exp_annotations: Object.fromEntries(Object.entries(rule.annotations!).map(([k, v]) => [k, render(v, c, alert === CACHE_SPEC ? c.hit : c.gpu)])),
    }));
}

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-slo-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function promtool(ruleGroups: unknown, tests: unknown[]): { status: number | null; output: string } {
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: ruleGroups }));
  writeFileSync(join(dir, "test.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: "1m", tests }));
  const r = spawnSync("promtool", ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8" });
  return { status: r.status, output: r.stdout + r.stderr };
}

const ALERTS = [ALL3, GPU_CACHE, GPU_SPEC, CACHE_SPEC];
const atMinute = (minute: number, path: "pipeline" | "rules" = "pipeline"): unknown => ({ interval: "1m", input_series: input(path), alert_rule_test: ALERTS.map((alertname) => ({ eval_time: `${minute}m`, alertname, exp_alerts: expected(alertname, minute) })) });

describe("the three-signal SLO alert family (promtool test rules, Prometheus's rule engine)", () => {
  it("the family is the three-signal alert and its three two-signal relatives, with for durations, severities and runbooks", () => {
    assert.deepEqual(family.map((r) => r.alert).sort(), [...ALERTS].sort());
    assert.deepEqual(family.map((r) => [r.alert, r.labels?.severity, r.for]), [[ALL3, "critical", "10m"], [GPU_CACHE, "warning", "15m"], [GPU_SPEC, "warning", "15m"], [CACHE_SPEC, "info", "30m"]]);
    for (const r of family) assert.match(r.annotations!.runbook!, /^1\. .+ 2\. .+ 3\. /, `${r.alert} runbook lists what to look at next`);
    assert.deepEqual(combos.filter((c) => c.fires !== null).length, 5, "four combinations of two or three signals fire, plus the model without speculative decoding");
  });

  it("every combination of the three signals fires exactly its alert, and one or none fires nothing (35 min in, every for elapsed)", () => {
    const r = promtool(groups, [atMinute(35)]);
    assert.equal(r.status, 0, r.output);
  });

  it("the same on the recording rules' series (a Prometheus without the pipeline): the alerts read (pipeline or rule)", () => {
    const r = promtool(groups, [atMinute(35, "rules")]);
    assert.equal(r.status, 0, r.output);
  });

  it("nothing fires before its for: at 5 min none, at 12 min only the three-signal alert (10m), at 20 min the two-signal ones too (15m)", () => {
    const r = promtool(groups, [atMinute(5), atMinute(12), atMinute(20)]);
    assert.equal(r.status, 0, r.output);
  });

  it("the thresholds are parameters: raising the GPU threshold to 95% silences the combinations with the GPU at 92%", () => {
    const raised = structuredClone(groups);
    const gpu = raised.find((g) => g.name === "tokentrace.slo-thresholds")!.rules.find((x) => x.labels?.signal === "gpu_utilization_percent")!;
    gpu.expr = "vector(95)";
    const tests = [{
      interval: "1m",
      input_series: input(),
      alert_rule_test: [
        ...[ALL3, GPU_CACHE, GPU_SPEC].map((alertname) => ({ eval_time: "35m", alertname, exp_alerts: [] })),
        // With the GPU no longer past its threshold, the all-three model becomes the cache-and-speculation one.
        { eval_time: "35m", alertname: CACHE_SPEC, exp_alerts: [...expected(CACHE_SPEC, 35), ...expected(ALL3, 35).map((a) => ({ ...a, exp_labels: { ...a.exp_labels, severity: "info" }, exp_annotations: Object.fromEntries(Object.entries(family.find((x) => x.alert === CACHE_SPEC)!.annotations!).map(([k, v]) => [k, render(v, combos.find((c) => c.fires === ALL3)!, 0.8)])) }))] },
      ],
    }];
    const r = promtool(raised, tests);
    assert.equal(r.status, 0, r.output);
  });

  it("the check can fail: expecting the three-signal alert for a two-signal model is refused", () => {
    const wrong = atMinute(35) as { alert_rule_test: { alertname: string; exp_alerts: { exp_labels: Record<string, string> }[] }[] };
    wrong.alert_rule_test.find((t) => t.alertname === ALL3)!.exp_alerts[0]!.exp_labels.model = "m-gpu-hit";
    const r = promtool(groups, [wrong]);
    assert.notEqual(r.status, 0);
    assert.match(r.output, /FAILED/);
  });
});
