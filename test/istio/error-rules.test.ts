// The errors-by-model group of istio/observability/prometheus-rules.yaml under Prometheus's own rule
// engine (Debian's promtool 2.42, `test rules`), fed tokentrace_llm_requests_total as a sidecar
// exports it (status_class always, error_type on a call that failed; the label sets are those of
// test/filter/telemetry/errors-by-model.test.ts): the failed share of each (route, model) and the
// failures per error type; a healthy model reads 0, an idle one has no ratio; and the dashboard's two
// error panels, which read the counter itself, show the same figures.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { ISTIO_DIR } from "./support.js";

const FILE = join(ISTIO_DIR, "observability/prometheus-rules.yaml");
interface Rule { record?: string; expr: string }
const group = (parse(readFileSync(FILE, "utf8")) as { spec: { groups: { name: string; rules: Rule[] }[] } }).spec.groups.filter((g) => g.name === "tokentrace.errors");
const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as { panels: { title: string; targets?: { expr: string }[] }[] };
const RATIO = "namespace_route_model:tokentrace_llm_requests_failed:ratio_rate5m";
const BY_TYPE = "namespace_route_model_error_type:tokentrace_llm_requests_failed:rate5m";

/** One series of the counter, on pod vllm-0 of namespace llm, route chat. */
const series = (labels: Record<string, string>): string =>
  `tokentrace_llm_requests_total{${Object.entries({ namespace: "llm", pod: "vllm-0", route: "chat", ...labels }).map(([k, v]) => `${k}="${v}"`).join(",")}}`;
const ok = (model: string, stream = "false"): Record<string, string> => ({ model, stream, finish_reason: "stop", status_class: "2xx" });
const failed = (model: string, statusClass: string, errorType: string, finish = "none"): Record<string, string> => ({ model, stream: "true", finish_reason: finish, status_class: statusClass, error_type: errorType });

/** Per minute: `perMinute` increments for 20 minutes. */
const counter = (perMinute: number): string => `0+${perMinute}x20`;

const INPUT: { labels: Record<string, string>; perMinute: number }[] = [
  // m-healthy: 60 calls a minute, none failed.
  { labels: ok("m-healthy"), perMinute: 30 },
  { labels: ok("m-healthy", "true"), perMinute: 30 },
  // m-limited: 48 ok, 12 answered 429: a fifth failed.
  { labels: ok("m-limited"), perMinute: 48 },
  { labels: failed("m-limited", "4xx", "429"), perMinute: 12 },
  // m-broken: 30 ok, 15 answered 503, 9 reset before a response, 6 failed generations under a 200: half failed.
  { labels: ok("m-broken"), perMinute: 30 },
  { labels: failed("m-broken", "5xx", "503"), perMinute: 15 },
  { labels: failed("m-broken", "none", "reset_before_response"), perMinute: 9 },
  { labels: failed("m-broken", "2xx", "_OTHER", "error"), perMinute: 6 },
  // m-idle: no call in the window.
  { labels: ok("m-idle"), perMinute: 0 },
];

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-errors-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function promtool(tests: unknown[]): { status: number | null; output: string } {
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: group }));
  writeFileSync(join(dir, "test.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: "1m", tests }));
  const r = spawnSync("promtool", ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8" });
  return { status: r.status, output: r.stdout + r.stderr };
}

const at = (m: string): string => `{model="${m}",namespace="llm",route="chat"}`;
const EXPECTED_RATIO = [{ labels: at("m-broken"), value: 0.5 }, { labels: at("m-healthy"), value: 0 }, { labels: at("m-limited"), value: 0.2 }];
const typed = (m: string, t: string): string => `{error_type="${t}",model="${m}",namespace="llm",route="chat"}`;
const EXPECTED_BY_TYPE = [
  { labels: typed("m-broken", "503"), value: 0.25 },
  { labels: typed("m-broken", "_OTHER"), value: 0.1 },
  { labels: typed("m-broken", "reset_before_response"), value: 0.15 },
  { labels: typed("m-limited", "429"), value: 0.2 },
];

/** A promtool case at 15 min: each recorded series rounded to 1e-6 (rates of whole counts per minute are not exact in binary). */
function atFifteen(ratio: { labels: string; value: number }[], byType: { labels: string; value: number }[]): unknown {
  const round = (name: string, rows: { labels: string; value: number }[]): unknown => ({
    expr: `round(${name}, 0.000001)`,
    eval_time: "15m",
    exp_samples: rows.map((r) => ({ labels: r.labels, value: r.value })),
  });
  return {
    interval: "1m",
    input_series: INPUT.map((i) => ({ series: series(i.labels), values: counter(i.perMinute) })),
    promql_expr_test: [round(RATIO, ratio), round(BY_TYPE, byType)],
  };
}

describe("errors by model (promtool test rules, Prometheus's rule engine)", () => {
  it("the group records the failed share per (route, model) and the failures per second by error_type", () => {
    assert.deepEqual(group[0]!.rules.map((r) => r.record), [RATIO, BY_TYPE]);
  });

  it("a fifth of m-limited failed (429), half of m-broken (503, resets, response.failed), none of m-healthy; m-idle has no ratio", () => {
    const r = promtool([atFifteen(EXPECTED_RATIO, EXPECTED_BY_TYPE)]);
    assert.equal(r.status, 0, r.output);
  });

  it("the dashboard's two error panels read the same figures from the filter's counter (route \"chat\", namespace \"llm\" selected)", () => {
    const panels = dashboard.panels.filter((p) => p.title === "Failed share of LLM calls per model" || p.title === "LLM failures per model by error.type");
    assert.equal(panels.length, 2);
    const [share, byType] = panels.map((p) => p.targets![0]!.expr.replaceAll("$namespace", "llm").replaceAll("$route", "chat").replaceAll("$__rate_interval", "5m"));
    const r = promtool([{
      interval: "1m",
      input_series: INPUT.map((i) => ({ series: series(i.labels), values: counter(i.perMinute) })),
      promql_expr_test: [
        { expr: `round(${share!}, 0.000001)`, eval_time: "15m", exp_samples: EXPECTED_RATIO.map((e) => ({ labels: e.labels.replace(',namespace="llm"', ""), value: e.value })) },
        { expr: `round(${byType!}, 0.000001)`, eval_time: "15m", exp_samples: EXPECTED_BY_TYPE.map((e) => ({ labels: e.labels.replace(',namespace="llm",route="chat"', ""), value: e.value })) },
      ],
    }]);
    assert.equal(r.status, 0, r.output);
  });

  it("the check can fail: a wrong share for m-limited is refused", () => {
    const r = promtool([atFifteen(EXPECTED_RATIO.map((e) => (e.labels === at("m-limited") ? { ...e, value: 0.25 } : e)), EXPECTED_BY_TYPE)]);
    assert.notEqual(r.status, 0);
    assert.match(r.output, /FAILED/);
  });
});
