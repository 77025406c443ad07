// The Grafana dashboard's SLO row against the SLO records of istio/observability/prometheus-rules.yaml
// under Prometheus's own rule and query engine (Debian's promtool 2.42, `test rules` with the SLO
// groups loaded and promql_expr_test): the sidecar's series for three routes, one with the
// objective's override, go through the recording rules, and every query of the row, its variables
// interpolated as Grafana's Prometheus data source does (All as the variable's allValue, or one
// value regex-escaped), returns exactly the goodput, objective, burn rate, budget left and bad
// requests the counts imply. A query naming a record the file does not write returns nothing and
// fails. The alerts' runbooks name the row's panels by their titles.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { ISTIO_DIR, manifests } from "./support.js";
import { runPromtoolTest } from "./promtool-run.js";

interface Target { refId: string; expr: string; legendFormat?: string }
interface Panel { id: number; type: string; title: string; targets?: Target[] }
interface Rule { alert?: string; record?: string; expr: string; annotations?: Record<string, string> }
const dashboard = JSON.parse(readFileSync(join(ISTIO_DIR, "observability/grafana-dashboard.json"), "utf8")) as { panels: Panel[]; templating: { list: { name: string; allValue?: string }[] } };
type Groups = { name: string; rules: Rule[] }[];
const SLO_GROUPS = ["tokentrace.slo-objectives", "tokentrace.slo"];
const sloGroups = (parse(readFileSync(join(ISTIO_DIR, "observability/prometheus-rules.yaml"), "utf8")) as { spec: { groups: Groups } }).spec.groups.filter((g) => SLO_GROUPS.includes(g.name));
// Every alert of every PrometheusRule shipped (a runbook anywhere may point at the SLO row).
const alerts = manifests().filter((m) => m.kind === "PrometheusRule").flatMap((m) => (m.spec.groups as Groups).flatMap((g) => g.rules)).filter((r) => r.alert !== undefined);

/** The panels between the SLO row and the next row. */
function sloRow(panels: Panel[]): Panel[] {
  const start = panels.findIndex((p) => p.type === "row" && /^SLO\b/.test(p.title));
  if (start < 0) return [];
  const end = panels.findIndex((p, i) => i > start && p.type === "row");
  return panels.slice(start + 1, end < 0 ? undefined : end);
}
const row = sloRow(dashboard.panels);
const panel = (title: string): Panel => {
  const p = row.find((x) => x.title === title);
  assert.ok(p, `the SLO row has a panel ${JSON.stringify(title)}`);
  return p;
};

/** Grafana's Prometheus data source regex-escapes a multi-value variable's values; All is the allValue. */
const regexEscape = (v: string): string => v.replace(/[\\^$*+?.()|[\]{}]/g, "\\\\$&");
const allValue = (name: string): string => dashboard.templating.list.find((v) => v.name === name)!.allValue!;
type Selection = Partial<Record<"namespace" | "route" | "model", string>>;
const interpolate = (expr: string, chosen: Selection = {}): string =>
  (["namespace", "route", "model"] as const).reduce((e, v) => e.replaceAll(`$${v}`, chosen[v] === undefined ? allValue(v) : regexEscape(chosen[v])), expr).replaceAll("$__rate_interval", "5m");

/** Minutes between samples and rule evaluations, and how long the series run. */
const STEP = 5;
const MINUTES = 120;
const EVAL = `${MINUTES}m`;

/** Streamed requests a minute per route and model, and how many of them came within 1000 and 2500 ms. */
const TTFT = [
  { route: "chat", model: "m-a", total: 100, within1000: 90, within2500: 96 },
  { route: "chat", model: "m-b", total: 200, within1000: 199, within2500: 199 },
  // The file's example override: 99.5% within 1000 ms for this route and model.
  { route: "chat-premium", model: "llama-3.1-8b-instruct", total: 100, within1000: 98, within2500: 100 },
];
/** Requests a minute per route by status class (errors objective 99.9%; batch-embeddings overrides it to 99%). */
const REQUESTS: { route: string; perClass: Record<string, number> }[] = [
  { route: "chat", perClass: { "2xx": 196, "5xx": 2, none: 2 } },
  { route: "batch-embeddings", perClass: { "2xx": 98, "5xx": 2 } },
  { route: "search", perClass: { "2xx": 70, "4xx": 30 } },
];

const base = { namespace: "llm", pod: "vllm-0" };
const labels = (l: Record<string, string>, name = ""): string => `${name}{${Object.entries(l).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}}`;
const counter = (perMinute: number): string => `0+${perMinute * STEP}x${MINUTES / STEP}`;

function inputSeries(): { series: string; values: string }[] {
  const out: { series: string; values: string }[] = [];
  for (const t of TTFT) {
    const l = { ...base, route: t.route, model: t.model };
    out.push({ series: labels({ ...l, le: "1000" }, "tokentrace_llm_ttft_ms_bucket"), values: counter(t.within1000) });
    out.push({ series: labels({ ...l, le: "2500" }, "tokentrace_llm_ttft_ms_bucket"), values: counter(t.within2500) });
    out.push({ series: labels({ ...l, le: "+Inf" }, "tokentrace_llm_ttft_ms_bucket"), values: counter(t.total) });
    out.push({ series: labels(l, "tokentrace_llm_ttft_ms_count"), values: counter(t.total) });
  }
  for (const r of REQUESTS) for (const [status_class, n] of Object.entries(r.perClass)) out.push({ series: labels({ ...base, route: r.route, status_class }, "tokentrace_requests_total"), values: counter(n) });
  return out;
}

/** What each SLI's figures should be, from the counts and the objectives in force. */
const ttftObjective = (t: (typeof TTFT)[number]): number => (t.route === "chat-premium" ? 0.995 : 0.99);
const ttftGoodput = (t: (typeof TTFT)[number]): number => (t.route === "chat-premium" ? t.within1000 : t.within2500) / t.total;
const errorsObjective = (route: string): number => (route === "batch-embeddings" ? 0.99 : 0.999);
const errorsGoodput = (r: (typeof REQUESTS)[number]): number => {
  const all = Object.values(r.perClass).reduce((a, b) => a + b, 0);
  return (all - (r.perClass["5xx"] ?? 0) - (r.perClass.none ?? 0)) / all;
};
const burn = (goodput: number, objective: number): number => (1 - goodput) / (1 - objective);

/** Prometheus's round(v, 0.0001) (promql/functions.go funcRound), computed the same way here. */
const round4 = (v: number): number => Math.floor(v * (1 / 0.0001) + 0.5) / (1 / 0.0001);
type Sample = { labels: string; value: number };
const perModel = (f: (t: (typeof TTFT)[number]) => number): Sample[] => TTFT.map((t) => ({ labels: labels({ model: t.model, namespace: "llm", route: t.route }), value: round4(f(t)) }));
const perRoute = (f: (r: (typeof REQUESTS)[number]) => number): Sample[] => REQUESTS.map((r) => ({ labels: labels({ namespace: "llm", route: r.route }), value: round4(f(r)) }));

/** Every target of the row, by panel title and refId: what it returns at EVAL with every variable at All. */
const EXPECTED: Record<string, Record<string, Sample[]>> = {
  "TTFT goodput": { A: perModel(ttftGoodput), B: perModel(ttftGoodput), C: perModel(ttftObjective) },
  "Error goodput": { A: perRoute(errorsGoodput), B: perRoute(errorsGoodput), C: perRoute((r) => errorsObjective(r.route)) },
  "Burn rate": Object.fromEntries([
    ..."ABCD".split("").map((ref) => [ref, perModel((t) => burn(ttftGoodput(t), ttftObjective(t)))]),
    ..."EFGH".split("").map((ref) => [ref, perRoute((r) => burn(errorsGoodput(r), errorsObjective(r.route)))]),
  ]),
  "30-day error budget left": { A: perModel((t) => 1 - burn(ttftGoodput(t), ttftObjective(t))), B: perRoute((r) => 1 - burn(errorsGoodput(r), errorsObjective(r.route))) },
  "Bad requests by status class": {
    A: REQUESTS.flatMap((r) => ["5xx", "none"].filter((c) => r.perClass[c] !== undefined).map((c) => ({ labels: labels({ route: r.route, status_class: c }), value: round4(r.perClass[c]! / 60) }))),
    B: perModel((t) => (t.total - (t.route === "chat-premium" ? t.within1000 : t.within2500)) / 60),
  },
};

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tokentrace-slo-panels-"));
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: sloGroups }));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs one promtool case: each query, rounded to 1e-4, at EVAL returns exactly its samples; rejects with promtool's output otherwise. */
async function check(queries: { expr: string; expected: Sample[] }[]): Promise<string> {
  const test = { interval: `${STEP}m`, input_series: inputSeries(), promql_expr_test: queries.map((q) => ({ expr: `round(${q.expr}, 0.0001)`, eval_time: EVAL, exp_samples: q.expected })) };
  return runPromtoolTest(dir, test, `${STEP}m`);
}

describe("the dashboard's SLO row returns the SLO records' figures (promtool, Prometheus's rule and query engine)", () => {
  it("the row holds goodput per SLI against its objective, the burn rate, the budget left and the bad requests, each query as the test expects it", () => {
    assert.deepEqual(row.map((p) => p.title), Object.keys(EXPECTED));
    for (const p of row) assert.deepEqual(p.targets!.map((t) => t.refId), Object.keys(EXPECTED[p.title]!), p.title);
    // Constant traffic gives every window the same figure, so which record each query reads is checked here.
    const reads = (title: string): string[] => panel(title).targets!.map((t) => [...t.expr.matchAll(/\b(namespace_route\w*:[\w:]+|tokentrace_\w+)\{/g)].map((m) => m[1]).join(" "));
    const [m, r] = ["namespace_route_model:tokentrace_slo_ttft", "namespace_route:tokentrace_slo_errors"];
    assert.deepEqual(reads("TTFT goodput"), [`${m}_goodput:ratio_rate5m`, `${m}_goodput:ratio_rate1h`, `${m}_objective:ratio`]);
    assert.deepEqual(reads("Error goodput"), [`${r}_goodput:ratio_rate5m`, `${r}_goodput:ratio_rate1h`, `${r}_objective:ratio`]);
    assert.deepEqual(reads("Burn rate"), [...["1h", "6h", "1d", "3d"].map((w) => `${m}_burn_rate:rate${w}`), ...["1h", "6h", "1d", "3d"].map((w) => `${r}_burn_rate:rate${w}`)], "the alerts' long windows, TTFT then errors");
    assert.deepEqual(reads("30-day error budget left"), [`${m}_error_budget_remaining:ratio_rate30d`, `${r}_error_budget_remaining:ratio_rate30d`]);
    assert.deepEqual(reads("Bad requests by status class"), ["tokentrace_requests_total", `${m}_total:rate5m ${m}_good:rate5m`]);
    assert.deepEqual(panel("TTFT goodput").targets!.map((t) => t.legendFormat), ["{{route}} {{model}} 5m", "{{route}} {{model}} 1h", "{{route}} {{model}} objective"]);
  });

  it("with every variable at All, each query returns every route (and model) with the figure its counts and objective give", async () => {
    // The figures first, so the check cannot pass on two wrong answers that agree.
    assert.deepEqual(EXPECTED["TTFT goodput"]!.A!.map((s) => s.value), [0.96, 0.995, 0.98]);
    assert.deepEqual(EXPECTED["Burn rate"]!.A!.map((s) => s.value), [4, 0.5, 4]);
    assert.deepEqual(EXPECTED["Burn rate"]!.E!.map((s) => s.value), [20, 2, 0]);
    assert.deepEqual(EXPECTED["30-day error budget left"]!.B!.map((s) => s.value), [-19, -1, 1]);
    const queries = row.flatMap((p) => p.targets!.map((t) => ({ expr: interpolate(t.expr), expected: EXPECTED[p.title]![t.refId]! })));
    assert.equal(queries.length, 18);
    assert.match(await check(queries), /SUCCESS/);
  });

  it("with one route and model chosen (regex-escaped, as Grafana sends them), the per-model and per-route queries return only theirs", async () => {
    const chosen = { route: "chat-premium", model: "llama-3.1-8b-instruct" };
    const only = (samples: Sample[]): Sample[] => samples.filter((s) => s.labels.includes(`route="${chosen.route}"`));
    assert.equal(interpolate("{model=~\"$model\"}", chosen), '{model=~"llama-3\\\\.1-8b-instruct"}');
    const queries = [panel("TTFT goodput"), panel("Error goodput"), panel("30-day error budget left")].flatMap((p) => p.targets!.map((t) => ({ expr: interpolate(t.expr, chosen), expected: only(EXPECTED[p.title]![t.refId]!) })));
    assert.deepEqual(queries.map((q) => q.expected.length), [1, 1, 1, 0, 0, 0, 1, 0], "the chosen model's TTFT figures; the route has no request of its own in tokentrace_requests_total here");
    assert.match(await check(queries), /SUCCESS/);
  });

  it("the check can fail: a query naming a record the rule file does not write (a 1w window) returns nothing", async () => {
    const t = panel("TTFT goodput").targets![1]!;
    const wrong = interpolate(t.expr).replace("ratio_rate1h", "ratio_rate1w");
    assert.notEqual(wrong, interpolate(t.expr));
    await assert.rejects(check([{ expr: wrong, expected: EXPECTED["TTFT goodput"]!.B! }]), /FAILED/);
  });

  it("every panel an alert's runbook names in the dashboard's SLO row is a panel of that row, and every SLO alert names some", () => {
    const titles = new Set(row.map((p) => p.title));
    const named = alerts.flatMap((r) => [...(r.annotations?.runbook ?? "").matchAll(/the dashboard's SLO row \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(", ").map((title) => ({ alert: r.alert!, title }))));
    assert.deepEqual(named.filter((n) => !titles.has(n.title)), []);
    const sloAlerts = alerts.filter((r) => /^TokentraceSLO/.test(r.alert!)).map((r) => r.alert!);
    assert.equal(sloAlerts.length, 4);
    assert.deepEqual(sloAlerts.filter((a) => !named.some((n) => n.alert === a)), []);
    // The match is not vacuous: a runbook naming a panel the row lacks is reported.
    const stale = "1. the dashboard's SLO row (Goodput, Burn rate) shows since when";
    assert.deepEqual([...stale.matchAll(/the dashboard's SLO row \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(", ")).filter((t) => !titles.has(t)), ["Goodput"]);
  });
});
