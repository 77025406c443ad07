// The enrichment stage: a scrape's series that are passed on (by name prefix, per target kind),
// with clean labels and the pod's identity (namespace, pod, GPU) taken from the target, never from
// the series.
import type { Labels } from "../scrape/sample.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { WriteSeries } from "../remote-write/series.js";
import { ENGINE_PREFIXES } from "../engine/catalogue.js";
import { enrichedLabels } from "./labels.js";

/** Which scraped series are passed on (by name prefix), per target kind. */
export interface ForwardRules {
  envoy: string[];
  dcgm: string[];
  vllm: string[];
  static: string[];
}

/** Default forwarding: the filter's own series, all of dcgm-exporter (its DCGM fields and its own DCGM_EXP_ counts), the model server's (vLLM, SGLang, TGI). */
export const DEFAULT_FORWARD: ForwardRules = { envoy: ["tokentrace_"], dcgm: ["DCGM_FI_", "DCGM_EXP_"], vllm: [...ENGINE_PREFIXES], static: ["tokentrace_", "DCGM_FI_", "DCGM_EXP_", ...ENGINE_PREFIXES] };

/**
 * The series of a report made by enrich: the first `count`, each with every pair of `labels` set over
 * its own. enrichedLabels keeps one pair per name, so each has one pair of each name of `labels`, with
 * `labels`' last value of that name: the series gate counts on both.
 */
export interface Enriched {
  count: number;
  labels: Labels;
}

/** Appends the series of `r` its kind forwards, each with `extra` labels set (replacing the series' own). */
export function enrich(r: ScrapeResult, rules: ForwardRules, extra: Labels, out: WriteSeries[]): void {
  const prefixes = rules[r.target.kind];
  for (const s of r.samples) {
    if (!forwarded(s.name, prefixes)) continue;
    out.push({ labels: enrichedLabels(s.labels, extra, s.name), samples: [{ value: s.value, timestampMs: s.timestampMs ?? r.timestampMs }] });
  }
}

/** Whether a series named `name` is passed on: its name starts with one of `prefixes`. */
function forwarded(name: string, prefixes: readonly string[]): boolean {
  for (let i = 0; i < prefixes.length; i++) if (name.startsWith(prefixes[i]!)) return true;
  return false;
}
