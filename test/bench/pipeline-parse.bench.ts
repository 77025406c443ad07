// Text-format parsing: tokentrace's scanner against npm parse-prometheus-text-format on the same
// 50k-line mixed scrape (Envoy + dcgm-exporter + vLLM), same process, same run.
import { createRequire } from "node:module";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { mixedScrape } from "../fixtures/pipeline/mixed-scrape.js";
import type { BenchRow } from "./table.js";

// The peer ships no types; load it through require with the one signature used here.
const parsePrometheusTextFormat = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => unknown;

function bestMs(fn: () => unknown, rounds: number): number {
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

export async function run(): Promise<BenchRow[]> {
  const text = mixedScrape(50_000);
  const lines = text.split("\n").length - 1;
  const ours = parseText(text);
  if (ours.errors.length > 0) throw new Error(`fixture scrape has parse errors: ${JSON.stringify(ours.errors[0])}`);
  // Warm both up so the JIT has compiled them before timing.
  bestMs(() => parseText(text), 3);
  bestMs(() => parsePrometheusTextFormat(text), 3);
  const oursMs = bestMs(() => parseText(text), 10);
  const peerMs = bestMs(() => parsePrometheusTextFormat(text), 10);
  const ratio = peerMs / oursMs;
  return [
    {
      figure: `text parse, mixed scrape ${lines} lines (${ours.samples.length} samples)`,
      value: oursMs,
      unit: "ms",
      baseline: { name: "parse-prometheus-text-format", value: peerMs },
      ratio,
      bar: "peer/ours >= 3",
      pass: ratio >= 3,
    },
  ];
}
