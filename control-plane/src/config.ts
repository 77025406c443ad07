// The control plane's one configuration loader: defaults < YAML file (--config or
// TOKENTRACE_CONFIG) < environment variables, validated once at start-up with messages that
// name the key and the offending value. Nothing else in the process reads process.env.
// Each top-level key is a section owned by the module it configures (its type, defaults, schema
// and cross-key checks, see config-section.ts); this file only composes them and loads.
import { readFileSync } from "node:fs";
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";
import { adaptiveSection, type AdaptiveConfig } from "./adaptive/config.js";
import { alertsSection, type AlertsConfig } from "./dashboard/alerts-config.js";
import { apiSection, type ApiConfig } from "./api/config.js";
import type { ConfigSection, JsonSchema } from "./config-section.js";
import { contentSection, type ContentConfig } from "./content/config.js";
import { filtersSection, type FiltersConfig } from "./filters/config.js";
import { httpSection, type HttpConfig } from "./http/config.js";
import { kubernetesSection, type KubernetesConfig } from "./k8s/config.js";
import { listenSection, type ListenConfig } from "./listen.js";
import { pipelineSection, type PipelineSection } from "./pipeline/config.js";
import { storeSection, type StoreConfig } from "./policy/config.js";
import { tracesSection, type TracesConfig } from "./traces/config.js";

/** The validated configuration: one section per top-level key, each owned by the module it configures. */
export interface Config {
  listen: ListenConfig;
  /** The filter-facing listener: policy pulls, the span receiver, the content key. */
  filters: FiltersConfig;
  /** Timeouts and header limits of both listeners. */
  http: HttpConfig;
  api: ApiConfig;
  store: StoreConfig;
  kubernetes: KubernetesConfig;
  adaptive: AdaptiveConfig;
  /** The metrics pipeline (scrape, join, remote write; control-plane/src/pipeline), off unless `enabled`. */
  pipeline: PipelineSection;
  traces: TracesConfig;
  /** The dashboard's alert list: a Prometheus rules API and the bounds of each read. */
  alerts: AlertsConfig;
  /** Where the pseudonym keys live. */
  content: ContentConfig;
  /** Time allowed for in-flight requests after SIGTERM before the process exits anyway. */
  shutdownGraceMs: number;
}

/** The entry point's own key: main.ts drains connections this long on shutdown. */
const shutdownGraceSection: ConfigSection<number> = { defaults: 10000, schema: { type: "integer", minimum: 0, maximum: 600000 } };

/** Every section, in the order the file, the schema's messages and the cross-key checks follow. */
const sections: { [K in keyof Config]: ConfigSection<Config[K]> } = {
  listen: listenSection,
  filters: filtersSection,
  http: httpSection,
  api: apiSection,
  store: storeSection,
  kubernetes: kubernetesSection,
  adaptive: adaptiveSection,
  pipeline: pipelineSection,
  traces: tracesSection,
  alerts: alertsSection,
  content: contentSection,
  shutdownGraceMs: shutdownGraceSection,
};
const sectionKeys = Object.keys(sections) as (keyof Config)[];

/** Defaults: embedded mode on 127.0.0.1, which is what `make run` starts. */
export const defaultConfig: Config = Object.fromEntries(sectionKeys.map((key) => [key, sections[key].defaults])) as unknown as Config;

/** Environment variables that override a key (the value is parsed by the key's type). */
export const envOverrides: Record<string, string> = {
  TOKENTRACE_LISTEN_HOST: "listen.host",
  TOKENTRACE_LISTEN_PORT: "listen.port",
  TOKENTRACE_FILTERS_HOST: "filters.host",
  TOKENTRACE_FILTERS_PORT: "filters.port",
  TOKENTRACE_FILTERS_AUTH: "filters.auth",
  TOKENTRACE_FILTERS_TOKENS_FILE: "filters.tokensFile",
  TOKENTRACE_FILTERS_TOKENS: "filters.tokens",
  TOKENTRACE_API_BODY_LIMIT_BYTES: "api.bodyLimitBytes",
  TOKENTRACE_API_READS: "api.reads",
  TOKENTRACE_API_TOKENS_FILE: "api.tokensFile",
  TOKENTRACE_API_TOKENS: "api.tokens",
  TOKENTRACE_API_SCOPES: "api.scopes",
  TOKENTRACE_STORE_MODE: "store.mode",
  TOKENTRACE_STORE_PATH: "store.path",
  TOKENTRACE_KUBECONFIG: "kubernetes.kubeconfig",
  TOKENTRACE_KUBERNETES_NAMESPACE: "kubernetes.namespace",
  TOKENTRACE_WASM_URL: "kubernetes.wasmPlugin.url",
  TOKENTRACE_WASM_SHA256: "kubernetes.wasmPlugin.sha256",
  TOKENTRACE_WASM_IMAGE_PULL_SECRET: "kubernetes.wasmPlugin.imagePullSecret",
  TOKENTRACE_CONTENT_WASM_URL: "kubernetes.contentWasmPlugin.url",
  TOKENTRACE_CONTENT_WASM_SHA256: "kubernetes.contentWasmPlugin.sha256",
  TOKENTRACE_HISTORY_NAMESPACE: "kubernetes.historyNamespace",
  TOKENTRACE_LEADER_ELECTION_NAMESPACE: "kubernetes.leaderElection.namespace",
  TOKENTRACE_LEADER_ELECTION_IDENTITY: "kubernetes.leaderElection.identity",
  TOKENTRACE_ADAPTIVE_ENABLED: "adaptive.enabled",
  TOKENTRACE_PROMETHEUS_URL: "adaptive.prometheus.url",
  TOKENTRACE_ALERTS_PROMETHEUS_URL: "alerts.prometheusUrl",
  TOKENTRACE_PIPELINE_ENABLED: "pipeline.enabled",
  TOKENTRACE_SHARDING_NAMESPACE: "pipeline.sharding.namespace",
  TOKENTRACE_SHARDING_IDENTITY: "pipeline.sharding.identity",
  TOKENTRACE_TRACES_ENABLED: "traces.enabled",
  TOKENTRACE_TRACES_MAX_SPANS: "traces.maxSpans",
  TOKENTRACE_TRACES_MAX_BYTES: "traces.maxBytes",
  TOKENTRACE_TRACES_LINK_TEMPLATE: "traces.linkTemplate",
  TOKENTRACE_CONTENT_KEYS_DIR: "content.keysDir",
  TOKENTRACE_SHUTDOWN_GRACE_MS: "shutdownGraceMs",
};

const configSchema: JsonSchema = {
  type: "object",
  additionalProperties: false,
  required: sectionKeys,
  properties: Object.fromEntries(sectionKeys.map((key) => [key, sections[key].schema])),
};

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
  for (const key of sectionKeys) {
    const problems = (sections[key] as ConfigSection<unknown>).problems;
    if (errors.length === 0 && problems !== undefined) errors.push(...problems(config[key], key));
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, config, source: path ?? "defaults" };
}
