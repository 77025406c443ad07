// The alert rules the demo's Prometheus evaluates: the very expressions of
// istio/observability/prometheus-rules.yaml and gpu-health-rules.yaml (PrometheusRules; their
// spec.groups are Prometheus rule groups), evaluated every few seconds and with each `for` shortened
// by the same factor (DEMO_FOR_FACTOR), so a scenario's alert goes pending, then fires within a
// minute instead of after the 10 to 15 minutes production asks for, and a one-evaluation blip does not fire.
// Beside them, the groups of recording-rules.yaml that have no pipeline twin (DEMO_RECORDING_GROUPS).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";

export const RULES_FILE = fileURLToPath(new URL("../../istio/observability/prometheus-rules.yaml", import.meta.url));
export const GPU_RULES_FILE = fileURLToPath(new URL("../../istio/observability/gpu-health-rules.yaml", import.meta.url));
/** Every alert rule file of istio/observability/ (recording-rules.yaml is the alternative to the pipeline, not loaded beside it but for DEMO_RECORDING_GROUPS). */
export const ALERT_RULE_FILES = [RULES_FILE, GPU_RULES_FILE];
export const RECORDING_RULES_FILE = fileURLToPath(new URL("../../istio/observability/recording-rules.yaml", import.meta.url));
/**
 * Groups of recording-rules.yaml the demo's Prometheus evaluates beside the pipeline: those with no
 * pipeline twin, whose records are queries of series the pipeline forwards as scraped, so nothing is
 * recorded twice (and a record's name, with two colons, cannot take a pipeline series' name).
 * docs/demo.md's "Why is P99 slow?" reads tokentrace.length-classes.
 */
export const DEMO_RECORDING_GROUPS: readonly string[] = ["tokentrace.length-classes"];

/** A rule file's text; `groups`: only these of its groups (each must be there), else all. */
export interface RuleSource {
  file: string;
  text: string;
  groups?: readonly string[];
}

/** What the demo's Prometheus evaluates: the alert files whole, and recording-rules.yaml's DEMO_RECORDING_GROUPS. */
export function demoRuleSources(): RuleSource[] {
  return [...ALERT_RULE_FILES.map((file) => ({ file, text: readFileSync(file, "utf8") })), { file: RECORDING_RULES_FILE, text: readFileSync(RECORDING_RULES_FILE, "utf8"), groups: DEMO_RECORDING_GROUPS }];
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  keep_firing_for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The groups of every PrometheusRule document in `text` (only `wanted` ones when given); throws when there are none or one wanted is missing. */
function groupsOf(file: string, text: string, wanted?: readonly string[]): { name: string; rules: Rule[] }[] {
  const groups = parseAllDocuments(text).flatMap((d) => (d.toJS() as { spec?: { groups?: { name: string; rules: Rule[] }[] } }).spec?.groups ?? []);
  if (groups.length === 0) throw new Error(`${file}: no spec.groups`);
  if (wanted === undefined) return groups;
  for (const name of wanted) if (!groups.some((g) => g.name === name)) throw new Error(`${file}: no group ${name}`);
  return groups.filter((g) => wanted.includes(g.name));
}

/**
 * How much shorter the demo's `for` is than production's: a minute becomes a second, so 10m, 15m
 * and 30m become 10 s, 15 s and 30 s. The order and ratios of the rules' waits stay (the critical
 * three-signal alert waits 10 s, its two-signal relatives 15 s, the signal-less one 30 s), and the
 * scenarios' alerts (10 s or 15 s) hold for 3 to 4 of the demo's 5 s evaluations before they fire,
 * which fits the bar (a story on the page within 90 s: about 30 to 45 s for the signals to
 * show through the 30 s rate window, then the wait). A factor of 10, the ratio of the rate windows
 * (5 min to 30 s), would make them 60 to 90 s and miss that bar.
 */
export const DEMO_FOR_FACTOR = 60;

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };

/** Milliseconds of a Prometheus duration ("10m", "1h30m", "500ms"); throws on anything else. */
export function durationMs(text: string): number {
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) throw new Error(`not a Prometheus duration: ${JSON.stringify(text)}`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * DURATION_UNITS_MS[p[2]!]!, 0);
}

/** `text` divided by `factor`, as a Prometheus duration in whole seconds, or milliseconds when not whole. */
export function shortenedFor(text: string, factor = DEMO_FOR_FACTOR): string {
  const ms = Math.round(durationMs(text) / factor);
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * Whether a `prometheus --version` text names a Prometheus that reads `keep_firing_for` (2.42.0 and
 * later: the field came with 2.42.0; Debian's 2.42.0+ds promtool accepts it, measured).
 */
export function readsKeepFiringFor(versionText: string): boolean {
  const m = /version (\d+)\.(\d+)\./.exec(versionText);
  return m !== null && (Number(m[1]) > 2 || (Number(m[1]) === 2 && Number(m[2]) >= 42));
}

/**
 * The rule file text for the demo: every group of `files` (the alert PrometheusRules by default; the
 * demo passes demoRuleSources()), `interval` set, each `for` divided by `forFactor` and, with
 * `keepFiring`, the same shortened wait as `keep_firing_for`.
 * Production's 5-minute windows smooth what the demo's 30 s windows of one small simulated engine do
 * not: its GPU's one-second samples swing a few points around the 85% and 90% thresholds, so an
 * alert that fired would resolve on one low 5 s evaluation and go pending again (measured: the
 * kv-cache-pressure alert firing at 32 s, inactive at 67 s, firing again at 83 s). keep_firing_for
 * holds a fired alert through a dip shorter than its wait; the production rules are left as they are.
 */
export function demoRuleFile(
  evaluationInterval = "5s",
  files: readonly RuleSource[] = ALERT_RULE_FILES.map((file) => ({ file, text: readFileSync(file, "utf8") })),
  forFactor = DEMO_FOR_FACTOR,
  keepFiring = true,
): string {
  const demoRule = (rule: Rule): Rule => {
    if (rule.for === undefined) return rule;
    const wait = shortenedFor(rule.for, forFactor);
    return keepFiring ? { ...rule, for: wait, keep_firing_for: wait } : { ...rule, for: wait };
  };
  return stringify({
    groups: files.flatMap(({ file, text, groups }) => groupsOf(file, text, groups)).map((g) => ({ name: g.name, interval: evaluationInterval, rules: g.rules.map(demoRule) })),
  });
}

/** Names of the alerts Prometheus reports firing (GET /api/v1/alerts). */
export async function firingAlerts(prometheusUrl: string): Promise<string[]> {
  const body = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: { labels: { alertname: string }; state: string }[] } };
  return [...new Set(body.data.alerts.filter((a) => a.state === "firing").map((a) => a.labels.alertname))].sort();
}
