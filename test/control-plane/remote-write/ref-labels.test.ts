// RefLabels, the sender's encoded labels by ref in shared chunks: every sample it writes carries the
// labels last defined for its ref, through redefinitions, reused refs, compactions and label sets
// longer than a chunk, byte for byte as writeSampleV1 writes them from a typed array of their own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ProtoWriter, writeSampleV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { RefLabels } from "../../../control-plane/src/remote-write/ref-labels.js";
import { mulberry32 } from "../../support/mulberry32.js";

for (const seed of [1, 2, 3]) {
  test(`every sample carries its ref's last labels through 20,000 random definitions, with compactions (seed ${seed})`, () => {
    const r = mulberry32(seed);
    const labels = new RefLabels();
    const model = new Map<number, Uint8Array>();
    const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => Math.floor(r() * 256));
    let peak = 0;
    for (let step = 0; step < 20_000; step++) {
      const ref = Math.floor(r() * 3000);
      const roll = r();
      if (roll < 0.6) {
        // A new label set (a reused ref), now and then one longer than a chunk.
        const b = bytes(roll < 0.0005 ? 300_000 : 20 + Math.floor(r() * 400));
        labels.set(ref, b);
        model.set(ref, b);
      } else if (roll < 0.8 && model.has(ref)) {
        labels.set(ref, Uint8Array.from(model.get(ref)!)); // the same labels again, from a new segment
      } else {
        assert.equal(labels.has(ref), model.has(ref), `step ${step}: ref ${ref} defined`);
        if (!model.has(ref)) continue;
        const got = new ProtoWriter(64);
        labels.writeSample(got, ref, 1_800_000_000_000 + step, step / 7, step % 11 === 0);
        const want = new ProtoWriter(64);
        writeSampleV1(want, model.get(ref)!, 1_800_000_000_000 + step, step / 7, step % 11 === 0);
        assert.deepEqual(got.finish(), want.finish(), `step ${step}: ref ${ref}'s sample`);
      }
      peak = Math.max(peak, labels.bytes);
    }
    let live = 0;
    for (const b of model.values()) live += b.length;
    // Compaction keeps what is held near the live bytes: replaced copies are at most a quarter, plus the chunks' unused ends.
    assert.ok(labels.bytes < 1.5 * live + 3 * 256 * 1024, `${labels.bytes} B held for ${live} B live`);
    labels.clear();
    assert.equal(labels.has(0), false);
  });
}
