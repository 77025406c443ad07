// The staleness tracker compares a source's reports as the gate's arrays of entries: what the last
// report held and the new one does not is stale, each series once, whatever else the entries share.
import { test } from "node:test";
import assert from "node:assert/strict";
import { StalenessTracker } from "../../../control-plane/src/remote-write/staleness.js";
import type { SeriesEntry } from "../../../control-plane/src/remote-write/series-registry.js";

const entry = (id: number): SeriesEntry => ({ id, key: `k${id}`, lastTs: -Infinity, mark: 0, live: true });
const ids = (entries: SeriesEntry[]): number[] => entries.map((e) => e.id).sort((a, b) => a - b);

test("a series the last report held and this one does not is stale; the first report has nothing before it", () => {
  const t = new StalenessTracker();
  const [a, b, c] = [entry(1), entry(2), entry(3)];
  assert.deepEqual(t.update("s", [a, b, c]), []);
  assert.deepEqual(ids(t.update("s", [c, a])), [2], "order does not matter, only presence");
  assert.deepEqual(ids(t.update("s", [a, b, c])), [], "a series back is not stale");
  assert.deepEqual(ids(t.update("s", [])), [1, 2, 3]);
});

test("a series reported twice, or a position the gate left empty, yields at most one marker", () => {
  const t = new StalenessTracker();
  const [a, b] = [entry(1), entry(2)];
  t.update("s", [a, undefined, a, b, b]);
  assert.deepEqual(ids(t.update("s", [undefined, b])), [1]);
  assert.deepEqual(ids(t.remove("s")), [2]);
  t.update("s", [a, a, undefined]);
  assert.deepEqual(ids(t.remove("s")), [1], "remove names each series once");
  assert.deepEqual(t.remove("s"), [], "a forgotten source has nothing left");
});

test("sources are compared apart, even when they report the same entry", () => {
  const t = new StalenessTracker();
  const [shared, onlyX, onlyY] = [entry(1), entry(2), entry(3)];
  t.update("x", [shared, onlyX]);
  t.update("y", [shared, onlyY]);
  assert.deepEqual(ids(t.update("x", [onlyX])), [1], "x stopped reporting the shared series");
  assert.deepEqual(ids(t.update("y", [shared, onlyY])), [], "y still reports it, though x marked nothing on it this time");
  assert.deepEqual(ids(t.update("y", [onlyY])), [1]);
  assert.equal(t.size, 2, "x holds one series, y one");
});
