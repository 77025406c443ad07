// `make bench`: runs every test/bench/**/*.bench.ts (each exports `run(): Promise<BenchRow[]>`) in one
// process, one after another so they do not compete for the two cores, each several times
// (BENCH_RUNS, default 5; a module may lower it with `export const runs`), and prints one table
// of medians and spreads. Every bar is decided at the median, so one noisy run cannot fail it.
// Exits non-zero when a bar is missed at the median.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { renderTable, summarise, type BenchRow, type Benchmark, type SummaryRow } from "./table.js";

const root = fileURLToPath(new URL(".", import.meta.url));
const only = process.argv.slice(2);
const defaultRuns = Number(process.env.BENCH_RUNS ?? "5");
if (!Number.isInteger(defaultRuns) || defaultRuns < 1) throw new Error(`BENCH_RUNS must be a positive integer, got ${process.env.BENCH_RUNS}`);

function findBenches(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? findBenches(join(dir, e.name)) : e.name.endsWith(".bench.ts") ? [join(dir, e.name)] : [],
  );
}

const summaries: SummaryRow[] = [];
for (const file of findBenches(root).sort()) {
  const name = relative(root, file);
  if (only.length > 0 && !only.some((o) => name.includes(o))) continue;
  const mod = (await import(pathToFileURL(file).href)) as { run: Benchmark; runs?: number };
  const runs = Math.min(defaultRuns, mod.runs ?? defaultRuns);
  const results: BenchRow[][] = [];
  for (let i = 0; i < runs; i++) {
    console.error(`running ${name} (${i + 1}/${runs}) ...`);
    results.push(await mod.run());
  }
  summaries.push(...summarise(results));
}
console.log(renderTable(summaries));
if (summaries.some((r) => r.pass === false)) process.exitCode = 1;
