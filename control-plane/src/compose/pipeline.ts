// The metrics pipeline (scrape -> join -> remote write), when enabled; its self-metrics share the
// control plane's /metrics.
import type { Registry } from "prom-client";
import { pipelineConfigOf, type PipelineConfig, type PipelineSection } from "../pipeline/config.js";
import { startPipeline, type PipelineDeps, type RunningPipeline } from "../pipeline/index.js";
import type { Runtime } from "./runtime.js";

/** The pipeline's full config when its section enables it; an invalid one is a start-up failure. */
export function enabledPipelineConfig(section: PipelineSection): PipelineConfig | undefined {
  if (!section.enabled) return undefined;
  const result = pipelineConfigOf(section);
  if (!result.ok) throw new Error(result.errors.join("; "));
  return result.config;
}

/** Starts the pipeline on the runtime's clock; cluster credentials only when it discovers pods or shards. */
export function startPipelinePart(config: PipelineConfig, runtime: Runtime, registry: Registry, onBatch: NonNullable<PipelineDeps["onBatch"]>, onExporterLabels?: PipelineDeps["onExporterLabels"]): Promise<RunningPipeline> {
  return startPipeline(config, {
    registry,
    clock: { now: runtime.nowMs, sleep: runtime.delay, monotonicMs: runtime.monotonicMs },
    ...(config.scrape.kubernetes.enabled || config.sharding.enabled ? { kubeConfig: runtime.kubeConfig() } : {}),
    log: (message) => runtime.log({ msg: "pipeline", detail: message }),
    onBatch,
    ...(onExporterLabels ? { onExporterLabels } : {}),
  });
}
