// Run by series-memory.test.ts as `node --expose-gc`: feeds one DashboardSeries `intervals` scrapes
// of one sidecar of a given shape and prints, as JSON, what the heap and the array buffers grew by
// per interval beside the series' own estimate (intervalBytes) per interval; optionally with failed
// calls of `errorTypes` error types per model, and each histogram split into `classes` length
// classes that all grow every interval (1: the class shares the histogram's counts); with
// `longNames` 1, model names as long as real ones (a label value of 13 characters or more is a view
// of the scraped text, which an interval must not keep); with `step`, every bucket grows by that
// much more per interval (past 255, 65,535 or 2^32 - 1 the interval's counts take 2, 4 or 8 bytes).
import { DashboardSeries, DEFAULT_LIMITS } from "../../../control-plane/src/dashboard/series.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { heldBytes } from "../heap.js";

const [intervals, models, buckets, keeps, errorTypes = 0, classes = 0, longNames = 0, step = 1] = process.argv.slice(2).map(Number) as [number, number, number, number, number?, number?, number?, number?];
const modelName = (m: number): string => (longNames === 1 ? `meta-llama/Llama-3.1-8B-Instruct-${m}` : `m${m}`);
const bounds = [...Array.from({ length: buckets - 1 }, (_, i) => String(5 * (i + 1))), "+Inf"];

function text(k: number): string {
  const lines: string[] = [];
  for (const cls of ["2xx", "4xx", "5xx", "none"]) lines.push(`tokentrace_requests_total{route="chat",status_class="${cls}"} ${k * 10}`);
  if (keeps === 1) for (const reason of ["head", "forced", "slow", "error"]) lines.push(`tokentrace_spans_kept_total{route="chat",keep_reason="${reason}"} ${k}`);
  for (let m = 0; m < models; m++) {
    for (const h of ["ttft", "decode", "duration"]) {
      const tag = h === "ttft" ? "input_length" : "output_length";
      const split = classes === 0 ? [""] : Array.from({ length: classes }, (_, c) => `,${tag}="le${64 << c}"`);
      for (const cls of split) bounds.forEach((le, i) => lines.push(`tokentrace_llm_${h}_ms_bucket{route="chat",model="${modelName(m)}",le="${le}"${cls}} ${k * step * (i + 1)}`));
    }
    lines.push(`tokentrace_llm_requests_total{route="chat",model="${modelName(m)}"} ${k * buckets}`);
    // Failed calls of every error type in every interval: an interval holds the most it can for them.
    for (let e = 0; e < errorTypes; e++) lines.push(`tokentrace_llm_requests_total{route="chat",model="${modelName(m)}",error_type="${e === 0 ? "reset_before_response" : String(500 + e)}"} ${k}`);
  }
  return `${lines.join("\n")}\n`;
}

const batch = (k: number): WriteSeries[] => parseText(text(k)).samples.map((s) => ({ labels: ["__name__", s.name, ...s.labels], samples: [{ value: s.value, timestampMs: 0 }] }));
const d = new DashboardSeries({ ...DEFAULT_LIMITS, retentionMs: Number.MAX_SAFE_INTEGER, maxIntervalsPerRoute: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER });
const source = (k: number) => ({ target: { id: "envoy/ns/p", kind: "envoy", namespace: "ns", pod: "p" }, timestampMs: 1_000_000 + k * 2000 });
// Each batch is garbage once taken: the growth is what the series keeps.
d.observe(batch(0), source(0));
const before = heldBytes();
for (let k = 1; k <= intervals; k++) d.observe(batch(k), source(k));
const after = heldBytes();
process.stdout.write(JSON.stringify({ held: d.intervals({ namespace: "ns", route: "chat" }).length, measuredPerInterval: (after - before) / intervals, estimatedPerInterval: d.bytes / intervals }));
