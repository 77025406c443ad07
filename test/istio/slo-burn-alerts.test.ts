// The SLO groups of istio/observability/prometheus-rules.yaml (objectives as parameters, goodput,
// burn rates, budget left, the SRE workbook's multiwindow multi-burn-rate alerts) under Prometheus's
// own rule engine (Debian's promtool 2.42, `test rules`), fed the filter's own series: a fast burn
// pages, slow burns ticket (each branch of each alert), a short blip that pushed the 1h window over
// 14.4x is quiet once its 5m window recovers, healthy routes and 4xx stay quiet, the overrides win
// over the defaults, and the annotations render as Prometheus renders them.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { ISTIO_DIR } from "./support.js";

const FILE = join(ISTIO_DIR, "observability/prometheus-rules.yaml");
interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface Group { name: string; rules: Rule[] }
const allGroups = (parse(readFileSync(FILE, "utf8")) as { spec: { groups: Group[] } }).spec.groups;
const SLO_GROUPS = ["tokentrace.slo-objectives", "tokentrace.slo", "tokentrace.slo-alerts"];
const groups = allGroups.filter((g) => SLO_GROUPS.includes(g.name));
const alertRules = groups.find((g) => g.name === "tokentrace.slo-alerts")!.rules;

const TTFT_FAST = "TokentraceSLOTTFTBurnFast";
const TTFT_SLOW = "TokentraceSLOTTFTBurnSlow";
const ERR_FAST = "TokentraceSLOErrorsBurnFast";
const ERR_SLOW = "TokentraceSLOErrorsBurnSlow";
const ALERTS = [TTFT_FAST, TTFT_SLOW, ERR_FAST, ERR_SLOW];

/** Minutes between samples and between rule evaluations: 5, so a day of history stays fast to evaluate. */
const STEP = 5;

/** A counter's promtool values, one every STEP minutes from 0: `[minutes, increase per minute]` segments. */
function counter(segments: readonly (readonly [number, number])[]): string {
  let v = 0;
  const out = ["0"];
  for (const [minutes, perMinute] of segments) {
    const [steps, perStep] = [minutes / STEP, perMinute * STEP];
    out.push(steps === 1 ? `${v + perStep}` : `${v + perStep}+${perStep}x${steps - 1}`);
    v += minutes * perMinute;
  }
  return out.join(" ");
}

const MINUTES = 1480;
/** The blip: every streamed request of chat/m-blip slower than the target for 10 minutes, after a day of good ones. */
const BLIP_START = 1440;
const BLIP_MINUTES = 10;
const BLIP_ALERT_AT = 1450;
const BLIP_RECOVERED_AT = 1460;

/**
 * TTFT per route and model: streamed requests a minute, and how many of them within 1000 and 2500 ms.
 * Under the default objective (99% within 2500 ms, budget 1%) the burn rate is (1 - within2500/total) / 0.01.
 */
const TTFT: { route: string; model: string; segments: [number, number, number, number][]; story: string }[] = [
  { route: "chat", model: "m-fast", segments: [[MINUTES, 100, 80, 80]], story: "20x: pages (1h and 5m) and tickets" },
  { route: "chat", model: "m-page6h", segments: [[MINUTES, 100, 92, 92]], story: "8x: pages on 6h and 30m only, and tickets" },
  { route: "chat", model: "m-ticket1d", segments: [[MINUTES, 100, 96, 96]], story: "4x: tickets on 1d and 2h" },
  { route: "chat", model: "m-ticket3d", segments: [[MINUTES, 100, 98, 98]], story: "2x: tickets on 3d and 6h only" },
  { route: "chat", model: "m-healthy", segments: [[MINUTES, 200, 199, 199]], story: "0.5x: quiet" },
  {
    route: "chat", model: "m-blip", story: "a 10-minute outage after a good day: pages while it lasts, quiet 5m after",
    segments: [[BLIP_START, 100, 100, 100], [BLIP_MINUTES, 100, 0, 0], [MINUTES - BLIP_START - BLIP_MINUTES, 100, 100, 100]],
  },
  // The override of the example (99.5% within 1000 ms): 2% over 1000 ms is 4x, a ticket.
  { route: "chat-premium", model: "llama-3.1-8b-instruct", segments: [[MINUTES, 100, 98, 100]], story: "override: 4x, tickets" },
  // The same traffic on another model of the route keeps the default: all within 2500 ms, quiet.
  { route: "chat-premium", model: "other", segments: [[MINUTES, 100, 98, 100]], story: "default: quiet" },
];

/** Requests a minute per route by status class. Default objective 99.9% (budget 0.1%); batch-embeddings overrides it to 99%. */
const REQUESTS: { route: string; perClass: Record<string, number>; story: string }[] = [
  { route: "chat", perClass: { "2xx": 196, "5xx": 2, none: 2 }, story: "2% 5xx and resets: 20x, pages and tickets" },
  { route: "batch-embeddings", perClass: { "2xx": 98, "5xx": 2 }, story: "override 99%: 2% is 2x, tickets on 3d and 6h" },
  { route: "search", perClass: { "2xx": 70, "4xx": 30 }, story: "4xx are the client's: quiet" },
  { route: "reset-only", perClass: { none: 10 }, story: "no good request at all: still a goodput (0), pages and tickets" },
];

const base = { namespace: "llm", pod: "vllm-0" };
const sel = (name: string, labels: Record<string, string>): string => `${name}{${Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}}`;

function inputSeries(): { series: string; values: string }[] {
  const out: { series: string; values: string }[] = [];
  for (const t of TTFT) {
    const l = { ...base, route: t.route, model: t.model };
    const col = (i: 1 | 2 | 3): string => counter(t.segments.map((s) => [s[0], s[i]] as const));
    out.push({ series: sel("tokentrace_llm_ttft_ms_bucket", { ...l, le: "1000" }), values: col(2) });
    out.push({ series: sel("tokentrace_llm_ttft_ms_bucket", { ...l, le: "2500" }), values: col(3) });
    out.push({ series: sel("tokentrace_llm_ttft_ms_bucket", { ...l, le: "+Inf" }), values: col(1) });
    out.push({ series: sel("tokentrace_llm_ttft_ms_count", l), values: col(1) });
  }
  for (const r of REQUESTS) {
    for (const [status_class, perMinute] of Object.entries(r.perClass)) {
      out.push({ series: sel("tokentrace_requests_total", { ...base, route: r.route, status_class }), values: counter([[MINUTES, perMinute]]) });
    }
  }
  return out;
}

/** Which alerts fire for whom, at a minute: TTFT alerts by model (route chat unless named), error alerts by route. */
const FIRING: Record<number, Record<string, string[]>> = {
  [BLIP_ALERT_AT]: {
    [TTFT_FAST]: ["chat/m-fast", "chat/m-page6h", "chat/m-blip"],
    [TTFT_SLOW]: ["chat/m-fast", "chat/m-page6h", "chat/m-ticket1d", "chat/m-ticket3d", "chat-premium/llama-3.1-8b-instruct"],
    [ERR_FAST]: ["chat", "reset-only"],
    [ERR_SLOW]: ["chat", "batch-embeddings", "reset-only"],
  },
  [BLIP_RECOVERED_AT]: {
    [TTFT_FAST]: ["chat/m-fast", "chat/m-page6h"],
    [TTFT_SLOW]: ["chat/m-fast", "chat/m-page6h", "chat/m-ticket1d", "chat/m-ticket3d", "chat-premium/llama-3.1-8b-instruct"],
    [ERR_FAST]: ["chat", "reset-only"],
    [ERR_SLOW]: ["chat", "batch-embeddings", "reset-only"],
  },
};

const severityOf = (alert: string): string => alertRules.find((r) => r.alert === alert)!.labels!.severity!;

function expectedAlerts(alert: string, minute: number): { exp_labels: Record<string, string> }[] {
  return FIRING[minute]![alert]!.map((who) => {
    const [route, model] = who.split("/") as [string, string | undefined];
    return { exp_labels: { namespace: base.namespace, route, ...(model === undefined ? {} : { model }), severity: severityOf(alert) } };
  });
}

/** The SLO groups with the alerts' annotations left out (their rendering is the last test's). */
function withoutAnnotations(from: Group[]): Group[] {
  return from.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _a, ...r }) => r) }));
}

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-slo-burn-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function promtool(ruleGroups: Group[], tests: unknown[]): { status: number | null; output: string } {
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: ruleGroups }));
  // Groups in file order (objectives, burn rates, alerts): without group_eval_order promtool
  // evaluates them in Go map order (cmd/promtool/unittest.go orderedGroups), and an alert evaluated
  // before its burn rates saw the previous step's; the blip's page then came a step late, now and then.
  const order = ruleGroups.map((g) => g.name);
  writeFileSync(join(dir, "test.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: `${STEP}m`, group_eval_order: order, tests }));
  const r = spawnSync("promtool", ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8" });
  return { status: r.status, output: r.stdout + r.stderr };
}

const alertTests = (minutes: readonly number[]): unknown => ({
  interval: `${STEP}m`,
  input_series: inputSeries(),
  alert_rule_test: minutes.flatMap((m) => ALERTS.map((alertname) => ({ eval_time: `${m}m`, alertname, exp_alerts: expectedAlerts(alertname, m) }))),
});

describe("SLO burn-rate alerts per route and model (promtool test rules, Prometheus's rule engine)", () => {
  it("the alerts are the workbook's: page on 14.4x over 1h and 5m or 6x over 6h and 30m, ticket on 3x over 1d and 2h or 1x over 3d and 6h, no for, with runbooks", () => {
    const shape = (level: string, sli: string, pairs: [string, string, string][]): string =>
      pairs.map(([long, short, factor]) => `(${level}:tokentrace_slo_${sli}_burn_rate:rate${long} > ${factor} and ${level}:tokentrace_slo_${sli}_burn_rate:rate${short} > ${factor})`).join("\nor\n") + "\n";
    const page: [string, string, string][] = [["1h", "5m", "14.4"], ["6h", "30m", "6"]];
    const ticket: [string, string, string][] = [["1d", "2h", "3"], ["3d", "6h", "1"]];
    assert.deepEqual(alertRules.map((r) => [r.alert, r.expr, r.labels?.severity, r.for]), [
      [TTFT_FAST, shape("namespace_route_model", "ttft", page), "critical", undefined],
      [TTFT_SLOW, shape("namespace_route_model", "ttft", ticket), "warning", undefined],
      [ERR_FAST, shape("namespace_route", "errors", page), "critical", undefined],
      [ERR_SLOW, shape("namespace_route", "errors", ticket), "warning", undefined],
    ]);
    for (const r of alertRules) assert.match(r.annotations!.runbook!, /^1\. .+ 2\. .+ 3\. /, `${r.alert} runbook lists what to look at next`);
  });

  it("the objectives in force: the override for its route and model (its route for errors), the default elsewhere; goodput and budget left as the counts say", () => {
    const at = `${BLIP_ALERT_AT}m`;
    const ttftObjective = TTFT.map((t) => ({ labels: sel("namespace_route_model:tokentrace_slo_ttft_objective:ratio", { model: t.model, namespace: "llm", route: t.route }), value: t.route === "chat-premium" && t.model === "llama-3.1-8b-instruct" ? 0.995 : 0.99 }));
    const errorsObjective = REQUESTS.map((r) => ({ labels: sel("namespace_route:tokentrace_slo_errors_objective:ratio", { namespace: "llm", route: r.route }), value: r.route === "batch-embeddings" ? 0.99 : 0.999 }));
    const tests = [{
      interval: `${STEP}m`,
      input_series: inputSeries(),
      promql_expr_test: [
        { expr: "namespace_route_model:tokentrace_slo_ttft_objective:ratio", eval_time: at, exp_samples: ttftObjective },
        { expr: "namespace_route:tokentrace_slo_errors_objective:ratio", eval_time: at, exp_samples: errorsObjective },
        // Constant traffic: every window's goodput is the share of good requests.
        ...["5m", "1h", "3d", "30d"].map((w) => ({ expr: `round(namespace_route_model:tokentrace_slo_ttft_goodput:ratio_rate${w}{model=~"m-fast|m-healthy|llama.*"}, 0.0001)`, eval_time: at, exp_samples: [["m-fast", "chat", 0.8], ["m-healthy", "chat", 0.995], ["llama-3.1-8b-instruct", "chat-premium", 0.98]].map(([model, route, value]) => ({ labels: sel("", { model: model as string, namespace: "llm", route: route as string }), value })) })),
        { expr: "round(namespace_route:tokentrace_slo_errors_goodput:ratio_rate6h, 0.0001)", eval_time: at, exp_samples: [["chat", 0.98], ["batch-embeddings", 0.98], ["search", 1], ["reset-only", 0]].map(([route, value]) => ({ labels: sel("", { namespace: "llm", route: route as string }), value })) },
        // Budget left over 30 days: 1 - burn rate; 0.5x leaves half, 4x is three budgets overspent.
        { expr: `round(namespace_route_model:tokentrace_slo_ttft_error_budget_remaining:ratio_rate30d{model=~"m-healthy|llama.*"}, 0.0001)`, eval_time: at, exp_samples: [["m-healthy", "chat", 0.5], ["llama-3.1-8b-instruct", "chat-premium", -3]].map(([model, route, value]) => ({ labels: sel("", { model: model as string, namespace: "llm", route: route as string }), value })) },
        { expr: `round(namespace_route:tokentrace_slo_errors_burn_rate:rate1h, 0.0001)`, eval_time: at, exp_samples: [["chat", 20], ["batch-embeddings", 2], ["search", 0], ["reset-only", 1000]].map(([route, value]) => ({ labels: sel("", { namespace: "llm", route: route as string }), value })) },
      ],
    }];
    const r = promtool(groups, tests);
    assert.equal(r.status, 0, r.output);
  });

  it("fast burns page and slow burns ticket, each branch; healthy routes, 4xx and the default-objective twin stay quiet; the blip pages while it burns", () => {
    const r = promtool(withoutAnnotations(groups), [alertTests([BLIP_ALERT_AT])]);
    assert.equal(r.status, 0, r.output);
  });

  it("10 minutes after the blip began (5 after it ended) its 1h burn rate is still over 14.4x, and nothing pages: the 5m window has recovered", () => {
    const tests = [{
      ...(alertTests([BLIP_RECOVERED_AT]) as object),
      promql_expr_test: [
        // 2 of the 13 samples of 5m rates in the hour are all bad: 15.4% bad, 15.4x a 1% budget.
        { expr: `round(namespace_route_model:tokentrace_slo_ttft_burn_rate:rate1h{model="m-blip"}, 0.0001) > 14.4`, eval_time: `${BLIP_RECOVERED_AT}m`, exp_samples: [{ labels: sel("", { model: "m-blip", namespace: "llm", route: "chat" }), value: 15.3846 }] },
        { expr: `namespace_route_model:tokentrace_slo_ttft_burn_rate:rate5m{model="m-blip"}`, eval_time: `${BLIP_RECOVERED_AT}m`, exp_samples: [{ labels: sel("namespace_route_model:tokentrace_slo_ttft_burn_rate:rate5m", { model: "m-blip", namespace: "llm", route: "chat" }), value: 0 }] },
      ],
    }];
    const r = promtool(withoutAnnotations(groups), tests);
    assert.equal(r.status, 0, r.output);
  });

  it("the check can fail: without the short window the page would keep firing for the blip after it ended", () => {
    const wrong = withoutAnnotations(groups);
    const fast = wrong.find((g) => g.name === "tokentrace.slo-alerts")!.rules.find((x) => x.alert === TTFT_FAST)!;
    fast.expr = "namespace_route_model:tokentrace_slo_ttft_burn_rate:rate1h > 14.4 or namespace_route_model:tokentrace_slo_ttft_burn_rate:rate6h > 6";
    const r = promtool(wrong, [alertTests([BLIP_RECOVERED_AT])]);
    assert.notEqual(r.status, 0);
    assert.match(r.output, /FAILED/);
    assert.match(r.output, /m-blip/);
  });

  it("the annotations as Prometheus renders them: the burn rate, the objective in force and the 30-day budget left", () => {
    const render = (alert: string, labels: Record<string, string>, value: string, objective: string, budget: string): Record<string, string> => {
      const rule = alertRules.find((r) => r.alert === alert)!;
      return Object.fromEntries(Object.entries(rule.annotations!).map(([k, v]) => [k, v
        .replace(/\{\{ \$value \| humanize \}\}/g, value)
        .replace(/\{\{ with printf `[a-z_:]+_objective:ratio\{[^`]*` [^}]*\| query \}\}\{\{ \. \| first \| value \| humanizePercentage \}\}\{\{ end \}\}/g, objective)
        .replace(/\{\{ with printf `[a-z_:]+_error_budget_remaining:ratio_rate30d\{[^`]*` [^}]*\| query \}\}\{\{ \. \| first \| value \| humanizePercentage \}\}\{\{ end \}\}/g, budget)
        .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, l: string) => labels[l]!)]));
    };
    // m-healthy cannot alert, so the check uses the constant 20x routes: TTFT chat/m-fast and errors chat.
    const ttftLabels = { model: "m-fast", namespace: "llm", route: "chat" };
    const errLabels = { namespace: "llm", route: "chat" };
    const tests = [{
      interval: `${STEP}m`,
      input_series: inputSeries().filter((s) => s.series.includes('model="m-fast"') || (s.series.startsWith("tokentrace_requests_total") && s.series.includes('route="chat"'))),
      alert_rule_test: [
        { eval_time: `${BLIP_ALERT_AT}m`, alertname: TTFT_FAST, exp_alerts: [{ exp_labels: { ...ttftLabels, severity: "critical" }, exp_annotations: render(TTFT_FAST, ttftLabels, "20", "99%", "-1900%") }] },
        { eval_time: `${BLIP_ALERT_AT}m`, alertname: ERR_SLOW, exp_alerts: [{ exp_labels: { ...errLabels, severity: "warning" }, exp_annotations: render(ERR_SLOW, errLabels, "20", "99.9%", "-1900%") }] },
      ],
    }];
    const r = promtool(groups, tests);
    assert.equal(r.status, 0, r.output);
    const rendered = render(TTFT_FAST, ttftLabels, "20", "99%", "-1900%").summary!;
    assert.equal(rendered, "m-fast on llm/chat: error budget of the TTFT objective burning 20x (objective 99%, 30-day budget left -1900%)");
  });
});
