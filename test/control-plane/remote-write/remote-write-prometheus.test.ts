// Remote write against a real Prometheus 2.42 (Debian package) on 127.0.0.1, read back over its
// HTTP API. Uses the real clock with small backoffs and batch deadlines: the waits here are the
// receiver's own start-up and the outage under test, not sleeps standing in for a clock.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Registry } from "prom-client";
import { RemoteWriter } from "../../../control-plane/src/remote-write/writer.js";
import { createRemoteWriteMetrics } from "../../../control-plane/src/remote-write/metrics.js";
import type { RemoteWriteTargetConfig } from "../../../control-plane/src/remote-write/queue-manager.js";
import { systemClock } from "../../../control-plane/src/remote-write/retry.js";
import { decodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { snappyUncompress } from "../../../control-plane/src/remote-write/snappy.js";
import { HttpTransport, type Protocol, type SendResult, type Transport } from "../../../control-plane/src/remote-write/transport.js";
import { PrometheusInstance } from "../../support/prometheus.js";

let prom: PrometheusInstance;
const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "tokentrace-rw-"));
  dirs.push(d);
  return d;
};

function target(url: string, over: Partial<RemoteWriteTargetConfig> = {}): RemoteWriteTargetConfig {
  return {
    name: "prom", url, protocol: "1.0", headers: {}, queueDir: tmp(), maxQueueBytes: 64 << 20, maxQueueRecords: 1 << 20, segmentBytes: 1 << 20,
    maxSamplesPerSend: 500, shards: 2, batchSendDeadlineMs: 20, minBackoffMs: 50, maxBackoffMs: 1000, maxRetryAfterMs: 5000,
    remoteTimeoutMs: 5000, flushOnStopMs: 2000, ...over,
  };
}

async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Whole seconds, a few minutes back: inside the TSDB head's accepted window, exact in queries.
const baseMs = (): number => Math.floor(Date.now() / 1000) * 1000 - 5 * 60_000;

before(async () => {
  prom = await PrometheusInstance.start();
});
after(async () => {
  await prom.destroy();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("remote write to a real Prometheus", () => {
  it("stores exact values and the exact sorted label set, and a stale marker ends the series at once", async () => {
    const w = new RemoteWriter([target(prom.writeUrl)], { clock: systemClock, metrics: createRemoteWriteMetrics(new Registry()) });
    w.start();
    const t0 = baseMs();
    w.write([{ labels: ["route", "chat", "__name__", "rw_exact", "pod", "chat-1", "pod_uid", ""], samples: [{ value: 1.5, timestampMs: t0 }, { value: 2.25, timestampMs: t0 + 15_000 }] }]);
    w.write([{ labels: ["__name__", "rw_exact", "route", "chat", "pod", "chat-1"], samples: [{ value: NaN, timestampMs: t0 + 30_000, stale: true }] }]);
    await waitFor(() => w.targets[0]!.queue.pendingSamples === 0, "queue drained");
    const range = await prom.queryRange("rw_exact", t0 / 1000, (t0 + 45_000) / 1000, 15);
    assert.deepEqual(range, [
      { metric: { __name__: "rw_exact", pod: "chat-1", route: "chat" }, values: [[t0 / 1000, "1.5"], [t0 / 1000 + 15, "2.25"]] },
    ]);
    // Without the marker, lookback would still return 2.25 at t0+45s.
    assert.deepEqual(await prom.query("rw_exact", (t0 + 45_000) / 1000), []);
    await w.stop();
  });

  it("a 2.0 target meets Prometheus 2.42, which answers 204 without X-Prometheus-Remote-Write-Samples-Written and stores nothing; it falls back to 1.0 and every sample arrives", async () => {
    const reg = new Registry();
    const w = new RemoteWriter([target(prom.writeUrl, { protocol: "2.0" })], { clock: systemClock, metrics: createRemoteWriteMetrics(reg) });
    w.start();
    const t0 = baseMs();
    w.write([0, 1, 2].map((i) => ({ labels: ["__name__", "rw_v2", "i", String(i)], samples: [{ value: i * 10, timestampMs: t0 }] })));
    await waitFor(() => w.targets[0]!.queue.pendingSamples === 0, "queue drained");
    const r = await prom.query("rw_v2", t0 / 1000);
    assert.deepEqual(r.map((x) => [x.metric.i, x.value![1]]).sort(), [["0", "0"], ["1", "10"], ["2", "20"]]);
    assert.equal(w.targets[0]!.currentProtocol, "1.0");
    const m = (await reg.getMetricsAsJSON()).find((x) => x.name === "tokentrace_remote_write_protocol_fallbacks_total");
    assert.equal(m?.values[0]?.value, 1);
    await w.stop();
  });

  it("a batch mixing an out-of-order series with good ones: Prometheus refuses the whole request (400), the split delivers every good series and drops only the bad one, counted as out_of_order", async (t) => {
    const reg = new Registry();
    const statuses: number[] = [];
    const counting = (c: RemoteWriteTargetConfig): Transport => {
      const http = new HttpTransport({ url: c.url, headers: c.headers, timeoutMs: c.remoteTimeoutMs });
      return { send: async (body: Uint8Array, protocol: Protocol): Promise<SendResult> => {
        const r = await http.send(body, protocol);
        statuses.push(r.status ?? 0);
        return r;
      } };
    };
    const t0 = baseMs();
    // Another writer (a recording rule, another replica) already stored a newer sample of the bad
    // series, so this writer's sample at t0 is out of order at the receiver, not at the writer.
    const other = new RemoteWriter([target(prom.writeUrl)], { clock: systemClock, metrics: createRemoteWriteMetrics(new Registry()) });
    other.start();
    other.write([{ labels: ["__name__", "rw_split", "i", "bad"], samples: [{ value: 1, timestampMs: t0 + 10_000 }] }]);
    await waitFor(() => other.targets[0]!.queue.pendingSamples === 0, "the newer sample delivered");
    await other.stop();
    const w = new RemoteWriter([target(prom.writeUrl, { shards: 1, maxSamplesPerSend: 100 })], { clock: systemClock, metrics: createRemoteWriteMetrics(reg), transportFor: counting });
    w.start();
    const good = 15;
    w.write([
      ...Array.from({ length: 8 }, (_, i) => ({ labels: ["__name__", "rw_split", "i", `g${i}`], samples: [{ value: i, timestampMs: t0 }] })),
      { labels: ["__name__", "rw_split", "i", "bad"], samples: [{ value: 2, timestampMs: t0 }] },
      ...Array.from({ length: good - 8 }, (_, i) => ({ labels: ["__name__", "rw_split", "i", `g${i + 8}`], samples: [{ value: i + 8, timestampMs: t0 }] })),
    ]);
    await waitFor(() => w.targets[0]!.queue.pendingSamples === 0, "batch delivered");
    const stored = await prom.query(`rw_split{i=~"g.*"}`, t0 / 1000);
    assert.deepEqual(stored.map((x) => Number(x.value![1])).sort((a, b) => a - b), Array.from({ length: good }, (_, i) => i));
    assert.deepEqual((await prom.queryRange(`rw_split{i="bad"}`, t0 / 1000, t0 / 1000 + 10, 1)).map((x) => x.values), [[[t0 / 1000 + 10, "1"]]], "the refused sample is not stored");
    const dropped = (await reg.getMetricsAsJSON()).find((x) => x.name === "tokentrace_remote_write_samples_dropped_total");
    assert.deepEqual(dropped?.values.map((v) => [v.labels.reason, v.value]), [["out_of_order", 1]]);
    // n = 16 series, one refused: the full request, then halves down to the bad one (2 per level).
    assert.equal(statuses[0], 400, statuses.join(","));
    assert.ok(statuses.length <= 2 * (good + 1), `requests: ${statuses.length}`);
    assert.equal(statuses.filter((s) => s === 400).length, 1 + Math.log2(good + 1));
    t.diagnostic(`split: ${good + 1} series sent, 1 refused (out_of_order), ${stored.length} queryable, ${statuses.length} requests (${statuses.join(",")})`);
    await w.stop();
  });

  it("loses nothing when the receiver is stopped for 30 s mid-stream and restarted on the same data directory", async () => {
    const reg = new Registry();
    const w = new RemoteWriter([target(prom.writeUrl, { maxSamplesPerSend: 100 })], { clock: systemClock, metrics: createRemoteWriteMetrics(reg) });
    w.start();
    const t0 = baseMs() - 60_000;
    const seriesCount = 20;
    let step = 0;
    const writeStep = (): void => {
      const ts = t0 + step * 500;
      w.write(Array.from({ length: seriesCount }, (_, i) => ({ labels: ["__name__", "rw_outage", "i", String(i)], samples: [{ value: step, timestampMs: ts }] })));
      step++;
    };
    const producer = setInterval(writeStep, 100);
    await new Promise((r) => setTimeout(r, 2000));
    await prom.stop();
    await new Promise((r) => setTimeout(r, 30_000));
    const queuedDuringOutage = w.targets[0]!.queue.pendingSamples;
    await prom.restart();
    await new Promise((r) => setTimeout(r, 1000));
    clearInterval(producer);
    const steps = step;
    await waitFor(() => w.targets[0]!.queue.pendingSamples === 0, "queue drained after restart");
    // ~300 steps were written during the outage; a loaded machine slows the 100 ms producer, so
    // only require that a real backlog (>= 10 s of it) was queued while the receiver was down.
    assert.ok(queuedDuringOutage >= 100 * seriesCount, `queued during outage: ${queuedDuringOutage}`);
    const endSec = (t0 + steps * 500) / 1000;
    const counts = await prom.query(`count_over_time(rw_outage[${Math.ceil(endSec - t0 / 1000) + 1}s])`, endSec);
    assert.equal(counts.length, seriesCount);
    for (const c of counts) assert.equal(c.value![1], String(steps), `series i=${c.metric.i}`);
    const sums = await prom.query(`sum(sum_over_time(rw_outage[${Math.ceil(endSec - t0 / 1000) + 1}s]))`, endSec);
    assert.equal(sums[0]!.value![1], String((seriesCount * (steps - 1) * steps) / 2));
    const retried = (await reg.getMetricsAsJSON()).find((x) => x.name === "tokentrace_remote_write_samples_retried_total");
    assert.ok((retried?.values[0]?.value ?? 0) > 0);
    await w.stop();
  });

  it("after kill -9 of the sender mid-stream and a restart on the same queue directory, every queued sample arrives exactly once", async () => {
    // A proxy in front of Prometheus holds each request 300 ms, forwards it only if the sender is
    // still connected, and records every (series, timestamp) Prometheus accepted. The 4th request
    // is never answered: the sender is killed while it waits for it.
    const delivered = new Map<string, number>();
    let holding = 0;
    let onHold: (() => void) | undefined;
    const proxy = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const n = ++holding;
        onHold?.();
        if (n === 4) return; // the request in flight when the sender is killed: never answered
        setTimeout(async () => {
          if (res.socket === null || res.socket.destroyed) return; // sender died while we held it
          const body = Buffer.concat(chunks);
          const up = await fetch(prom.writeUrl, { method: "POST", body, headers: { "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Write-Version": "0.1.0" } });
          await up.arrayBuffer();
          if (up.status < 300) {
            for (const s of decodeWriteRequestV1(snappyUncompress(body))) {
              for (const smp of s.samples) {
                const k = `${s.labels.join(",")}@${smp.timestampMs}`;
                delivered.set(k, (delivered.get(k) ?? 0) + 1);
              }
            }
          }
          res.writeHead(up.status).end();
        }, 300);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/api/v1/write`;
    const queueDir = tmp();
    const script = fileURLToPath(new URL("./sender-child.ts", import.meta.url));
    const records = 10;
    const perRecord = 200;
    const t0 = baseMs();
    const child = spawn(process.execPath, ["--import", "tsx", script, "produce", queueDir, url, String(records), String(perRecord), String(t0)], { stdio: ["ignore", "pipe", "inherit"] });
    const killed = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    // Kill while the proxy holds the 4th request: three batches delivered, seven still queued.
    await new Promise<void>((resolve) => {
      onHold = () => {
        if (holding === 4) {
          child.kill("SIGKILL");
          resolve();
        }
      };
    });
    await killed;
    onHold = undefined;
    await new Promise((r) => setTimeout(r, 400)); // let the held request see the closed socket
    assert.equal(delivered.size, 3 * perRecord);

    const drain = spawn(process.execPath, ["--import", "tsx", script, "drain", queueDir, url], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    drain.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    await new Promise<void>((resolve) => drain.once("exit", () => resolve()));
    proxy.close();
    assert.equal(out.trim(), `drained ${7 * perRecord}`);
    assert.equal(delivered.size, records * perRecord, "every queued sample arrived");
    assert.deepEqual([...new Set(delivered.values())], [1], "none arrived twice");
    const endSec = (t0 + (records - 1) * 1000) / 1000;
    const counts = await prom.query(`sum(count_over_time(kill_test[${records + 5}s]))`, endSec);
    assert.equal(counts[0]!.value![1], String(records * perRecord));
  });
});
