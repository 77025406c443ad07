// What the pipeline hands the dashboard for one sidecar scrape, as the dashboard tests build it:
// the /stats/prometheus text parsed (it must parse cleanly) into remote-write series at one
// timestamp, and the target of a demo pod.
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
