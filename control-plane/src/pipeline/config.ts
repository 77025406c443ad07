// The metrics pipeline's typed config: defaults, merge, and a validator that names the field.
import type { StaticTargetConfig } from "../scrape/targets.js";
import type { RemoteWriteTargetConfig } from "../remote-write/queue-manager.js";
import { DEFAULT_FORWARD, type ForwardRules } from "../join/joiner.js";

/** One remote-write destination: the queue manager's settings less its folder (derived from `name`). */
export type RemoteWriteTarget = Omit<RemoteWriteTargetConfig, "queueDir">;

/** Everything the pipeline reads. */
export interface PipelineConfig {
  scrape: {
    intervalMs: number;
    timeoutMs: number;
    concurrency: number;
    maxBodyBytes: number;
    /** Spread each target's first scrape over its interval (a stable hash of its id), as Prometheus does. */
    spreadStart: boolean;
    static: StaticTargetConfig[];
    kubernetes: { enabled: boolean; namespace?: string; labelSelector?: string; envoy: boolean; dcgm: boolean; vllm: boolean };
  };
  join: { maxSeries: number; forward: ForwardRules };
  remoteWrite: { queueDir: string; targets: RemoteWriteTarget[] };
}

/** Defaults for a remote-write target (Prometheus's queue defaults where they exist). */
export const REMOTE_WRITE_TARGET_DEFAULTS: Omit<RemoteWriteTarget, "name" | "url"> = {
  protocol: "1.0",
  headers: {},
  maxQueueBytes: 256 * 1024 * 1024, // hours of a typical control plane's output
  segmentBytes: 8 * 1024 * 1024,
  maxSamplesPerSend: 2000,
  batchSendDeadlineMs: 5000,
  minBackoffMs: 30,
  maxBackoffMs: 5000,
  maxRetryAfterMs: 5 * 60_000,
  remoteTimeoutMs: 30_000,
  flushOnStopMs: 5000,
};

/** The embedded default: static targets only (none), no Kubernetes discovery, nothing shipped. */
export const DEFAULT_PIPELINE_CONFIG: PipelineConfig = {
  scrape: {
    intervalMs: 15_000,
    timeoutMs: 10_000,
    concurrency: 16,
    maxBodyBytes: 64 * 1024 * 1024,
    spreadStart: true,
    static: [],
    kubernetes: { enabled: false, envoy: true, dcgm: true, vllm: true },
  },
  join: { maxSeries: 100_000, forward: DEFAULT_FORWARD },
  remoteWrite: { queueDir: "/var/lib/tokentrace/remote-write", targets: [] },
};

/** A partial config as a user writes it. */
export interface PipelineConfigInput {
  scrape?: Partial<Omit<PipelineConfig["scrape"], "kubernetes">> & { kubernetes?: Partial<PipelineConfig["scrape"]["kubernetes"]> };
  join?: Partial<PipelineConfig["join"]>;
  remoteWrite?: { queueDir?: string; targets?: (Partial<RemoteWriteTarget> & { name: string; url: string })[] };
}

/** Fills defaults in. */
export function withDefaults(input: PipelineConfigInput = {}): PipelineConfig {
  const d = DEFAULT_PIPELINE_CONFIG;
  return {
    scrape: { ...d.scrape, ...input.scrape, kubernetes: { ...d.scrape.kubernetes, ...input.scrape?.kubernetes } },
    join: { ...d.join, ...input.join },
    remoteWrite: {
      queueDir: input.remoteWrite?.queueDir ?? d.remoteWrite.queueDir,
      targets: (input.remoteWrite?.targets ?? []).map((t) => ({ ...REMOTE_WRITE_TARGET_DEFAULTS, ...t })),
    },
  };
}

/** One problem with a config value. */
export interface ConfigError {
  field: string;
  reason: string;
}

const positiveInt = (errors: ConfigError[], field: string, v: unknown, min = 1): void => {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min) errors.push({ field, reason: `must be an integer >= ${min}, got ${JSON.stringify(v)}` });
};

function httpUrl(errors: ConfigError[], field: string, v: unknown): void {
  try {
    const u = new URL(String(v));
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
  } catch {
    errors.push({ field, reason: `must be an http(s) URL, got ${JSON.stringify(v)}` });
  }
}

/** Every problem in `c`, each naming its field; empty when valid. */
export function validatePipelineConfig(c: PipelineConfig): ConfigError[] {
  const errors: ConfigError[] = [];
  const s = c.scrape;
  positiveInt(errors, "scrape.intervalMs", s.intervalMs, 100);
  positiveInt(errors, "scrape.timeoutMs", s.timeoutMs, 10);
  if (s.timeoutMs > s.intervalMs) errors.push({ field: "scrape.timeoutMs", reason: `must not exceed scrape.intervalMs (${s.intervalMs}), got ${s.timeoutMs}` });
  positiveInt(errors, "scrape.concurrency", s.concurrency);
  positiveInt(errors, "scrape.maxBodyBytes", s.maxBodyBytes, 1024);
  s.static.forEach((t, i) => {
    httpUrl(errors, `scrape.static[${i}].url`, t.url);
    if (!["envoy", "dcgm", "vllm", "static"].includes(t.kind)) errors.push({ field: `scrape.static[${i}].kind`, reason: `must be envoy, dcgm, vllm or static, got ${JSON.stringify(t.kind)}` });
    if (t.intervalMs !== undefined) positiveInt(errors, `scrape.static[${i}].intervalMs`, t.intervalMs, 100);
    if (t.timeoutMs !== undefined) positiveInt(errors, `scrape.static[${i}].timeoutMs`, t.timeoutMs, 10);
  });
  positiveInt(errors, "join.maxSeries", c.join.maxSeries);
  const names = new Set<string>();
  c.remoteWrite.targets.forEach((t, i) => {
    const f = `remoteWrite.targets[${i}]`;
    if (!/^[a-z0-9_-]{1,64}$/.test(t.name)) errors.push({ field: `${f}.name`, reason: `must match [a-z0-9_-]{1,64}, got ${JSON.stringify(t.name)}` });
    else if (names.has(t.name)) errors.push({ field: `${f}.name`, reason: `duplicate target name ${JSON.stringify(t.name)}` });
    names.add(t.name);
    httpUrl(errors, `${f}.url`, t.url);
    if (t.protocol !== "1.0" && t.protocol !== "2.0") errors.push({ field: `${f}.protocol`, reason: `must be "1.0" or "2.0", got ${JSON.stringify(t.protocol)}` });
    positiveInt(errors, `${f}.maxQueueBytes`, t.maxQueueBytes, 1024);
    positiveInt(errors, `${f}.segmentBytes`, t.segmentBytes, 1024);
    if (t.segmentBytes > t.maxQueueBytes) errors.push({ field: `${f}.segmentBytes`, reason: `must not exceed maxQueueBytes (${t.maxQueueBytes}), got ${t.segmentBytes}` });
    positiveInt(errors, `${f}.maxSamplesPerSend`, t.maxSamplesPerSend);
    positiveInt(errors, `${f}.batchSendDeadlineMs`, t.batchSendDeadlineMs);
    positiveInt(errors, `${f}.minBackoffMs`, t.minBackoffMs);
    positiveInt(errors, `${f}.maxBackoffMs`, t.maxBackoffMs);
    if (t.maxBackoffMs < t.minBackoffMs) errors.push({ field: `${f}.maxBackoffMs`, reason: `must be >= minBackoffMs (${t.minBackoffMs}), got ${t.maxBackoffMs}` });
    positiveInt(errors, `${f}.maxRetryAfterMs`, t.maxRetryAfterMs, 0);
    positiveInt(errors, `${f}.remoteTimeoutMs`, t.remoteTimeoutMs);
    positiveInt(errors, `${f}.flushOnStopMs`, t.flushOnStopMs, 0);
  });
  if (c.remoteWrite.targets.length > 0 && !c.remoteWrite.queueDir) errors.push({ field: "remoteWrite.queueDir", reason: "must be a directory path" });
  return errors;
}
