// Scrape sequences for the engine tests: a fixture's exposition advanced k steps (every counter,
// histogram bucket, count and sum grows by a fixed share of its fixture value per step, rounded, so
// cumulative buckets stay monotone), and the filter's TTFT and decode histograms in Envoy's format.
import { readFileSync } from "node:fs";

export const fixture = (name: string): string => readFileSync(new URL(`../fixtures/pipeline/${name}`, import.meta.url), "utf8");

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/;
const GROWS = /(_total|_bucket|_count|_sum)$/;

/**
 * The fixture after `k` steps: counters and histogram parts grow by `share` of their value per step
 * (integers stay integers); `gauge(name, labels, value)` may change a gauge; `_created` lines stay.
 */
export function advance(text: string, k: number, share = 0.05, gauge?: (name: string, labels: string, value: number) => number): string {
  return text
    .split("\n")
    .map((line) => {
      const m = SAMPLE.exec(line);
      if (!m) return line;
      const [, name, labels = "", raw] = m as unknown as [string, string, string | undefined, string];
      const v = Number(raw);
      if (name.endsWith("_created") || Number.isNaN(v)) return line;
      if (GROWS.test(name)) {
        const step = Number.isInteger(v) ? Math.round(v * share) : Math.round(v * share * 1000) / 1000;
        return `${name}${labels} ${v + k * step}`;
      }
      return gauge ? `${name}${labels} ${gauge(name, labels, v)}` : line;
    })
    .join("\n");
}

/** Replaces label values in every line (e.g. another model_name). */
export function relabel(text: string, from: string, to: string): string {
  return text.split(from).join(to);
}

/** Envoy's default histogram bounds (ms) for the filter's stats. */
export const ENVOY_BOUNDS = [0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000];

/**
 * The filter's stats of one sidecar after `k` steps: per (route, model), TTFT and decode histograms
 * with `per` observations a step spread over the given bounds' buckets (weights per bucket index),
 * and the output-token counter.
 */
export function sidecarText(k: number, routes: { route: string; model: string; ttft: Record<number, number>; decode: Record<number, number>; per: number }[]): string {
  const lines: string[] = [];
  const fmt = (le: number): string => (le >= 1e6 ? le.toExponential().replace(/e\+(\d)$/, "e+0$1") : String(le));
  for (const [name, key] of [["tokentrace_llm_ttft_ms", "ttft"], ["tokentrace_llm_decode_ms", "decode"]] as const) {
    lines.push(`# TYPE ${name} histogram`);
    for (const r of routes) {
      const weights = r[key];
      const total = Object.values(weights).reduce((a, b) => a + b, 0);
      let cum = 0;
      const base = `route="${r.route}",model="${r.model}"`;
      ENVOY_BOUNDS.forEach((le, i) => {
        cum += Math.round((((weights[i] ?? 0) / total) * r.per * (k + 40)));
        lines.push(`${name}_bucket{${base},le="${fmt(le)}"} ${cum}`);
      });
      lines.push(`${name}_bucket{${base},le="+Inf"} ${cum}`);
      lines.push(`${name}_sum{${base}} ${cum * 100}`);
      lines.push(`${name}_count{${base}} ${cum}`);
    }
  }
  lines.push("# TYPE tokentrace_llm_output_tokens_total counter");
  for (const r of routes) lines.push(`tokentrace_llm_output_tokens_total{route="${r.route}",model="${r.model}"} ${(k + 40) * r.per * 50}`);
  return lines.join("\n") + "\n";
}
