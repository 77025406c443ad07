import { median } from "./measure.js";

/** A bar on a row's median value or median ratio: at most `max` and/or at least `min`. */
export interface Bar {
  on: "value" | "ratio";
  max?: number;
  min?: number;
}

/** A ratio measured in the same run, and which way it reads. */
export interface Ratio {
  value: number;
  /** What is divided by what, e.g. "filter/noop" or "peer/ours". */
  of: string;
  better: "higher" | "lower";
}

/** One figure of one run of a benchmark: a measured value beside its baseline or peer, and its bar. */
export interface BenchRow {
  /** What was measured, e.g. "filter per-request cost (headers only)". Rows are matched across runs by it. */
  figure: string;
  /** The measured value, with its unit in `unit`. */
  value: number;
  unit: string;
  /** The side-by-side comparison measured in the same run, if any (same unit). */
  baseline?: { name: string; value: number };
  ratio?: Ratio;
  /** Decided on the median of the runs; a row without a bar is reported only. */
  bar?: Bar;
}

/** A benchmark module exports `run()`; `test/bench/run.ts` collects every `*.bench.ts`. */
export type Benchmark = () => Promise<BenchRow[]>;

/** One figure over every run: medians, spread, and the bar decided at the median. */
export interface SummaryRow {
  figure: string;
  unit: string;
  runs: number;
  value: number;
  min: number;
  max: number;
  baseline?: { name: string; value: number };
  ratio?: Ratio & { min: number; max: number };
  bar?: Bar;
  pass?: boolean;
}

/** Whether `x` meets the bar. */
export function meets(bar: Bar, x: number): boolean {
  return (bar.max === undefined || x <= bar.max) && (bar.min === undefined || x >= bar.min);
}

/** Folds the rows of several runs of one benchmark into one row per figure, in first-run order. */
export function summarise(runs: readonly BenchRow[][]): SummaryRow[] {
  const byFigure = new Map<string, BenchRow[]>();
  for (const rows of runs) {
    for (const r of rows) {
      const seen = byFigure.get(r.figure);
      if (seen) seen.push(r);
      else byFigure.set(r.figure, [r]);
    }
  }
  return [...byFigure.values()].map((rows) => {
    const first = rows[0]!;
    const values = rows.map((r) => r.value);
    const out: SummaryRow = { figure: first.figure, unit: first.unit, runs: rows.length, value: median(values), min: Math.min(...values), max: Math.max(...values) };
    const baselines = rows.flatMap((r) => (r.baseline ? [r.baseline.value] : []));
    if (first.baseline && baselines.length > 0) out.baseline = { name: first.baseline.name, value: median(baselines) };
    const ratios = rows.flatMap((r) => (r.ratio ? [r.ratio.value] : []));
    if (first.ratio && ratios.length > 0) out.ratio = { ...first.ratio, value: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
    if (first.bar) {
      out.bar = first.bar;
      const at = first.bar.on === "value" ? out.value : out.ratio?.value;
      out.pass = at !== undefined && meets(first.bar, at);
    }
    return out;
  });
}

const fmt = (n: number): string =>
  Number.isInteger(n) ? String(n) : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3);

/** The bar as text, e.g. "ratio <= 2.5" or "value >= 200 MB/s". */
export function barText(bar: Bar, unit: string): string {
  const what = bar.on === "ratio" ? "ratio" : "";
  const u = bar.on === "value" ? ` ${unit}` : "";
  const parts: string[] = [];
  if (bar.min !== undefined) parts.push(`>= ${fmt(bar.min)}${u}`);
  if (bar.max !== undefined) parts.push(`<= ${fmt(bar.max)}${u}`);
  return `${what ? `${what} ` : ""}${parts.join(" and ")}`;
}

const WIDTH = 120;

/** Lays `parts` out on lines of at most `width` columns, joined by `sep`; a part wider than a line is split at spaces. */
function wrap(parts: readonly string[], width: number, sep: string): string[] {
  const out: string[] = [];
  let line = "";
  for (const part of parts.flatMap((p) => (p.length > width ? wrap(p.split(" ").filter(Boolean), width, " ") : [p]))) {
    if (line && line.length + sep.length + part.length > width) {
      out.push(line);
      line = part;
    } else line = line ? `${line}${sep}${part}` : part;
  }
  if (line) out.push(line);
  return out;
}

/**
 * Renders summaries as text at most 120 columns wide: the figure on its own line(s), then one
 * indented line with the median, the spread over the runs, the peer, the ratio (and which way it
 * reads), the bar and the result.
 */
export function renderTable(rows: readonly SummaryRow[]): string {
  const lines: string[] = [];
  for (const r of rows) {
    lines.push(...wrap(r.figure.split(" ").filter(Boolean), WIDTH, " "));
    const cells = [`median ${fmt(r.value)} ${r.unit}`];
    if (r.runs > 1) cells.push(`spread ${fmt(r.min)}..${fmt(r.max)} over ${r.runs} runs`);
    if (r.baseline) cells.push(`${r.baseline.name} ${fmt(r.baseline.value)} ${r.unit}`);
    if (r.ratio) {
      const spread = r.runs > 1 ? ` (${fmt(r.ratio.min)}..${fmt(r.ratio.max)})` : "";
      cells.push(`${r.ratio.of} ${fmt(r.ratio.value)}${spread}, ${r.ratio.better} is better`);
    }
    cells.push(r.bar ? `bar ${barText(r.bar, r.unit)}: ${r.pass ? "PASS" : "FAIL"}` : "report");
    lines.push(...wrap(cells, WIDTH - 4, " | ").map((l) => `    ${l}`));
  }
  return lines.join("\n");
}
