// The join keeps no scrape's text: the label values it holds past a scrape (its rate windows'
// model, route and bucket names, everything else it remembers per pod) are copies, not views of the
// text they were parsed from. Measured in a child run with --expose-gc on the whole join, with every
// scrape's text made large by a comment: a view kept anywhere keeps a whole text per pod.
import { test } from "node:test";
import { assertKeepsNoScrapeText } from "../heap.js";

const child = new URL("./scrape-text-memory-child.ts", import.meta.url);

test("the join keeps none of a scrape's text: what 20 pods' sidecar and vLLM scrapes leave held grows by far less than one 1 MiB text a pod (measured with --expose-gc)", { timeout: 120_000 }, (t) => {
  const fillerBytes = 1 << 20;
  assertKeepsNoScrapeText(t, child, [20, 6, fillerBytes], fillerBytes, "pod", "the join holds the pods' windows");
});
