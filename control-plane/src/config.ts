// The control plane's one configuration loader: defaults < YAML file (--config or
// TOKENTRACE_CONFIG) < environment variables, validated once at start-up with messages that
// name the key and the offending value. Nothing else in the process reads process.env.
import { readFileSync } from "node:fs";
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";
import { defaultRateQuery } from "./adaptive/prometheus.js";
import { leaderElectionProblems } from "./k8s/leader-election.js";
import { unshardedDiscovery, validatePipelineConfig, withDefaults as pipelineWithDefaults, type PipelineConfig, type PipelineConfigInput } from "./pipeline/index.js";

/** The validated configuration. */
export interface Config {
  listen: { host: string; port: number };
  api: {
    /** Largest accepted request body; larger bodies get 413. */
    bodyLimitBytes: number;
    /** Whether GET endpoints (policies, filter config) need a token too. */
    reads: "public" | "token";
    /** File of `<id>:<token>` lines; empty = none. */
    tokensFile: string;
    /** `<id>:<token>` pairs, comma-separated (normally from TOKENTRACE_API_TOKENS). */
    tokens: string;
  };
  store: {
    /** embedded: policies live in the file store and filters pull; kubernetes: also reconciled to WasmPlugins. */
    mode: "embedded" | "kubernetes";
    /** JSON file of the policy store (written atomically). */
    path: string;
  };
  kubernetes: {
    /** kubeconfig path; empty = in-cluster service account, else the client's default lookup. */
    kubeconfig: string;
    /** Namespace to manage WasmPlugins in; empty = every namespace a policy names. */
    namespace: string;
    wasmPlugin: {
      url: string;
      sha256: string;
      pluginName: string;
      phase: "STATS" | "AUTHN" | "AUTHZ" | "UNSPECIFIED_PHASE";
      failStrategy: "FAIL_OPEN" | "FAIL_CLOSE" | "FAIL_RELOAD";
    };
    /** Full re-list and compare even without events, to catch anything a watch missed. */
    resyncSeconds: number;
    backoff: { initialMs: number; maxMs: number };
    /**
     * One leader among the replicas (a coordination.k8s.io Lease) reconciles and adapts; every
     * replica serves the API. Timing as client-go's leader election (15 s / 10 s / 2 s defaults).
     */
    leaderElection: {
      enabled: boolean;
      /** Namespace of the Lease: the control plane's own (the Deployment passes it by the downward API). */
      namespace: string;
      leaseName: string;
      /** This replica's name in the Lease; empty = the host name (the pod name in Kubernetes). */
      identity: string;
      leaseDurationSeconds: number;
      renewDeadlineSeconds: number;
      retryPeriodSeconds: number;
    };
  };
  adaptive: {
    enabled: boolean;
    /** How often rates are recomputed (Jaeger recomputes every minute). */
    intervalSeconds: number;
    /** At most one adaptive change per policy per this many seconds. */
    minPushIntervalSeconds: number;
    /** Where request rates come from: a Prometheus query API; empty url = no rates (nothing adapts). */
    prometheus: { url: string; query: string };
  };
  /**
   * The metrics pipeline (scrape, join, remote write; control-plane/src/pipeline). Off unless
   * `enabled`; every other key is the pipeline's own config, validated by its validator.
   */
  pipeline: { enabled: boolean } & PipelineConfigInput;
  /**
   * The OTLP/HTTP span receiver (POST /v1/traces, JSON or protobuf): off unless `enabled`. It keeps the newest
   * `maxSpans` spans in memory for the dashboard's trace list and lookup; `linkTemplate` turns a
   * trace id into a link to Jaeger, Tempo or Grafana ({traceId}, {spanId}, {startMs}, {endMs}).
   */
  traces: { enabled: boolean; maxSpans: number; maxBodyBytes: number; linkTemplate: string };
  /** Time allowed for in-flight requests after SIGTERM before the process exits anyway. */
  shutdownGraceMs: number;
}

/** Defaults: embedded mode on 127.0.0.1, which is what `make run` starts. */
export const defaultConfig: Config = {
  listen: { host: "127.0.0.1", port: 8080 },
  api: { bodyLimitBytes: 262144, reads: "public", tokensFile: "", tokens: "" },
  store: { mode: "embedded", path: ".tmp/control-plane/policies.json" },
  kubernetes: {
    kubeconfig: "",
    namespace: "",
    wasmPlugin: {
      url: "oci://ghcr.io/tokentrace/filter:0.1.0",
      sha256: "",
      pluginName: "tokentrace",
      phase: "STATS",
      failStrategy: "FAIL_OPEN",
    },
    resyncSeconds: 300,
    backoff: { initialMs: 500, maxMs: 30000 },
    leaderElection: {
      enabled: true,
      namespace: "tokentrace-system",
      leaseName: "tokentrace-control-plane",
      identity: "",
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    },
  },
  adaptive: { enabled: true, intervalSeconds: 60, minPushIntervalSeconds: 60, prometheus: { url: "", query: defaultRateQuery } },
  pipeline: { enabled: false },
  traces: { enabled: false, maxSpans: 10000, maxBodyBytes: 4194304, linkTemplate: "" },
  shutdownGraceMs: 10000,
};

/** Environment variables that override a key (the value is parsed by the key's type). */
export const envOverrides: Record<string, string> = {
  TOKENTRACE_LISTEN_HOST: "listen.host",
  TOKENTRACE_LISTEN_PORT: "listen.port",
  TOKENTRACE_API_BODY_LIMIT_BYTES: "api.bodyLimitBytes",
  TOKENTRACE_API_READS: "api.reads",
  TOKENTRACE_API_TOKENS_FILE: "api.tokensFile",
  TOKENTRACE_API_TOKENS: "api.tokens",
  TOKENTRACE_STORE_MODE: "store.mode",
  TOKENTRACE_STORE_PATH: "store.path",
  TOKENTRACE_KUBECONFIG: "kubernetes.kubeconfig",
  TOKENTRACE_KUBERNETES_NAMESPACE: "kubernetes.namespace",
  TOKENTRACE_WASM_URL: "kubernetes.wasmPlugin.url",
  TOKENTRACE_WASM_SHA256: "kubernetes.wasmPlugin.sha256",
  TOKENTRACE_LEADER_ELECTION_NAMESPACE: "kubernetes.leaderElection.namespace",
  TOKENTRACE_LEADER_ELECTION_IDENTITY: "kubernetes.leaderElection.identity",
  TOKENTRACE_ADAPTIVE_ENABLED: "adaptive.enabled",
  TOKENTRACE_PROMETHEUS_URL: "adaptive.prometheus.url",
  TOKENTRACE_PIPELINE_ENABLED: "pipeline.enabled",
  TOKENTRACE_SHARDING_NAMESPACE: "pipeline.sharding.namespace",
  TOKENTRACE_SHARDING_IDENTITY: "pipeline.sharding.identity",
  TOKENTRACE_TRACES_ENABLED: "traces.enabled",
  TOKENTRACE_TRACES_MAX_SPANS: "traces.maxSpans",
  TOKENTRACE_TRACES_LINK_TEMPLATE: "traces.linkTemplate",
  TOKENTRACE_SHUTDOWN_GRACE_MS: "shutdownGraceMs",
};

const str = { type: "string" } as const;
const configSchema = {
  type: "object",
  additionalProperties: false,
  required: ["listen", "api", "store", "kubernetes", "adaptive", "pipeline", "traces", "shutdownGraceMs"],
  properties: {
    listen: {
      type: "object",
      additionalProperties: false,
      required: ["host", "port"],
      properties: { host: { type: "string", minLength: 1 }, port: { type: "integer", minimum: 0, maximum: 65535 } },
    },
    api: {
      type: "object",
      additionalProperties: false,
      required: ["bodyLimitBytes", "reads", "tokensFile", "tokens"],
      properties: {
        bodyLimitBytes: { type: "integer", minimum: 1024, maximum: 16777216 },
        reads: { enum: ["public", "token"] },
        tokensFile: str,
        tokens: str,
      },
    },
    store: {
      type: "object",
      additionalProperties: false,
      required: ["mode", "path"],
      properties: { mode: { enum: ["embedded", "kubernetes"] }, path: { type: "string", minLength: 1 } },
    },
    kubernetes: {
      type: "object",
      additionalProperties: false,
      required: ["kubeconfig", "namespace", "wasmPlugin", "resyncSeconds", "backoff", "leaderElection"],
      properties: {
        kubeconfig: str,
        namespace: { type: "string", pattern: "^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 63 },
        wasmPlugin: {
          type: "object",
          additionalProperties: false,
          required: ["url", "sha256", "pluginName", "phase", "failStrategy"],
          properties: {
            url: { type: "string", pattern: "^(oci|https?|file)://.+" },
            sha256: { type: "string", pattern: "^$|^[a-f0-9]{64}$" },
            pluginName: { type: "string", minLength: 1, maxLength: 256 },
            phase: { enum: ["STATS", "AUTHN", "AUTHZ", "UNSPECIFIED_PHASE"] },
            failStrategy: { enum: ["FAIL_OPEN", "FAIL_CLOSE", "FAIL_RELOAD"] },
          },
        },
        resyncSeconds: { type: "integer", minimum: 10, maximum: 86400 },
        backoff: {
          type: "object",
          additionalProperties: false,
          required: ["initialMs", "maxMs"],
          properties: { initialMs: { type: "integer", minimum: 1 }, maxMs: { type: "integer", minimum: 1 } },
        },
        leaderElection: {
          type: "object",
          additionalProperties: false,
          required: ["enabled", "namespace", "leaseName", "identity", "leaseDurationSeconds", "renewDeadlineSeconds", "retryPeriodSeconds"],
          properties: {
            enabled: { type: "boolean" },
            namespace: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 63 },
            leaseName: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", maxLength: 253 },
            identity: { type: "string", maxLength: 253 },
            leaseDurationSeconds: { type: "integer", minimum: 1, maximum: 3600 },
            renewDeadlineSeconds: { type: "integer", minimum: 1, maximum: 3600 },
            retryPeriodSeconds: { type: "integer", minimum: 1, maximum: 3600 },
          },
        },
      },
    },
    adaptive: {
      type: "object",
      additionalProperties: false,
      required: ["enabled", "intervalSeconds", "minPushIntervalSeconds", "prometheus"],
      properties: {
        enabled: { type: "boolean" },
        intervalSeconds: { type: "integer", minimum: 1, maximum: 3600 },
        minPushIntervalSeconds: { type: "integer", minimum: 0, maximum: 86400 },
        prometheus: {
          type: "object",
          additionalProperties: false,
          required: ["url", "query"],
          properties: { url: { type: "string", pattern: "^$|^https?://.+" }, query: { type: "string", minLength: 1 } },
        },
      },
    },
    pipeline: {
      type: "object",
      additionalProperties: false,
      required: ["enabled"],
      properties: { enabled: { type: "boolean" }, scrape: { type: "object" }, join: { type: "object" }, remoteWrite: { type: "object" }, sharding: { type: "object" } },
    },
    traces: {
      type: "object",
      additionalProperties: false,
      required: ["enabled", "maxSpans", "maxBodyBytes", "linkTemplate"],
      properties: {
        enabled: { type: "boolean" },
        maxSpans: { type: "integer", minimum: 1, maximum: 1000000 },
        maxBodyBytes: { type: "integer", minimum: 1024, maximum: 67108864 },
        linkTemplate: { type: "string", pattern: "^$|^https?://.*\\{traceId\\}" },
      },
    },
    shutdownGraceMs: { type: "integer", minimum: 0, maximum: 600000 },
  },
} as const;

const ajv = new Ajv2020({ strict: true, allErrors: true });
const validateConfig = ajv.compile(configSchema);

/** Result of loading: the config, or every problem found (each naming its key). */
export type LoadResult = { ok: true; config: Config; source: string } | { ok: false; errors: string[] };

type Plain = { [key: string]: unknown };

function isPlain(value: unknown): value is Plain {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlain(base) || !isPlain(over)) return over === undefined ? base : over;
  const out: Plain = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = deepMerge(base[key], value);
  return out;
}

function schemaAt(path: string[]): { type?: string; enum?: readonly string[] } | undefined {
  let node: unknown = configSchema;
  for (const key of path) node = isPlain(node) && isPlain(node.properties) ? node.properties[key] : undefined;
  return node as { type?: string } | undefined;
}

function keyOf(error: ErrorObject): string {
  const base = error.instancePath.split("/").filter((s) => s !== "").join(".");
  if (error.keyword === "additionalProperties") {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return base === "" ? extra : `${base}.${extra}`;
  }
  if (error.keyword === "required") {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return base === "" ? missing : `${base}.${missing}`;
  }
  return base;
}

function valueAt(config: unknown, key: string): unknown {
  let node = config;
  for (const part of key.split(".")) node = isPlain(node) ? node[part] : undefined;
  return node;
}

/** Where the config file comes from: `--config <path>` / `--config=<path>`, else TOKENTRACE_CONFIG. */
export function configPathFrom(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--config") return argv[i + 1];
    if (arg.startsWith("--config=")) return arg.slice("--config=".length);
  }
  return env.TOKENTRACE_CONFIG || undefined;
}

/** Loads, merges and validates the configuration. Never throws for bad input. */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): LoadResult {
  const errors: string[] = [];
  const path = configPathFrom(argv, env);
  let fromFile: unknown = {};
  if (path !== undefined) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      return { ok: false, errors: [`config file ${path}: cannot read (${(error as NodeJS.ErrnoException).code ?? String(error)})`] };
    }
    try {
      fromFile = parseYaml(text) ?? {};
    } catch (error) {
      return { ok: false, errors: [`config file ${path}: invalid YAML (${(error as Error).message.split("\n")[0]})`] };
    }
    if (!isPlain(fromFile)) return { ok: false, errors: [`config file ${path}: the top level must be a mapping`] };
  }
  const merged = deepMerge(structuredClone(defaultConfig), fromFile) as Plain;
  for (const [name, key] of Object.entries(envOverrides)) {
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    const parts = key.split(".");
    const schema = schemaAt(parts);
    let value: unknown = raw;
    if (schema?.type === "integer") {
      value = /^-?[0-9]+$/.test(raw) ? Number(raw) : undefined;
      if (value === undefined) errors.push(`${key} (from ${name}): must be an integer, got "${raw}"`);
    } else if (schema?.type === "boolean") {
      value = raw === "true" ? true : raw === "false" ? false : undefined;
      if (value === undefined) errors.push(`${key} (from ${name}): must be true or false, got "${raw}"`);
    }
    if (value === undefined) continue;
    let node = merged;
    for (const part of parts.slice(0, -1)) {
      if (!isPlain(node[part])) node[part] = {};
      node = node[part] as Plain;
    }
    node[parts[parts.length - 1] as string] = value;
  }
  if (!validateConfig(merged)) {
    for (const error of validateConfig.errors ?? []) {
      const key = keyOf(error);
      if (error.keyword === "additionalProperties") errors.push(`${key}: unknown key`);
      else if (error.keyword === "enum") errors.push(`${key}: must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")}, got ${JSON.stringify(valueAt(merged, key))}`);
      else errors.push(`${key}: ${error.message ?? "invalid"}, got ${JSON.stringify(valueAt(merged, key))}`);
    }
  }
  const config = merged as unknown as Config;
  if (errors.length === 0 && config.kubernetes.backoff.maxMs < config.kubernetes.backoff.initialMs) {
    errors.push(`kubernetes.backoff.maxMs: must be >= kubernetes.backoff.initialMs (${config.kubernetes.backoff.initialMs}), got ${config.kubernetes.backoff.maxMs}`);
  }
  if (errors.length === 0 && config.kubernetes.leaderElection.enabled) {
    const election = config.kubernetes.leaderElection;
    const timing = { leaseDurationMs: election.leaseDurationSeconds * 1000, renewDeadlineMs: election.renewDeadlineSeconds * 1000, retryPeriodMs: election.retryPeriodSeconds * 1000 };
    for (const problem of leaderElectionProblems(timing)) {
      errors.push(`kubernetes.leaderElection: ${problem} (leaseDurationSeconds ${election.leaseDurationSeconds}, renewDeadlineSeconds ${election.renewDeadlineSeconds}, retryPeriodSeconds ${election.retryPeriodSeconds})`);
    }
  }
  const pinned = /@sha256:([a-f0-9]{64})$/.exec(errors.length === 0 ? config.kubernetes.wasmPlugin.url : "");
  if (pinned !== null && config.kubernetes.wasmPlugin.sha256 !== "" && pinned[1] !== config.kubernetes.wasmPlugin.sha256) {
    // istio/api extensions/v1alpha1/wasm.proto (sha256): a digest in the url must match this field.
    errors.push(`kubernetes.wasmPlugin.sha256: must equal the digest in kubernetes.wasmPlugin.url (${pinned[1]}), got "${config.kubernetes.wasmPlugin.sha256}"`);
  }
  if (errors.length === 0) {
    const result = pipelineConfigOf(config);
    if (!result.ok) errors.push(...result.errors);
    const refused = result.ok && config.pipeline.enabled ? unshardedDiscovery(result.config) : undefined;
    if (refused !== undefined) errors.push(`pipeline.${refused.field}: ${refused.reason}`);
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, config, source: path ?? "defaults" };
}

/** The pipeline's full config from ours, or its errors with keys prefixed `pipeline.`. */
export function pipelineConfigOf(config: Config): { ok: true; config: PipelineConfig } | { ok: false; errors: string[] } {
  const { enabled: _enabled, ...input } = config.pipeline;
  let full: PipelineConfig;
  let problems: { field: string; reason: string }[];
  try {
    full = pipelineWithDefaults(input);
    problems = validatePipelineConfig(full);
  } catch (error) {
    // The pipeline's validator expects its documented shape; anything else is reported whole.
    return { ok: false, errors: [`pipeline: not a valid pipeline config (${(error as Error).message})`] };
  }
  if (problems.length > 0) return { ok: false, errors: problems.map((p) => `pipeline.${p.field}: ${p.reason}`) };
  return { ok: true, config: full };
}
