// A remote-write sender run as a child process by the kill -9 test.
//   produce <queueDir> <url> <records> <samplesPerRecord> <t0>: queues every record durably, prints
//     "queued", then sends until killed.
//   drain <queueDir> <url>: sends what the queue holds, prints "drained <n>" and exits.
import { Registry } from "prom-client";
import { RemoteWriter } from "../../../control-plane/src/remote-write/writer.js";
import { createRemoteWriteMetrics } from "../../../control-plane/src/remote-write/metrics.js";
import { systemClock } from "../../../control-plane/src/remote-write/retry.js";

const [mode, queueDir, url, records, perRecord, t0] = process.argv.slice(2);
const maxSamplesPerSend = Number(perRecord ?? 200);
const writer = new RemoteWriter(
  [{
    name: "child", url: url!, protocol: "1.0", headers: {}, queueDir: queueDir!, maxQueueBytes: 64 << 20, maxQueueRecords: 1 << 20, segmentBytes: 64 << 10,
    maxSamplesPerSend, shards: 1, batchSendDeadlineMs: 10, minBackoffMs: 20, maxBackoffMs: 200, maxRetryAfterMs: 1000, remoteTimeoutMs: 5000, flushOnStopMs: 100,
  }],
  { clock: systemClock, metrics: createRemoteWriteMetrics(new Registry()) },
);

if (mode === "produce") {
  const base = Number(t0);
  for (let r = 0; r < Number(records); r++) {
    const series = [];
    for (let i = 0; i < maxSamplesPerSend; i++) {
      series.push({ labels: ["__name__", "kill_test", "i", String(i)], samples: [{ value: r * 1000 + i, timestampMs: base + r * 1000 }] });
    }
    writer.write(series);
  }
  process.stdout.write("queued\n");
  writer.start();
} else {
  const q = writer.targets[0]!.queue;
  const pending = q.pendingSamples;
  writer.start();
  const timer = setInterval(() => {
    if (q.pendingSamples === 0) {
      clearInterval(timer);
      void writer.stop().then(() => process.stdout.write(`drained ${pending}\n`));
    }
  }, 10);
}
