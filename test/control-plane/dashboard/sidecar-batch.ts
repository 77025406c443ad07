// What the pipeline hands the dashboard for one sidecar scrape, as the dashboard tests build it:
// the /stats/prometheus text parsed (it must parse cleanly) into remote-write series at one
// timestamp, the target of a demo pod, and the latency histograms split by length class.
import assert from "node:assert/strict";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

/** `text` as the series of one scrape at `ts` (ms). */
export function sidecarBatch(text: string, ts: number): WriteSeries[] {
  const parsed = parseText(text);
  assert.deepEqual(parsed.errors, []);
  return parsed.samples.map((s) => ({ labels: [...s.labels, "__name__", s.name], samples: [{ value: s.value, timestampMs: ts }] }));
}

/** The Envoy target of `pod` in namespace demo. */
export const demoTarget = (pod: string) => ({ id: `envoy/demo/${pod}`, kind: "envoy", namespace: "demo", pod });

/** Upper bounds of lengthClassText's buckets (ms), then +Inf. */
export const CLASS_BOUNDS = ["50", "100", "250", "500", "1000", "+Inf"];

/** Cumulative bucket counts (CLASS_BOUNDS order) by length class, of one histogram. */
export type ClassBuckets = Record<string, number[]>;

/**
 * The filter's TTFT (by input_length), decode and duration (by output_length) histograms of one
 * route and model, split by length class, as the sidecar prints them (Istio's tag-extracted form).
 */
export function lengthClassText(route: string, model: string, h: { ttft: ClassBuckets; decode: ClassBuckets; duration: ClassBuckets }): string {
  const lines: string[] = [];
  for (const [name, hist, tag] of [["tokentrace_llm_ttft_ms", "ttft", "input_length"], ["tokentrace_llm_decode_ms", "decode", "output_length"], ["tokentrace_llm_duration_ms", "duration", "output_length"]] as const) {
    lines.push(`# TYPE ${name} histogram`);
    for (const [cls, counts] of Object.entries(h[hist])) {
      const labels = `route="${route}",model="${model}",${tag}="${cls}"`;
      CLASS_BOUNDS.forEach((le, i) => lines.push(`${name}_bucket{${labels},le="${le}"} ${counts[i]}`));
      lines.push(`${name}_count{${labels}} ${counts[CLASS_BOUNDS.length - 1]}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
