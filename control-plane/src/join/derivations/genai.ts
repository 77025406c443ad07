// The OpenTelemetry GenAI metrics, as their Prometheus translation, from the filter's histograms of
// each sidecar scrape: so a dashboard built for the GenAI semantic conventions finds its series.
// Names, units and advisory bucket boundaries: open-telemetry/semantic-conventions@953276ff
// docs/gen-ai/gen-ai-metrics.md and model/gen-ai/metrics.yaml (the same four names and attributes in
// open-telemetry/semantic-conventions-genai@004902b8 model/gen-ai/metrics.yaml). Translation:
// opentelemetry-specification@01704f14 specification/compatibility/prometheus_and_openmetrics.md (dots to
// underscores, unit `s` to the suffix `_seconds`, a histogram as _bucket/_sum/_count).
//
// The conversion is exact: a filter histogram is cumulative, so its bucket at a bound that is also
// a GenAI boundary (in the filter's unit: ms or µs) is the GenAI bucket; other filter buckets are
// dropped and a GenAI boundary the mesh's bucket list lacks is not emitted (never interpolated).
// _sum is scaled to seconds, _count and +Inf pass unchanged. The filter's length classes
// (input_length on TTFT, output_length on decode and duration) are summed away: the conventions
// define no such attribute, so a GenAI dashboard sees one series per (route, model) as before.
// Stateless: one pass over the scrape, the label set of a (route, model) built once and shared by
// its buckets.
import { labelValue, type Labels } from "../../scrape/sample.js";
import type { ScrapeResult } from "../../scrape/scraper.js";
import type { WriteSeries } from "../../remote-write/series.js";
import * as C from "../catalogue.js";
import { cleanLabels } from "../labels.js";
import { podLabelsOf, type PodIdentity } from "../identity.js";
import { seriesOrderKey } from "../../promql/series-order.js";
import type { Derivation } from "./derivation.js";

/** The advisory explicit bucket boundaries (s) of the conventions, spelled as the `le` they become. */
export const GENAI_BOUNDARIES = {
  duration: ["0.01", "0.02", "0.04", "0.08", "0.16", "0.32", "0.64", "1.28", "2.56", "5.12", "10.24", "20.48", "40.96", "81.92"],
  ttft: ["0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75", "1", "2.5", "5", "7.5", "10"],
  tpot: ["0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1", "2.5"],
} as const;

/** One filter histogram and the GenAI histogram it becomes. */
interface Conversion {
  name: string;
  /** Filter units per second (1000 for ms, 1e6 for µs). */
  perSecond: number;
  /** Filter bound (in its unit, as a number) -> GenAI `le`. */
  bounds: Map<number, string>;
  /** Filter `le` as scraped -> GenAI `le`, or null when it is no GenAI boundary (memo of `bounds`). */
  leMemo: Map<string, string | null>;
}

function conversion(name: string, perSecond: number, boundaries: readonly string[]): Conversion {
  // Rounded: 0.01 * 1000 is 10 only once rounded; every boundary is a whole number of ms or µs.
  return { name, perSecond, bounds: new Map(boundaries.map((b) => [Math.round(Number(b) * perSecond), b])), leMemo: new Map([["+Inf", "+Inf"]]) };
}

type Part = "bucket" | "sum" | "count";

/** The filter's length-class tags (filter/telemetry/metrics.ts TAG_INPUT_LENGTH, TAG_OUTPUT_LENGTH): summed over, never passed on. */
export const LENGTH_CLASS_LABELS: ReadonlySet<string> = new Set(["input_length", "output_length"]);

/** Where the operation and provider come from, for the labels the conventions require. */
export interface GenAiOptions {
  /** gen_ai.provider.name (default "vllm", as the filter's spans.providerName). */
  providerName?: string;
}

/** gen_ai_client_operation_duration_seconds, gen_ai_server_time_to_first_token_seconds, gen_ai_server_time_per_output_token_seconds. */
export class GenAiMetrics implements Derivation {
  /** Scraped series name -> its conversion and part (a Map: indexed by scraped names). */
  private readonly byName = new Map<string, { c: Conversion; part: Part }>();
  private readonly constantLabels: Labels;

  constructor(options: GenAiOptions = {}) {
    const families: [string, Conversion][] = [
      ["tokentrace_llm_duration_ms", conversion(C.GENAI_CLIENT_OPERATION_DURATION, 1000, GENAI_BOUNDARIES.duration)],
      ["tokentrace_llm_ttft_ms", conversion(C.GENAI_SERVER_TIME_TO_FIRST_TOKEN, 1000, GENAI_BOUNDARIES.ttft)],
      ["tokentrace_llm_tpot_us", conversion(C.GENAI_SERVER_TIME_PER_OUTPUT_TOKEN, 1_000_000, GENAI_BOUNDARIES.tpot)],
    ];
    for (const [family, c] of families) {
      this.byName.set(`${family}_bucket`, { c, part: "bucket" });
      this.byName.set(`${family}_sum`, { c, part: "sum" });
      this.byName.set(`${family}_count`, { c, part: "count" });
    }
    this.constantLabels = genAiConstantLabels(options);
  }

  observe(): void {}

  forget(): void {}

  derive(r: ScrapeResult, pod: PodIdentity | undefined, out: WriteSeries[]): void {
    const t = r.target;
    if (!pod || (t.kind !== "envoy" && t.kind !== "static")) return;
    let podLabels: Labels | undefined;
    // The previous sample's labels and the GenAI label set built from them: a histogram's buckets,
    // sum and count come one after another with the same labels but `le`.
    let lastSource: Labels | undefined;
    let lastName: string | undefined;
    let base: Labels = [];
    let baseKey = "";
    // The series emitted so far by identity, and their values in the filter's unit: the classes of
    // one (route, model) add into the first one's series (a _sum is scaled once, after adding).
    const emitted = new Map<string, { sample: { value: number }; raw: number; perSecond: number }>();
    for (const s of r.samples) {
      const hit = this.byName.get(s.name);
      if (hit === undefined) continue;
      const { c, part } = hit;
      let le: string | undefined;
      if (part === "bucket") {
        const raw = labelValue(s.labels, "le");
        if (raw === undefined) continue;
        le = this.genAiLe(c, raw);
        if (le === undefined) continue;
      }
      if (lastName !== c.name || lastSource === undefined || !sameButLe(lastSource, s.labels)) {
        podLabels ??= podLabelsOf(t);
        base = genAiBaseLabels(s.labels, podLabels, this.constantLabels);
        baseKey = seriesOrderKey(base);
        lastSource = s.labels;
        lastName = c.name;
      }
      const key = `${c.name}\xff${part}\xff${le ?? ""}\xff${baseKey}`;
      const known = emitted.get(key);
      if (known !== undefined) {
        known.raw += s.value;
        continue;
      }
      const sample = { value: s.value, timestampMs: s.timestampMs ?? r.timestampMs };
      emitted.set(key, { sample, raw: s.value, perSecond: part === "sum" ? c.perSecond : 1 });
      if (part === "bucket") out.push({ labels: [...base, "__name__", `${c.name}_bucket`, "le", le!], samples: [sample] });
      else if (part === "sum") out.push({ labels: [...base, "__name__", `${c.name}_sum`], samples: [sample] });
      else out.push({ labels: [...base, "__name__", `${c.name}_count`], samples: [sample] });
    }
    for (const e of emitted.values()) e.sample.value = e.raw / e.perSecond;
  }

  /** The GenAI `le` of a filter bucket bound, or undefined when that bound is no GenAI boundary. */
  private genAiLe(c: Conversion, raw: string): string | undefined {
    let le = c.leMemo.get(raw);
    if (le === undefined) {
      le = c.bounds.get(Number(raw)) ?? null;
      // Bounded: a scrape cannot grow the memo past the bucket lists it has seen.
      if (c.leMemo.size < 256) c.leMemo.set(raw, le);
    }
    return le ?? undefined;
  }

}

/** gen_ai_operation_name and gen_ai_provider_name, which the conventions require of every GenAI metric. */
export function genAiConstantLabels(options: GenAiOptions): Labels {
  // The filter's stats carry no protocol: every LLM call is reported as the chat operation.
  return ["gen_ai_operation_name", "chat", "gen_ai_provider_name", options.providerName ?? "vllm"];
}

/** The labels of a GenAI series but its name and `le`: the source's (model renamed, classes summed away), the pod's, the constant ones. */
export function genAiBaseLabels(source: Labels, podLabels: Labels, constantLabels: Labels): Labels {
  const labels: Labels = [];
  const clean = cleanLabels(source);
  for (let i = 0; i < clean.length; i += 2) {
    const n = clean[i]!;
    if (n === "le" || n === "namespace" || n === "pod" || n === "waypoint" || LENGTH_CLASS_LABELS.has(n)) continue;
    labels.push(n === "model" ? "gen_ai_request_model" : n, clean[i + 1]!);
  }
  labels.push(...podLabels, ...constantLabels);
  return labels;
}

/** Whether two label sets are equal but for `le` (in the same order, as one family's lines are). */
function sameButLe(a: Labels, b: Labels): boolean {
  let i = 0;
  let j = 0;
  for (;;) {
    if (i < a.length && a[i] === "le") i += 2;
    if (j < b.length && b[j] === "le") j += 2;
    if (i >= a.length || j >= b.length) return i >= a.length && j >= b.length;
    if (a[i] !== b[j] || a[i + 1] !== b[j + 1]) return false;
    i += 2;
    j += 2;
  }
}
