// The metrics pipeline's typed config: defaults, merge, and a validator that names the field.
import type { ConfigSection } from "../config-section.js";
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
  join: {
    maxSeries: number;
    forward: ForwardRules;
    /** Longest a pod's scrapes wait for dcgm-exporter to say which GPUs it uses (see join/joiner.ts). */
    gpuIdentityWaitMs: number;
    /** Range of the engine and sidecar percentiles and rates; the recording rules' `[5m]` (change both together). */
    rateWindowMs: number;
    /** Write the OpenTelemetry GenAI histograms converted from the filter's (join/derivations/genai.ts). */
    genaiMetrics: boolean;
    /** Their gen_ai_provider_name: the serving system behind the sidecars (the filter's spans.providerName default). */
    genaiProviderName: string;
  };
  remoteWrite: { queueDir: string; targets: RemoteWriteTarget[] };
  /** Several replicas splitting the targets (see pipeline/sharding.ts and membership.ts). */
  sharding: {
    enabled: boolean;
    /** Where the members' Leases live. */
    namespace: string;
    /** This replica's name (its pod name); the POD_NAME environment variable or the host name when empty. */
    identity: string;
    /** A replica that stops renewing is counted out after this long and its targets move. */
    leaseDurationMs: number;
  };
}

/** Defaults for a remote-write target (Prometheus's queue defaults where they exist). */
export const REMOTE_WRITE_TARGET_DEFAULTS: Omit<RemoteWriteTarget, "name" | "url"> = {
  protocol: "1.0",
  headers: {},
  maxQueueBytes: 256 * 1024 * 1024, // hours of a typical control plane's output
  // 32 MiB of index: 256 MiB of records of 1 KiB (a scrape's batch is several); smaller records hold less.
  maxQueueRecords: 262_144,
  segmentBytes: 8 * 1024 * 1024,
  maxSamplesPerSend: 2000,
  // Prometheus starts with one shard and grows to max_shards (200) as it falls behind; a fixed few
  // keep a control plane's sender from waiting on one request's round trip at a time.
  shards: 4,
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
  join: { maxSeries: 100_000, forward: DEFAULT_FORWARD, gpuIdentityWaitMs: 60_000, rateWindowMs: 300_000, genaiMetrics: true, genaiProviderName: "vllm" },
  remoteWrite: { queueDir: "/var/lib/tokentrace/remote-write", targets: [] },
  // 10 s: with renewals every third of it, a lost replica's targets move within 15 s, one default interval.
  sharding: { enabled: false, namespace: "tokentrace-system", identity: "", leaseDurationMs: 10_000 },
};

/** A partial config as a user writes it. */
export interface PipelineConfigInput {
  scrape?: Partial<Omit<PipelineConfig["scrape"], "kubernetes">> & { kubernetes?: Partial<PipelineConfig["scrape"]["kubernetes"]> };
  join?: Partial<PipelineConfig["join"]>;
  remoteWrite?: { queueDir?: string; targets?: (Partial<RemoteWriteTarget> & { name: string; url: string })[] };
  sharding?: Partial<PipelineConfig["sharding"]>;
}

/**
 * Fills defaults in. Never throws on a wrongly shaped input (a YAML file can hold anything): values
 * of the wrong type are kept as they are for `validatePipelineConfig` to name.
 */
export function withDefaults(input: PipelineConfigInput = {}): PipelineConfig {
  const d = DEFAULT_PIPELINE_CONFIG;
  const obj = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  const targets = input.remoteWrite?.targets ?? [];
  return {
    scrape: { ...d.scrape, ...obj(input.scrape), kubernetes: { ...d.scrape.kubernetes, ...obj(input.scrape?.kubernetes) } } as PipelineConfig["scrape"],
    join: { ...d.join, ...obj(input.join) } as PipelineConfig["join"],
    sharding: { ...d.sharding, ...obj(input.sharding) } as PipelineConfig["sharding"],
    remoteWrite: {
      queueDir: input.remoteWrite?.queueDir ?? d.remoteWrite.queueDir,
      targets: (Array.isArray(targets) ? targets.map((t) => (typeof t === "object" && t !== null ? { ...REMOTE_WRITE_TARGET_DEFAULTS, ...t } : t)) : targets) as RemoteWriteTarget[],
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

const boolean = (errors: ConfigError[], field: string, v: unknown): void => {
  if (typeof v !== "boolean") errors.push({ field, reason: `must be true or false, got ${JSON.stringify(v)}` });
};

/** A string (non-empty unless `allowEmpty`); every name, path and selector goes through here, so `null` or `5` is named, not coerced. */
function string(errors: ConfigError[], field: string, v: unknown, allowEmpty = false): v is string {
  if (typeof v === "string" && (allowEmpty || v !== "")) return true;
  errors.push({ field, reason: `must be a ${allowEmpty ? "" : "non-empty "}string, got ${JSON.stringify(v) ?? String(v)}` });
  return false;
}

function httpUrl(errors: ConfigError[], field: string, v: unknown): void {
  if (!string(errors, field, v)) return;
  try {
    const u = new URL(v);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
  } catch {
    errors.push({ field, reason: `must be an http(s) URL, got ${JSON.stringify(v)}` });
  }
}

function array(errors: ConfigError[], field: string, v: unknown): v is unknown[] {
  if (Array.isArray(v)) return true;
  errors.push({ field, reason: `must be a list, got ${JSON.stringify(v) ?? String(v)}` });
  return false;
}

function object(errors: ConfigError[], field: string, v: unknown): v is Record<string, unknown> {
  if (typeof v === "object" && v !== null && !Array.isArray(v)) return true;
  errors.push({ field, reason: `must be a mapping, got ${JSON.stringify(v) ?? String(v)}` });
  return false;
}

const KINDS: readonly string[] = ["envoy", "dcgm", "vllm", "static"];

/** Every problem in `c`, each naming its field; empty when valid. Safe on any shape (see withDefaults). */
export function validatePipelineConfig(c: PipelineConfig): ConfigError[] {
  const errors: ConfigError[] = [];
  const s = c.scrape;
  positiveInt(errors, "scrape.intervalMs", s.intervalMs, 100);
  positiveInt(errors, "scrape.timeoutMs", s.timeoutMs, 10);
  if (typeof s.timeoutMs === "number" && typeof s.intervalMs === "number" && s.timeoutMs > s.intervalMs) errors.push({ field: "scrape.timeoutMs", reason: `must not exceed scrape.intervalMs (${s.intervalMs}), got ${s.timeoutMs}` });
  positiveInt(errors, "scrape.concurrency", s.concurrency);
  positiveInt(errors, "scrape.maxBodyBytes", s.maxBodyBytes, 1024);
  boolean(errors, "scrape.spreadStart", s.spreadStart);
  const identities = new Set<string>();
  if (array(errors, "scrape.static", s.static)) {
    s.static.forEach((t: unknown, i) => {
      const f = `scrape.static[${i}]`;
      if (!object(errors, f, t)) return;
      httpUrl(errors, `${f}.url`, t.url);
      if (typeof t.kind !== "string" || !KINDS.includes(t.kind)) errors.push({ field: `${f}.kind`, reason: `must be envoy, dcgm, vllm or static, got ${JSON.stringify(t.kind) ?? String(t.kind)}` });
      for (const k of ["namespace", "pod", "node"] as const) if (t[k] !== undefined) string(errors, `${f}.${k}`, t[k]);
      if ((t.namespace === undefined) !== (t.pod === undefined)) errors.push({ field: `${f}.${t.pod === undefined ? "pod" : "namespace"}`, reason: "namespace and pod go together: a pod is named within its namespace" });
      if (t.intervalMs !== undefined) positiveInt(errors, `${f}.intervalMs`, t.intervalMs, 100);
      if (t.timeoutMs !== undefined) positiveInt(errors, `${f}.timeoutMs`, t.timeoutMs, 10);
      const identity = `${String(t.kind)}|${String(t.url)}|${String(t.namespace)}/${String(t.pod)}`;
      if (identities.has(identity)) errors.push({ field: f, reason: "duplicate target: another static target has the same kind, url, namespace and pod" });
      identities.add(identity);
    });
  }
  const k = s.kubernetes;
  if (object(errors, "scrape.kubernetes", k)) {
    for (const key of ["enabled", "envoy", "dcgm", "vllm"] as const) boolean(errors, `scrape.kubernetes.${key}`, k[key]);
    for (const key of ["namespace", "labelSelector"] as const) if (k[key] !== undefined) string(errors, `scrape.kubernetes.${key}`, k[key]);
  }
  positiveInt(errors, "join.maxSeries", c.join.maxSeries);
  positiveInt(errors, "join.gpuIdentityWaitMs", c.join.gpuIdentityWaitMs, 0);
  positiveInt(errors, "join.rateWindowMs", c.join.rateWindowMs, 1000);
  boolean(errors, "join.genaiMetrics", c.join.genaiMetrics);
  // A label value on every GenAI series: a short name, as the conventions' well-known values are.
  if (string(errors, "join.genaiProviderName", c.join.genaiProviderName) && !/^[a-z0-9._-]{1,64}$/.test(c.join.genaiProviderName)) {
    errors.push({ field: "join.genaiProviderName", reason: `must match [a-z0-9._-]{1,64}, got ${JSON.stringify(c.join.genaiProviderName)}` });
  }
  if (object(errors, "join.forward", c.join.forward)) {
    for (const kind of KINDS) {
      const f = `join.forward.${kind}`;
      const prefixes: unknown = (c.join.forward as unknown as Record<string, unknown>)[kind];
      if (array(errors, f, prefixes)) prefixes.forEach((p, i) => string(errors, `${f}[${i}]`, p));
    }
  }
  const names = new Set<string>();
  if (array(errors, "remoteWrite.targets", c.remoteWrite.targets)) {
    c.remoteWrite.targets.forEach((t: unknown, i) => {
      const f = `remoteWrite.targets[${i}]`;
      if (!object(errors, f, t)) return;
      if (string(errors, `${f}.name`, t.name)) {
        if (!/^[a-z0-9_-]{1,64}$/.test(t.name)) errors.push({ field: `${f}.name`, reason: `must match [a-z0-9_-]{1,64}, got ${JSON.stringify(t.name)}` });
        else if (names.has(t.name)) errors.push({ field: `${f}.name`, reason: `duplicate target name ${JSON.stringify(t.name)}` });
        names.add(t.name);
      }
      httpUrl(errors, `${f}.url`, t.url);
      if (t.protocol !== "1.0" && t.protocol !== "2.0") errors.push({ field: `${f}.protocol`, reason: `must be "1.0" or "2.0", got ${JSON.stringify(t.protocol) ?? String(t.protocol)}` });
      if (object(errors, `${f}.headers`, t.headers)) for (const [h, v] of Object.entries(t.headers)) string(errors, `${f}.headers.${h}`, v, true);
      positiveInt(errors, `${f}.maxQueueBytes`, t.maxQueueBytes, 1024);
      positiveInt(errors, `${f}.maxQueueRecords`, t.maxQueueRecords, 16);
      positiveInt(errors, `${f}.segmentBytes`, t.segmentBytes, 1024);
      if (typeof t.segmentBytes === "number" && typeof t.maxQueueBytes === "number" && t.segmentBytes > t.maxQueueBytes) errors.push({ field: `${f}.segmentBytes`, reason: `must not exceed maxQueueBytes (${t.maxQueueBytes}), got ${t.segmentBytes}` });
      positiveInt(errors, `${f}.maxSamplesPerSend`, t.maxSamplesPerSend);
      positiveInt(errors, `${f}.shards`, t.shards);
      positiveInt(errors, `${f}.batchSendDeadlineMs`, t.batchSendDeadlineMs);
      positiveInt(errors, `${f}.minBackoffMs`, t.minBackoffMs);
      positiveInt(errors, `${f}.maxBackoffMs`, t.maxBackoffMs);
      if (typeof t.maxBackoffMs === "number" && typeof t.minBackoffMs === "number" && t.maxBackoffMs < t.minBackoffMs) errors.push({ field: `${f}.maxBackoffMs`, reason: `must be >= minBackoffMs (${t.minBackoffMs}), got ${t.maxBackoffMs}` });
      positiveInt(errors, `${f}.maxRetryAfterMs`, t.maxRetryAfterMs, 0);
      positiveInt(errors, `${f}.remoteTimeoutMs`, t.remoteTimeoutMs);
      positiveInt(errors, `${f}.flushOnStopMs`, t.flushOnStopMs, 0);
    });
    if (c.remoteWrite.targets.length > 0) string(errors, "remoteWrite.queueDir", c.remoteWrite.queueDir);
  }
  const sh = c.sharding;
  if (object(errors, "sharding", sh)) {
    boolean(errors, "sharding.enabled", sh.enabled);
    string(errors, "sharding.namespace", sh.namespace);
    string(errors, "sharding.identity", sh.identity, true);
    positiveInt(errors, "sharding.leaseDurationMs", sh.leaseDurationMs, 1000);
  }
  return errors;
}

/**
 * The start-up refusal for a pipeline that runs: Kubernetes discovery without sharding. A replica
 * cannot tell that it is alone (a rolling update surges a second pod, an HPA adds more), and
 * without sharding every replica scrapes every discovered pod and ships each sample once per
 * replica, which any sum() counts twice. Sharded, a lone replica owns every target.
 */
export function unshardedDiscovery(c: PipelineConfig): ConfigError | undefined {
  if (c.scrape.kubernetes.enabled !== true || c.sharding.enabled !== false) return undefined;
  return {
    field: "sharding.enabled",
    reason: "must be true when scrape.kubernetes.enabled is true: every control-plane replica (and the surge pod of a rolling update) discovers every pod, and without sharding each one scrapes all of them and remote-writes every sample once per replica (double counted by any sum()); sharding splits the targets over the live replicas, and a lone replica scrapes them all",
  };
}

/**
 * The `pipeline` section of the control plane's config: off unless `enabled`; every other key is
 * the pipeline's own config above, defaults filled in by `withDefaults`.
 */
export type PipelineSection = { enabled: boolean } & PipelineConfigInput;

/** The pipeline's full config from its section, or its errors with keys prefixed `<key>.`. */
export function pipelineConfigOf(section: PipelineSection, key = "pipeline"): { ok: true; config: PipelineConfig } | { ok: false; errors: string[] } {
  const { enabled: _enabled, ...input } = section;
  let full: PipelineConfig;
  let problems: ConfigError[];
  try {
    full = withDefaults(input);
    problems = validatePipelineConfig(full);
  } catch (error) {
    // The validator expects the documented shape; anything else is reported whole.
    return { ok: false, errors: [`${key}: not a valid pipeline config (${(error as Error).message})`] };
  }
  if (problems.length > 0) return { ok: false, errors: problems.map((p) => `${key}.${p.field}: ${p.reason}`) };
  return { ok: true, config: full };
}

/** Defaults, schema and checks of `pipeline`; the nested keys are checked by `validatePipelineConfig`. */
export const pipelineSection: ConfigSection<PipelineSection> = {
  defaults: { enabled: false },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["enabled"],
    properties: { enabled: { type: "boolean" }, scrape: { type: "object" }, join: { type: "object" }, remoteWrite: { type: "object" }, sharding: { type: "object" } },
  },
  problems: (section, key) => {
    const result = pipelineConfigOf(section, key);
    if (!result.ok) return result.errors;
    const refused = section.enabled ? unshardedDiscovery(result.config) : undefined;
    return refused === undefined ? [] : [`${key}.${refused.field}: ${refused.reason}`];
  },
};
