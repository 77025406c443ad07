// istio/observability/gpu-health-rules.yaml under Prometheus's own rule engine (Debian's promtool
// 2.42, `test rules`): each alert fires on the series the join writes for its case, after its `for`,
// with its labels and its annotations as Prometheus renders them, and stays silent on the near
// misses (a value on its threshold, a GPU busy but working, a throttle without a TTFT rise); the
// thresholds are parameters (a changed one changes what fires); the raw-series refusals fire on
// dcgm-exporter's --use-old-namespace labels and on a honor_labels-false scrape's exported_pod.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, parseAllDocuments, stringify } from "yaml";
import { ALERT_RULE_FILES } from "../demo/alert-rules.js";
import { ISTIO_DIR } from "./support.js";

interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface Group { name: string; rules: Rule[] }
const FILE = join(ISTIO_DIR, "observability/gpu-health-rules.yaml");
const docs = parseAllDocuments(readFileSync(FILE, "utf8")).map((d) => d.toJS() as { metadata: { name: string }; spec: { groups: Group[] } });
const groups = docs.flatMap((d) => d.spec.groups);
const alertRule = (name: string): Rule => groups.flatMap((g) => g.rules).find((r) => r.alert === name)!;

/** %.4g as Go's fmt prints it (Prometheus's humanize for values under 1000), for the values used here. */
const g4 = (v: number): string => String(Number(v.toPrecision(4)));
/** An alert's annotations as Prometheus renders them for one alert instance (the templates these rules use). */
function rendered(alert: string, labels: Record<string, string>, value: number): Record<string, string> {
  return Object.fromEntries(
    Object.entries(alertRule(alert).annotations!).map(([k, v]) => [
      k,
      v
        .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, l: string) => labels[l] ?? "")
        .replace(/\{\{ \$value \| humanize \}\}/g, g4(value))
        .replace(/\{\{ \$value \| humanizePercentage \}\}/g, `${g4(value * 100)}%`)
        .replace(/\{\{ \$value \}\}/g, String(value)),
    ]),
  );
}

/** One expected alert instance: its labels (severity added) and rendered annotations. */
const fires = (alert: string, labels: Record<string, string>, value: number): { exp_labels: Record<string, string>; exp_annotations: Record<string, string> } => ({
  exp_labels: { ...labels, severity: alertRule(alert).labels!.severity! },
  exp_annotations: rendered(alert, labels, value),
});

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-gpu-rules-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function promtool(tests: unknown[], ruleGroups: Group[] = groups, evaluationInterval = "1m"): { status: number | null; output: string } {
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: ruleGroups }));
  // Groups in file order: without group_eval_order promtool evaluates them in Go map order
  // (cmd/promtool/unittest.go orderedGroups), and at a 1h interval an alert evaluated before the
  // thresholds' group sees no parameter (the last one is past the 5m look-back).
  const order = ruleGroups.map((g) => g.name);
  writeFileSync(join(dir, "test.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: evaluationInterval, group_eval_order: order, tests }));
  const r = spawnSync("promtool", ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8" });
  return { status: r.status, output: r.stdout + r.stderr };
}

const GPU = (i: number, extra: Record<string, string> = {}): Record<string, string> => ({ gpu: String(i), gpu_uuid: `GPU-0000000${i}`, gpu_model: "NVIDIA H100 80GB HBM3", hostname: "gpu-node-1", ...extra });
const sel = (name: string, labels: Record<string, string>): string => `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(",")}}`;

describe("GPU health alerts (promtool test rules, Prometheus's rule engine)", () => {
  it("every alert has a severity, a summary, a description and a numbered runbook; every threshold is a recorded parameter", () => {
    const alerts = groups.flatMap((g) => g.rules).filter((r) => r.alert);
    assert.equal(alerts.length, 12);
    for (const r of alerts) {
      assert.ok(["info", "warning", "critical"].includes(r.labels?.severity ?? ""), r.alert);
      assert.ok(r.annotations?.summary && r.annotations.description, r.alert);
      assert.match(r.annotations!.runbook ?? "", /^1\. .+ 2\. .+/, `${r.alert} runbook`);
    }
    const params = groups.find((g) => g.name === "tokentrace.gpu-thresholds")!.rules.map((r) => [r.record, r.labels?.signal, r.labels?.basis, r.expr]);
    assert.deepEqual(params, [
      ["tokentrace:gpu_threshold:parameter", "busy_utilization_percent", undefined, "vector(80)"],
      ["tokentrace:gpu_threshold:parameter", "starved_activity_ratio", "sm_active", "vector(0.5)"],
      ["tokentrace:gpu_threshold:parameter", "starved_activity_ratio", "tensor_dram", "vector(0.3)"],
      ["tokentrace:gpu_threshold:parameter", "straggler_utilization_spread_percent", undefined, "vector(20)"],
      ["tokentrace:gpu_threshold:parameter", "straggler_memory_spread_ratio", undefined, "vector(0.1)"],
      ["tokentrace:gpu_threshold:parameter", "throttled_ttft_rise_ratio", undefined, "vector(1.5)"],
      ["tokentrace:gpu_threshold:parameter", "retired_pages_limit", undefined, "vector(63)"],
      ["tokentrace:gpu_threshold:parameter", "retired_dbe_pages_soft_limit", undefined, "vector(15)"],
      ["tokentrace:gpu_threshold:parameter", "uncorrectable_remapped_rows_limit", undefined, "vector(512)"],
      ["tokentrace:gpu_threshold:parameter", "pcie_replays_per_minute", undefined, "vector(16)"],
    ]);
    // level:metric:operations: no recorded name is one the pipeline writes.
    for (const r of groups.flatMap((g) => g.rules)) if (r.record) assert.match(r.record, /^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/, r.record);
  });

  it("XIDs by class: devastating at once (critical), hardware after a minute (warning), an application's as info; none without an XID series", () => {
    const input = [
      { series: sel("tokentrace_gpu_xid_errors", GPU(0, { xid: "79", xid_class: "devastating" })), values: "1x10" },
      { series: sel("tokentrace_gpu_xid_errors", GPU(1, { xid: "63", xid_class: "memory" })), values: "1x10" },
      { series: sel("tokentrace_gpu_xid_errors", GPU(2, { xid: "13", xid_class: "application" })), values: "1x10" },
    ];
    const at = (t: string, alertname: string, exp: unknown[]): unknown => ({ eval_time: t, alertname, exp_alerts: exp });
    const r = promtool([{
      interval: "1m",
      input_series: input,
      alert_rule_test: [
        at("0m", "TokentraceGPUXidDevastating", [fires("TokentraceGPUXidDevastating", GPU(0, { xid: "79", xid_class: "devastating" }), 1)]),
        at("0m", "TokentraceGPUXidHardware", []),
        at("2m", "TokentraceGPUXidHardware", [fires("TokentraceGPUXidHardware", GPU(1, { xid: "63", xid_class: "memory" }), 1)]),
        at("0m", "TokentraceGPUXidApplication", [fires("TokentraceGPUXidApplication", GPU(2, { xid: "13", xid_class: "application" }), 1)]),
        at("20m", "TokentraceGPUXidDevastating", []),
      ],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  it("replace the GPU: a failed row remap, 63 retired pages, double-bit retired pages past 15 and growing within a week, 512 uncorrectable remapped rows; one short of each is silent", () => {
    const input = [
      { series: sel("tokentrace_gpu_row_remap_failed", GPU(0)), values: "1x200" },
      { series: sel("tokentrace_gpu_row_remap_failed", GPU(1)), values: "0x200" },
      // 47 + 16 = 63 on GPU 2; 46 + 16 = 62 on GPU 3.
      { series: sel("tokentrace_gpu_retired_pages", GPU(2, { cause: "sbe" })), values: "47x200" },
      { series: sel("tokentrace_gpu_retired_pages", GPU(2, { cause: "dbe" })), values: "16x200" },
      { series: sel("tokentrace_gpu_retired_pages", GPU(3, { cause: "sbe" })), values: "46x200" },
      { series: sel("tokentrace_gpu_retired_pages", GPU(3, { cause: "dbe" })), values: "16x200" },
      // GPU 4: 16 double-bit retired pages, two of them in the last week; GPU 5: 16 all along.
      { series: sel("tokentrace_gpu_retired_pages", GPU(4, { cause: "dbe" })), values: "14x150 16x50" },
      { series: sel("tokentrace_gpu_retired_pages", GPU(5, { cause: "dbe" })), values: "16x200" },
      { series: sel("tokentrace_gpu_remapped_rows", GPU(6, { cause: "uncorrectable" })), values: "512x200" },
      { series: sel("tokentrace_gpu_remapped_rows", GPU(7, { cause: "uncorrectable" })), values: "511x200" },
    ];
    const r = promtool([{
      interval: "1h",
      input_series: input,
      alert_rule_test: [{
        eval_time: "190h",
        alertname: "TokentraceGPUReplace",
        exp_alerts: [
          fires("TokentraceGPUReplace", GPU(0), 1),
          fires("TokentraceGPUReplace", GPU(2), 63),
          fires("TokentraceGPUReplace", GPU(4, { cause: "dbe" }), 16),
          fires("TokentraceGPUReplace", GPU(6, { cause: "uncorrectable" }), 512),
        ],
      }],
    }], groups, "1h");
    assert.equal(r.status, 0, r.output);
  });

  it("memory errors: a volatile double-bit error or a pending page retirement (drain and reset); zeros are silent", () => {
    const r = promtool([{
      interval: "1m",
      input_series: [
        { series: sel("tokentrace_gpu_ecc_dbe_errors", GPU(0, { scope: "volatile" })), values: "0 2x5" },
        { series: sel("tokentrace_gpu_ecc_dbe_errors", GPU(0, { scope: "aggregate" })), values: "5x6" },
        { series: sel("tokentrace_gpu_retired_pages_pending", GPU(1)), values: "1x5" },
        { series: sel("tokentrace_gpu_ecc_dbe_errors", GPU(2, { scope: "volatile" })), values: "0x5" },
        { series: sel("tokentrace_gpu_retired_pages_pending", GPU(2)), values: "0x5" },
      ],
      alert_rule_test: [{ eval_time: "3m", alertname: "TokentraceGPUMemoryErrors", exp_alerts: [fires("TokentraceGPUMemoryErrors", GPU(0, { scope: "volatile" }), 2), fires("TokentraceGPUMemoryErrors", GPU(1), 1)] }],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  it("PCIe replays: 20 a minute for 10 minutes fires with the rate; 10 a minute does not", () => {
    const r = promtool([{
      interval: "1m",
      input_series: [
        { series: sel("tokentrace_gpu_pcie_replays_total", GPU(0)), values: "0+20x30" },
        { series: sel("tokentrace_gpu_pcie_replays_total", GPU(1)), values: "0+10x30" },
      ],
      alert_rule_test: [
        { eval_time: "12m", alertname: "TokentraceGPUPcieReplaysHigh", exp_alerts: [] },
        { eval_time: "20m", alertname: "TokentraceGPUPcieReplaysHigh", exp_alerts: [fires("TokentraceGPUPcieReplaysHigh", GPU(0), 20)] },
      ],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  it("throttling with a TTFT rise: a pod whose GPU throttles for heat while its TTFT P95 goes from under 100 ms to about 1 s; throttling without the rise, or the rise without throttling, is silent", () => {
    const pod = (p: string, i: number): { series: string; values: string }[] => [
      { series: sel("tokentrace_pod_gpu_info", { namespace: "llm", pod: p, ...GPU(i) }), values: "1x90" },
    ];
    // TTFT buckets (ms): 10 requests a minute; fast (<= 100 ms) for 30 min, then slow (100 ms to 1 s).
    const ttft = (p: string, slowAfter: number | null): { series: string; values: string }[] => {
      const fast = slowAfter ?? 90;
      const le100 = `0+10x${fast} ${10 * fast}x${90 - fast}`;
      return [
        { series: sel("tokentrace_llm_ttft_ms_bucket", { namespace: "llm", pod: p, route: "chat", model: "m", le: "100" }), values: le100 },
        { series: sel("tokentrace_llm_ttft_ms_bucket", { namespace: "llm", pod: p, route: "chat", model: "m", le: "1000" }), values: "0+10x90" },
        { series: sel("tokentrace_llm_ttft_ms_bucket", { namespace: "llm", pod: p, route: "chat", model: "m", le: "+Inf" }), values: "0+10x90" },
      ];
    };
    const throttle = (i: number, reason: string, from: number): { series: string; values: string } => ({ series: sel("tokentrace_gpu_clock_event_active", { ...GPU(i), reason }), values: `0x${from} 1x${90 - from}` });
    const never = (i: number, reason: string): { series: string; values: string } => ({ series: sel("tokentrace_gpu_clock_event_active", { ...GPU(i), reason }), values: "0x90" });
    const input = [
      // a: throttled for heat from 30 min, TTFT slow from 30 min.
      ...pod("a", 0), ...ttft("a", 30), throttle(0, "sw_thermal", 30), never(0, "power_cap"),
      // b: throttled from 30 min, TTFT unchanged.
      ...pod("b", 1), ...ttft("b", null), throttle(1, "hw_thermal", 30), never(1, "power_cap"),
      // c: TTFT slow from 30 min, never throttled.
      ...pod("c", 2), ...ttft("c", 30), never(2, "sw_thermal"), never(2, "power_cap"),
    ];
    const r = promtool([{
      interval: "1m",
      input_series: input,
      alert_rule_test: [
        { eval_time: "38m", alertname: "TokentraceGPUThrottledTTFTRise", exp_alerts: [] },
        { eval_time: "50m", alertname: "TokentraceGPUThrottledTTFTRise", exp_alerts: [fires("TokentraceGPUThrottledTTFTRise", { namespace: "llm", pod: "a", cause: "thermal" }, 1)] },
      ],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  const starvedInput = (): { series: string; values: string }[] => {
    const link = (p: string, i: number, util: number, ratio: number, basis: string): { series: string; values: string }[] => [
      { series: sel("tokentrace_pod_gpu_utilization_percent", { namespace: "llm", pod: p, ...GPU(i), gpu_pods: "1" }), values: `${util}x30` },
      { series: sel("tokentrace_pod_gpu_activity_while_busy_ratio", { namespace: "llm", pod: p, ...GPU(i), basis }), values: `${ratio}x30` },
    ];
    return [
      ...link("starved-default", 0, 97, 0.12, "tensor_dram"),
      ...link("working-default", 1, 88, 0.72, "tensor_dram"),
      ...link("starved-sm", 2, 95, 0.4, "sm_active"),
      ...link("idle-ish", 3, 50, 0.12, "tensor_dram"),
      { series: sel("tokentrace_model_requests_running", { namespace: "llm", pod: "starved-default", model: "m" }), values: "2x30" },
    ];
  };

  it("busy but starved: 97% busy at 0.12 of the tensor pipe or DRAM, or 95% busy at 0.4 SM activity, fire after 15 min; a working GPU and a half-idle one do not; the model beside the pod", () => {
    const r = promtool([{
      interval: "1m",
      input_series: starvedInput(),
      alert_rule_test: [
        { eval_time: "10m", alertname: "TokentraceGPUBusyButStarved", exp_alerts: [] },
        { eval_time: "20m", alertname: "TokentraceGPUBusyButStarved", exp_alerts: [fires("TokentraceGPUBusyButStarved", { namespace: "llm", pod: "starved-default" }, 0.12), fires("TokentraceGPUBusyButStarved", { namespace: "llm", pod: "starved-sm" }, 0.4)] },
      ],
      promql_expr_test: [{
        expr: "namespace_pod_model:tokentrace_pod_gpu_activity_while_busy_ratio:starved_min",
        eval_time: "20m",
        exp_samples: [{ labels: 'namespace_pod_model:tokentrace_pod_gpu_activity_while_busy_ratio:starved_min{model="m",namespace="llm",pod="starved-default"}', value: 0.12 }],
      }],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  it("the thresholds are parameters: with busy raised to 96% only the GPU at 97% is busy but starved", () => {
    const raised = structuredClone(groups);
    raised.find((g) => g.name === "tokentrace.gpu-thresholds")!.rules.find((x) => x.labels?.signal === "busy_utilization_percent")!.expr = "vector(96)";
    const r = promtool([{ interval: "1m", input_series: starvedInput(), alert_rule_test: [{ eval_time: "20m", alertname: "TokentraceGPUBusyButStarved", exp_alerts: [fires("TokentraceGPUBusyButStarved", { namespace: "llm", pod: "starved-default" }, 0.12)] }] }], raised);
    assert.equal(r.status, 0, r.output);
  });

  it("stragglers: a utilisation spread of 39 points or a memory spread of 11% fires after 15 min; 10 points and 5% do not", () => {
    const r = promtool([{
      interval: "1m",
      input_series: [
        { series: sel("tokentrace_pod_gpu_utilization_spread_percent", { namespace: "llm", pod: "tp4-a" }), values: "39x30" },
        { series: sel("tokentrace_pod_gpu_memory_used_spread_ratio", { namespace: "llm", pod: "tp4-a" }), values: "0.03x30" },
        { series: sel("tokentrace_pod_gpu_utilization_spread_percent", { namespace: "llm", pod: "tp4-b" }), values: "4x30" },
        { series: sel("tokentrace_pod_gpu_memory_used_spread_ratio", { namespace: "llm", pod: "tp4-b" }), values: "0.11x30" },
        { series: sel("tokentrace_pod_gpu_utilization_spread_percent", { namespace: "llm", pod: "tp2-c" }), values: "10x30" },
        { series: sel("tokentrace_pod_gpu_memory_used_spread_ratio", { namespace: "llm", pod: "tp2-c" }), values: "0.05x30" },
      ],
      alert_rule_test: [{ eval_time: "20m", alertname: "TokentraceGPUStraggler", exp_alerts: [fires("TokentraceGPUStraggler", { namespace: "llm", pod: "tp4-a" }, 39), fires("TokentraceGPUStraggler", { namespace: "llm", pod: "tp4-b" }, 0.11)] }],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  it("label spellings: the pipeline's count of relabelled exporters, and on raw dcgm-exporter series --use-old-namespace and exported_pod, each naming the setting", () => {
    const r = promtool([{
      interval: "1m",
      input_series: [
        { series: 'tokentrace_join_dcgm_label_spellings{instance="10.0.0.1:8080",job="tokentrace",spelling="old_namespace"}', values: "1x40" },
        { series: 'tokentrace_join_dcgm_label_spellings{instance="10.0.0.1:8080",job="tokentrace",spelling="honor_labels_renamed"}', values: "0x40" },
        { series: 'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",exported_namespace="llm",exported_pod="chat-0",gpu="0",job="dcgm-a",namespace="gpu-operator",pod="nvidia-dcgm-exporter-x"}', values: "80x40" },
        { series: 'DCGM_FI_DEV_GPU_UTIL{gpu="0",job="dcgm-b",pod_name="chat-1",pod_namespace="llm",uuid="GPU-2"}', values: "80x40" },
        { series: 'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-3",gpu="0",job="dcgm-c",namespace="llm",pod="chat-2"}', values: "80x40" },
      ],
      alert_rule_test: [
        { eval_time: "35m", alertname: "TokentraceDcgmExporterLabelSpelling", exp_alerts: [fires("TokentraceDcgmExporterLabelSpelling", { instance: "10.0.0.1:8080", job: "tokentrace", spelling: "old_namespace" }, 1)] },
        { eval_time: "15m", alertname: "TokentraceDcgmExporterHonorLabelsFalse", exp_alerts: [fires("TokentraceDcgmExporterHonorLabelsFalse", { job: "dcgm-a" }, 1)] },
        { eval_time: "15m", alertname: "TokentraceDcgmExporterOldNamespace", exp_alerts: [fires("TokentraceDcgmExporterOldNamespace", { job: "dcgm-b" }, 1)] },
      ],
    }]);
    assert.equal(r.status, 0, r.output);
    for (const [alert, setting] of [["TokentraceDcgmExporterHonorLabelsFalse", "serviceMonitor.honorLabels: true"], ["TokentraceDcgmExporterOldNamespace", "--use-old-namespace"], ["TokentraceDcgmExporterLabelSpelling", "--use-old-namespace"]] as const) {
      assert.ok(Object.values(alertRule(alert).annotations!).join(" ").includes(setting), `${alert} names ${setting}`);
    }
  });

  it("every alert rule file is applied by istio/observability/kustomization.yaml and loaded by the demo's Prometheus; the recording rules by neither", () => {
    const k = parse(readFileSync(join(ISTIO_DIR, "observability/kustomization.yaml"), "utf8")) as { resources: string[] };
    assert.deepEqual([...k.resources].sort(), ALERT_RULE_FILES.map((f) => f.slice(f.lastIndexOf("/") + 1)).sort());
    assert.ok(k.resources.includes("gpu-health-rules.yaml"));
    assert.ok(!k.resources.includes("recording-rules.yaml"));
  });

  it("the check can fail: expecting the starvation alert for the working GPU is refused", () => {
    const r = promtool([{ interval: "1m", input_series: starvedInput(), alert_rule_test: [{ eval_time: "20m", alertname: "TokentraceGPUBusyButStarved", exp_alerts: [fires("TokentraceGPUBusyButStarved", { namespace: "llm", pod: "working-default" }, 0.72)] }] }]);
    assert.notEqual(r.status, 0);
    assert.match(r.output, /FAILED/);
  });
});
