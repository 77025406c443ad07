// gen_ai.client.token.usage (open-telemetry/semantic-conventions-genai@004902b8 model/gen-ai/metrics.yaml:
// a histogram of tokens per call, unit {token}, attribute gen_ai.token.type `input` or `output`) as its
// Prometheus translation gen_ai_client_token_usage (a unit in braces adds no suffix:
// opentelemetry-specification@01704f14 specification/compatibility/prometheus_and_openmetrics.md), made
// from the filter's stats of each sidecar scrape with no per-call histogram of its own:
// - the counts per bucket from the length classes: the calls per input class
//   (tokentrace_llm_prompts_total{input_length}) and per output class (the _count of
//   tokentrace_llm_duration_ms{output_length}, recorded for every LLM call). Class `le<b>` holds the
//   calls with at most b tokens and more than the boundary before, so the bucket `le="b"` is the sum of
//   the le classes up to b; `gt<b>` adds to +Inf only; `unknown` (no usage reported) is no observation;
// - the _sum from tokentrace_llm_input_tokens_total and _output_tokens_total, the same calls' tokens.
// The boundaries are therefore the classes' (default 512/2048/8192 in, 64/256/1024 out; the output ones
// are three of the conventions' advisory powers of four), not the advisory fourteen, which the
// conventions leave to the instrumentation; quantiles over them are as coarse as the classes, _sum and
// _count are exact. A bucket appears once its class has seen a call, as the filter defines a class's
// series on first use. After a change of boundaries the old classes stay with Envoy and count at their
// own bounds: the buckets stay cumulative, a lower one may miss calls the old classes hold.
import { labelValue, type Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { podLabelsOf, type PodIdentity } from "../identity.js";
import { seriesOrderKey } from "../../promql/series-order.js";
import type { Derivation } from "./derivation.js";
import { genAiBaseLabels, genAiConstantLabels, type GenAiOptions } from "./genai.js";

/** Classes kept per (pair, token type): three boundaries, one past them, and room for a change of boundaries. */
const MAX_CLASSES = 16;
const CLASS = /^(le|gt)([1-9]\d{0,7})$/;

type TokenType = "input" | "output";

/** Where a scraped series feeds the histogram of its pair: a class count, or the token sum. */
const SOURCES = new Map<string, { type: TokenType; classLabel?: string }>([
  ["tokentrace_llm_prompts_total", { type: "input", classLabel: "input_length" }],
  ["tokentrace_llm_duration_ms_count", { type: "output", classLabel: "output_length" }],
  ["tokentrace_llm_input_tokens_total", { type: "input" }],
  ["tokentrace_llm_output_tokens_total", { type: "output" }],
]);

/** One (pair, token type)'s histogram as the scrape gives it. */
interface Usage {
  base: Labels;
  timestampMs: number;
  /** Calls with at most `bound` tokens of each le class, by bound. */
  le: Map<number, number>;
  /** Calls past the last boundary (gt classes). */
  beyond: number;
  tokens: number;
}

/** gen_ai_client_token_usage_{bucket,sum,count} by gen_ai_token_type. */
export class GenAiTokenUsage implements Derivation {
  private readonly constantLabels: Labels;

  constructor(options: GenAiOptions = {}) {
    this.constantLabels = genAiConstantLabels(options);
  }

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    let podLabels: Labels | undefined;
    const usages = new Map<string, Usage>();
    for (const s of r.samples) {
      const source = SOURCES.get(s.name);
      if (source === undefined || !Number.isFinite(s.value) || s.value < 0) continue;
      let bound = 0;
      let beyond = false;
      if (source.classLabel !== undefined) {
        const m = CLASS.exec(labelValue(s.labels, source.classLabel) ?? "");
        if (m === null) continue; // `unknown`, a class-less series, or not a class the filter writes
        bound = Number(m[2]);
        beyond = m[1] === "gt";
      }
      podLabels ??= podLabelsOf(t);
      const base = [...genAiBaseLabels(s.labels, podLabels, this.constantLabels), "gen_ai_token_type", source.type];
      const key = seriesOrderKey(base);
      let u = usages.get(key);
      if (u === undefined) {
        u = { base, timestampMs: s.timestampMs ?? r.timestampMs, le: new Map(), beyond: 0, tokens: 0 };
        usages.set(key, u);
      }
      if (source.classLabel === undefined) u.tokens += s.value;
      else if (beyond) u.beyond += s.value;
      else if (u.le.has(bound)) u.le.set(bound, u.le.get(bound)! + s.value);
      else if (u.le.size < MAX_CLASSES) u.le.set(bound, s.value);
    }
    for (const u of usages.values()) {
      // A token sum alone (classes off, or no call with usage yet) is no histogram.
      if (u.le.size === 0 && u.beyond === 0) continue;
      const sample = (value: number) => [{ value, timestampMs: u.timestampMs }];
      let cumulative = 0;
      for (const bound of [...u.le.keys()].sort((a, b) => a - b)) {
        cumulative += u.le.get(bound)!;
        out.push({ labels: [...u.base, "__name__", `${C.GENAI_CLIENT_TOKEN_USAGE}_bucket`, "le", String(bound)], samples: sample(cumulative) });
      }
      const count = cumulative + u.beyond;
      out.push({ labels: [...u.base, "__name__", `${C.GENAI_CLIENT_TOKEN_USAGE}_bucket`, "le", "+Inf"], samples: sample(count) });
      out.push({ labels: [...u.base, "__name__", `${C.GENAI_CLIENT_TOKEN_USAGE}_sum`], samples: sample(u.tokens) });
      out.push({ labels: [...u.base, "__name__", `${C.GENAI_CLIENT_TOKEN_USAGE}_count`], samples: sample(count) });
    }
  }
}
