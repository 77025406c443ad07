// seriesOrderKey against the order it stands for: Prometheus's labels.Compare on the label sets
// sorted by name (model/labels, prometheus d15adb9), over random sets with shared prefixes, repeated
// names, empty values and characters on both sides of the separators.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seriesOrderKey } from "../../../control-plane/src/promql/series-order.js";
import { mulberry32 } from "../../support/mulberry32.js";

/** labels.Compare on two sets of [name, value] pairs, each already sorted by name. */
function compare(a: [string, string][], b: [string, string][]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i]![0] !== b[i]![0]) return a[i]![0] < b[i]![0] ? -1 : 1;
    if (a[i]![1] !== b[i]![1]) return a[i]![1] < b[i]![1] ? -1 : 1;
  }
  return a.length - b.length;
}

/** The set's pairs in name order; pairs of one name keep their order in the set (a stable sort). */
function byName(labels: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < labels.length; i += 2) pairs.push([labels[i]!, labels[i + 1]!]);
  return pairs.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
}

test("seriesOrderKey sorts label sets as labels.Compare does, and tells apart sets that differ in any name, value or pair order", () => {
  const next = mulberry32(29);
  const random = (n: number): number => Math.floor(next() * n);
  const alphabet = ["", "a", "ab", "b", "le", "route", "z", "\u00ff", "a\u0002", "\u00e9"];
  const sets: string[][] = [];
  for (let i = 0; i < 400; i++) {
    const labels: string[] = [];
    const pairs = random(70) === 0 ? 40 + random(60) : random(7);
    for (let k = 0; k < pairs; k++) labels.push(alphabet[random(alphabet.length)]!, alphabet[random(alphabet.length)]!);
    sets.push(labels);
  }
  const keys = sets.map(seriesOrderKey);
  for (let i = 0; i < sets.length; i++) {
    for (let j = 0; j < sets.length; j++) {
      const want = Math.sign(compare(byName(sets[i]!), byName(sets[j]!)));
      const got = keys[i]! < keys[j]! ? -1 : keys[i]! > keys[j]! ? 1 : 0;
      assert.equal(got, want, `${JSON.stringify(sets[i])} vs ${JSON.stringify(sets[j])}`);
    }
  }
});
