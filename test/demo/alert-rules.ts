// The alert rules the demo's Prometheus evaluates: the very expressions of
// istio/observability/prometheus-rules.yaml (a PrometheusRule; its spec.groups are a Prometheus rule
// file), evaluated every few seconds and with `for` dropped, so a scenario's alert fires within a
// minute instead of after the 10 to 15 minutes production asks for.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";

export const RULES_FILE = fileURLToPath(new URL("../../istio/observability/prometheus-rules.yaml", import.meta.url));

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The rule file text for the demo: every group of the PrometheusRule, `interval` set, `for` removed. */
export function demoRuleFile(evaluationInterval = "5s", text = readFileSync(RULES_FILE, "utf8")): string {
  const doc = parse(text) as { spec?: { groups?: { name: string; rules: Rule[] }[] } };
  const groups = doc.spec?.groups;
  if (!Array.isArray(groups) || groups.length === 0) throw new Error(`${RULES_FILE}: no spec.groups`);
  return stringify({
    groups: groups.map((g) => ({
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
