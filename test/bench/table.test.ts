import { test } from "node:test";
import assert from "node:assert/strict";
import { renderTable, summarise, type BenchRow } from "./table.js";

const run = (value: number, ratio: number): BenchRow[] => [
  { figure: "per-request cost", value, unit: "µs", baseline: { name: "noop", value: 2 }, ratio: { value: ratio, of: "filter/noop", better: "lower" }, bar: { on: "ratio", max: 2.5 } },
  { figure: "size", value: 60, unit: "KiB", bar: { on: "value", max: 64 } },
];

test("a bar is decided at the median of the runs, so one noisy run does not fail it", () => {
  const rows = summarise([run(5, 2.4), run(9, 4.5), run(5.2, 2.45), run(4.8, 2.3), run(5.1, 2.42)]);
  assert.equal(rows[0]!.value, 5.1);
  assert.equal(rows[0]!.ratio!.value, 2.42);
  assert.deepEqual([rows[0]!.ratio!.min, rows[0]!.ratio!.max], [2.3, 4.5]);
  assert.equal(rows[0]!.pass, true);
  assert.equal(rows[1]!.pass, true);
});

test("a bar missed at the median fails, whatever the best run was", () => {
  const rows = summarise([run(5, 2.6), run(5, 2.1), run(5, 2.7)]);
  assert.equal(rows[0]!.pass, false);
});

test("the table fits 120 columns and every ratio says which way is better", () => {
  const long = "a figure with a long description ".repeat(8);
  const text = renderTable(summarise([[{ ...run(5, 2.4)[0]!, figure: long }], [{ ...run(5, 2.4)[0]!, figure: long }]]));
  for (const line of text.split("\n")) assert.ok(line.length <= 120, `${line.length} columns: ${line}`);
  assert.match(text, /filter\/noop 2\.40 \(2\.40\.\.2\.40\), lower is better/);
  assert.match(text, /bar ratio <= 2\.50: PASS/);
});
