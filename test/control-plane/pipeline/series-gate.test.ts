import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SeriesGate, type GatedSeries } from "../../../control-plane/src/pipeline/series-gate.js";
import { SeriesRegistry } from "../../../control-plane/src/remote-write/series-registry.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

const s = (name: string, pod: string, v: number, ts: number): WriteSeries => ({ labels: ["pod", pod, "__name__", name], samples: [{ value: v, timestampMs: ts }] });
const brief = (out: GatedSeries[]): [string, number | "stale"][] => out.map((x) => [x.entry.key.split("\xff").join(","), x.samples[0]!.stale ? "stale" : x.samples[0]!.value]);

describe("series gate (normalise, cap, staleness)", () => {
  it("normalises labels, and marks series stale at the report where they disappear", () => {
    const g = new SeriesGate(new SeriesRegistry(), 100);
    assert.deepEqual(brief(g.pass("t1", [s("a", "p", 1, 1000), s("b", "p", 2, 1000)], 1000)), [["__name__,a,pod,p", 1], ["__name__,b,pod,p", 2]]);
    const out = g.pass("t1", [s("a", "p", 3, 2000)], 2000);
    assert.deepEqual(brief(out), [["__name__,a,pod,p", 3], ["__name__,b,pod,p", "stale"]]);
    assert.equal(out[1]!.samples[0]!.timestampMs, 2000);
    // Another source's series are its own business.
    assert.deepEqual(brief(g.pass("t2", [s("c", "q", 1, 2000)], 2000)), [["__name__,c,pod,q", 1]]);
    assert.deepEqual(brief(g.removeSource("t1", 3000)), [["__name__,a,pod,p", "stale"]]);
    assert.deepEqual(g.removeSource("t1", 4000), []);
  });

  it("caps distinct series, counts the cut, and frees a slot when a series goes stale", () => {
    const drops: string[] = [];
    const g = new SeriesGate(new SeriesRegistry(), 2, (r) => drops.push(r));
    assert.equal(g.pass("t", [s("a", "p", 1, 1), s("b", "p", 1, 1), s("c", "p", 1, 1)], 1).length, 2);
    assert.deepEqual(drops, ["cardinality_cap"]);
    // b disappears (stale, slot freed), c now fits.
    assert.deepEqual(brief(g.pass("t", [s("a", "p", 2, 2)], 2)), [["__name__,a,pod,p", 2], ["__name__,b,pod,p", "stale"]]);
    assert.deepEqual(brief(g.pass("t", [s("a", "p", 3, 3), s("c", "p", 3, 3)], 3)), [["__name__,a,pod,p", 3], ["__name__,c,pod,p", 3]]);
    assert.equal(g.activeSeries, 2);
  });

  it("drops a series without __name__ and counts it", () => {
    const drops: string[] = [];
    const g = new SeriesGate(new SeriesRegistry(), 10, (r) => drops.push(r));
    assert.deepEqual(g.pass("t", [{ labels: ["pod", "p"], samples: [{ value: 1, timestampMs: 1 }] }], 1), []);
    assert.deepEqual(drops, ["invalid_labels"]);
  });
});
