import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import {
  encodeWriteRequestV1,
  encodeRequestV2,
  decodeWriteRequestV1,
  STALE_NAN_BYTES,
} from "../../../control-plane/src/remote-write/protobuf.js";
import { snappyCompress, snappyUncompress } from "../../../control-plane/src/remote-write/snappy.js";
import { normalizeLabels } from "../../../control-plane/src/remote-write/series.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

// Independent implementations to check against: protobufjs (through the peer package's compiled
// schema) and snappyjs.
const require = createRequire(import.meta.url);
const peer = require("prometheus-remote-write") as { deserialize(buf: Uint8Array): Promise<{ timeseries: { labels: { name: string; value: string }[]; samples: { value: number; timestamp: { toString(): string } | number }[] }[] }> };
const snappyjs = require("snappyjs") as { uncompress(b: Uint8Array): Uint8Array; compress(b: Uint8Array): Uint8Array };

const series: WriteSeries[] = [
  { labels: ["__name__", "tokentrace_requests_total", "route", "chat"], samples: [{ value: 400, timestampMs: 1_800_000_000_000 }, { value: 412.5, timestampMs: 1_800_000_015_000 }] },
  { labels: ["__name__", "gpu_util", "model", "NVIDIA H100 80GB HBM3 – ünïcode", "long", "x".repeat(300)], samples: [{ value: -1.25e-7, timestampMs: 1 }] },
  { labels: ["__name__", "big", "v", "y".repeat(20_000)], samples: [{ value: Infinity, timestampMs: -5 }] },
];

describe("remote write encoding", () => {
  it("encodes a 1.0 WriteRequest that protobufjs decodes to the same labels, values and timestamps", async () => {
    const buf = encodeWriteRequestV1(series);
    const decoded = await peer.deserialize(buf);
    assert.deepEqual(
      decoded.timeseries.map((t) => ({
        labels: t.labels.flatMap((l) => [l.name, l.value]),
        samples: t.samples.map((s) => ({ value: s.value, timestampMs: Number(s.timestamp.toString()) })),
      })),
      series,
    );
    assert.equal(decodeWriteRequestV1(buf).flatMap((t) => t.samples).length, 4);
  });

  it("round-trips through its own decoder, including negative timestamps and multi-byte lengths", () => {
    const back = decodeWriteRequestV1(encodeWriteRequestV1(series));
    assert.deepEqual(back.map((s) => ({ labels: s.labels, samples: s.samples.map(({ value, timestampMs }) => ({ value, timestampMs })) })), series);
  });

  it("writes the staleness marker with the exact bits 0x7ff0000000000002", () => {
    const buf = encodeWriteRequestV1([{ labels: ["__name__", "m"], samples: [{ value: NaN, timestampMs: 1000, stale: true }] }]);
    // TimeSeries{labels{name:"__name__" value:"m"} samples{value:<stale> timestamp:1000}}
    const expected = Uint8Array.of(
      0x0a, 0x1d,
      0x0a, 0x0d, 0x0a, 0x08, ...Buffer.from("__name__"), 0x12, 0x01, 0x6d,
      0x12, 0x0c, 0x09, ...STALE_NAN_BYTES, 0x10, 0xe8, 0x07,
    );
    assert.deepEqual(buf, expected);
    const s = decodeWriteRequestV1(buf)[0]!.samples[0]!;
    assert.equal(s.valueBits, 0x7ff0000000000002n);
    assert.equal(s.stale, true);
    // An ordinary NaN is not a staleness marker.
    const plain = decodeWriteRequestV1(encodeWriteRequestV1([{ labels: ["__name__", "m"], samples: [{ value: NaN, timestampMs: 1 }] }]))[0]!.samples[0]!;
    assert.equal(plain.stale, undefined);
    assert.notEqual(plain.valueBits, 0x7ff0000000000002n);
  });

  it("encodes a 2.0 Request with a symbols table that starts with the empty string", () => {
    const buf = encodeRequestV2([{ labels: ["__name__", "a", "job", "a"], samples: [{ value: 1, timestampMs: 2 }] }]);
    // symbols ["", "__name__", "a", "job"]; series labels_refs [1,2,3,2]; sample {1.0, 2}
    const expected = Uint8Array.of(
      0x22, 0x00, 0x22, 0x08, ...Buffer.from("__name__"), 0x22, 0x01, 0x61, 0x22, 0x03, ...Buffer.from("job"),
      0x2a, 0x13, 0x0a, 0x04, 1, 2, 3, 2, 0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0x02,
    );
    assert.deepEqual(buf, expected);
  });

  it("compresses in the snappy block format that snappyjs reads, and reads snappyjs output", () => {
    const body = encodeWriteRequestV1(series);
    assert.deepEqual(new Uint8Array(snappyjs.uncompress(snappyCompress(body))), body);
    assert.deepEqual(new Uint8Array(snappyUncompress(snappyjs.compress(body))), body);
  });

  const labelCases: { name: string; in: string[]; out: string[] | string }[] = [
    { name: "sorts by name", in: ["z", "1", "__name__", "m", "a", "2"], out: ["__name__", "m", "a", "2", "z", "1"] },
    { name: "drops empty values", in: ["__name__", "m", "pod_uid", ""], out: ["__name__", "m"] },
    { name: "rejects a missing __name__", in: ["a", "1"], out: "missing_name" },
    { name: "rejects duplicate names", in: ["__name__", "m", "a", "1", "a", "2"], out: "duplicate_label" },
    { name: "rejects an empty name", in: ["__name__", "m", "", "1"], out: "empty_label_name" },
  ];
  for (const c of labelCases) {
    it(`normalizeLabels ${c.name}`, () => assert.deepEqual(normalizeLabels(c.in), c.out));
  }
});
