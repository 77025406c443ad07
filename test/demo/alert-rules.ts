// The alert rules the demo's Prometheus evaluates: the very expressions of
// istio/observability/prometheus-rules.yaml and gpu-health-rules.yaml (PrometheusRules; their
// spec.groups are Prometheus rule groups), evaluated every few seconds and with `for` dropped, so a
// scenario's alert fires within a minute instead of after the 10 to 15 minutes production asks for.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";

export const RULES_FILE = fileURLToPath(new URL("../../istio/observability/prometheus-rules.yaml", import.meta.url));
export const GPU_RULES_FILE = fileURLToPath(new URL("../../istio/observability/gpu-health-rules.yaml", import.meta.url));
/** Every alert rule file of istio/observability/ (recording-rules.yaml is the alternative to the pipeline, not loaded beside it). */
export const ALERT_RULE_FILES = [RULES_FILE, GPU_RULES_FILE];

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The groups of every PrometheusRule document in `text`; throws when there are none. */
function groupsOf(file: string, text: string): { name: string; rules: Rule[] }[] {
  const groups = parseAllDocuments(text).flatMap((d) => (d.toJS() as { spec?: { groups?: { name: string; rules: Rule[] }[] } }).spec?.groups ?? []);
  if (groups.length === 0) throw new Error(`${file}: no spec.groups`);
  return groups;
}

/** The rule file text for the demo: every group of the PrometheusRules, `interval` set, `for` removed. */
export function demoRuleFile(evaluationInterval = "5s", files: readonly { file: string; text: string }[] = ALERT_RULE_FILES.map((file) => ({ file, text: readFileSync(file, "utf8") }))): string {
  return stringify({
    groups: files.flatMap(({ file, text }) => groupsOf(file, text)).map((g) => ({
      name: g.name,
      interval: evaluationInterval,
      rules: g.rules.map(({ for: _for, ...rule }) => rule),
    })),
  });
}

/** Names of the alerts Prometheus reports firing (GET /api/v1/alerts). */
export async function firingAlerts(prometheusUrl: string): Promise<string[]> {
  const body = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: { labels: { alertname: string }; state: string }[] } };
  return [...new Set(body.data.alerts.filter((a) => a.state === "firing").map((a) => a.labels.alertname))].sort();
}
