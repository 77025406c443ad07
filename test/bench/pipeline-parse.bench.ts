// Text-format parsing: tokentrace's scanner against npm parse-prometheus-text-format on the same
// 50k-line mixed scrape (Envoy + dcgm-exporter + vLLM), same process, same run.
import { createRequire } from "node:module";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { mixedScrape } from "../fixtures/pipeline/mixed-scrape.js";
import type { BenchRow } from "./table.js";

// The peer ships no types; load it through require with the one signature used here.
const parsePrometheusTextFormat = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => unknown;

/** Best time of each side over `rounds` alternating runs, so a load spike on the shared machine hits both alike. */
function interleavedBestMs(a: () => unknown, b: () => unknown, rounds: number): [number, number] {
  let bestA = Infinity;
  let bestB = Infinity;
  for (let r = 0; r < rounds; r++) {
    let t0 = performance.now();
    a();
    bestA = Math.min(bestA, performance.now() - t0);
    t0 = performance.now();
    b();
    bestB = Math.min(bestB, performance.now() - t0);
  }
  return [bestA, bestB];
}

export async function run(): Promise<BenchRow[]> {
  const text = mixedScrape(50_000);
  const lines = text.split("\n").length - 1;
  const ours = parseText(text);
  if (ours.errors.length > 0) throw new Error(`fixture scrape has parse errors: ${JSON.stringify(ours.errors[0])}`);
  // The first rounds warm both up (JIT); the best of 15 alternating rounds is reported.
  const [oursMs, peerMs] = interleavedBestMs(() => parseText(text), () => parsePrometheusTextFormat(text), 15);
  const ratio = peerMs / oursMs;
  return [
    {
      figure: `text parse, mixed scrape ${lines} lines (${ours.samples.length} samples)`,
      value: oursMs,
      unit: "ms",
      baseline: { name: "parse-prometheus-text-format", value: peerMs },
      ratio: { value: ratio, of: "peer/ours time", better: "higher" },
      bar: { on: "ratio", min: 3 },
    },
  ];
}
