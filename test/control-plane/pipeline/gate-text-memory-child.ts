// Run by gate-text-memory.test.ts as `node --expose-gc`: the series gate fed `reports` reports of
// `sources` sources, each source's series parsed from a text of its own carrying `fillerBytes` of
// comment, with label names of the source's own (so each source lays its series out anew). The text
// parser slices names out of that text, and V8 holds a slice of 13 characters or more as a view of
// its whole parent: a name the gate keeps as it came keeps the source's text. Prints, as JSON, what
// the heap grew by per source.
import { SeriesGate } from "../../../control-plane/src/pipeline/series-gate.js";
import { SeriesRegistry } from "../../../control-plane/src/remote-write/series-registry.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { heldBytes } from "../heap.js";

const [sources, reports, fillerBytes] = process.argv.slice(2).map(Number) as [number, number, number];
const gate = new SeriesGate(new SeriesRegistry(1), 100_000);

function feed(source: number, k: number): void {
  // Enough series that what the gate rightly holds for them stands well above the heap's noise.
  const lines = Array.from({ length: 50 }, (_, i) => `tokentrace_requests_total{route_of_source_${source}="r${i}",status_class_of_source_${source}="2xx"} ${k}`);
  const parsed = parseText(`${lines.join("\n")}\n# ${"x".repeat(fillerBytes)}\n`);
  const series = parsed.samples.map((s) => ({ labels: [...s.labels, "__name__", s.name], samples: [{ value: s.value, timestampMs: k }] }));
  gate.pass(`source-${source}`, series, k);
}

// A warm-up source first (compiled code, the gate's first allocations).
for (let k = 0; k < reports; k++) feed(1000, k);
const before = heldBytes();
for (let k = 0; k < reports; k++) for (let p = 0; p < sources; p++) feed(p, k);
process.stdout.write(JSON.stringify({ perUnit: (heldBytes() - before) / sources }));
