// Remote-write encoding + snappy: tokentrace's hand-written encoder and native snappy against npm
// prometheus-remote-write (protobufjs + snappyjs) on the same 100k series, in one run; and the
// memory the writer's per-series state takes per 100k active series.
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Registry } from "prom-client";
import { encodeWriteRequestV1, ProtoWriter } from "../../control-plane/src/remote-write/protobuf.js";
import { snappyCompress } from "../../control-plane/src/remote-write/snappy.js";
import { RemoteWriter } from "../../control-plane/src/remote-write/writer.js";
import { SeriesGate } from "../../control-plane/src/pipeline/series-gate.js";
import { REMOTE_WRITE_TARGET_DEFAULTS } from "../../control-plane/src/pipeline/config.js";
import { createRemoteWriteMetrics } from "../../control-plane/src/remote-write/metrics.js";
import { systemClock } from "../../control-plane/src/remote-write/retry.js";
import type { WriteSeries } from "../../control-plane/src/remote-write/series.js";
import type { BenchRow } from "./table.js";

const require = createRequire(import.meta.url);
const peer = require("prometheus-remote-write") as { serialize(payload: unknown): Promise<Uint8Array> };
const snappyjs = require("snappyjs") as { compress(b: Uint8Array): Uint8Array };

const SERIES = 100_000;

/** 100k joined series shaped like the pipeline's output (filter series with GPU identity). */
function makeSeries(ts: number): WriteSeries[] {
  const out: WriteSeries[] = [];
  for (let i = 0; i < SERIES; i++) {
    out.push({
      labels: [
        "__name__", i % 3 === 0 ? "tokentrace_llm_output_tokens_total" : i % 3 === 1 ? "tokentrace_requests_total" : "DCGM_FI_DEV_GPU_UTIL",
        "gpu", String(i % 8),
        "gpu_uuid", `GPU-${(i % 512).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`,
        "hostname", `gpu-node-${i % 64}`,
        "model", "llama-3-8b",
        "namespace", "llm",
        "pod", `chat-7d9f-${i}`,
        "route", `route-${i % 50}`,
      ],
      samples: [{ value: i * 1.5, timestampMs: ts }],
    });
  }
  return out;
}

function bestMs(fn: () => void, rounds: number): number {
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

/** Least CPU time (user + system, ms) of `rounds` runs: what one core spends, whatever else the machine runs. */
function bestCpuMs(fn: () => void, rounds: number): number {
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    fn();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

async function bestMsAsync(fn: () => Promise<void>, rounds: number): Promise<number> {
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    await fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

export async function run(): Promise<BenchRow[]> {
  const ts = 1_800_000_000_000;
  const ours = makeSeries(ts);
  const peerPayload = {
    timeseries: ours.map((s) => {
      const labels = [];
      for (let i = 0; i < s.labels.length; i += 2) labels.push({ name: s.labels[i]!, value: s.labels[i + 1]! });
      return { labels, samples: [{ value: s.samples[0]!.value, timestamp: ts }] };
    }),
  };
  const w = new ProtoWriter(32 << 20);
  const oursOnce = (): void => {
    w.pos = 0;
    snappyCompress(encodeWriteRequestV1(ours, w));
  };
  const peerOnce = async (): Promise<void> => {
    snappyjs.compress(await peer.serialize(peerPayload));
  };
  oursOnce();
  await peerOnce();
  const oursMs = bestMs(oursOnce, 15);
  const peerMs = await bestMsAsync(peerOnce, 3);
  // Throughput per core from CPU time: on a shared machine wall time also counts time spent
  // waiting for a core. (GC helper threads count too, so this errs low.)
  const oursCpuMs = bestCpuMs(oursOnce, 15);
  const samplesPerSec = SERIES / (oursCpuMs / 1000);
  const ratio = peerMs / oursMs;

  // Memory: the state the pipeline keeps per active series (cardinality cap, staleness tracker,
  // the writer's time-order map, sharing one key string per series) after one report of 100k series,
  // with the labels they hold. The writer has one target (not started) so write() does its bookkeeping.
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-bench-"));
  gc();
  const before = process.memoryUsage().heapUsed;
  const writer = new RemoteWriter(
    [{ ...REMOTE_WRITE_TARGET_DEFAULTS, name: "bench", url: "http://127.0.0.1:9/api/v1/write", queueDir: dir }],
    { clock: systemClock, metrics: createRemoteWriteMetrics(new Registry()), fsync: "never" },
  );
  const gate = new SeriesGate(writer.registry, 1_000_000);
  writer.writeGated(gate.pass("bench", makeSeries(ts), ts));
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  if (writer.activeSeries !== SERIES || gate.activeSeries !== SERIES || gate.staleness.size !== SERIES) throw new Error("state not held");
  await writer.stop();
  rmSync(dir, { recursive: true, force: true });

  return [
    {
      figure: "remote-write encode + snappy, 100k series (1 sample each)",
      value: oursMs,
      unit: "ms",
      baseline: { name: "prometheus-remote-write", value: peerMs },
      ratio: { value: ratio, of: "peer/ours time", better: "higher" },
      bar: { on: "ratio", min: 10 },
    },
    { figure: "remote-write encode + snappy throughput per CPU-second (100k series)", value: Math.round(samplesPerSec), unit: "samples/s", bar: { on: "value", min: 1_000_000 } },
    { figure: "remote-write encode + snappy throughput, wall clock", value: Math.round(SERIES / (oursMs / 1000)), unit: "samples/s" },
    { figure: "memory per 100k active series (labels, cap, staleness, writer order; 9 labels each)", value: Math.round(bytes / 1024 / 1024), unit: "MiB" },
  ];
}
