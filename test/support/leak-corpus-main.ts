// `make leak-corpus SEED=… COUNT=… [EXHAUSTIVE=0] [SPREAD=1]`: the leak corpus (leak-corpus.ts) at
// any size through build/filter-content.wasm (leak-runner.ts); prints what it exercised and every
// leak, and exits 1 on any. The in-suite run (test/filter/content/leak-corpus.test.ts) is seed 21,
// 2,000 values, spread and sampled. `make leak-corpus-mutant` runs it against a module built with
// a zero detection margin (WASM=…, EXPECT_LEAKS=1) and exits 1 if it finds no leak.
import { runLeakCorpus } from "./leak-runner.js";

const seed = Number(process.env["SEED"] ?? "21");
const count = Number(process.env["COUNT"] ?? "2600");
const exhaustive = (process.env["EXHAUSTIVE"] ?? "1") !== "0";
const spread = (process.env["SPREAD"] ?? "0") !== "0";
const wasm = process.env["WASM"] || undefined;
const expectLeaks = process.env["EXPECT_LEAKS"] === "1";
if (!Number.isInteger(seed) || !Number.isInteger(count) || count < 1) throw new Error("SEED and COUNT must be integers (COUNT ≥ 1)");

const report = await runLeakCorpus({ seed, count, exhaustive, spread, ...(wasm === undefined ? {} : { wasm }), progress: (line) => console.log(`  ${line}`) });
console.log(`leak corpus: seed ${seed}, ${report.values} values (${Object.entries(report.kinds).map(([k, n]) => `${k} ${n}`).join(", ")})`);
console.log(`  module ${wasm ?? "build/filter-content.wasm"}; ${report.exchanges} exchanges over 5 protocols × placeholders and pseudonyms${spread ? " (each value in one of them)" : ""}, ${report.spans} spans exported, ${report.replaced} replacements`);
console.log(`  ${report.chunkPositions} chunk boundaries inside values, ${report.cutPositions} maxBytes cut positions${exhaustive ? " (every position)" : " (sampled)"}, ${report.seconds.toFixed(1)} s`);
const shown = new Set<string>();
for (const leak of report.leaks) {
  if (shown.has(leak.value)) continue;
  shown.add(leak.value);
  console.log(`  LEAK ${leak.kind} ${JSON.stringify(leak.value)} in ${leak.where} (${leak.protocol}): …${leak.excerpt}…`);
}
console.log(`${report.leaks.length} leaks (${shown.size} distinct values)`);
process.exitCode = (report.leaks.length === 0) !== expectLeaks ? 0 : 1;
if (expectLeaks) console.log(report.leaks.length > 0 ? "the mutant leaks, as it must" : "the mutant leaked nothing: the corpus does not catch a zero detection margin");
