/** One line of the `make bench` table: a measured figure beside its baseline or peer and its bar. */
export interface BenchRow {
  /** What was measured, e.g. "filter per-request cost (headers only)". */
  figure: string;
  /** The measured value, with its unit in `unit`. */
  value: number;
  unit: string;
  /** The side-by-side comparison measured in the same run, if any. */
  baseline?: { name: string; value: number };
  /** value / baseline.value (or the inverse when `higherIsBetter`), printed as the ratio column. */
  ratio?: number;
  /** The bar as text, e.g. "ratio <= 2.5", and whether this run met it. */
  bar?: string;
  pass?: boolean;
}

/** A benchmark module exports `run()`; `test/bench/run.ts` collects every `*.bench.ts`. */
export type Benchmark = () => Promise<BenchRow[]>;

const fmt = (n: number): string =>
  Number.isInteger(n) ? String(n) : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3);

/** Renders rows as a fixed-width text table. */
export function renderTable(rows: BenchRow[]): string {
  const header = ["figure", "value", "baseline / peer", "ratio", "bar", "result"];
  const body = rows.map((r) => [
    r.figure,
    `${fmt(r.value)} ${r.unit}`,
    r.baseline ? `${r.baseline.name}: ${fmt(r.baseline.value)} ${r.unit}` : "-",
    r.ratio === undefined ? "-" : fmt(r.ratio),
    r.bar ?? "-",
    r.pass === undefined ? "report" : r.pass ? "PASS" : "FAIL",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}
