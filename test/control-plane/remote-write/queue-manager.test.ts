import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { RemoteWriter } from "../../../control-plane/src/remote-write/writer.js";
import { createRemoteWriteMetrics } from "../../../control-plane/src/remote-write/metrics.js";
import type { RemoteWriteTargetConfig } from "../../../control-plane/src/remote-write/queue-manager.js";
import { decodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { snappyUncompress } from "../../../control-plane/src/remote-write/snappy.js";
import type { Protocol, SendResult, Transport } from "../../../control-plane/src/remote-write/transport.js";
import { nodeFileSystem, type FileSystem } from "../../../control-plane/src/storage/file-system.js";
import { FakeClock, settle, until } from "../../support/fake-clock.js";

/** Records each body it is sent and answers from a script (the last entry repeats). */
class RecordingTransport implements Transport {
  readonly bodies: { protocol: Protocol; body: Uint8Array }[] = [];
  constructor(private readonly script: SendResult[] = [{ kind: "success", status: 204 }]) {}
  async send(body: Uint8Array, protocol: Protocol): Promise<SendResult> {
    this.bodies.push({ protocol, body });
    return this.script[Math.min(this.bodies.length - 1, this.script.length - 1)]!;
  }
  /** Sample values of each 1.0 body, in order. */
  values(): number[][] {
    return this.bodies.filter((b) => b.protocol === "1.0").map((b) => decodeWriteRequestV1(snappyUncompress(b.body)).flatMap((s) => s.samples.map((x) => x.value)));
  }
}

function target(dir: string, over: Partial<RemoteWriteTargetConfig> = {}): RemoteWriteTargetConfig {
  return {
    name: "t1", url: "http://unused.invalid/api/v1/write", protocol: "1.0", headers: {}, queueDir: join(dir, over.name ?? "t1"),
    maxQueueBytes: 1 << 20, maxQueueRecords: 1 << 20, segmentBytes: 1 << 16, maxSamplesPerSend: 4, shards: 1, batchSendDeadlineMs: 5000,
    minBackoffMs: 30, maxBackoffMs: 5000, maxRetryAfterMs: 60_000, remoteTimeoutMs: 1000, flushOnStopMs: 1000, ...over,
  };
}

const series = (name: string, value: number, ts: number) => ({ labels: ["__name__", name, "job", "j"], samples: [{ value, timestampMs: ts }] });

async function metric(reg: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = (await reg.getMetricsAsJSON()).find((x) => x.name === name);
  return m?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))?.value;
}

describe("remote-write queue manager (fake clock, scripted transport)", () => {
  it("sends a full batch at once and a partial batch only when its deadline passes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const transport = new RecordingTransport();
    const w = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => transport });
    w.start();
    const t0 = clock.now();
    w.write([1, 2, 3, 4, 5].map((v) => series(`m${v}`, v, t0)));
    await until(() => transport.bodies.length === 1, "first batch");
    assert.deepEqual(transport.values(), [[1, 2, 3, 4]]);
    await clock.advance(4999);
    assert.equal(transport.bodies.length, 1, "the partial batch waits for its deadline");
    await clock.advance(1);
    await until(() => transport.bodies.length === 2, "deadline batch");
    assert.deepEqual(transport.values(), [[1, 2, 3, 4], [5]]);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_sent_total", { target: "t1" }), 5);
    await settle();
    assert.equal(await metric(reg, "tokentrace_remote_write_queue_samples", { target: "t1" }), 0);
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("drops what the receiver refuses (400) without retrying it, counted by reason, after splitting the batch down to single series; retries a 429 after its Retry-After", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    // Every request of the first batch is refused: the split sends the whole binary tree over its
    // 4 series (2n - 1 = 7 requests) and drops each series alone; none is sent again.
    const refused: SendResult = { kind: "failed", reason: "out_of_order", status: 400 };
    const transport = new RecordingTransport([
      ...Array.from({ length: 7 }, () => refused),
      { kind: "retryable", reason: "http_429", status: 429, retryAfterMs: 2000 },
      { kind: "success", status: 204 },
    ]);
    const w = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => transport });
    w.start();
    const t0 = clock.now();
    w.write([1, 2, 3, 4].map((v) => series(`a${v}`, v, t0)));
    await until(() => transport.bodies.length === 7, "400 and its split");
    assert.deepEqual(transport.values(), [[1, 2, 3, 4], [1, 2], [1], [2], [3, 4], [3], [4]]);
    w.write([5, 6, 7, 8].map((v) => series(`b${v}`, v, t0)));
    await until(() => transport.bodies.length === 8, "429");
    await clock.advance(1999);
    assert.equal(transport.bodies.length, 8);
    await clock.advance(1);
    await until(() => transport.bodies.length === 9, "retry after Retry-After");
    assert.deepEqual(transport.values().slice(7), [[5, 6, 7, 8], [5, 6, 7, 8]]);
    await until(() => w.targets[0]!.queue.pendingSamples === 0, "commit");
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "out_of_order" }), 4);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_retried_total", { reason: "http_429" }), 4);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_sent_total", {}), 4);
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("a 400 for one series of a batch: the others are sent again in halves and delivered, the queue commits the batch once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    // A receiver that refuses any request holding the sample of value 3, as Prometheus's 1.0 handler does.
    const transport = new RecordingTransport();
    const refusing: Transport = {
      send: async (body, protocol) => {
        await transport.send(body, protocol);
        const values = decodeWriteRequestV1(snappyUncompress(body)).flatMap((x) => x.samples.map((y) => y.value));
        return values.includes(3) ? { kind: "failed", reason: "out_of_order", status: 400 } : { kind: "success", status: 204 };
      },
    };
    const w = new RemoteWriter([target(dir, { maxSamplesPerSend: 8 })], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => refusing });
    w.start();
    w.write([1, 2, 3, 4, 5, 6, 7, 8].map((v) => series(`a${v}`, v, clock.now())));
    await until(() => w.targets[0]!.queue.pendingSamples === 0, "commit");
    assert.deepEqual(transport.values(), [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4], [1, 2], [3, 4], [3], [4], [5, 6, 7, 8]]);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "out_of_order" }), 1);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_sent_total", {}), 7);
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("falls back from 2.0 to 1.0 on 415, and on a 2xx that does not confirm samples written", async () => {
    for (const answer of [{ kind: "failed", reason: "http_415", status: 415 }, { kind: "success", status: 204 }] as SendResult[]) {
      const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
      const clock = new FakeClock();
      const reg = new Registry();
      const transport = new RecordingTransport([answer, { kind: "success", status: 204 }]);
      const w = new RemoteWriter([target(dir, { protocol: "2.0" })], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => transport });
      w.start();
      w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, clock.now())));
      await until(() => transport.bodies.length === 2, "fallback resend");
      assert.deepEqual(transport.bodies.map((b) => b.protocol), ["2.0", "1.0"]);
      assert.deepEqual(transport.values(), [[1, 2, 3, 4]]);
      assert.equal(w.targets[0]!.currentProtocol, "1.0");
      assert.equal(await metric(reg, "tokentrace_remote_write_protocol_fallbacks_total", {}), 1);
      await w.stop();
      rmSync(dir, { recursive: true });
    }
  });

  it("keeps a 2.0 target on 2.0 when the receiver confirms the samples written", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const transport = new RecordingTransport([{ kind: "success", status: 204, samplesWritten: 4 }]);
    const w = new RemoteWriter([target(dir, { protocol: "2.0" })], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport });
    w.start();
    w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, clock.now())));
    await until(() => transport.bodies.length === 1, "send");
    await settle();
    assert.equal(w.targets[0]!.currentProtocol, "2.0");
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("gives each target its own queue: one receiver failing does not hold back the other", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const good = new RecordingTransport();
    const down = new RecordingTransport([{ kind: "retryable", reason: "network" }]);
    const w = new RemoteWriter([target(dir, { name: "good" }), target(dir, { name: "down" })], {
      clock, metrics: createRemoteWriteMetrics(reg), transportFor: (c) => (c.name === "good" ? good : down),
    });
    w.start();
    w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, clock.now())));
    await until(() => good.bodies.length === 1 && down.bodies.length === 1, "both tried");
    await clock.advance(1000);
    assert.ok(down.bodies.length > 2);
    assert.equal(w.targets[0]!.queue.pendingSamples, 0);
    assert.equal(w.targets[1]!.queue.pendingSamples, 4);
    assert.equal(await metric(reg, "tokentrace_remote_write_queue_samples", { target: "down" }), 4);
    const stopping = w.stop(); // flushes for flushOnStopMs, then leaves the batch on disk
    await clock.advance(1000);
    await stopping;
    const again = new RemoteWriter([target(dir, { name: "down" })], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => good });
    assert.equal(again.targets[0]!.queue.pendingSamples, 4);
    await again.stop();
    rmSync(dir, { recursive: true });
  });

  it("sends a partial batch at stop without waiting for its deadline", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const transport = new RecordingTransport();
    const w = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport });
    w.start();
    w.write([series("last", 42, clock.now())]);
    await settle();
    assert.equal(transport.bodies.length, 0, "waiting for the 5 s deadline");
    await w.stop();
    assert.deepEqual(transport.values(), [[42]]);
    rmSync(dir, { recursive: true });
  });

  it("drops samples not newer than the last one of their series and series without a name, counting both", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const w = new RemoteWriter([target(dir, { maxSamplesPerSend: 100 })], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => new RecordingTransport() });
    assert.equal(w.write([series("m", 1, 2000), { labels: ["job", "x"], samples: [{ value: 1, timestampMs: 1 }] }]), 1);
    assert.equal(w.write([series("m", 2, 2000), series("m", 3, 1000), series("m", 4, 3000)]), 1);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "out_of_order" }), 2);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "invalid_labels" }), 1);
    await w.stop();
    rmSync(dir, { recursive: true });
  });
});

describe("remote write through HTTP to a tiny receiver on 127.0.0.1 (fake clock for the waits)", () => {
  it("retries a 429 after exactly its Retry-After, drops the one series a 400 refuses (read from its text), and delivers the rest", async () => {
    const { createServer } = await import("node:http");
    const answers = [[429, "7"], [204]] as [number, string?][];
    const received: number[][] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const values = decodeWriteRequestV1(snappyUncompress(Buffer.concat(chunks))).flatMap((s) => s.samples.map((x) => x.value));
        received.push(values);
        // Like Prometheus's 1.0 handler: the sample of value 7 is out of order, so any request holding it is refused whole.
        if (values.includes(7)) return void res.writeHead(400, { "Content-Type": "text/plain" }).end("out of order sample\n");
        const [status, retryAfter] = answers[Math.min(received.length - 1, answers.length - 1)]!;
        if (retryAfter) res.setHeader("Retry-After", retryAfter);
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1/write`;
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const w = new RemoteWriter([target(dir, { url })], { clock, metrics: createRemoteWriteMetrics(reg) });
    w.start();
    w.write([1, 2, 3, 4].map((v) => series(`a${v}`, v, clock.now())));
    await until(() => received.length === 1, "429");
    await until(() => clock.pending > 0 && clock.sleeps.includes(7000), "Retry-After wait");
    await clock.advance(6999);
    assert.equal(received.length, 1, "not before Retry-After");
    await clock.advance(1);
    await until(() => received.length === 2, "retried");
    w.write([5, 6, 7, 8].map((v) => series(`b${v}`, v, clock.now())));
    await until(() => received.length === 7, "400 and its split");
    w.write([9, 10, 11, 12].map((v) => series(`c${v}`, v, clock.now())));
    await until(() => received.length === 8, "after the drop");
    await until(() => w.targets[0]!.queue.pendingSamples === 0, "all committed");
    assert.deepEqual(received, [[1, 2, 3, 4], [1, 2, 3, 4], [5, 6, 7, 8], [5, 6], [7, 8], [7], [8], [9, 10, 11, 12]]);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "out_of_order" }), 1);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_retried_total", { reason: "http_429" }), 4);
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_sent_total", {}), 11);
    await w.stop();
    server.close();
    rmSync(dir, { recursive: true });
  });

  it("counts samples dropped when the queue is over its byte bound (receiver down)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const down: Transport = { send: async () => ({ kind: "retryable", reason: "network" }) };
    // Each compact record of 4 samples is ~40 bytes (the first of a segment also defines the 4 series): segments of 1 KiB, bound 2 KiB.
    const w = new RemoteWriter([target(dir, { maxQueueBytes: 2048, segmentBytes: 1024 })], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => down });
    for (let i = 0; i < 400; i++) w.write([0, 1, 2, 3].map((v) => series(`m${v}`, i * 4 + v, 1000 + i)));
    const q = w.targets[0]!.queue;
    assert.ok(q.bytes <= 2048, `queue bytes ${q.bytes}`);
    const dropped = (await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "queue_full" })) ?? 0;
    assert.equal(dropped + q.pendingSamples, 1600, "every sample is either queued or counted as dropped");
    assert.ok(dropped > 0);
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("reports the true lag after a restart during an outage: the newest delivered time is kept with the queue", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    let up = true;
    const transport: Transport = { send: async () => (up ? { kind: "success", status: 204 } : { kind: "retryable", reason: "http_5xx", status: 503 }) };
    const t0 = clock.now();
    const first = new RemoteWriter([target(dir, { flushOnStopMs: 0 })], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport });
    first.start();
    first.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, t0)));
    await until(() => first.targets[0]!.queue.pendingSamples === 0, "delivered before the outage");
    up = false;
    first.write([1, 2, 3, 4].map((v) => series(`m${v}`, v + 10, t0 + 90_000)));
    await until(() => clock.pending > 0, "retrying");
    const stopping = first.stop();
    await clock.advance(1);
    await stopping;
    // The restarted process, with the receiver still down: 90 s behind, not 0.
    const reg = new Registry();
    const second = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => transport });
    assert.equal(await metric(reg, "tokentrace_remote_write_lag_seconds", { target: "t1" }), 90);
    assert.equal(second.targets[0]!.queue.pendingSamples, 4);
    await second.stop();
    rmSync(dir, { recursive: true });
  });
});

describe("the sender loop never takes the process down (fake clock)", () => {
  it("sends what is appended after a power loss left `committed` past the end of its segment", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const transport = new RecordingTransport();
    const first = new RemoteWriter([target(dir, { maxSamplesPerSend: 2 })], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport });
    first.start();
    for (let i = 0; i < 3; i++) first.write([1, 2].map((v) => series(`m${v}`, i * 10 + v, clock.now() + i)));
    await until(() => first.targets[0]!.queue.pendingSamples === 0, "delivered");
    await first.stop();
    // The commit survived the power loss, the segment's unsynced records did not.
    const seg = readdirSync(join(dir, "t1")).find((f) => f.endsWith(".seg"))!;
    truncateSync(join(dir, "t1", seg), 0);
    const errors: object[] = [];
    const second = new RemoteWriter([target(dir, { maxSamplesPerSend: 2 })], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport, log: (r) => errors.push(r) });
    second.start();
    second.write([1, 2].map((v) => series(`m${v}`, 100 + v, clock.now() + 100)));
    await until(() => transport.bodies.length === 4, "the new samples sent");
    assert.deepEqual(transport.values().at(-1), [101, 102]);
    await until(() => second.targets[0]!.queue.pendingSamples === 0, "committed");
    assert.deepEqual(errors, []);
    await second.stop();
    rmSync(dir, { recursive: true });
  });

  it("counts again, and neither sends nor commits, when a read hands out nothing while samples are counted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const transport = new RecordingTransport();
    const logs: { msg: string }[] = [];
    const w = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(new Registry()), transportFor: () => transport, log: (r) => logs.push(r as { msg: string }) });
    const q = w.targets[0]!.queue;
    const read = q.read.bind(q);
    let empty = 1;
    q.read = (max) => (empty-- > 0 ? [] : read(max));
    w.start();
    w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, clock.now())));
    await until(() => logs.length === 1, "the disagreement logged");
    assert.equal(transport.bodies.length, 0);
    await clock.advance(5000);
    await until(() => transport.bodies.length === 1, "sent after counting again");
    assert.deepEqual(transport.values(), [[1, 2, 3, 4]]);
    await until(() => q.pendingSamples === 0, "committed");
    assert.deepEqual(logs.map((l) => l.msg), ["remote-write queue count disagreed with its records; counted again"]);
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("logs and counts a sender failure, reopens the queue from disk, and sends everything after a backoff", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const delivered: number[][] = [];
    let throwNext = true;
    const transport: Transport = {
      send: async (body) => {
        if (throwNext) {
          throwNext = false;
          throw new Error("injected: a bug in the transport");
        }
        delivered.push(decodeWriteRequestV1(snappyUncompress(body)).flatMap((s) => s.samples.map((x) => x.value)));
        return { kind: "success", status: 204 };
      },
    };
    const logs: { msg: string; target: string; failures: number }[] = [];
    const w = new RemoteWriter([target(dir, { minBackoffMs: 100, maxBackoffMs: 100 })], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => transport, random: () => 0, log: (r) => logs.push(r as never) });
    w.start();
    w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, clock.now())));
    await until(() => logs.length === 1, "the failure logged");
    assert.deepEqual(logs.map((l) => [l.msg, l.target, l.failures]), [["remote-write sender failed; reopening its queue from disk", "t1", 1]]);
    assert.equal(await metric(reg, "tokentrace_remote_write_queue_restarts_total", { target: "t1" }), 1);
    await clock.advance(49);
    assert.deepEqual(delivered, [], "half the 100 ms backoff (jitter 0) has not passed");
    await clock.advance(1);
    await until(() => delivered.length === 1, "sent after the reopen");
    assert.deepEqual(delivered, [[1, 2, 3, 4]]);
    await until(() => w.targets[0]!.queue.pendingSamples === 0, "committed");
    await w.stop();
    rmSync(dir, { recursive: true });
  });

  it("counts samples it could not append (a full disk) and defines their series again in the next record", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tokentrace-qm-"));
    const clock = new FakeClock();
    const reg = new Registry();
    const transport = new RecordingTransport();
    let failNextWrite = false;
    const fs: FileSystem = {
      ...nodeFileSystem,
      writeSync: (fd, buffer, offset, length, position) => {
        if (failNextWrite) {
          failNextWrite = false;
          throw Object.assign(new Error("ENOSPC: injected"), { code: "ENOSPC" });
        }
        return nodeFileSystem.writeSync(fd, buffer, offset, length, position);
      },
    };
    const w = new RemoteWriter([target(dir)], { clock, metrics: createRemoteWriteMetrics(reg), transportFor: () => transport, fs });
    w.start();
    failNextWrite = true;
    w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v, clock.now())));
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "queue_write_failed" }), 4);
    w.write([1, 2, 3, 4].map((v) => series(`m${v}`, v + 10, clock.now() + 1)));
    await until(() => transport.bodies.length === 1, "the next record sent");
    assert.deepEqual(transport.values(), [[11, 12, 13, 14]], "its series resolved: defined again");
    assert.equal(await metric(reg, "tokentrace_remote_write_samples_dropped_total", { reason: "unknown_series" }), undefined);
    await w.stop();
    rmSync(dir, { recursive: true });
  });
});
