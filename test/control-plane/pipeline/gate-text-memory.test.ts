// The series gate keeps none of a scrape's text: the label names its shared layouts hold past a
// report are copies, not views of the text they were parsed from. Measured in a child run with
// --expose-gc, with every source's text made large by a comment: a view kept anywhere keeps a whole
// text per source.
import { test } from "node:test";
import { assertKeepsNoScrapeText } from "../heap.js";

const child = new URL("./gate-text-memory-child.ts", import.meta.url);

test("the series gate keeps none of a scrape's text: what 20 sources' reports leave held grows by far less than one 1 MiB text a source (measured with --expose-gc)", { timeout: 120_000 }, (t) => {
  const fillerBytes = 1 << 20;
  assertKeepsNoScrapeText(t, child, [20, 3, fillerBytes], fillerBytes, "source", "the gate holds the sources' series");
});
