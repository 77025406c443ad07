// The control plane's metrics pipeline alone in a process, wired as control-plane/src/main.ts wires
// it (the dashboard and the adaptive sampler's rate source observe every joined batch), for the
// side-by-side cost benchmark. argv[2]: JSON {targets, sinkUrl, queueDir, intervalMs}. On the IPC
// message "report" it collects garbage and answers with its heap, active series and queue bytes.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Registry } from "prom-client";
import { startPipeline, withDefaults } from "../../../control-plane/src/pipeline/index.js";
import type { StaticTargetConfig } from "../../../control-plane/src/scrape/targets.js";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { PipelineRateSource } from "../../../control-plane/src/adaptive/pipeline-rates.js";

interface ChildConfig { targets: StaticTargetConfig[]; sinkUrl: string; queueDir: string; intervalMs: number }

/** What the child reports. */
export interface ChildReport { heapUsedBytes: number; activeSeries: number; queueAppendedBytes: number; queueAppendedSamples: number }

const cfg = JSON.parse(process.argv[2]!) as ChildConfig;
const dashboard = new DashboardSeries();
const rates = new PipelineRateSource({ namespaceOf: () => "llm", now: () => Date.now(), maxAgeMs: 3 * cfg.intervalMs });
const pipeline = await startPipeline(
  withDefaults({
    scrape: { intervalMs: cfg.intervalMs, timeoutMs: Math.min(cfg.intervalMs, 10_000), static: cfg.targets },
    remoteWrite: { queueDir: cfg.queueDir, targets: [{ name: "sink", url: cfg.sinkUrl }] },
  }),
  {
    registry: new Registry(),
    onBatch: (series, result) => {
      dashboard.observe(series, result);
      rates.observe(series, result);
    },
  },
);

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
process.on("message", (msg) => {
  // A normal exit, so `--cpu-prof` and `--heap-prof` write their files (see profile-pipeline.ts).
  if (msg === "exit") process.exit(0);
  if (msg !== "report") return;
  gc();
  const q = pipeline.writer.targets[0]!.queue;
  const report: ChildReport = { heapUsedBytes: process.memoryUsage().heapUsed, activeSeries: pipeline.gate.activeSeries, queueAppendedBytes: q.appendedBytes, queueAppendedSamples: q.appendedSamples };
  process.send!(report);
});
process.send!("started");
