// An interval's histograms are packed in one typed array of the narrowest element that holds every
// count exactly: one byte a count up to 255, then two, four, and eight for what no integer width holds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { addDeltas, countsOf, DeltaPacker, NO_CELLS, type Buckets } from "../../../control-plane/src/dashboard/bucket-deltas.js";

const bounds = Float64Array.from([10, 100, Infinity]);

for (const [largest, kind] of [
  [255, Uint8Array],
  [256, Uint16Array],
  [65_535, Uint16Array],
  [65_536, Uint32Array],
  [2 ** 32 - 1, Uint32Array],
  [2 ** 32, Float64Array],
  [2 ** 53 + 2, Float64Array],
] as const) {
  test(`counts up to ${largest} are packed as a ${kind.name}, every histogram of the interval in the one array, each count exact`, () => {
    const packer = new DeltaPacker();
    const a = packer.add(bounds, [0, 1, 2]);
    const b = packer.add(bounds, [3, largest, 5]);
    const cells = packer.pack();
    assert.ok(cells instanceof kind, `${cells.constructor.name}`);
    assert.equal(cells.length, 6);
    assert.equal(a.cells, cells);
    assert.equal(b.cells, cells);
    assert.deepEqual(countsOf(a), [0, 1, 2]);
    assert.deepEqual(countsOf(b), [3, largest, 5]);
  });
}

test("a fraction or a negative count (the format allows them, a counter's increase never has them) keeps eight bytes and its value", () => {
  for (const odd of [0.5, -1]) {
    const packer = new DeltaPacker();
    const d = packer.add(bounds, [1, odd, 2]);
    assert.ok(packer.pack() instanceof Float64Array);
    assert.deepEqual(countsOf(d), [1, odd, 2]);
  }
});

test("an interval without a count shares the empty cells; the packer starts afresh after each pack", () => {
  const packer = new DeltaPacker();
  const none = packer.add(new Float64Array(0), []);
  assert.equal(packer.pack(), NO_CELLS);
  assert.equal(none.cells, NO_CELLS);
  const next = packer.add(bounds, [7, 8, 9]);
  const cells = packer.pack();
  assert.equal(cells.length, 3, "the first interval's counts are not carried into the next");
  assert.equal(next.at, 0);
});

test("addDeltas adds one histogram's counts into a window's sums by bound, and only its own", () => {
  const packer = new DeltaPacker();
  const a = packer.add(bounds, [1, 2, 3]);
  packer.add(bounds, [100, 200, 300]);
  packer.pack();
  const sum: Buckets = new Map([[10, 5]]);
  addDeltas(sum, a);
  addDeltas(sum, a);
  assert.deepEqual([...sum], [[10, 7], [100, 4], [Infinity, 6]]);
});
