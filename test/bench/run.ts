// `make bench`: runs every test/bench/**/*.bench.ts (each exports `run(): Promise<BenchRow[]>`) in one
// process, one after another so they do not compete for the two cores, and prints one table.
// Exits non-zero when a bar is missed.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { renderTable, type BenchRow, type Benchmark } from "./table.js";

const root = fileURLToPath(new URL(".", import.meta.url));
const only = process.argv.slice(2);

function findBenches(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? findBenches(join(dir, e.name)) : e.name.endsWith(".bench.ts") ? [join(dir, e.name)] : [],
  );
}

const rows: BenchRow[] = [];
for (const file of findBenches(root).sort()) {
  const name = relative(root, file);
  if (only.length > 0 && !only.some((o) => name.includes(o))) continue;
  console.error(`running ${name} ...`);
  const mod = (await import(pathToFileURL(file).href)) as { run: Benchmark };
  rows.push(...(await mod.run()));
}
console.log(renderTable(rows));
if (rows.some((r) => r.pass === false)) process.exitCode = 1;
