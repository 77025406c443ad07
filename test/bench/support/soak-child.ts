// The soak's process (run with --expose-gc): the demo's whole stack (control plane, the built filter in
// the local proxy, the simulated vLLM engine and dcgm-exporter, the metrics pipeline remote-writing to
// a loopback sink) on one simulated clock, the demo's load at SOAK_RPS, for SOAK_MINUTES of simulated
// time. Every SOAK_EVERY_MINUTES it collects garbage and prints one JSON line: the heap and what each
// held structure reports; the last line is {"done": ...}. Time moves only when this file moves it, so
// two hours of traffic take minutes, and nothing here waits on real time.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeHeapSnapshot } from "node:v8";
import { memoryBudgets, type MemoryBudget } from "../../../control-plane/src/compose/memory-budgets.js";
import { FakeClock } from "../../support/fake-clock.js";
import { startDemoStack } from "../../demo/stack.js";
import { startSink } from "./remote-write-sink.js";

const minutes = Number(process.env.SOAK_MINUTES ?? "120");
const everyMinutes = Number(process.env.SOAK_EVERY_MINUTES ?? "10");
const rps = Number(process.env.SOAK_RPS ?? "40");
// Heap snapshots to diff when the heap does not level off: minutes, comma-separated (written to the temp directory).
const snapshotMinutes = new Set((process.env.SOAK_SNAPSHOT_MINUTES ?? "").split(",").filter((m) => m !== "").map(Number));
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("soak-child needs node --expose-gc");

/** The first line: the parts' budgets as the control plane prints them at start-up, and the heap then. */
export interface SoakStart {
  budgets: MemoryBudget[];
  heapUsedBytes: number;
}

/** A line of the soak's record every SOAK_EVERY_MINUTES. */
export interface SoakSample {
  minute: number;
  heapUsedBytes: number;
  externalBytes: number;
  arrayBuffersBytes: number;
  rssBytes: number;
  /** What each budgeted part counts against its budget. */
  held: Record<string, number>;
  requests: { sent: number; errors: number; skipped: number };
  samplesReceived: number;
  /** Wall seconds since the stack started. */
  realSeconds: number;
}

export type SoakLine = SoakStart | SoakSample | { done: true };

const wasm = fileURLToPath(new URL("../../../build/filter.wasm", import.meta.url));
const sink = await startSink();
// Whole seconds, as a scrape loop on a real clock would start.
const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000, { recordSleeps: false });
const started = performance.now();
const stack = await startDemoStack({ wasm, prometheus: "off", sinkUrl: sink.url, loadRps: rps, errorRate: 0.01, clock });

const sample = (minute: number): SoakSample => {
  gc();
  gc();
  const m = process.memoryUsage();
  const load = stack.load!.progress();
  return {
    minute,
    heapUsedBytes: m.heapUsed,
    externalBytes: m.external,
    arrayBuffersBytes: m.arrayBuffers,
    rssBytes: m.rss,
    // Named as the budgets' parts; each is that part's own count of what it holds.
    held: {
      "pipeline.series": stack.pipeline.writer.registry.bytes,
      "pipeline.joinWindows": stack.pipeline.joiner.windowBudget.bytes,
      "dashboard.history": stack.dashboard.bytes,
      "dashboard.engineSignals": stack.dashboard.engine.bytes,
      "dashboard.gpuHealth": stack.dashboard.gpu.bytes,
      "dashboard.loraAdapters": stack.dashboard.lora.bytes,
      "traces.spans": stack.traces.bytes,
    },
    requests: { sent: load.sent, errors: load.errors, skipped: load.skipped },
    samplesReceived: [...sink.received.values()].reduce((a, b) => a + b, 0),
    realSeconds: (performance.now() - started) / 1000,
  };
};

try {
  gc();
  gc();
  const start: SoakStart = { budgets: memoryBudgets({ dashboard: stack.dashboard, traces: stack.traces, pipeline: stack.pipeline.config }), heapUsedBytes: process.memoryUsage().heapUsed };
  process.stdout.write(`${JSON.stringify(start)}\n`);
  for (let minute = 1; minute <= minutes; minute++) {
    await clock.advance(60_000);
    if (minute % everyMinutes === 0 || minute === minutes) process.stdout.write(`${JSON.stringify(sample(minute))}\n`);
    if (snapshotMinutes.has(minute)) process.stderr.write(`soak: heap snapshot ${writeHeapSnapshot(join(tmpdir(), `soak-${minute}min.heapsnapshot`))}\n`);
  }
} finally {
  await stack.close();
  await sink.close();
}
process.stdout.write(`${JSON.stringify({ done: true })}\n`);
