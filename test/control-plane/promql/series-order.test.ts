// seriesOrderKey against the order it stands for: Prometheus's labels.Compare on the label sets
// sorted by name (model/labels, prometheus d15adb9), over random sets with shared prefixes, repeated
// names, empty values and characters on both sides of the separators.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seriesOrderKey, seriesOrderKeyOf } from "../../../control-plane/src/promql/series-order.js";
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

test("seriesOrderKeyOf is seriesOrderKey of the metric's name and both label lists put together, call after call", () => {
  const next = mulberry32(5);
  const pick = (xs: string[]): string => xs[Math.floor(next() * xs.length)]!;
  const names = ["le", "route", "__name__", "a", "pod", "z"];
  const values = ["", "1", "chat", "\u00e9"];
  const draw = (max: number): string[] => Array.from({ length: Math.floor(next() * (max + 1)) }, () => [pick(names), pick(values)]).flat();
  for (let i = 0; i < 500; i++) {
    const labels = draw(i % 50 === 0 ? 60 : 6);
    const more = draw(3);
    const name = pick(["m", "tokentrace_llm_ttft_ms_bucket", ""]);
    assert.equal(seriesOrderKeyOf(name, labels, more), seriesOrderKey(["__name__", name, ...labels, ...more]));
    assert.equal(seriesOrderKeyOf(name, labels), seriesOrderKey(["__name__", name, ...labels]));
  }
});
