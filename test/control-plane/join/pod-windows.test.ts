// The join's per-pod windows hold the longer of the rate window and the instant lookback, not their
// sum: every evaluation is at the newest scrape, so older points are never read (the exactness
// tests against promtool, engine-rules and recording-rules, check what is read).
import { test } from "node:test";
import assert from "node:assert/strict";
import { PodWindows } from "../../../control-plane/src/join/derivations/derivation.js";
import { LOOKBACK_MS } from "../../../control-plane/src/promql/series-window.js";

/** Points one series keeps after 40 minutes of scrapes every 15 s, for a rate window. */
function heldPoints(rateWindowMs: number): number {
  const windows = new PodWindows<string>(rateWindowMs);
  const w = windows.of("ns/pod");
  for (let t = 0; t <= 40 * 60_000; t += 15_000) w.observe("target", t, [{ key: "target\xffx", info: "x", value: t }]);
  return w.all()[0]!.count;
}

test("a pod's window holds max(rate window, lookback) of points plus the newest before it: 21 at 5 min, not the 41 of their sum", () => {
  assert.equal(LOOKBACK_MS, 300_000);
  // 300 s / 15 s = 20 intervals: the points on (t - 300 s, t] and the one on the horizon.
  assert.equal(heldPoints(300_000), 21);
  assert.equal(heldPoints(30_000), 21, "a short rate window still holds the lookback");
  assert.equal(heldPoints(600_000), 41, "a long rate window holds the window");
});
