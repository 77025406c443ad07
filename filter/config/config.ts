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

class Validator {
  error: string = "";

  private reject(field: string, reason: string): bool {
    if (this.error.length == 0) this.error = field + ": " + reason;
    return false;
  }

  /** Checks that `obj` is an object whose keys are all in `allowed`. */
  private objectWithKeys(obj: JsonValue, field: string, allowed: Array<string>): bool {
    if (obj.kind != JsonKind.Object) return this.reject(field, "must be an object");
    for (let i = 0; i < obj.keys.length; i++) {
      if (!allowed.includes(obj.keys[i])) {
        return this.reject(field.length == 0 ? obj.keys[i] : field + "." + obj.keys[i], "unknown key");
      }
    }
    return true;
  }

  private rate(v: JsonValue, field: string): bool {
    if (v.kind != JsonKind.Number || !(v.num >= 0 && v.num <= 1)) return this.reject(field, "must be a number between 0 and 1");
    return true;
  }

  private str(v: JsonValue, field: string, minLength: i32, maxLength: i32): bool {
    if (v.kind != JsonKind.String) return this.reject(field, "must be a string");
    const n = codePointLength(v.str);
    if (n < minLength || n > maxLength) {
      return this.reject(field, "length must be between " + decimal(minLength) + " and " + decimal(maxLength));
    }
    return true;
  }

  private headerName(v: JsonValue, field: string): bool {
    if (!this.str(v, field, 1, 128)) return false;
    if (!isHeaderToken(v.str)) return this.reject(field, "must be a lower-case HTTP header name");
    return true;
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
        if (!this.headerName(name, "headers.tokenTraceId")) return null;
        if (isReservedHeader(name.str)) {
          this.reject("headers.tokenTraceId", "\"" + name.str + "\" is reserved (docs/filter.md, headers.tokenTraceId)");
          return null;
        }
        c.tokenTraceIdHeader = String.UTF8.encode(name.str);
      }
    }
    const stats = root.get("stats");
    if (stats !== null) {
      if (!this.objectWithKeys(stats, "stats", ["maxRoutes", "maxModels", "maxDestinationPods", "flushIntervalMs"])) return null;
      const flush = stats.get("flushIntervalMs");
      if (flush !== null) {
        if (!this.integer(flush, "stats.flushIntervalMs", 0, 60000)) return null;
        c.statsFlushIntervalMs = <i32>flush.num;
      }
      const maxRoutes = stats.get("maxRoutes");
      if (maxRoutes !== null) {
        if (!this.integer(maxRoutes, "stats.maxRoutes", 1, 1024)) return null;
        c.maxRoutes = <i32>maxRoutes.num;
      }
      const maxModels = stats.get("maxModels");
      if (maxModels !== null) {
        if (!this.integer(maxModels, "stats.maxModels", 1, 1024)) return null;
        c.maxModels = <i32>maxModels.num;
      }
      const maxDestinationPods = stats.get("maxDestinationPods");
      if (maxDestinationPods !== null) {
        if (!this.integer(maxDestinationPods, "stats.maxDestinationPods", 0, 1024)) return null;
        c.maxDestinationPods = <i32>maxDestinationPods.num;
      }
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

  private integer(v: JsonValue, field: string, min: i32, max: i32): bool {
    if (v.kind != JsonKind.Number || v.num != Math.floor(v.num) || v.num < <f64>min || v.num > <f64>max) {
      return this.reject(field, "must be an integer between " + decimal(min) + " and " + decimal(max));
    }
    return true;
  }

  private boolean(v: JsonValue, field: string): bool {
    if (v.kind != JsonKind.Bool) return this.reject(field, "must be true or false");
    return true;
  }

  /** Length-class boundaries: 0 to MAX_LENGTH_BOUNDARIES token counts, each 1 to 10,000,000, strictly increasing. */
  private boundaries(v: JsonValue, field: string): StaticArray<i64> | null {
    if (v.kind != JsonKind.Array || v.items.length > MAX_LENGTH_BOUNDARIES) {
      this.reject(field, "must be an array of at most " + decimal(MAX_LENGTH_BOUNDARIES) + " token counts");
      return null;
    }
    const out = new StaticArray<i64>(v.items.length);
    for (let i = 0; i < v.items.length; i++) {
      const name = field + "[" + decimal(i) + "]";
      if (!this.integer(v.items[i], name, 1, 10000000)) return null;
      out[i] = <i64>v.items[i].num;
      if (i > 0 && out[i] <= out[i - 1]) {
        this.reject(name, "must exceed the boundary before it");
        return null;
      }
    }
    return out;
  }

  /** An array of `minItems` to 16 strings, each checked by `str`; returns their UTF-8 bytes. */
  private stringList(v: JsonValue, field: string, maxLength: i32, mustStartWithSlash: bool, minItems: i32): Array<ArrayBuffer> | null {
    if (v.kind != JsonKind.Array) {
      this.reject(field, "must be an array");
      return null;
    }
    if (v.items.length < minItems || v.items.length > 16) {
      this.reject(field, "must have between " + decimal(minItems) + " and 16 items");
      return null;
    }
    const out = new Array<ArrayBuffer>();
    for (let i = 0; i < v.items.length; i++) {
      const item = v.items[i];
      const name = field + "[" + decimal(i) + "]";
      if (!this.str(item, name, 1, maxLength)) return null;
      if (mustStartWithSlash && item.str.charCodeAt(0) != 0x2f) {
        this.reject(name, "must start with /");
        return null;
      }
      out.push(String.UTF8.encode(mustStartWithSlash ? item.str : asciiLowerCase(item.str)));
    }
    return out;
  }

  private policySource(v: JsonValue): PolicySourceConfig | null {
    if (!this.objectWithKeys(v, "policySource", ["cluster", "authority", "workload", "labels", "intervalMs", "timeoutMs"])) return null;
    const ps = new PolicySourceConfig();
    const cluster = v.get("cluster");
    if (cluster === null) {
      this.reject("policySource.cluster", "is required");
      return null;
    }
    if (!this.str(cluster, "policySource.cluster", 1, 256)) return null;
    ps.cluster = String.UTF8.encode(cluster.str);
    ps.authority = ps.cluster;
    const authority = v.get("authority");
    if (authority !== null) {
      if (!this.str(authority, "policySource.authority", 1, 256)) return null;
      ps.authority = String.UTF8.encode(authority.str);
    }
    const workload = v.get("workload");
    if (workload === null) {
      this.reject("policySource.workload", "is required");
      return null;
    }
    if (!this.str(workload, "policySource.workload", 3, 317)) return null;
    if (!isWorkloadId(workload.str)) {
      this.reject("policySource.workload", "must be <namespace>.<name> in lower-case DNS characters");
      return null;
    }
    ps.workload = workload.str;
    const labels = v.get("labels");
    if (labels !== null) {
      if (!this.objectWithKeys(labels, "policySource.labels", labels.keys)) return null;
      if (labels.keys.length > 32) {
        this.reject("policySource.labels", "at most 32 labels");
        return null;
      }
      let text = "";
      for (let i = 0; i < labels.keys.length; i++) {
        const field = "policySource.labels." + labels.keys[i];
        if (!isLabelText(labels.keys[i], 1) || !this.str(labels.values[i], field, 0, 63) || !isLabelText(labels.values[i].str, 0)) {
          this.reject(field, "keys and values must be Kubernetes label text");
          return null;
        }
        text += (i > 0 ? "," : "") + labels.keys[i] + "=" + labels.values[i].str;
      }
      ps.labels = text;
    }
    const interval = v.get("intervalMs");
    if (interval !== null) {
      if (!this.integer(interval, "policySource.intervalMs", 1000, 3600000)) return null;
      ps.intervalMs = <i32>interval.num;
    }
    const timeout = v.get("timeoutMs");
    if (timeout !== null) {
      if (!this.integer(timeout, "policySource.timeoutMs", 100, 60000)) return null;
      ps.timeoutMs = <i32>timeout.num;
    }
    return ps;
  }

  private spans(v: JsonValue): SpanConfig | null {
    const keys = ["cluster", "path", "authority", "serviceName", "providerName", "batchSize", "maxBufferedSpans", "flushIntervalMs", "timeoutMs", "keep", "content"];
    if (!this.objectWithKeys(v, "spans", keys)) return null;
    const sc = new SpanConfig();
    const cluster = v.get("cluster");
    if (cluster === null) {
      this.reject("spans.cluster", "is required");
      return null;
    }
    if (!this.str(cluster, "spans.cluster", 1, 256)) return null;
    sc.cluster = String.UTF8.encode(cluster.str);
    sc.authority = sc.cluster;
    const path = v.get("path");
    if (path !== null) {
      if (!this.str(path, "spans.path", 1, 1024)) return null;
      if (path.str.charCodeAt(0) != 0x2f) {
        this.reject("spans.path", "must start with /");
        return null;
      }
      sc.path = String.UTF8.encode(path.str);
    }
    const authority = v.get("authority");
    if (authority !== null) {
      if (!this.str(authority, "spans.authority", 1, 256)) return null;
      sc.authority = String.UTF8.encode(authority.str);
    }
    const service = v.get("serviceName");
    if (service !== null) {
      if (!this.str(service, "spans.serviceName", 1, 128)) return null;
      sc.serviceName = service.str;
    }
    const provider = v.get("providerName");
    if (provider !== null) {
      if (!this.str(provider, "spans.providerName", 1, 64)) return null;
      sc.providerName = provider.str;
    }
    const batch = v.get("batchSize");
    if (batch !== null) {
      if (!this.integer(batch, "spans.batchSize", 1, 1000)) return null;
      sc.batchSize = <i32>batch.num;
    }
    const buffered = v.get("maxBufferedSpans");
    if (buffered !== null) {
      if (!this.integer(buffered, "spans.maxBufferedSpans", 1, 100000)) return null;
      sc.maxBufferedSpans = <i32>buffered.num;
    }
    const interval = v.get("flushIntervalMs");
    if (interval !== null) {
      if (!this.integer(interval, "spans.flushIntervalMs", 100, 60000)) return null;
      sc.flushIntervalMs = <i32>interval.num;
    }
    const timeout = v.get("timeoutMs");
    if (timeout !== null) {
      if (!this.integer(timeout, "spans.timeoutMs", 100, 60000)) return null;
      sc.timeoutMs = <i32>timeout.num;
    }
    const keep = v.get("keep");
    if (keep !== null && !this.keep(keep, sc)) return null;
    const content = v.get("content");
    if (content !== null) {
      const cc = this.content(content);
      if (cc === null) return null;
      sc.content = cc;
    }
    return sc;
  }

  private content(v: JsonValue): ContentConfig | null {
    if (!this.objectWithKeys(v, "spans.content", ["enabled", "routes", "maxBytes", "pseudonyms"])) return null;
    const cc = new ContentConfig();
    const enabled = v.get("enabled");
    if (enabled !== null) {
      if (!this.boolean(enabled, "spans.content.enabled")) return null;
      cc.enabled = enabled.bool;
    }
    const maxBytes = v.get("maxBytes");
    if (maxBytes !== null) {
      if (!this.integer(maxBytes, "spans.content.maxBytes", 256, 65536)) return null;
      cc.maxBytes = <i32>maxBytes.num;
    }
    const routes = v.get("routes");
    if (routes !== null) {
      if (routes.kind != JsonKind.Array) {
        this.reject("spans.content.routes", "must be an array");
        return null;
      }
      if (routes.items.length > MAX_ROUTE_RULES) {
        this.reject("spans.content.routes", "at most " + decimal(MAX_ROUTE_RULES) + " rules");
        return null;
      }
      for (let i = 0; i < routes.items.length; i++) {
        const field = "spans.content.routes[" + decimal(i) + "]";
        const item = routes.items[i];
        if (!this.objectWithKeys(item, field, ["routeName", "enabled"])) return null;
        const name = item.get("routeName");
        const on = item.get("enabled");
        if (name === null || on === null) {
          this.reject(field + (name === null ? ".routeName" : ".enabled"), "is required");
          return null;
        }
        if (!this.str(name, field + ".routeName", 1, 256) || !this.boolean(on, field + ".enabled")) return null;
        const rule = new ContentRoute();
        rule.routeNameBytes = String.UTF8.encode(name.str);
        rule.enabled = on.bool;
        cc.routes.push(rule);
      }
    }
    const pseudonyms = v.get("pseudonyms");
    if (pseudonyms !== null && !this.pseudonyms(pseudonyms, cc)) return null;
    return cc;
  }

  // The key is never part of a configuration: it is fetched from the control plane (docs/data-protection.md).
  private pseudonyms(v: JsonValue, cc: ContentConfig): bool {
    if (v.kind == JsonKind.Object && v.get("salt") !== null) {
      return this.reject("spans.content.pseudonyms.salt", "is no longer accepted (the key comes from the control plane)");
    }
    if (!this.objectWithKeys(v, "spans.content.pseudonyms", ["keySource", "refreshIntervalMs"])) return false;
    cc.pseudonyms = true;
    const refresh = v.get("refreshIntervalMs");
    if (refresh !== null) {
      if (!this.integer(refresh, "spans.content.pseudonyms.refreshIntervalMs", 1000, 3600000)) return false;
      cc.keyRefreshMs = <i32>refresh.num;
    }
    const source = v.get("keySource");
    if (source === null) return true;
    const field = "spans.content.pseudonyms.keySource";
    if (!this.objectWithKeys(source, field, ["cluster", "authority", "workload", "tokenEnv", "timeoutMs"])) return false;
    const ks = new KeySourceConfig();
    const cluster = source.get("cluster");
    const workload = source.get("workload");
    if (cluster === null || workload === null) return this.reject(field + (cluster === null ? ".cluster" : ".workload"), "is required");
    if (!this.str(cluster, field + ".cluster", 1, 256)) return false;
    ks.cluster = String.UTF8.encode(cluster.str);
    ks.authority = ks.cluster;
    const authority = source.get("authority");
    if (authority !== null) {
      if (!this.str(authority, field + ".authority", 1, 256)) return false;
      ks.authority = String.UTF8.encode(authority.str);
    }
    if (!this.str(workload, field + ".workload", 3, 317)) return false;
    if (!isWorkloadId(workload.str)) return this.reject(field + ".workload", "must be <namespace>.<name> in lower-case DNS characters");
    ks.workload = workload.str;
    const tokenEnv = source.get("tokenEnv");
    if (tokenEnv !== null) {
      if (!this.str(tokenEnv, field + ".tokenEnv", 1, 128)) return false;
      if (!isEnvName(tokenEnv.str)) return this.reject(field + ".tokenEnv", "must be an environment variable name");
      ks.tokenEnv = tokenEnv.str;
    }
    const timeout = source.get("timeoutMs");
    if (timeout !== null) {
      if (!this.integer(timeout, field + ".timeoutMs", 100, 60000)) return false;
      ks.timeoutMs = <i32>timeout.num;
    }
    cc.keySource = ks;
    return true;
  }

  private keep(v: JsonValue, sc: SpanConfig): bool {
    if (!this.objectWithKeys(v, "spans.keep", ["errors", "slowerThanMs", "routes", "live", "budget", "recent"])) return false;
    const errors = v.get("errors");
    if (errors !== null) {
      if (!this.boolean(errors, "spans.keep.errors")) return false;
      sc.keepErrors = errors.bool;
    }
    const slower = v.get("slowerThanMs");
    if (slower !== null) {
      if (!this.integer(slower, "spans.keep.slowerThanMs", 1, MAX_KEEP_THRESHOLD_MS)) return false;
      sc.keepSlowerThanMs = <i32>slower.num;
    }
    const live = v.get("live");
    if (live !== null && !this.live(live, sc)) return false;
    const budget = v.get("budget");
    if (budget !== null && !this.budget(budget, sc)) return false;
    const recent = v.get("recent");
    if (recent !== null && !this.recent(recent, sc)) return false;
    const routes = v.get("routes");
    if (routes === null) return true;
    if (routes.kind != JsonKind.Array) return this.reject("spans.keep.routes", "must be an array");
    if (routes.items.length > MAX_ROUTE_RULES) return this.reject("spans.keep.routes", "at most " + decimal(MAX_ROUTE_RULES) + " rules");
    for (let i = 0; i < routes.items.length; i++) {
      const field = "spans.keep.routes[" + decimal(i) + "]";
      const item = routes.items[i];
      if (!this.objectWithKeys(item, field, ["routeName", "slowerThanMs"])) return false;
      const name = item.get("routeName");
      if (name === null) return this.reject(field + ".routeName", "is required");
      if (!this.str(name, field + ".routeName", 1, 256)) return false;
      const ms = item.get("slowerThanMs");
      if (ms === null) return this.reject(field + ".slowerThanMs", "is required");
      if (!this.integer(ms, field + ".slowerThanMs", 1, MAX_KEEP_THRESHOLD_MS)) return false;
      const rule = new KeepRoute();
      rule.routeNameBytes = String.UTF8.encode(name.str);
      rule.slowerThanMs = <i32>ms.num;
      sc.keepRoutes.push(rule);
    }
    return true;
  }

  private live(v: JsonValue, sc: SpanConfig): bool {
    if (v.kind != JsonKind.Array) return this.reject("spans.keep.live", "must be an array");
    if (v.items.length > MAX_LIVE_THRESHOLDS) return this.reject("spans.keep.live", "at most " + decimal(MAX_LIVE_THRESHOLDS) + " entries");
    for (let i = 0; i < v.items.length; i++) {
      const field = "spans.keep.live[" + decimal(i) + "]";
      const item = v.items[i];
      if (!this.objectWithKeys(item, field, ["route", "model", "durationMs", "ttftMs"])) return false;
      const t = new LiveThreshold();
      const route = item.get("route");
      if (route === null) return this.reject(field + ".route", "is required");
      if (!this.str(route, field + ".route", 1, 64)) return false;
      t.route = route.str;
      const model = item.get("model");
      if (model !== null) {
        if (!this.str(model, field + ".model", 1, 64)) return false;
        t.model = model.str;
      }
      const duration = item.get("durationMs");
      if (duration !== null) {
        if (!this.integer(duration, field + ".durationMs", 1, MAX_KEEP_THRESHOLD_MS)) return false;
        t.durationMs = <i32>duration.num;
      }
      const ttft = item.get("ttftMs");
      if (ttft !== null) {
        if (!this.integer(ttft, field + ".ttftMs", 1, MAX_KEEP_THRESHOLD_MS)) return false;
        t.ttftMs = <i32>ttft.num;
      }
      if (duration === null && ttft === null) return this.reject(field, "needs durationMs or ttftMs");
      sc.keepLive.push(t);
    }
    return true;
  }

  private recent(v: JsonValue, sc: SpanConfig): bool {
    if (!this.objectWithKeys(v, "spans.keep.recent", ["quantile", "windowSeconds", "maxSamples"])) return false;
    const r = new KeepRecentConfig();
    const q = v.get("quantile");
    if (q !== null) {
      if (q.kind != JsonKind.Number || !(q.num >= 0.5 && q.num <= 0.999)) return this.reject("spans.keep.recent.quantile", "must be a number between 0.5 and 0.999");
      r.quantile = q.num;
    }
    const window = v.get("windowSeconds");
    if (window !== null) {
      if (!this.integer(window, "spans.keep.recent.windowSeconds", 1, 3600)) return false;
      r.windowMs = <u32>window.num * 1000;
    }
    const samples = v.get("maxSamples");
    if (samples !== null) {
      if (!this.integer(samples, "spans.keep.recent.maxSamples", 64, 8192)) return false;
      r.maxSamples = <i32>samples.num;
    }
    sc.keepRecent = r;
    return true;
  }

  private budget(v: JsonValue, sc: SpanConfig): bool {
    if (!this.objectWithKeys(v, "spans.keep.budget", ["tracesPerSecond", "burstSeconds", "reservoirBytes"])) return false;
    const b = new KeepBudgetConfig();
    const rate = v.get("tracesPerSecond");
    if (rate === null) return this.reject("spans.keep.budget.tracesPerSecond", "is required");
    if (rate.kind != JsonKind.Number || !(rate.num >= 0.001 && rate.num <= 100000)) return this.reject("spans.keep.budget.tracesPerSecond", "must be a number between 0.001 and 100000");
    b.tracesPerSecond = rate.num;
    const burst = v.get("burstSeconds");
    if (burst !== null) {
      if (!this.integer(burst, "spans.keep.budget.burstSeconds", 1, 600)) return false;
      b.burstSeconds = <i32>burst.num;
    }
    const bytes = v.get("reservoirBytes");
    if (bytes !== null) {
      if (!this.integer(bytes, "spans.keep.budget.reservoirBytes", 16384, 4194304)) return false;
      b.reservoirBytes = <i32>bytes.num;
    }
    sc.keepBudget = b;
    return true;
  }

  private llm(v: JsonValue, llm: LlmConfig): bool {
    if (!this.objectWithKeys(v, "llm", ["enabled", "pathSuffixes", "protocols", "contentTypes", "maxRequestBodyBytes", "requestUsageInStream", "lengthClasses"])) return false;
    const enabled = v.get("enabled");
    if (enabled !== null) {
      if (!this.boolean(enabled, "llm.enabled")) return false;
      llm.enabled = enabled.bool;
    }
    // llm.pathSuffixes: the OpenAI-compatible paths, as before per-protocol matchers existed
    // (llm.protocols.openai.pathSuffixes, read after it, wins when both are given).
    const suffixes = v.get("pathSuffixes");
    if (suffixes !== null) {
      const list = this.stringList(suffixes, "llm.pathSuffixes", 256, true, 1);
      if (list === null) return false;
      llm.paths[Protocol.OpenAi].setSuffixes(list);
    }
    const protocols = v.get("protocols");
    if (protocols !== null) {
      if (!this.objectWithKeys(protocols, "llm.protocols", PROTOCOL_NAMES)) return false;
      for (let i = 0; i < Protocol.COUNT; i++) {
        const name = PROTOCOL_NAMES[i];
        const paths = protocols.get(name);
        if (paths === null) continue;
        const field = "llm.protocols." + name;
        if (!this.objectWithKeys(paths, field, ["pathPrefixes", "pathSuffixes"])) return false;
        const prefixes = paths.get("pathPrefixes");
        if (prefixes !== null) {
          const list = this.stringList(prefixes, field + ".pathPrefixes", 256, true, 1);
          if (list === null) return false;
          llm.paths[i].prefixes = list;
        }
        const own = paths.get("pathSuffixes");
        if (own !== null) {
          const list = this.stringList(own, field + ".pathSuffixes", 256, true, 0);
          if (list === null) return false;
          llm.paths[i].setSuffixes(list);
        }
      }
    }
    const types = v.get("contentTypes");
    if (types !== null) {
      const list = this.stringList(types, "llm.contentTypes", 128, false, 1);
      if (list === null) return false;
      llm.contentTypes = list;
    }
    const maxBody = v.get("maxRequestBodyBytes");
    if (maxBody !== null) {
      if (!this.integer(maxBody, "llm.maxRequestBodyBytes", 0, MAX_REQUEST_BODY_BYTES_LIMIT)) return false;
      llm.maxRequestBodyBytes = <i32>maxBody.num;
    }
    const usage = v.get("requestUsageInStream");
    if (usage !== null) {
      if (!this.boolean(usage, "llm.requestUsageInStream")) return false;
      llm.requestUsageInStream = usage.bool;
    }
    const classes = v.get("lengthClasses");
    if (classes !== null) {
      if (!this.objectWithKeys(classes, "llm.lengthClasses", ["inputTokens", "outputTokens"])) return false;
      const input = classes.get("inputTokens");
      if (input !== null) {
        const bounds = this.boundaries(input, "llm.lengthClasses.inputTokens");
        if (bounds === null) return false;
        llm.inputClasses = lengthClassesOf(bounds);
      }
      const output = classes.get("outputTokens");
      if (output !== null) {
        const bounds = this.boundaries(output, "llm.lengthClasses.outputTokens");
        if (bounds === null) return false;
        llm.outputClasses = lengthClassesOf(bounds);
      }
    }
    if (llm.requestUsageInStream && llm.maxRequestBodyBytes > ENVOY_BUFFER_LIMIT_BYTES) {
      return this.reject("llm.maxRequestBodyBytes", "must be at most " + decimal(ENVOY_BUFFER_LIMIT_BYTES) + " with llm.requestUsageInStream (Envoy's buffer limit)");
    }
    return true;
  }

  private sampling(s: JsonValue, c: Config): bool {
    if (!this.objectWithKeys(s, "sampling", ["defaultRate", "routes", "force"])) return false;
    const rate = s.get("defaultRate");
    if (rate !== null) {
      if (!this.rate(rate, "sampling.defaultRate")) return false;
      c.defaultRate = rate.num;
    }
    const routes = s.get("routes");
    if (routes !== null) {
      if (routes.kind != JsonKind.Array) return this.reject("sampling.routes", "must be an array");
      if (routes.items.length > MAX_ROUTE_RULES) return this.reject("sampling.routes", "at most " + decimal(MAX_ROUTE_RULES) + " rules");
      for (let i = 0; i < routes.items.length; i++) {
        const rule = this.routeRule(routes.items[i], "sampling.routes[" + decimal(i) + "]");
        if (rule === null) return false;
        c.routes.push(rule);
        if (rule.pathPrefixBytes !== null) c.rulesUsePath = true;
        if (rule.hostBytes !== null) c.rulesUseHost = true;
      }
    }
    const force = s.get("force");
    if (force !== null) {
      if (force.kind != JsonKind.Array) return this.reject("sampling.force", "must be an array");
      if (force.items.length > MAX_FORCE_RULES) return this.reject("sampling.force", "at most " + decimal(MAX_FORCE_RULES) + " rules");
      for (let i = 0; i < force.items.length; i++) {
        const rule = this.forceRule(force.items[i], "sampling.force[" + decimal(i) + "]");
        if (rule === null) return false;
        c.force.push(rule);
      }
    }
    return true;
  }

  private routeRule(v: JsonValue, field: string): RouteRule | null {
    if (!this.objectWithKeys(v, field, ["routeName", "pathPrefix", "host", "rate"])) return null;
    const rule = new RouteRule();
    const rate = v.get("rate");
    if (rate === null) {
      this.reject(field + ".rate", "is required");
      return null;
    }
    if (!this.rate(rate, field + ".rate")) return null;
    rule.rate = rate.num;
    const routeName = v.get("routeName");
    if (routeName !== null) {
      if (!this.str(routeName, field + ".routeName", 1, 256)) return null;
      rule.routeNameBytes = String.UTF8.encode(routeName.str);
    }
    const pathPrefix = v.get("pathPrefix");
    if (pathPrefix !== null) {
      if (!this.str(pathPrefix, field + ".pathPrefix", 1, 1024)) return null;
      if (pathPrefix.str.charCodeAt(0) != 0x2f) {
        this.reject(field + ".pathPrefix", "must start with /");
        return null;
      }
      rule.pathPrefixBytes = String.UTF8.encode(pathPrefix.str);
    }
    const host = v.get("host");
    if (host !== null) {
      if (!this.str(host, field + ".host", 1, 256)) return null;
      rule.hostBytes = String.UTF8.encode(asciiLowerCase(host.str));
    }
    if (routeName === null && pathPrefix === null && host === null) {
      this.reject(field, "needs at least one of routeName, pathPrefix, host");
      return null;
    }
    return rule;
  }

  private forceRule(v: JsonValue, field: string): ForceRule | null {
    if (!this.objectWithKeys(v, field, ["header", "value"])) return null;
    const rule = new ForceRule();
    const header = v.get("header");
    if (header === null) {
      this.reject(field + ".header", "is required");
      return null;
    }
    if (!this.headerName(header, field + ".header")) return null;
    rule.headerBytes = String.UTF8.encode(header.str);
    const value = v.get("value");
    if (value !== null) {
      if (!this.str(value, field + ".value", 0, 256)) return null;
      rule.valueBytes = String.UTF8.encode(value.str);
    }
    return rule;
  }
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
const RESERVED_HEADERS = [
  "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
  "authorization", "proxy-authorization", "proxy-authenticate", "www-authenticate", "cookie", "set-cookie", "x-api-key",
  "traceparent", "tracestate", "baggage", "b3", "x-request-id",
];
const RESERVED_PREFIXES = ["content-", "x-b3-", "x-envoy-"];

/** True when a (lower-case) header name is one the token trace id may not replace. */
export function isReservedHeader(name: string): bool {
  if (RESERVED_HEADERS.includes(name)) return true;
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
