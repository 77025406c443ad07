// The disk queue's in-memory index holds one entry per record on disk: at most maxBytes /
// MIN_RECORD_BYTES of them, each costing at most RECORD_INDEX_BYTES (measured in a child run with
// --expose-gc), which is what its memory budget multiplies.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MIN_RECORD_BYTES, RECORD_HEADER_BYTES, RECORD_INDEX_BYTES } from "../../../control-plane/src/remote-write/disk-queue.js";
import { encodeRecord, SamplesPart } from "../../../control-plane/src/remote-write/record.js";
import { ProtoWriter } from "../../../control-plane/src/remote-write/protobuf.js";
import { measureInChild } from "../heap.js";

test("an index entry costs V8 at most RECORD_INDEX_BYTES and at least half of it (the smallest records and larger ones; measured with --expose-gc)", { timeout: 120_000 }, (t) => {
  for (const payloadBytes of [MIN_RECORD_BYTES - RECORD_HEADER_BYTES, 4096]) {
    const r = measureInChild<{ records: number; measuredPerRecord: number }>(new URL("./disk-queue-memory-child.ts", import.meta.url), [100_000, payloadBytes]);
    t.diagnostic(`${payloadBytes}-byte payloads: measured ${r.measuredPerRecord.toFixed(0)} B per record`);
    assert.equal(r.records, 100_000);
    assert.ok(r.measuredPerRecord <= RECORD_INDEX_BYTES, `${r.measuredPerRecord} B per record`);
    assert.ok(r.measuredPerRecord >= RECORD_INDEX_BYTES / 2, `${r.measuredPerRecord} B per record`);
  }
});

test("MIN_RECORD_BYTES is the smallest record the writer makes: one sample at time 0, value 0 or a staleness marker, no definitions", () => {
  for (const [value, stale] of [[0, false], [Number.NaN, true]] as const) {
    const part = new SamplesPart();
    part.add(0, 0, value, stale);
    assert.equal(RECORD_HEADER_BYTES + encodeRecord([], part, new ProtoWriter(64)).length, MIN_RECORD_BYTES);
  }
});
