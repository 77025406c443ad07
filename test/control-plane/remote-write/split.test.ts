import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decodeWriteRequestV1, encodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { seriesParts } from "../../../control-plane/src/remote-write/protobuf.js";
import { sendSplitting, type SplitHooks } from "../../../control-plane/src/remote-write/split.js";
import type { SendResult } from "../../../control-plane/src/remote-write/transport.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

const ts = (i: number, samples = 1): WriteSeries => ({
  labels: ["__name__", "m", "i", String(i)],
  samples: Array.from({ length: samples }, (_, k) => ({ value: i * 100 + k, timestampMs: 1_800_000_000_000 + k * 15_000 })),
});

/**
 * A 1.0 receiver as strict as Prometheus's: one refused series fails the whole request with 400 and
 * the error's text, nothing of it is stored (prometheus/prometheus@002042c9
 * storage/remote/write_handler.go, writeHandler.write rolls the appender back on the first error).
 */
class AllOrNothingReceiver {
  readonly stored: string[] = [];
  readonly requests: number[] = [];
  constructor(private readonly refused: ReadonlySet<string>, private readonly text = "out of order sample") {}
  hooks(counts: { accepted: number; dropped: Map<string, number> }, answer?: (n: number) => SendResult | undefined): SplitHooks {
    return {
      send: async (v1) => {
        const series = decodeWriteRequestV1(v1);
        this.requests.push(series.length);
        const scripted = answer?.(this.requests.length);
        if (scripted) return scripted;
        if (series.some((s) => this.refused.has(s.labels[3]!))) return { kind: "failed", reason: this.text === "out of order sample" ? "out_of_order" : "http_400", status: 400 };
        for (const s of series) this.stored.push(s.labels[3]!);
        return { kind: "success", status: 204 };
      },
      accepted: (n) => void (counts.accepted += n),
      dropped: (reason, n) => void counts.dropped.set(reason, (counts.dropped.get(reason) ?? 0) + n),
    };
  }
}

const newCounts = () => ({ accepted: 0, dropped: new Map<string, number>() });

describe("splitting a batch the receiver refuses as a whole (400)", () => {
  const cases: { n: number; refused: number[] }[] = [
    { n: 1, refused: [] },
    { n: 1, refused: [0] },
    { n: 2, refused: [1] },
    { n: 5, refused: [2] },
    { n: 16, refused: [0] },
    { n: 16, refused: [9] },
    { n: 16, refused: [15] },
    { n: 17, refused: [3, 11] },
    { n: 64, refused: [5, 6, 40] },
    { n: 8, refused: [0, 1, 2, 3, 4, 5, 6, 7] },
    { n: 33, refused: Array.from({ length: 33 }, (_, i) => i) },
  ];
  for (const { n, refused } of cases) {
    it(`${n} series, refused ${refused.length > 3 ? `all ${refused.length}` : `[${refused.join(", ")}]`}: every other series is stored, in order, only the refused are dropped, within 2n - 1 requests`, async (t) => {
      const bad = new Set(refused.map(String));
      const rx = new AllOrNothingReceiver(bad);
      const counts = newCounts();
      const body = encodeWriteRequestV1(Array.from({ length: n }, (_, i) => ts(i)));
      const result = await sendSplitting(body, n, rx.hooks(counts));
      const good = Array.from({ length: n }, (_, i) => String(i)).filter((i) => !bad.has(i));
      assert.deepEqual(rx.stored, good);
      assert.equal(counts.accepted, good.length);
      assert.deepEqual([...counts.dropped], refused.length ? [["out_of_order", refused.length]] : []);
      assert.ok(rx.requests.length <= 2 * n - 1, `requests ${rx.requests.length} > ${2 * n - 1}`);
      if (refused.length === 1 && Number.isInteger(Math.log2(n))) assert.equal(rx.requests.length, 2 * Math.log2(n) + 1);
      if (refused.length === n) assert.equal(rx.requests.length, 2 * n - 1, "all refused: the whole tree, no more");
      assert.equal(result.kind, refused.length ? "failed" : "success");
      t.diagnostic(`${n} series, ${refused.length} refused: ${rx.requests.length} requests (bound ${2 * n - 1})`);
    });
  }

  it("counts samples, not series: a refused series with 3 samples drops 3, the others' samples arrive", async () => {
    const rx = new AllOrNothingReceiver(new Set(["1"]));
    const counts = newCounts();
    const body = encodeWriteRequestV1([ts(0, 2), ts(1, 3), ts(2, 4)]);
    assert.deepEqual(seriesParts(body).map((p) => p.samples), [2, 3, 4]);
    await sendSplitting(body, 9, rx.hooks(counts));
    assert.equal(counts.accepted, 6);
    assert.deepEqual([...counts.dropped], [["out_of_order", 3]]);
  });

  it("stops at a retryable answer (shutdown) and returns it, so the caller keeps the round on disk", async () => {
    const rx = new AllOrNothingReceiver(new Set(["7"]));
    const counts = newCounts();
    const body = encodeWriteRequestV1(Array.from({ length: 8 }, (_, i) => ts(i)));
    // Requests: [0..7] 400, [0..3] stored, [4..7] 400, [4,5] aborted.
    const result = await sendSplitting(body, 8, rx.hooks(counts, (k) => (k === 4 ? { kind: "retryable", reason: "aborted" } : undefined)));
    assert.deepEqual(result, { kind: "retryable", reason: "aborted" });
    assert.deepEqual(rx.requests, [8, 4, 4, 2]);
    assert.equal(counts.accepted, 4);
    assert.deepEqual([...counts.dropped], [], "nothing is counted dropped: the round is sent again");
  });

  it("drops a half answered with another final status under that status's reason", async () => {
    const rx = new AllOrNothingReceiver(new Set(["0"]));
    const counts = newCounts();
    const body = encodeWriteRequestV1(Array.from({ length: 4 }, (_, i) => ts(i)));
    await sendSplitting(body, 4, rx.hooks(counts, (k) => (k === 5 ? { kind: "failed", reason: "http_413", status: 413 } : undefined)));
    // [0..3] 400, [0, 1] 400, [0] refused alone, [1] stored, [2, 3] answered 413.
    assert.deepEqual(rx.requests, [4, 2, 1, 1, 2]);
    assert.deepEqual(rx.stored, ["1"]);
    assert.deepEqual([...counts.dropped], [["out_of_order", 1], ["http_413", 2]]);
    assert.equal(counts.accepted, 1, "series 1, alone after series 0 was refused");
  });

  it("does not split a 2.0 partial write (a 400 with samples written): the receiver stored the rest already", async () => {
    const rx = new AllOrNothingReceiver(new Set());
    const counts = newCounts();
    const body = encodeWriteRequestV1(Array.from({ length: 8 }, (_, i) => ts(i)));
    const result = await sendSplitting(body, 8, rx.hooks(counts, () => ({ kind: "failed", reason: "out_of_order", status: 400, samplesWritten: 7 })));
    assert.equal(result.kind, "failed");
    assert.deepEqual(rx.requests, [8]);
    assert.equal(counts.accepted, 7);
    assert.deepEqual([...counts.dropped], [["out_of_order", 1]]);
  });

  it("drops a body it cannot parse whole after one request (no split, no throw)", async () => {
    const counts = newCounts();
    let requests = 0;
    const hooks: SplitHooks = {
      send: async () => (requests++, { kind: "failed", reason: "http_400", status: 400 }),
      accepted: (n) => void (counts.accepted += n),
      dropped: (reason, n) => void counts.dropped.set(reason, n),
    };
    const truncated = encodeWriteRequestV1([ts(0), ts(1)]).subarray(0, 20);
    assert.throws(() => seriesParts(truncated), /truncated/);
    await sendSplitting(truncated, 2, hooks);
    assert.equal(requests, 1);
    assert.deepEqual([...counts.dropped], [["http_400", 2]]);
  });
});
