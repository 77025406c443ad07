// The plugin configuration: parsed strictly from pluginConfig JSON and validated against the same
// rules as filter/config.schema.json (the control plane validates with that schema; a test checks
// the two agree). Pure logic: no host calls.
import { equalBytes } from "../bytes";
import { JsonKind, JsonParser, JsonValue } from "./json";
import { ProtocolPaths } from "../protocols/llm-paths";
import { Protocol } from "../protocols";
import { LengthClasses, lengthClassesOf, MAX_LENGTH_BOUNDARIES } from "../telemetry/length-classes";
import { decimal } from "../decimal";

export const DEFAULT_SAMPLE_RATE: f64 = 0.01;
export const DEFAULT_TOKEN_TRACE_ID_HEADER = "x-token-trace-id";
export const DEFAULT_MAX_ROUTES: i32 = 64;
export const DEFAULT_MAX_MODELS: i32 = 32;
export const DEFAULT_STATS_FLUSH_INTERVAL_MS: i32 = 1000;
export const DEFAULT_MAX_REQUEST_BODY_BYTES: i32 = 65536;
// Length classes (tokens), from the shapes of Azure's 2023 production LLM traces as the Splitwise
// paper (Patel et al., ISCA 2024) reports them: prompts of about 1,000 (conversation) and 1,500
// (coding) tokens at the median, outputs of about 130 (conversation) and 13 (coding). Input: short
// turns, that typical traffic, long context (RAG, documents), beyond 8k. Output: completions, chat
// answers, long answers, long generations (reasoning) beyond 1k.
const DEFAULT_INPUT_BOUNDARIES: StaticArray<i64> = [512, 2048, 8192];
const DEFAULT_OUTPUT_BOUNDARIES: StaticArray<i64> = [64, 256, 1024];
const MAX_REQUEST_BODY_BYTES_LIMIT: i32 = 16777216;
/**
 * Envoy's stream buffer limit, the listener's per_connection_buffer_limit_bytes when it is not
 * set (1 MiB: envoy api/envoy/config/listener/v3/listener.proto 00e5a41c). A request body a filter
 * holds (StopIterationAndBuffer) past it is answered 413 by Envoy (source/common/http/
 * filter_manager.cc 00e00299, ActiveStreamDecoderFilter::requestDataTooLarge).
 */
export const ENVOY_BUFFER_LIMIT_BYTES: i32 = 1048576;

/** The names of the protocols in pluginConfig (llm.protocols), by Protocol. */
export const PROTOCOL_NAMES: Array<string> = ["kserve", "openai", "responses", "anthropic", "tgi"];

/** The default path matchers of every protocol, in Protocol order. */
function defaultPaths(): Array<ProtocolPaths> {
  return [
    new ProtocolPaths(Protocol.KServe, ["/v2/models/"], ["/generate", "/generate_stream"]),
    new ProtocolPaths(Protocol.OpenAi, [], ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"]),
    new ProtocolPaths(Protocol.Responses, [], ["/v1/responses"]),
    new ProtocolPaths(Protocol.Anthropic, [], ["/v1/messages"]),
    new ProtocolPaths(Protocol.Tgi, [], ["/generate", "/generate_stream"]),
  ];
}

/** How LLM calls are recognised and read. */
export class LlmConfig {
  enabled: bool = true;
  /** A request is an LLM call of a protocol when its path (without query) matches that protocol's paths; tried in this order. */
  paths: Array<ProtocolPaths> = defaultPaths();
  /** Response bodies are read only for these media types (lower-case, parameters ignored). */
  contentTypes: Array<ArrayBuffer> = [String.UTF8.encode("application/json"), String.UTF8.encode("text/event-stream")];
  maxRequestBodyBytes: i32 = DEFAULT_MAX_REQUEST_BODY_BYTES;
  /** Add stream_options.include_usage to streaming requests so the last chunk carries usage. */
  requestUsageInStream: bool = false;
  /** Input-token classes, a label on the TTFT histogram (llm.lengthClasses.inputTokens). */
  inputClasses: LengthClasses = lengthClassesOf(DEFAULT_INPUT_BOUNDARIES);
  /** Output-token classes, a label on the decode and duration histograms (llm.lengthClasses.outputTokens). */
  outputClasses: LengthClasses = lengthClassesOf(DEFAULT_OUTPUT_BOUNDARIES);
}

/** A per-route sampling override; absent (null) matchers match anything. Matchers are UTF-8 bytes. */
export class RouteRule {
  routeNameBytes: ArrayBuffer | null = null;
  pathPrefixBytes: ArrayBuffer | null = null;
  /** Lower-cased, compared against :authority without its port. */
  hostBytes: ArrayBuffer | null = null;
  rate: f64 = 0;
}

/** Requests carrying `header` (equal to `value` when given) are always sampled. */
export class ForceRule {
  headerBytes: ArrayBuffer = new ArrayBuffer(0);
  valueBytes: ArrayBuffer | null = null;
}

/** Tail keep: a route's own slow threshold. */
export class KeepRoute {
  routeNameBytes: ArrayBuffer = new ArrayBuffer(0);
  slowerThanMs: i32 = 0;
}

/**
 * Tail keep: a threshold the control plane computed from the route's (and model's) recent latency
 * (spans.keep.live). `route` and `model` are stat label values, as the control plane reads them;
 * an empty model is the route's own, for its models without an entry. -1: no threshold.
 */
export class LiveThreshold {
  route: string = "";
  model: string = "";
  durationMs: i32 = -1;
  ttftMs: i32 = -1;
}

/** Tail keep's budget (spans.keep.budget): spans per second for the whole proxy, head-sampled ones first. */
export class KeepBudgetConfig {
  tracesPerSecond: f64 = 0;
  /** The bucket holds this many seconds of budget, for a burst after a quiet spell. */
  burstSeconds: i32 = 10;
  /** Span records held for the next tick's decision (bytes as retained: spans.ts retainedBytesOf). */
  reservoirBytes: i32 = 262144;
}

/**
 * Tail keep's own recent quantile per (route, model) (spans.keep.recent): a request slower than the
 * `quantile` of the durations its pair ended with over the last `windowMs` on this VM is slow too.
 */
export class KeepRecentConfig {
  quantile: f64 = 0.95;
  windowMs: u32 = 60000;
  /** Samples remembered per pair (each 6 bytes); past it the window is the last this many requests. */
  maxSamples: i32 = 2048;
}

/** Export of one OTLP span per sampled LLM request; present only when configured. */
export class SpanConfig {
  cluster: ArrayBuffer = new ArrayBuffer(0);
  path: ArrayBuffer = String.UTF8.encode("/v1/traces");
  authority: ArrayBuffer = new ArrayBuffer(0);
  serviceName: string = "tokentrace";
  providerName: string = "vllm";
  batchSize: i32 = 32;
  maxBufferedSpans: i32 = 1024;
  flushIntervalMs: i32 = 5000;
  timeoutMs: i32 = 5000;
  /** Tail keep (spans.keep): unsampled LLM requests that end in 5xx or a reset, or run slower than a threshold, export their span too. */
  keepErrors: bool = false;
  /** The slow threshold of routes without their own (-1: none). */
  keepSlowerThanMs: i32 = -1;
  keepRoutes: Array<KeepRoute> = [];
  keepLive: Array<LiveThreshold> = [];
  /** null: every kept span goes at once. */
  keepBudget: KeepBudgetConfig | null = null;
  /** null: no recent quantile of the filter's own. */
  keepRecent: KeepRecentConfig | null = null;
  /** Content capture (spans.content); null: off. */
  content: ContentConfig | null = null;

  get keeps(): bool {
    return this.keepErrors || this.keepSlowerThanMs >= 0 || this.keepRoutes.length > 0 || this.keepLive.length > 0 || this.keepRecent !== null;
  }
}

/** A route's own content capture setting. */
export class ContentRoute {
  routeNameBytes: ArrayBuffer = new ArrayBuffer(0);
  enabled: bool = false;
}

export const DEFAULT_CONTENT_MAX_BYTES: i32 = 4096;
export const DEFAULT_KEY_REFRESH_MS: i32 = 10000;
export const DEFAULT_KEY_TIMEOUT_MS: i32 = 5000;

/**
 * Where the pseudonym key comes from (spans.content.pseudonyms.keySource): the control plane's
 * GET /v1/filters/{workload}/content-key on its filter-facing listener, through `cluster`.
 * Without one, the policy source's cluster, authority and workload serve.
 */
export class KeySourceConfig {
  cluster: ArrayBuffer = new ArrayBuffer(0);
  authority: ArrayBuffer = new ArrayBuffer(0);
  /** <namespace>.<name>. */
  workload: string = "";
  /** The VM environment variable (vmConfig.env) holding a bearer token for the call, or "" for none (mesh identity). */
  tokenEnv: string = "";
  timeoutMs: i32 = DEFAULT_KEY_TIMEOUT_MS;
}

/** Opt-in content capture on sampled LLM spans, with redaction (spans.content). */
export class ContentConfig {
  enabled: bool = false;
  routes: Array<ContentRoute> = [];
  /** Original text per attribute that may appear in a span. */
  maxBytes: i32 = DEFAULT_CONTENT_MAX_BYTES;
  /** Linkable pseudonyms (keyed hashes under the key the control plane serves) instead of typed placeholders. */
  pseudonyms: bool = false;
  /** Where the key comes from; null: the policy source's control plane. */
  keySource: KeySourceConfig | null = null;
  /** How often the key is fetched again (a new version takes effect within this). */
  keyRefreshMs: i32 = DEFAULT_KEY_REFRESH_MS;

  /** Whether a route (the `length` bytes of its xds.route_name at `name`) captures content. */
  enabledFor(name: usize, length: i32): bool {
    const routes = this.routes;
    for (let i = 0; i < routes.length; i++) {
      const r = routes[i].routeNameBytes;
      if (equalBytes(name, length, changetype<usize>(r), r.byteLength)) return routes[i].enabled;
    }
    return this.enabled;
  }
}

/** Pull mode: the root context polls the control plane for this workload's policy. */
export class PolicySourceConfig {
  cluster: ArrayBuffer = new ArrayBuffer(0);
  authority: ArrayBuffer = new ArrayBuffer(0);
  /** <namespace>.<name>, as the control plane's /v1/filters/{workload}/config expects. */
  workload: string = "";
  /** k=v,k2=v2 (already URL-safe), or "" to let the control plane assume app=<name>. */
  labels: string = "";
  intervalMs: i32 = 10000;
  timeoutMs: i32 = 5000;
}

export class Config {
  defaultRate: f64 = DEFAULT_SAMPLE_RATE;
  routes: Array<RouteRule> = [];
  force: Array<ForceRule> = [];
  tokenTraceIdHeader: ArrayBuffer = String.UTF8.encode(DEFAULT_TOKEN_TRACE_ID_HEADER);
  maxRoutes: i32 = DEFAULT_MAX_ROUTES;
  maxModels: i32 = DEFAULT_MAX_MODELS;
  /** On a waypoint: distinct destination pods labelled per VM (0: none, the sidecar default). */
  maxDestinationPods: i32 = 0;
  /** Counter increments are held in the VM and flushed this often (0: sent as they happen). */
  statsFlushIntervalMs: i32 = DEFAULT_STATS_FLUSH_INTERVAL_MS;
  llm: LlmConfig = new LlmConfig();
  spans: SpanConfig | null = null;
  policySource: PolicySourceConfig | null = null;
  /** Whether some route rule matches on :path / :authority (so the stream reads them only then). */
  rulesUsePath: bool = false;
  rulesUseHost: bool = false;
}

/** The configuration in force; the root swaps `config` whole, streams read it at request start. */
export class ActiveConfig {
  config: Config = new Config();
}

/** Either a config or the first reason it was rejected, naming the key. */
export class ConfigResult {
  config: Config | null = null;
  error: string = "";
}

const MAX_ROUTE_RULES: i32 = 256;
/** One hour: a slow threshold past that keeps nothing an LLM call does. */
const MAX_KEEP_THRESHOLD_MS: i32 = 3600000;
const MAX_FORCE_RULES: i32 = 16;
/** Live thresholds per policy: the control plane sends at most this many (route, model) entries. */
export const MAX_LIVE_THRESHOLDS: i32 = 128;

/** Parses and validates pluginConfig text; empty (or all-whitespace) text means every default. */
/**
 * Validates an already-parsed configuration object: a policy pulled from the control plane, which
 * may not itself name a policy source.
 */
export function parsePulledConfig(value: JsonValue): ConfigResult {
  const result = new ConfigResult();
  const v = new Validator();
  if (value.kind == JsonKind.Object && value.get("policySource") !== null) {
    result.error = "policySource: not allowed in a pulled policy";
    return result;
  }
  const config = v.config(value);
  if (config === null) result.error = v.error;
  else result.config = config;
  return result;
}

export function parseConfig(text: string): ConfigResult {
  const result = new ConfigResult();
  if (text.trim().length == 0) {
    result.config = new Config();
    return result;
  }
  const parser = new JsonParser(text);
  const root = parser.parse();
  if (root === null) {
    result.error = parser.error;
    return result;
  }
  const v = new Validator();
  const config = v.config(root);
  if (config === null) {
    result.error = v.error;
  } else {
    result.config = config;
  }
  return result;
}

// Every check names the field it refuses as `at.key` (the enclosing object's path, then the key;
// `at` alone for a null key), joined only when a check fails: spelled out field by field, the paths
// were a string literal each in the module. Only the first rejection is kept, so a reader may go on
// after one (a field absent or refused yields its fallback) and a section stops at its end when
// `failed`.
class Validator {
  error: string = "";

  get failed(): bool {
    return this.error.length > 0;
  }

  /** Rejects `at.key` (`at` alone for a null key, `key` alone at the top level). */
  private reject(at: string, key: string | null, reason: string): bool {
    if (this.error.length == 0) this.error = (key === null ? at : at.length == 0 ? key : at + "." + key) + ": " + reason;
    return false;
  }

  /** Checks that `obj` is an object whose keys are all in `allowed`. */
  private objectWithKeys(obj: JsonValue, at: string, allowed: Array<string>): bool {
    if (obj.kind != JsonKind.Object) return this.reject(at, null, "must be an object");
    for (let i = 0; i < obj.keys.length; i++) {
      if (!allowed.includes(obj.keys[i])) return this.reject(at, obj.keys[i], "unknown key");
    }
    return true;
  }

  /** A number from min to max; `range` says them ("0 and 1"). */
  private number(v: JsonValue, at: string, key: string | null, min: f64, max: f64, range: string): bool {
    if (v.kind != JsonKind.Number || !(v.num >= min && v.num <= max)) return this.reject(at, key, "must be a number between " + range);
    return true;
  }

  private str(v: JsonValue, at: string, key: string | null, minLength: i32, maxLength: i32): bool {
    if (v.kind != JsonKind.String) return this.reject(at, key, "must be a string");
    const n = codePointLength(v.str);
    if (n < minLength || n > maxLength) {
      return this.reject(at, key, "length must be between " + decimal(minLength) + " and " + decimal(maxLength));
    }
    return true;
  }

  private headerName(v: JsonValue, at: string, key: string): bool {
    if (!this.str(v, at, key, 1, 128)) return false;
    if (!isHeaderToken(v.str)) return this.reject(at, key, "must be a lower-case HTTP header name");
    return true;
  }

  private integer(v: JsonValue, at: string, key: string | null, min: i32, max: i32): bool {
    if (v.kind != JsonKind.Number || v.num != Math.floor(v.num) || v.num < <f64>min || v.num > <f64>max) {
      return this.reject(at, key, "must be an integer between " + decimal(min) + " and " + decimal(max));
    }
    return true;
  }

  private boolean(v: JsonValue, at: string, key: string): bool {
    if (v.kind != JsonKind.Bool) return this.reject(at, key, "must be true or false");
    return true;
  }

  /** obj[key], rejected when absent. */
  private required(obj: JsonValue, at: string, key: string): JsonValue | null {
    const v = obj.get(key);
    if (v === null) this.reject(at, key, "is required");
    return v;
  }

  /** obj[key] as an integer from min to max; `fallback` when absent or refused. */
  private intOf(obj: JsonValue, at: string, key: string, min: i32, max: i32, fallback: i32): i32 {
    const v = obj.get(key);
    return v !== null && this.integer(v, at, key, min, max) ? <i32>v.num : fallback;
  }

  /** obj[key] as true or false; `fallback` when absent or refused. */
  private boolOf(obj: JsonValue, at: string, key: string, fallback: bool): bool {
    const v = obj.get(key);
    return v !== null && this.boolean(v, at, key) ? v.bool : fallback;
  }

  /** obj[key] as a string of minLength to maxLength code points; null when absent or refused. */
  private strOf(obj: JsonValue, at: string, key: string, minLength: i32, maxLength: i32): string | null {
    const v = obj.get(key);
    return v !== null && this.str(v, at, key, minLength, maxLength) ? v.str : null;
  }

  /** obj[key] as a path (starting with /) of at most maxLength code points; null when absent or refused. */
  private pathOf(obj: JsonValue, at: string, key: string, maxLength: i32): string | null {
    const path = this.strOf(obj, at, key, 1, maxLength);
    if (path === null || path.charCodeAt(0) == 0x2f) return path;
    this.reject(at, key, "must start with /");
    return null;
  }

  /** obj[key] as an array of at most maxItems (`noun`: " rules", " entries"); null when absent or refused. */
  private listOf(obj: JsonValue, at: string, key: string, maxItems: i32, noun: string): Array<JsonValue> | null {
    const v = obj.get(key);
    if (v === null) return null;
    if (v.kind != JsonKind.Array) {
      this.reject(at, key, "must be an array");
      return null;
    }
    if (v.items.length > maxItems) {
      this.reject(at, key, "at most " + decimal(maxItems) + noun);
      return null;
    }
    return v.items;
  }

  config(root: JsonValue): Config | null {
    const c = new Config();
    if (!this.objectWithKeys(root, "", ["sampling", "headers", "stats", "llm", "spans", "policySource"])) {
      if (root.kind != JsonKind.Object) this.error = "(root): must be an object";
      return null;
    }
    const sampling = root.get("sampling");
    if (sampling !== null && !this.sampling(sampling, c)) return null;
    const headers = root.get("headers");
    if (headers !== null) {
      if (!this.objectWithKeys(headers, "headers", ["tokenTraceId"])) return null;
      const name = headers.get("tokenTraceId");
      if (name !== null) {
        if (!this.headerName(name, "headers", "tokenTraceId")) return null;
        if (isReservedHeader(name.str)) {
          this.reject("headers", "tokenTraceId", "\"" + name.str + "\" is reserved (docs/filter.md, headers.tokenTraceId)");
          return null;
        }
        c.tokenTraceIdHeader = String.UTF8.encode(name.str);
      }
    }
    const stats = root.get("stats");
    if (stats !== null) {
      if (!this.objectWithKeys(stats, "stats", ["maxRoutes", "maxModels", "maxDestinationPods", "flushIntervalMs"])) return null;
      c.statsFlushIntervalMs = this.intOf(stats, "stats", "flushIntervalMs", 0, 60000, c.statsFlushIntervalMs);
      c.maxRoutes = this.intOf(stats, "stats", "maxRoutes", 1, 1024, c.maxRoutes);
      c.maxModels = this.intOf(stats, "stats", "maxModels", 1, 1024, c.maxModels);
      c.maxDestinationPods = this.intOf(stats, "stats", "maxDestinationPods", 0, 1024, c.maxDestinationPods);
      if (this.failed) return null;
    }
    const llm = root.get("llm");
    if (llm !== null && !this.llm(llm, c.llm)) return null;
    const spans = root.get("spans");
    if (spans !== null) {
      const sc = this.spans(spans);
      if (sc === null) return null;
      c.spans = sc;
    }
    const source = root.get("policySource");
    if (source !== null) {
      const ps = this.policySource(source);
      if (ps === null) return null;
      c.policySource = ps;
    }
    return c;
  }

  /** Length-class boundaries: 0 to MAX_LENGTH_BOUNDARIES token counts, each 1 to 10,000,000, strictly increasing. */
  private boundaries(v: JsonValue, at: string, key: string): StaticArray<i64> | null {
    if (v.kind != JsonKind.Array || v.items.length > MAX_LENGTH_BOUNDARIES) {
      this.reject(at, key, "must be an array of at most " + decimal(MAX_LENGTH_BOUNDARIES) + " token counts");
      return null;
    }
    const out = new StaticArray<i64>(v.items.length);
    for (let i = 0; i < v.items.length; i++) {
      const name = itemPath(at, key, i);
      if (!this.integer(v.items[i], name, null, 1, 10000000)) return null;
      out[i] = <i64>v.items[i].num;
      if (i > 0 && out[i] <= out[i - 1]) {
        this.reject(name, null, "must exceed the boundary before it");
        return null;
      }
    }
    return out;
  }

  /** obj[key]: an array of `minItems` to 16 strings, each checked by `str`; their UTF-8 bytes, or null when absent or refused. */
  private stringList(obj: JsonValue, at: string, key: string, maxLength: i32, mustStartWithSlash: bool, minItems: i32): Array<ArrayBuffer> | null {
    const v = obj.get(key);
    if (v === null) return null;
    if (v.kind != JsonKind.Array) {
      this.reject(at, key, "must be an array");
      return null;
    }
    if (v.items.length < minItems || v.items.length > 16) {
      this.reject(at, key, "must have between " + decimal(minItems) + " and 16 items");
      return null;
    }
    const out = new Array<ArrayBuffer>();
    for (let i = 0; i < v.items.length; i++) {
      const item = v.items[i];
      const name = itemPath(at, key, i);
      if (!this.str(item, name, null, 1, maxLength)) return null;
      if (mustStartWithSlash && item.str.charCodeAt(0) != 0x2f) {
        this.reject(name, null, "must start with /");
        return null;
      }
      out.push(String.UTF8.encode(mustStartWithSlash ? item.str : asciiLowerCase(item.str)));
    }
    return out;
  }

  private policySource(v: JsonValue): PolicySourceConfig | null {
    const at = "policySource";
    if (!this.objectWithKeys(v, at, ["cluster", "authority", "workload", "labels", "intervalMs", "timeoutMs"])) return null;
    const ps = new PolicySourceConfig();
    const cluster = this.required(v, at, "cluster");
    if (cluster === null || !this.str(cluster, at, "cluster", 1, 256)) return null;
    ps.cluster = String.UTF8.encode(cluster.str);
    ps.authority = ps.cluster;
    const authority = this.strOf(v, at, "authority", 1, 256);
    if (authority !== null) ps.authority = String.UTF8.encode(authority);
    if (this.failed) return null;
    const workload = this.required(v, at, "workload");
    if (workload === null || !this.str(workload, at, "workload", 3, 317)) return null;
    if (!isWorkloadId(workload.str)) {
      this.reject(at, "workload", "must be <namespace>.<name> in lower-case DNS characters");
      return null;
    }
    ps.workload = workload.str;
    const labels = v.get("labels");
    if (labels !== null) {
      const labelsAt = memberPath(at, "labels");
      if (!this.objectWithKeys(labels, labelsAt, labels.keys)) return null;
      if (labels.keys.length > 32) {
        this.reject(labelsAt, null, "at most 32 labels");
        return null;
      }
      let text = "";
      for (let i = 0; i < labels.keys.length; i++) {
        const key = labels.keys[i];
        if (!isLabelText(key, 1) || !this.str(labels.values[i], labelsAt, key, 0, 63) || !isLabelText(labels.values[i].str, 0)) {
          this.reject(labelsAt, key, "keys and values must be Kubernetes label text");
          return null;
        }
        text += (i > 0 ? "," : "") + key + "=" + labels.values[i].str;
      }
      ps.labels = text;
    }
    ps.intervalMs = this.intOf(v, at, "intervalMs", 1000, 3600000, ps.intervalMs);
    ps.timeoutMs = this.intOf(v, at, "timeoutMs", 100, 60000, ps.timeoutMs);
    return this.failed ? null : ps;
  }

  private spans(v: JsonValue): SpanConfig | null {
    const at = "spans";
    const keys = ["cluster", "path", "authority", "serviceName", "providerName", "batchSize", "maxBufferedSpans", "flushIntervalMs", "timeoutMs", "keep", "content"];
    if (!this.objectWithKeys(v, at, keys)) return null;
    const sc = new SpanConfig();
    const cluster = this.required(v, at, "cluster");
    if (cluster === null || !this.str(cluster, at, "cluster", 1, 256)) return null;
    sc.cluster = String.UTF8.encode(cluster.str);
    sc.authority = sc.cluster;
    const path = this.pathOf(v, at, "path", 1024);
    if (path !== null) sc.path = String.UTF8.encode(path);
    const authority = this.strOf(v, at, "authority", 1, 256);
    if (authority !== null) sc.authority = String.UTF8.encode(authority);
    const service = this.strOf(v, at, "serviceName", 1, 128);
    if (service !== null) sc.serviceName = service;
    const provider = this.strOf(v, at, "providerName", 1, 64);
    if (provider !== null) sc.providerName = provider;
    sc.batchSize = this.intOf(v, at, "batchSize", 1, 1000, sc.batchSize);
    sc.maxBufferedSpans = this.intOf(v, at, "maxBufferedSpans", 1, 100000, sc.maxBufferedSpans);
    sc.flushIntervalMs = this.intOf(v, at, "flushIntervalMs", 100, 60000, sc.flushIntervalMs);
    sc.timeoutMs = this.intOf(v, at, "timeoutMs", 100, 60000, sc.timeoutMs);
    if (this.failed) return null;
    const keep = v.get("keep");
    if (keep !== null && !this.keep(keep, memberPath(at, "keep"), sc)) return null;
    const content = v.get("content");
    if (content !== null) {
      const cc = this.content(content, memberPath(at, "content"));
      if (cc === null) return null;
      sc.content = cc;
    }
    return sc;
  }

  private content(v: JsonValue, at: string): ContentConfig | null {
    if (!this.objectWithKeys(v, at, ["enabled", "routes", "maxBytes", "pseudonyms"])) return null;
    const cc = new ContentConfig();
    cc.enabled = this.boolOf(v, at, "enabled", cc.enabled);
    cc.maxBytes = this.intOf(v, at, "maxBytes", 256, 65536, cc.maxBytes);
    const routes = this.listOf(v, at, "routes", MAX_ROUTE_RULES, " rules");
    if (this.failed) return null;
    if (routes !== null) {
      for (let i = 0; i < routes.length; i++) {
        const field = itemPath(at, "routes", i);
        const item = routes[i];
        if (!this.objectWithKeys(item, field, ["routeName", "enabled"])) return null;
        const name = this.required(item, field, "routeName");
        if (name === null) return null;
        const on = this.required(item, field, "enabled");
        if (on === null) return null;
        if (!this.str(name, field, "routeName", 1, 256) || !this.boolean(on, field, "enabled")) return null;
        const rule = new ContentRoute();
        rule.routeNameBytes = String.UTF8.encode(name.str);
        rule.enabled = on.bool;
        cc.routes.push(rule);
      }
    }
    const pseudonyms = v.get("pseudonyms");
    if (pseudonyms !== null && !this.pseudonyms(pseudonyms, memberPath(at, "pseudonyms"), cc)) return null;
    return cc;
  }

  // The key is never part of a configuration: it is fetched from the control plane (docs/data-protection.md).
  private pseudonyms(v: JsonValue, at: string, cc: ContentConfig): bool {
    if (v.kind == JsonKind.Object && v.get("salt") !== null) {
      return this.reject(at, "salt", "is no longer accepted (the key comes from the control plane)");
    }
    if (!this.objectWithKeys(v, at, ["keySource", "refreshIntervalMs"])) return false;
    cc.pseudonyms = true;
    cc.keyRefreshMs = this.intOf(v, at, "refreshIntervalMs", 1000, 3600000, cc.keyRefreshMs);
    if (this.failed) return false;
    const source = v.get("keySource");
    if (source === null) return true;
    const field = memberPath(at, "keySource");
    if (!this.objectWithKeys(source, field, ["cluster", "authority", "workload", "tokenEnv", "timeoutMs"])) return false;
    const ks = new KeySourceConfig();
    const cluster = this.required(source, field, "cluster");
    if (cluster === null) return false;
    const workload = this.required(source, field, "workload");
    if (workload === null || !this.str(cluster, field, "cluster", 1, 256)) return false;
    ks.cluster = String.UTF8.encode(cluster.str);
    ks.authority = ks.cluster;
    const authority = this.strOf(source, field, "authority", 1, 256);
    if (authority !== null) ks.authority = String.UTF8.encode(authority);
    if (this.failed || !this.str(workload, field, "workload", 3, 317)) return false;
    if (!isWorkloadId(workload.str)) return this.reject(field, "workload", "must be <namespace>.<name> in lower-case DNS characters");
    ks.workload = workload.str;
    const tokenEnv = this.strOf(source, field, "tokenEnv", 1, 128);
    if (tokenEnv !== null) {
      if (!isEnvName(tokenEnv)) return this.reject(field, "tokenEnv", "must be an environment variable name");
      ks.tokenEnv = tokenEnv;
    }
    ks.timeoutMs = this.intOf(source, field, "timeoutMs", 100, 60000, ks.timeoutMs);
    if (this.failed) return false;
    cc.keySource = ks;
    return true;
  }

  private keep(v: JsonValue, at: string, sc: SpanConfig): bool {
    if (!this.objectWithKeys(v, at, ["errors", "slowerThanMs", "routes", "live", "budget", "recent"])) return false;
    sc.keepErrors = this.boolOf(v, at, "errors", sc.keepErrors);
    sc.keepSlowerThanMs = this.intOf(v, at, "slowerThanMs", 1, MAX_KEEP_THRESHOLD_MS, sc.keepSlowerThanMs);
    if (this.failed) return false;
    const live = this.listOf(v, at, "live", MAX_LIVE_THRESHOLDS, " entries");
    if (live !== null && !this.live(live, at, sc)) return false;
    const budget = v.get("budget");
    if (this.failed || (budget !== null && !this.budget(budget, memberPath(at, "budget"), sc))) return false;
    const recent = v.get("recent");
    if (recent !== null && !this.recent(recent, memberPath(at, "recent"), sc)) return false;
    const routes = this.listOf(v, at, "routes", MAX_ROUTE_RULES, " rules");
    if (routes === null) return !this.failed;
    for (let i = 0; i < routes.length; i++) {
      const field = itemPath(at, "routes", i);
      const item = routes[i];
      if (!this.objectWithKeys(item, field, ["routeName", "slowerThanMs"])) return false;
      const name = this.required(item, field, "routeName");
      if (name === null || !this.str(name, field, "routeName", 1, 256)) return false;
      const ms = this.required(item, field, "slowerThanMs");
      if (ms === null || !this.integer(ms, field, "slowerThanMs", 1, MAX_KEEP_THRESHOLD_MS)) return false;
      const rule = new KeepRoute();
      rule.routeNameBytes = String.UTF8.encode(name.str);
      rule.slowerThanMs = <i32>ms.num;
      sc.keepRoutes.push(rule);
    }
    return true;
  }

  private live(items: Array<JsonValue>, at: string, sc: SpanConfig): bool {
    for (let i = 0; i < items.length; i++) {
      const field = itemPath(at, "live", i);
      const item = items[i];
      if (!this.objectWithKeys(item, field, ["route", "model", "durationMs", "ttftMs"])) return false;
      const t = new LiveThreshold();
      const route = this.required(item, field, "route");
      if (route === null || !this.str(route, field, "route", 1, 64)) return false;
      t.route = route.str;
      const model = this.strOf(item, field, "model", 1, 64);
      if (model !== null) t.model = model;
      t.durationMs = this.intOf(item, field, "durationMs", 1, MAX_KEEP_THRESHOLD_MS, t.durationMs);
      t.ttftMs = this.intOf(item, field, "ttftMs", 1, MAX_KEEP_THRESHOLD_MS, t.ttftMs);
      if (this.failed) return false;
      if (t.durationMs < 0 && t.ttftMs < 0) return this.reject(field, null, "needs durationMs or ttftMs");
      sc.keepLive.push(t);
    }
    return true;
  }

  private recent(v: JsonValue, at: string, sc: SpanConfig): bool {
    if (!this.objectWithKeys(v, at, ["quantile", "windowSeconds", "maxSamples"])) return false;
    const r = new KeepRecentConfig();
    const q = v.get("quantile");
    if (q !== null) {
      if (!this.number(q, at, "quantile", 0.5, 0.999, "0.5 and 0.999")) return false;
      r.quantile = q.num;
    }
    const windowSeconds = this.intOf(v, at, "windowSeconds", 1, 3600, 0);
    if (windowSeconds > 0) r.windowMs = <u32>windowSeconds * 1000;
    r.maxSamples = this.intOf(v, at, "maxSamples", 64, 8192, r.maxSamples);
    if (this.failed) return false;
    sc.keepRecent = r;
    return true;
  }

  private budget(v: JsonValue, at: string, sc: SpanConfig): bool {
    if (!this.objectWithKeys(v, at, ["tracesPerSecond", "burstSeconds", "reservoirBytes"])) return false;
    const b = new KeepBudgetConfig();
    const rate = this.required(v, at, "tracesPerSecond");
    if (rate === null || !this.number(rate, at, "tracesPerSecond", 0.001, 100000, "0.001 and 100000")) return false;
    b.tracesPerSecond = rate.num;
    b.burstSeconds = this.intOf(v, at, "burstSeconds", 1, 600, b.burstSeconds);
    b.reservoirBytes = this.intOf(v, at, "reservoirBytes", 16384, 4194304, b.reservoirBytes);
    if (this.failed) return false;
    sc.keepBudget = b;
    return true;
  }

  private llm(v: JsonValue, llm: LlmConfig): bool {
    const at = "llm";
    if (!this.objectWithKeys(v, at, ["enabled", "pathSuffixes", "protocols", "contentTypes", "maxRequestBodyBytes", "requestUsageInStream", "lengthClasses"])) return false;
    llm.enabled = this.boolOf(v, at, "enabled", llm.enabled);
    // llm.pathSuffixes: the OpenAI-compatible paths, as before per-protocol matchers existed
    // (llm.protocols.openai.pathSuffixes, read after it, wins when both are given).
    const suffixes = this.stringList(v, at, "pathSuffixes", 256, true, 1);
    if (this.failed) return false;
    if (suffixes !== null) llm.paths[Protocol.OpenAi].setSuffixes(suffixes);
    const protocols = v.get("protocols");
    if (protocols !== null) {
      const protocolsAt = memberPath(at, "protocols");
      if (!this.objectWithKeys(protocols, protocolsAt, PROTOCOL_NAMES)) return false;
      for (let i = 0; i < Protocol.COUNT; i++) {
        const name = PROTOCOL_NAMES[i];
        const paths = protocols.get(name);
        if (paths === null) continue;
        const field = memberPath(protocolsAt, name);
        if (!this.objectWithKeys(paths, field, ["pathPrefixes", "pathSuffixes"])) return false;
        const prefixes = this.stringList(paths, field, "pathPrefixes", 256, true, 1);
        if (this.failed) return false;
        if (prefixes !== null) llm.paths[i].prefixes = prefixes;
        const own = this.stringList(paths, field, "pathSuffixes", 256, true, 0);
        if (this.failed) return false;
        if (own !== null) llm.paths[i].setSuffixes(own);
      }
    }
    const types = this.stringList(v, at, "contentTypes", 128, false, 1);
    if (types !== null) llm.contentTypes = types;
    llm.maxRequestBodyBytes = this.intOf(v, at, "maxRequestBodyBytes", 0, MAX_REQUEST_BODY_BYTES_LIMIT, llm.maxRequestBodyBytes);
    llm.requestUsageInStream = this.boolOf(v, at, "requestUsageInStream", llm.requestUsageInStream);
    if (this.failed) return false;
    const classes = v.get("lengthClasses");
    if (classes !== null) {
      const classesAt = memberPath(at, "lengthClasses");
      if (!this.objectWithKeys(classes, classesAt, ["inputTokens", "outputTokens"])) return false;
      const input = classes.get("inputTokens");
      if (input !== null) {
        const bounds = this.boundaries(input, classesAt, "inputTokens");
        if (bounds === null) return false;
        llm.inputClasses = lengthClassesOf(bounds);
      }
      const output = classes.get("outputTokens");
      if (output !== null) {
        const bounds = this.boundaries(output, classesAt, "outputTokens");
        if (bounds === null) return false;
        llm.outputClasses = lengthClassesOf(bounds);
      }
    }
    if (llm.requestUsageInStream && llm.maxRequestBodyBytes > ENVOY_BUFFER_LIMIT_BYTES) {
      return this.reject(at, "maxRequestBodyBytes", "must be at most " + decimal(ENVOY_BUFFER_LIMIT_BYTES) + " with llm.requestUsageInStream (Envoy's buffer limit)");
    }
    return true;
  }

  private sampling(s: JsonValue, c: Config): bool {
    const at = "sampling";
    if (!this.objectWithKeys(s, at, ["defaultRate", "routes", "force"])) return false;
    const rate = s.get("defaultRate");
    if (rate !== null) {
      if (!this.number(rate, at, "defaultRate", 0, 1, "0 and 1")) return false;
      c.defaultRate = rate.num;
    }
    const routes = this.listOf(s, at, "routes", MAX_ROUTE_RULES, " rules");
    if (this.failed) return false;
    if (routes !== null) {
      for (let i = 0; i < routes.length; i++) {
        const rule = this.routeRule(routes[i], itemPath(at, "routes", i));
        if (rule === null) return false;
        c.routes.push(rule);
        if (rule.pathPrefixBytes !== null) c.rulesUsePath = true;
        if (rule.hostBytes !== null) c.rulesUseHost = true;
      }
    }
    const force = this.listOf(s, at, "force", MAX_FORCE_RULES, " rules");
    if (this.failed) return false;
    if (force !== null) {
      for (let i = 0; i < force.length; i++) {
        const rule = this.forceRule(force[i], itemPath(at, "force", i));
        if (rule === null) return false;
        c.force.push(rule);
      }
    }
    return true;
  }

  private routeRule(v: JsonValue, at: string): RouteRule | null {
    if (!this.objectWithKeys(v, at, ["routeName", "pathPrefix", "host", "rate"])) return null;
    const rule = new RouteRule();
    const rate = this.required(v, at, "rate");
    if (rate === null || !this.number(rate, at, "rate", 0, 1, "0 and 1")) return null;
    rule.rate = rate.num;
    const routeName = this.strOf(v, at, "routeName", 1, 256);
    if (routeName !== null) rule.routeNameBytes = String.UTF8.encode(routeName);
    const pathPrefix = this.pathOf(v, at, "pathPrefix", 1024);
    if (pathPrefix !== null) rule.pathPrefixBytes = String.UTF8.encode(pathPrefix);
    const host = this.strOf(v, at, "host", 1, 256);
    if (host !== null) rule.hostBytes = String.UTF8.encode(asciiLowerCase(host));
    if (this.failed) return null;
    if (routeName === null && pathPrefix === null && host === null) {
      this.reject(at, null, "needs at least one of routeName, pathPrefix, host");
      return null;
    }
    return rule;
  }

  private forceRule(v: JsonValue, at: string): ForceRule | null {
    if (!this.objectWithKeys(v, at, ["header", "value"])) return null;
    const rule = new ForceRule();
    const header = this.required(v, at, "header");
    if (header === null || !this.headerName(header, at, "header")) return null;
    rule.headerBytes = String.UTF8.encode(header.str);
    const value = this.strOf(v, at, "value", 0, 256);
    if (value !== null) rule.valueBytes = String.UTF8.encode(value);
    return this.failed ? null : rule;
  }
}

/** `at.key`: where a member is, for messages. */
function memberPath(at: string, key: string): string {
  return at + "." + key;
}

/** `at.key[i]`: where a list item is, for messages. */
function itemPath(at: string, key: string, i: i32): string {
  return at + "." + key + "[" + decimal(i) + "]";
}

/** JSON Schema counts string length in code points, not UTF-16 units. */
function codePointLength(s: string): i32 {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** RFC 9110 token characters, lower-case only (Envoy lower-cases header names). */
export function isHeaderToken(s: string): bool {
  if (s.length == 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)) continue;
    // ! # $ % & ' * + - . ^ _ ` | ~
    if (c == 0x21 || (c >= 0x23 && c <= 0x27) || c == 0x2a || c == 0x2b || c == 0x2d || c == 0x2e || c == 0x5e || c == 0x5f || c == 0x60 || c == 0x7c || c == 0x7e) continue;
    return false;
  }
  return true;
}

// Names the token trace id header may not take (config.schema.json refuses the same): the filter
// replaces that header upstream and downstream, so it would rewrite framing, routing, credentials
// or trace context, or echo a client's credential back in the response. Pseudo-headers are not
// header tokens and fail before this.
// One literal (a literal each would cost its own header in the module), each name between spaces;
// lines end in a backslash, which continues the literal (a + would concatenate at start-up).
const RESERVED_HEADERS = " connection keep-alive proxy-connection te trailer transfer-encoding upgrade host \
authorization proxy-authorization proxy-authenticate www-authenticate cookie set-cookie x-api-key \
traceparent tracestate baggage b3 x-request-id ";
const RESERVED_PREFIXES = ["content-", "x-b3-", "x-envoy-"];

/** True when a (lower-case) header name is one the token trace id may not replace. */
export function isReservedHeader(name: string): bool {
  // A header name has no space, so " name " matches one whole name of the list.
  if (RESERVED_HEADERS.includes(" " + name + " ")) return true;
  for (let i = 0; i < RESERVED_PREFIXES.length; i++) if (name.startsWith(RESERVED_PREFIXES[i])) return true;
  return false;
}

/** ASCII-only lower-casing: hosts are ASCII (IDNs travel as punycode), and the Unicode tables cost kilobytes of .wasm. */
export function asciiLowerCase(s: string): string {
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) break;
    i++;
  }
  if (i == s.length) return s;
  const out = new StaticArray<u16>(s.length);
  for (let j = 0; j < s.length; j++) {
    const c = s.charCodeAt(j);
    out[j] = <u16>(c >= 0x41 && c <= 0x5a ? c + 0x20 : c);
  }
  return String.UTF16.decodeUnsafe(changetype<usize>(out), s.length * 2);
}

/** <namespace>.<name>: lower-case letters, digits, "-" and "." (the first "." splits namespace and name). */
function isWorkloadId(s: string): bool {
  const dot = s.indexOf(".");
  if (dot < 1 || dot == s.length - 1) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2e)) return false;
  }
  return true;
}

/** An environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
function isEnvName(s: string): bool {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c == 0x5f || (i > 0 && c >= 0x30 && c <= 0x39))) return false;
  }
  return s.length > 0;
}

/** Label keys and values as they may travel in the query unescaped: [A-Za-z0-9._/-], at most 63. */
function isLabelText(s: string, minLength: i32): bool {
  if (s.length < minLength || s.length > 63) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2e || c == 0x5f || c == 0x2f)) return false;
  }
  return true;
}
