// The control plane's metrics pipeline alone in a process, wired as control-plane/src/main.ts wires
// it (the dashboard and the adaptive sampler's rate source observe every joined batch), for the
// side-by-side cost benchmark. argv[2]: JSON ChildConfig. On the IPC message "report" it collects
// garbage and answers with its heap, active series and queue bytes. With `simulated`, the pipeline
// runs on a simulated clock that moves only when the parent sends {advance: n}: n scrape intervals,
// each once every target's scrape has been joined (real scrapes over loopback), then it answers
// {advanced: n}. Minutes of pipeline time (a full rate window) then take as long as their scrapes.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Registry } from "prom-client";
import { startPipeline, withDefaults } from "../../../control-plane/src/pipeline/index.js";
import type { StaticTargetConfig } from "../../../control-plane/src/scrape/targets.js";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { PipelineRateSource } from "../../../control-plane/src/adaptive/pipeline-rates.js";
import { FakeClock, until } from "../../support/fake-clock.js";

export interface ChildConfig {
  targets: StaticTargetConfig[];
  sinkUrl: string;
  queueDir: string;
  intervalMs: number;
  simulated?: boolean;
  /** false: the pipeline alone, without the dashboard and the sampler's rate source (default true). */
  observers?: boolean;
}

/** What the child reports. */
export interface ChildReport { heapUsedBytes: number; arrayBuffersBytes: number; activeSeries: number; queueAppendedBytes: number; queueAppendedSamples: number; windowBytes: number }

const cfg = JSON.parse(process.argv[2]!) as ChildConfig;
// Whole seconds, as a scrape loop on a real clock would start.
const clock = cfg.simulated === true ? new FakeClock(Math.floor(Date.now() / 1000) * 1000, { recordSleeps: false }) : undefined;
const observers = cfg.observers !== false;
const dashboard = new DashboardSeries();
const rates = new PipelineRateSource({ namespaceOf: () => "llm", now: () => (clock ?? Date).now(), maxAgeMs: 3 * cfg.intervalMs });
let joined = 0;
const pipeline = await startPipeline(
  withDefaults({
    scrape: { intervalMs: cfg.intervalMs, timeoutMs: Math.min(cfg.intervalMs, 10_000), static: cfg.targets },
    remoteWrite: { queueDir: cfg.queueDir, targets: [{ name: "sink", url: cfg.sinkUrl }] },
  }),
  {
    registry: new Registry(),
    ...(clock ? { clock } : {}),
    onBatch: (series, result) => {
      joined++;
      if (!observers) return;
      dashboard.observe(series, result);
      rates.observe(series, result);
    },
  },
);

/** Moves the simulated clock `intervals` scrape intervals, each once every target's scrape has been joined. */
async function advance(intervals: number): Promise<void> {
  for (let i = 0; i < intervals; i++) {
    const want = joined + cfg.targets.length;
    await clock!.advance(cfg.intervalMs);
    await until(() => joined >= want, `interval ${i + 1}'s ${cfg.targets.length} scrapes`, 120_000);
  }
}

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
process.on("message", (msg) => {
  // A normal exit, so `--cpu-prof` and `--heap-prof` write their files (see profile-pipeline.ts).
  if (msg === "exit") process.exit(0);
  if (typeof msg === "object" && msg !== null && "advance" in msg) {
    const n = (msg as { advance: number }).advance;
    advance(n).then(
      () => process.send!({ advanced: n }),
      (error: unknown) => {
        console.error(`pipeline-child: ${String(error)}`);
        process.exit(1);
      },
    );
    return;
  }
  if (msg !== "report") return;
  gc();
  const q = pipeline.writer.targets[0]!.queue;
  const memory = process.memoryUsage();
  const report: ChildReport = {
    heapUsedBytes: memory.heapUsed,
    arrayBuffersBytes: memory.arrayBuffers,
    activeSeries: pipeline.gate.activeSeries,
    queueAppendedBytes: q.appendedBytes,
    queueAppendedSamples: q.appendedSamples,
    windowBytes: pipeline.joiner.windowBudget.bytes,
  };
  process.send!(report);
});
process.send!("started");
