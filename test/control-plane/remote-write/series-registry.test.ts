import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { encodedLabels, SeriesRegistry } from "../../../control-plane/src/remote-write/series-registry.js";
import { encodeLabelsV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { normalizeLabels, seriesKey } from "../../../control-plane/src/remote-write/series.js";

describe("series registry (the key alone, labels encoded when a segment defines the series)", () => {
  it("encodes from the key exactly the labels it was added with, separator in a value or not", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "b", "_", "1", "\xff", "é", "😀", " "), minLength: 1, maxLength: 12 });
    const name = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,10}$/);
    const labelSet = fc.uniqueArray(fc.tuple(name, text), { selector: ([n]) => n, maxLength: 8 }).map((pairs) => ["__name__", "m", ...pairs.filter(([n]) => n !== "__name__").flat()]);
    fc.assert(
      fc.property(labelSet, (raw) => {
        const labels = normalizeLabels(raw);
        assert.ok(typeof labels !== "string");
        const registry = new SeriesRegistry();
        const entry = registry.add(seriesKey(labels), labels);
        const want = encodeLabelsV1(labels);
        assert.deepEqual(encodedLabels(entry), want);
      }),
      { numRuns: 500 },
    );
  });

  it("holds no encoded copy for a key that splits back into its labels, one for a key that does not", () => {
    const registry = new SeriesRegistry();
    const plain = ["__name__", "m", "pod", "p"];
    assert.equal(registry.add(seriesKey(plain), plain).encoded, undefined);
    // {a="p\xffb", c="q"} and {a="p", b="c\xffq"} join to the same text: splitting it back cannot tell them apart.
    const ambiguous = ["__name__", "m", "a", "p\xffb", "c", "q"];
    const entry = registry.add(seriesKey(ambiguous), ambiguous);
    assert.ok(entry.encoded !== undefined);
    assert.deepEqual(encodedLabels(entry), encodeLabelsV1(ambiguous));
  });

  it("keys two label sets apart whatever their values hold: a scraped value with the separator cannot take over another series", () => {
    // Joined, {a="x\xffb\xffy"} and {a="x", b="y"} were one text, so one entry, each series' samples written under the other's labels.
    const spoofing = ["__name__", "m", "a", "x\xffb\xffy"];
    const real = ["__name__", "m", "a", "x", "b", "y"];
    assert.notEqual(seriesKey(spoofing), seriesKey(real));
    const registry = new SeriesRegistry();
    const realEntry = registry.add(seriesKey(real), real);
    assert.equal(registry.get(seriesKey(spoofing)), undefined, "the spoofing set does not find the real series");
    const spoofEntry = registry.add(seriesKey(spoofing), spoofing);
    assert.deepEqual(encodedLabels(realEntry), encodeLabelsV1(real));
    assert.deepEqual(encodedLabels(spoofEntry), encodeLabelsV1(spoofing));
    const text = fc.string({ unit: fc.constantFrom("a", "\xff", "[", "\"", ",", "]"), maxLength: 6 });
    const name = fc.constantFrom("__name__", "a", "b", "c\xff", "\xffd");
    const labelSet = fc.uniqueArray(fc.tuple(name, text), { selector: ([n]) => n, maxLength: 4 }).map((pairs) => normalizeLabels(["__name__", "m", ...pairs.filter(([n]) => n !== "__name__").flat()]));
    fc.assert(
      fc.property(labelSet, labelSet, (a, b) => {
        if (typeof a === "string" || typeof b === "string") return;
        assert.equal(seriesKey(a) === seriesKey(b), JSON.stringify(a) === JSON.stringify(b), `${JSON.stringify(a)} ${JSON.stringify(b)}`);
      }),
      { numRuns: 2000 },
    );
  });
});
