// What the control plane may hold over time, part by part, in bytes derived from its configuration
// (issue #29): printed once at start-up, so an operator can size the container from the config and
// a soak test can hold the process to it. A part that enforces a byte limit is budgeted at that
// limit; a part bounded by a count, at the count times a per-entry ceiling measured with V8's heap
// (each module's memory test). What no configuration bounds yet is listed, not budgeted.
import type { DashboardSeries } from "../dashboard/series.js";
import { windowPoints } from "../join/joiner.js";
import { DEFAULT_MAX_KEYS, REMEMBERED_RECORD_BYTES } from "../log-limit.js";
import { joinWindowBytes, shortestIntervalMs, type PipelineConfig } from "../pipeline/index.js";
import { seriesGateBytes } from "../pipeline/series-gate.js";
import { windowSeriesBytes } from "../promql/series-window.js";
import { MIN_RECORD_BYTES, RECORD_INDEX_BYTES } from "../remote-write/disk-queue.js";
import { NOMINAL_KEY_CHARS, seriesBytes } from "../remote-write/series-registry.js";
import type { TraceStore } from "../traces/store.js";

/** One part's budget: what it may hold, and the configuration that says so. */
export interface MemoryBudget {
  part: string;
  bytes: number;
  /** The configuration it is derived from, e.g. "join.maxSeries 100000 x 640 B". */
  from: string;
}

/** The parts a composition holds (main.ts's, or a test stack's); absent parts have no budget. */
export interface BudgetedParts {
  dashboard?: DashboardSeries;
  traces?: Pick<TraceStore, "maxBytes">;
  /** The pipeline's configuration (defaults applied): its budgets follow from it alone. */
  pipeline?: PipelineConfig;
  /** Distinct records the log's repeat limiter remembers (default: its own default). */
  logKeys?: number;
}

/**
 * What is held over time but not budgeted here, because no configuration bounds it yet (each is
 * forgotten with what it belongs to, but how many of those there are is not bounded).
 */
export const NOT_BUDGETED: readonly string[] = [
  "per scrape target (its schedule, the join's last counters and GPU index, scrapes held for GPU identity, vLLM model lists, the gate's last report, the dashboard's and adaptive sampling's last scrape): each bounded by its scrape (scrape.maxBodyBytes) and forgotten when the target goes (the dashboard's and adaptive sampling's after their retention); the number of targets is not bounded",
  "per policy (the store and its history of 50 versions, adaptive sampling's and live thresholds' state, the Kubernetes caches): each bounded by api.bodyLimitBytes; the number of policies is not bounded",
];

const KIB = 1024;
const MIB = 1024 * 1024;
// A remote-write shard's request: one TimeSeries a sample (its labels, the sample, the framing of
// up to 16 labels), in a buffer that doubles as it grows (from 256 KiB), and the compressed body
// sent (and retried). Exact for label sets of NOMINAL_KEY_CHARS characters (memory-budgets.test.ts).
export const SAMPLE_FRAMING_BYTES = 112;
const SHARD_BUFFER_BYTES = 256 * KIB;
const RECORD_BUFFER_BYTES = 64 * KIB;

/** Bytes as people read them: "64 MiB", "1.5 KiB", "640 B". */
export function formatBytes(bytes: number): string {
  if (bytes >= MIB) return `${Number((bytes / MIB).toFixed(1))} MiB`;
  if (bytes >= KIB) return `${Number((bytes / KIB).toFixed(1))} KiB`;
  return `${bytes} B`;
}

const count = (n: number): string => n.toLocaleString("en-US");
/** A per-entry figure, exact: "2,080 B". */
const each = (bytes: number): string => `${count(bytes)} B`;

/** Every part's budget, in the order they feed each other (pipeline, dashboard, spans, log). */
export function memoryBudgets(parts: BudgetedParts): MemoryBudget[] {
  const out: MemoryBudget[] = [];
  const pipeline = parts.pipeline;
  if (pipeline !== undefined) {
    const { join } = pipeline;
    const queues = pipeline.remoteWrite.targets.length;
    out.push({
      part: "pipeline.series",
      bytes: seriesGateBytes(join.maxSeries, queues),
      from: `join.maxSeries ${count(join.maxSeries)} x ${each(seriesBytes(NOMINAL_KEY_CHARS, NOMINAL_KEY_CHARS, queues))} (${NOMINAL_KEY_CHARS} characters of labels, ${queues} remote-write queue${queues === 1 ? "" : "s"})`,
    });
    const minIntervalMs = shortestIntervalMs(pipeline);
    const points = windowPoints(join.rateWindowMs, minIntervalMs);
    out.push({
      part: "pipeline.joinWindows",
      bytes: joinWindowBytes(pipeline),
      from: `join.maxSeries ${count(join.maxSeries)} x ${each(windowSeriesBytes(NOMINAL_KEY_CHARS, points))} (${points} points: join.rateWindowMs ${join.rateWindowMs} at the shortest scrape interval, ${minIntervalMs} ms)`,
    });
    for (const c of pipeline.remoteWrite.targets) {
      // The records the queue may index: maxQueueRecords, or fewer when maxQueueBytes fills with the
      // smallest records first; plus the share of one segment the bound is enforced within.
      const byBytes = Math.ceil(c.maxQueueBytes / MIN_RECORD_BYTES);
      const records = Math.min(byBytes, c.maxQueueRecords + Math.max(1, Math.floor((c.maxQueueRecords * c.segmentBytes) / c.maxQueueBytes)));
      out.push({
        part: `remoteWrite.${c.name}.queueIndex`,
        bytes: records * RECORD_INDEX_BYTES,
        from: `${count(records)} records (maxQueueRecords ${count(c.maxQueueRecords)} and a segment's share, or maxQueueBytes ${formatBytes(c.maxQueueBytes)} of ${MIN_RECORD_BYTES}-byte records, the fewer) x ${RECORD_INDEX_BYTES} B an index entry`,
      });
      // A record the writer appends holds at most as many samples (and their series' definitions).
      const batch = c.maxSamplesPerSend * (NOMINAL_KEY_CHARS + SAMPLE_FRAMING_BYTES);
      out.push({
        part: `remoteWrite.${c.name}.requests`,
        bytes: c.shards * (Math.max(SHARD_BUFFER_BYTES, 2 * batch) + batch) + Math.max(RECORD_BUFFER_BYTES, 2 * batch),
        from: `shards ${c.shards} x (a buffer of up to twice, and a sent body of, maxSamplesPerSend ${c.maxSamplesPerSend} x ${each(NOMINAL_KEY_CHARS + SAMPLE_FRAMING_BYTES)}), and a record buffer of up to twice that batch`,
      });
    }
  }
  const dashboard = parts.dashboard;
  if (dashboard !== undefined) {
    // The dashboard's limits are its own (dashboard/*.ts), not configuration keys.
    out.push({ part: "dashboard.history", bytes: dashboard.maxBytes, from: "the route history's maxBytes (dashboard/series.ts DEFAULT_LIMITS)" });
    out.push({ part: "dashboard.engineSignals", bytes: dashboard.engine.maxBytes, from: "the engine signals' maxBytes (dashboard/engine-signals.ts DEFAULT_ENGINE_LIMITS)" });
    out.push({ part: "dashboard.gpuHealth", bytes: dashboard.gpu.maxBytes, from: "the GPU panels' maxBytes (dashboard/gpu-health.ts DEFAULT_GPU_LIMITS)" });
    out.push({ part: "dashboard.loraAdapters", bytes: dashboard.lora.maxBytes, from: "the LoRA states' maxBytes (dashboard/lora-adapters.ts LORA_LIMITS)" });
  }
  if (parts.traces !== undefined) {
    out.push({ part: "traces.spans", bytes: parts.traces.maxBytes, from: "traces.maxBytes (0: traces.memoryFraction of the memory limit)" });
  }
  const logKeys = parts.logKeys ?? DEFAULT_MAX_KEYS;
  out.push({ part: "log.repeats", bytes: logKeys * REMEMBERED_RECORD_BYTES, from: `${logKeys} records remembered x ${each(REMEMBERED_RECORD_BYTES)}` });
  return out;
}

/**
 * A warning when the budgets together exceed what the process may use (the container's memory limit
 * or V8's heap limit, the smaller; undefined: none known): it could be killed for memory, or run out
 * of heap, before any part reaches its bound. The heap the process starts with (about 50 MiB) comes
 * on top.
 */
export function memoryLimitWarning(budgets: readonly MemoryBudget[], limitBytes: number | undefined): object | undefined {
  const totalBytes = budgets.reduce((n, b) => n + b.bytes, 0);
  if (limitBytes === undefined || totalBytes <= limitBytes) return undefined;
  const largest = [...budgets].sort((a, b) => b.bytes - a.bytes).slice(0, 3).map((b) => `${b.part} ${formatBytes(b.bytes)} (${b.from})`);
  return { level: "warn", msg: `memory budgets total ${formatBytes(totalBytes)}, over the ${formatBytes(limitBytes)} the process may use (the container's memory limit or V8's heap limit, the smaller): lower the largest or raise the limit`, totalBytes, limitBytes, largest };
}

/** The start-up log record: the total, each part's budget and what it comes from, and what is not budgeted. */
export function memoryBudgetLine(budgets: readonly MemoryBudget[]): object {
  const parts: Record<string, { bytes: number; from: string }> = Object.create(null) as Record<string, { bytes: number; from: string }>;
  for (const b of budgets) parts[b.part] = { bytes: b.bytes, from: b.from };
  const totalBytes = budgets.reduce((n, b) => n + b.bytes, 0);
  return { msg: "memory budgets", totalBytes, total: formatBytes(totalBytes), parts, notBudgeted: NOT_BUDGETED };
}
