// The disk queue's compact record (series defined once per segment, samples as ref, time, value)
// and what the queue does with it: exact values back, labels resolved after a restart in the middle
// of a segment, records far below the 1.0 request they stand for.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { decodeRecord, encodeRecord, SamplesPart } from "../../../control-plane/src/remote-write/record.js";
import { decodeWriteRequestV1, encodeLabelsV1, encodeWriteRequestV1, ProtoWriter } from "../../../control-plane/src/remote-write/protobuf.js";
import { RemoteWriter } from "../../../control-plane/src/remote-write/writer.js";
import { createRemoteWriteMetrics } from "../../../control-plane/src/remote-write/metrics.js";
import { snappyUncompress } from "../../../control-plane/src/remote-write/snappy.js";
import type { Protocol, SendResult, Transport } from "../../../control-plane/src/remote-write/transport.js";
import type { RemoteWriteTargetConfig } from "../../../control-plane/src/remote-write/queue-manager.js";
import { FakeClock, until } from "../../support/fake-clock.js";

describe("compact queue record", () => {
  it("gives back every value exactly: integers of both signs, -0, fractions, infinities, large counters and the staleness marker", () => {
    const values = [0, 1, -1, 127, 128, -300, 2 ** 47, -(2 ** 47), 2 ** 53, -0, 0.5, -1.25e-7, 512.25, Infinity, -Infinity, 1e300];
    const part = new SamplesPart();
    values.forEach((v, i) => part.add(i % 3, 1_800_000_000_000 + i * 15_000, v, false));
    part.add(7, 1_800_000_000_000, NaN, true);
    const labels = encodeLabelsV1(["__name__", "m", "pod", "p"]);
    const payload = encodeRecord([{ id: 0, labels }, { id: 7, labels }], part, new ProtoWriter(16));
    const defs: number[] = [];
    const got: [number, number, number, boolean][] = [];
    decodeRecord(payload, { define: (id, l) => { defs.push(id); assert.deepEqual([...l], [...labels]); }, sample: (id, ts, v, stale) => got.push([id, ts, v, stale]) });
    assert.deepEqual(defs, [0, 7]);
    assert.deepEqual(got.slice(0, -1).map(([, , v]) => v), values);
    assert.ok(Object.is(got[9]![2], -0), "-0 stays -0");
    assert.deepEqual(got.map(([id, ts]) => [id, ts - 1_800_000_000_000]), [...values.map((_, i) => [i % 3, i * 15_000]), [7, 0]]);
    assert.deepEqual(got[got.length - 1]!.slice(3), [true]);
  });

  it("stores a scrape's samples in under a tenth of the 1.0 request it stands for", () => {
    const series = Array.from({ length: 2000 }, (_, i) => ({
      labels: ["__name__", "tokentrace_llm_ttft_ms_bucket", "gpu", String(i % 8), "gpu_model", "NVIDIA H100 80GB HBM3", "le", String(i % 29), "model", "llama-3.1-8b", "namespace", "llm", "pod", `vllm-${i % 40}`, "route", `chat-${i % 4}`],
      samples: [{ value: i * 37, timestampMs: 1_800_000_000_000 }],
    }));
    const part = new SamplesPart();
    series.forEach((s, i) => part.add(i, s.samples[0]!.timestampMs, s.samples[0]!.value, false));
    const samplesOnly = encodeRecord([], part, new ProtoWriter());
    const v1 = encodeWriteRequestV1(series);
    assert.ok(samplesOnly.length * 10 < v1.length, `${samplesOnly.length} bytes for ${v1.length} bytes of 1.0`);
  });
});

describe("compact disk queue", () => {
  class Recording implements Transport {
    readonly bodies: Uint8Array[] = [];
    up = true;
    async send(body: Uint8Array, _protocol: Protocol): Promise<SendResult> {
      if (!this.up) return { kind: "retryable", reason: "network" };
      this.bodies.push(body);
      return { kind: "success", status: 204 };
    }
  }
  const target = (dir: string): RemoteWriteTargetConfig => ({
    name: "t", url: "http://unused.invalid/", protocol: "1.0", headers: {}, queueDir: dir, maxQueueBytes: 1 << 20, maxQueueRecords: 1 << 20, segmentBytes: 1 << 16,
    maxSamplesPerSend: 2, shards: 1, batchSendDeadlineMs: 1, minBackoffMs: 10, maxBackoffMs: 10, maxRetryAfterMs: 10, remoteTimeoutMs: 1000, flushOnStopMs: 0,
  });

  it("resolves every series' labels after a restart in the middle of a segment (definitions come before the read position)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-record-"));
    const clock = new FakeClock();
    const transport = new Recording();
    const first = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport });
    const s = (name: string, v: number, ts: number) => ({ labels: ["__name__", name, "pod", "p"], samples: [{ value: v, timestampMs: ts }] });
    const t0 = clock.now();
    // One record defines a and b; the next ones name them without defining them again.
    first.write([s("a", 1, t0), s("b", 2, t0)]);
    first.write([s("a", 3, t0 + 1000), s("b", 4, t0 + 1000)]);
    first.write([s("a", 5, t0 + 2000), s("b", 6, t0 + 2000)]);
    first.start();
    await until(() => transport.bodies.length === 1, "the first record delivered");
    transport.up = false;
    const stopping = first.stop();
    await clock.advance(100);
    await stopping;
    const again = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport });
    transport.up = true;
    again.start();
    await until(() => again.targets[0]!.queue.pendingSamples === 0, "the rest delivered");
    const got = transport.bodies.map((b) => decodeWriteRequestV1(snappyUncompress(b)).map((x) => `${x.labels.join(",")}=${x.samples[0]!.value}`));
    assert.deepEqual(got, [["__name__,a,pod,p=1", "__name__,b,pod,p=2"], ["__name__,a,pod,p=3", "__name__,b,pod,p=4"], ["__name__,a,pod,p=5", "__name__,b,pod,p=6"]]);
    const stopped = again.stop();
    await clock.advance(100);
    await stopped;
    rmSync(dir, { recursive: true });
  });

  it("defines in each segment every series its records name, also when a record does not fit the segment it was sized for", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-record-"));
    const clock = new FakeClock();
    // Segments of 320 bytes hold one record with its definitions of three long label sets and two
    // or three without: the record after those no longer fits, and lands in a new segment.
    const config = { ...target(dir), segmentBytes: 320, maxSamplesPerSend: 3 };
    const w = new RemoteWriter([config], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => new Recording() });
    // Labels snappy cannot shrink much, so the records keep their size on disk.
    const pod = Array.from({ length: 60 }, (_, i) => ((i * 7919 + 13) % 36).toString(36)).join("");
    const s = (name: string, v: number, ts: number) => ({ labels: ["__name__", name, "pod", pod], samples: [{ value: v, timestampMs: ts }] });
    const t0 = clock.now();
    for (let i = 0; i < 12; i++) w.write([s("a", i, t0 + i * 1000), s("b", i, t0 + i * 1000), s("c", i, t0 + i * 1000)]);
    // Each segment alone (a reader may start at any of them): every ref a record names is defined before it in that segment.
    const defined = new Map<number, Set<number>>();
    let samples = 0;
    for (const r of w.targets[0]!.queue.read(Number.MAX_SAFE_INTEGER)) {
      const inSegment = defined.get(r.next.segment) ?? new Set<number>();
      defined.set(r.next.segment, inSegment);
      decodeRecord(r.payload, {
        define: (id) => inSegment.add(id),
        sample: (id) => {
          samples++;
          assert.ok(inSegment.has(id), `segment ${r.next.segment} names ref ${id} without defining it`);
        },
      });
    }
    assert.equal(samples, 36);
    assert.ok(defined.size >= 4, `${defined.size} segments`);
    const stopped = w.stop();
    await clock.advance(100);
    await stopped;
    rmSync(dir, { recursive: true });
  });
});
