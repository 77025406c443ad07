// An evicted span leaves the store's memory with it: nothing the store holds (its arrival order
// included) keeps it alive until a later compaction, which would let the store keep up to twice
// traces.maxBytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { measureInChild } from "../heap.js";

test("evicted LLM calls are collectable at once, before the arrival order is compacted (measured with --expose-gc)", { timeout: 60_000 }, () => {
  // 1,500 of 2,000 evicted: more than the 1,024 that start a compaction, fewer than half the order's 3,500 slots.
  const r = measureInChild<{ evictedAlive: number; heldAlive: number; size: number }>(new URL("./store-memory-child.ts", import.meta.url), [2000, 1500]);
  assert.equal(r.size, 2000);
  assert.equal(r.heldAlive, 500, "the held calls stay (else the check below proves nothing)");
  assert.equal(r.evictedAlive, 0, "no evicted call is kept");
});
