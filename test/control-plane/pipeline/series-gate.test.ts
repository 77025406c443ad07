import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SeriesGate, type GatedSeries } from "../../../control-plane/src/pipeline/series-gate.js";
import fc from "fast-check";
import { SeriesRegistry } from "../../../control-plane/src/remote-write/series-registry.js";
import { normalizeLabels, seriesKey, type WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { enrichedLabels } from "../../../control-plane/src/join/labels.js";

const s = (name: string, pod: string, v: number, ts: number): WriteSeries => ({ labels: ["pod", pod, "__name__", name], samples: [{ value: v, timestampMs: ts }] });
const brief = (out: GatedSeries[]): [string, number | "stale"][] => out.map((x) => [x.entry.key.split("\xff").join(","), x.samples[0]!.stale ? "stale" : x.samples[0]!.value]);

// Label sets as sources report them, and how the set at a position changes from one report to the next (most often it does not).
const name = fc.constantFrom<string>("__name__", "pod", "le", "GPU_I_ID", "model", "", "route");
const value = fc.constantFrom<string>("a", "b", "", "x\xffy", "10", "p", "n");
const labels = fc.array(fc.tuple(name, value), { maxLength: 6 }).map((pairs) => pairs.flat());
const change = fc.oneof(
  { weight: 3, arbitrary: fc.constant((l: string[]) => [...l]) },
  { weight: 1, arbitrary: fc.constant((l: string[]) => [...l, "", ""]) },
  { weight: 1, arbitrary: fc.tuple(name).map(([n]) => (l: string[]) => [...l, n, ""]) },
  { weight: 1, arbitrary: fc.nat().map((k) => (l: string[]) => (l.length === 0 ? l : l.map((x, i) => (i === 2 * (k % (l.length / 2)) + 1 ? "" : x)))) },
  { weight: 1, arbitrary: fc.tuple(fc.nat(), value).map(([k, v]) => (l: string[]) => (l.length === 0 ? l : l.map((x, i) => (i === 2 * (k % (l.length / 2)) + 1 ? x + v : x)))) },
  { weight: 1, arbitrary: fc.tuple(fc.nat(), value).map(([k, v]) => (l: string[]) => (l.length === 0 ? l : l.map((x, i) => (i === 2 * (k % (l.length / 2)) + 1 ? v : x)))) },
  { weight: 1, arbitrary: fc.constant((l: string[]) => [...l.slice(2), ...l.slice(0, 2)]) },
  { weight: 1, arbitrary: labels.map((fresh) => () => fresh) },
);
/** A scraped series' own labels: its name is not one of them. */
function withoutName(labels: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < labels.length; i += 2) if (labels[i] !== "__name__") out.push(labels[i]!, labels[i + 1]!);
  return out;
}

/** Reports of one source: the first drawn, each next one changed position by position, sometimes longer or shorter. */
const reportsOf = (maxSets: number) =>
  fc.tuple(fc.array(labels, { minLength: 1, maxLength: maxSets }), fc.array(fc.tuple(fc.array(change, { minLength: 8, maxLength: 8 }), fc.integer({ min: -2, max: 2 })), { maxLength: 4 })).map(([first, steps]) => {
    const out = [first];
    for (const [changes, grow] of steps) {
      const prev = out[out.length - 1]!;
      const next = prev.map((l, i) => changes[i % changes.length]!(l));
      out.push(grow >= 0 ? [...next, ...first.slice(0, grow)] : next.slice(0, next.length + grow));
    }
    return out;
  });

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

  it("recalls a source's series by position only while the labels still spell the same key: any change, reorder, emptied value or empty name is judged afresh", () => {
    const reports = reportsOf(8);
    fc.assert(
      fc.property(reports, (all) => {
        const drops: string[] = [];
        const g = new SeriesGate(new SeriesRegistry(), 1000, (r) => drops.push(r));
        let ts = 0;
        for (const report of all) {
          ts++;
          drops.length = 0;
          const out = g.pass("t", report.map((l) => ({ labels: [...l], samples: [{ value: ts, timestampMs: ts }] })), ts).filter((x) => !x.samples[0]!.stale);
          // What normalising each label set afresh gives.
          const want = report.map((l) => normalizeLabels(l)).map((n) => (typeof n === "string" ? undefined : seriesKey(n)));
          assert.deepEqual(out.map((x) => x.entry.key), want.filter((k) => k !== undefined));
          assert.equal(drops.length, want.filter((k) => k === undefined).length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("compares only a forwarded series' own labels while its pod's enriched labels stay the same, and judges every other series (derived ones naming the same labels, past either report's enriched count, after the labels change) afresh", () => {
    // The pod's labels as identity.ts gives them: the same array scrape after scrape, or a new one, equal or not.
    const podLabels = fc.constantFrom<string[]>(["pod", "p", "le", "10"], ["pod", "a", "le", "10"], ["pod", "p"], ["pod", "p", "pod", "x\xffy"], ["le", "", "pod", "p"], []);
    // Each report: its label sets, the first `enriched` of them forwarded (the pod's labels set over theirs), the rest derived.
    const steps = fc.tuple(reportsOf(6), fc.array(fc.tuple(fc.nat(6), podLabels, fc.boolean()), { minLength: 5, maxLength: 5 }));
    fc.assert(
      fc.property(steps, ([reports, shapes]) => {
        const drops: string[] = [];
        const g = new SeriesGate(new SeriesRegistry(), 1000, (r) => drops.push(r));
        let podBefore: string[] | undefined;
        let ts = 0;
        for (const [k, drawn] of reports.entries()) {
          ts++;
          drops.length = 0;
          const [count, pod, sameArray] = shapes[k]!;
          const enrichedCount = Math.min(count, drawn.length);
          const labelsNow = sameArray && podBefore !== undefined && podBefore.join("\0") === pod.join("\0") ? podBefore : [...pod];
          podBefore = labelsNow;
          // The forwarded ones as enrich makes them from a scraped series (cleaned, the pod's labels set
          // over, its name added); the derived ones as drawn, most with a name.
          const report = drawn.map((l, i) => (i < enrichedCount ? enrichedLabels(withoutName(l), labelsNow, "n") : l.includes("__name__") ? [...l] : ["__name__", "n", ...l]));
          const out = g.pass("t", report.map((l) => ({ labels: l, samples: [{ value: ts, timestampMs: ts }] })), ts, { count: enrichedCount, labels: labelsNow }).filter((x) => !x.samples[0]!.stale);
          const want = report.map((l) => normalizeLabels(l)).map((n) => (typeof n === "string" ? undefined : seriesKey(n)));
          assert.deepEqual(out.map((x) => x.entry.key), want.filter((key) => key !== undefined));
          assert.equal(drops.length, want.filter((key) => key === undefined).length);
        }
      }),
      { numRuns: 20_000 },
    );
  });

  it("compares every pair of a position enriched in only one of two reports: a derived series laid out as a forwarded one is not taken for it, whichever report had more forwarded series", () => {
    const pod = ["pod", "p"];
    const forwarded = enrichedLabels(["route", "r"], pod, "n"); // route r, pod p, __name__ n
    const derived = ["route", "r", "pod", "q", "__name__", "n"]; // laid out alike, another pod value of the same length
    const keys = (g: SeriesGate, labels: string[], ts: number, count: number): string[] =>
      g.pass("t", [{ labels, samples: [{ value: ts, timestampMs: ts }] }], ts, { count, labels: pod }).filter((x) => !x.samples[0]!.stale).map((x) => x.entry.key.split("\xff").join(","));
    const fewer = new SeriesGate(new SeriesRegistry(), 10);
    assert.deepEqual(keys(fewer, forwarded, 1, 1), ["__name__,n,pod,p,route,r"]);
    assert.deepEqual(keys(fewer, derived, 2, 0), ["__name__,n,pod,q,route,r"]);
    const more = new SeriesGate(new SeriesRegistry(), 10);
    assert.deepEqual(keys(more, derived, 1, 0), ["__name__,n,pod,q,route,r"]);
    assert.deepEqual(keys(more, forwarded, 2, 1), ["__name__,n,pod,p,route,r"]);
  });

  it("keeps a series whose value holds the key separator apart from the series its joined text would spell, reported together or in turn at one position", () => {
    const registry = new SeriesRegistry();
    const g = new SeriesGate(registry, 100);
    const real: WriteSeries = { labels: ["__name__", "m", "a", "x", "b", "y"], samples: [{ value: 1, timestampMs: 1 }] };
    const spoof = (v: number, ts: number): WriteSeries => ({ labels: ["__name__", "m", "a", "x\xffb\xffy"], samples: [{ value: v, timestampMs: ts }] });
    const both = g.pass("t", [real, spoof(2, 1)], 1);
    assert.equal(both.length, 2);
    assert.notEqual(both[0]!.entry, both[1]!.entry);
    assert.equal(registry.size, 2);
    // The position that held the real series now holds the spoofing one: it is judged afresh, not taken for the real series.
    const turn = g.pass("t", [spoof(3, 2)], 2);
    assert.equal(turn[0]!.entry, both[1]!.entry);
    assert.deepEqual(turn.slice(1).map((x) => [x.entry, x.samples[0]!.stale]), [[both[0]!.entry, true]], "the real series ends");
  });

  it("never writes an entry another source ended, though this source reports the same labels at the same position", () => {
    const registry = new SeriesRegistry();
    const g = new SeriesGate(registry, 100);
    g.pass("a", [s("x", "p", 1, 1)], 1);
    g.pass("b", [s("x", "p", 1, 1)], 1);
    const ended = g.pass("b", [], 2); // b's report lacks x: its marker ends the shared entry
    assert.equal(ended.length, 1);
    assert.equal(ended[0]!.samples[0]!.stale, true);
    const again = g.pass("a", [s("x", "p", 3, 3)], 3).filter((x) => !x.samples[0]!.stale);
    assert.equal(again.length, 1);
    assert.notEqual(again[0]!.entry, ended[0]!.entry);
    assert.equal(registry.get(again[0]!.entry.key), again[0]!.entry, "the series goes on under a live entry");
  });
});
