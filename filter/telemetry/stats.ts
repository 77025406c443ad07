// Stats defined once per VM: each route's (and each route and model's) stats are looked up once and
// reused, counters are slots flushed on a tick, and distinct route and model labels are capped
// (Envoy never frees a stat: REFERENCE section 2).
import { equalBytes } from "../bytes";
import { KeepRecentConfig, SpanConfig } from "../config/config";
import { bucketLowerUs, bucketOfUs, RecentQuantile } from "./recent-quantile";
import * as host from "../host/host";
import {
  ERROR_TYPE_NONE, ERROR_TYPE_OTHER, errorTypeName, finishReasonName, TAG_ERROR_TYPE, LLM_BODY_LIMIT_EXCEEDED_TOTAL, LLM_DURATION_MS, LLM_INPUT_TOKENS_TOTAL,
  LLM_DECODE_MS, LLM_OUTPUT_TOKENS_TOTAL, LLM_PROMPTS_TOTAL, LLM_REQUESTS_TOTAL, LLM_STREAM_CHUNKS_TOTAL, LLM_TPOT_US, LLM_TTFT_MS, LLM_USAGE_MISSING_TOTAL,
  MODEL_OTHER, POLICY_POLL_FAILURES_TOTAL, POLICY_UPDATES_TOTAL, SPAN_EXPORT_FAILURES_TOTAL, SPANS_BUDGET_DROPPED_TOTAL, SPANS_DROPPED_TOTAL, SPANS_EXPORTED_TOTAL, SPANS_KEPT_TOTAL, TAG_FINISH_REASON, TAG_MODEL, TAG_STREAM,
  CONTENT_CAPTURED_TOTAL, CONTENT_KEY_UPDATES_TOTAL, CONTENT_REDACTIONS_TOTAL, TAG_REDACTED, KeepReason, keepReasonName, TAG_KEEP_REASON,
  CODE_CLASS_COUNT, codeClassName, ErrorReason, errorReasonName, FILTER_ERRORS_TOTAL, REQUEST_DURATION_MS,
  REQUESTS_TOTAL, ROUTE_DEFAULT, ROUTE_OTHER, sanitizeLabelValue, tagSegment, TAG_ERROR, TAG_STATUS_CLASS, TAG_ROUTE, TRACES_SAMPLED_TOTAL,
  TRACES_STARTED_TOTAL, POD_IP_OTHER, TAG_POD_IP, TAG_INPUT_LENGTH, TAG_OUTPUT_LENGTH,
} from "./metrics";
import { LengthClasses } from "./length-classes";

/** No counter: its definition was refused (or not made yet); adding to it does nothing. */
export const NO_COUNTER: i32 = -1;

/**
 * The VM's counters, each a slot. An increment adds to the slot; with batching on, the slots are
 * sent to the host on a tick (one call per counter that moved), otherwise at once. A request then
 * costs no counter call at all, and no lookup either: callers hold their slot numbers.
 */
export class Counters {
  private ids: Array<u32> = [];
  private deltas: Array<i64> = [];
  batching: bool = false;

  define(name: string): i32 {
    const id = host.defineMetric(host.MetricKind.Counter, name);
    if (id == host.NO_METRIC) return NO_COUNTER;
    this.ids.push(id);
    this.deltas.push(0);
    return this.ids.length - 1;
  }

  add(slot: i32, delta: i64): void {
    if (slot < 0 || delta <= 0) return;
    if (this.batching) unchecked((this.deltas[slot] += delta));
    else host.incrementCounter(unchecked(this.ids[slot]), delta);
  }

  flush(): void {
    for (let i = 0; i < this.ids.length; i++) {
      const delta = unchecked(this.deltas[i]);
      if (delta > 0) {
        host.incrementCounter(unchecked(this.ids[i]), delta);
        unchecked((this.deltas[i] = 0));
      }
    }
  }
}

/** The stats of one route label value (and, on a waypoint, one destination pod). */
export class RouteStats {
  label: string;
  /** The route's tags as a stat name prefix (with the destination pod's on a waypoint). */
  prefix: string;
  /** Unique per (route, destination pod): what LLM stats are keyed by. */
  key: string;
  private counters: Counters;
  private requests: StaticArray<i32> = new StaticArray<i32>(CODE_CLASS_COUNT);
  durationMs: u32;
  tracesStarted: i32;
  tracesSampled: i32;
  /** Defined on the route's first LLM request whose body was too large to read. */
  private bodyLimitExceeded: i32 = NO_COUNTER;
  /** Spans kept by KeepReason, then budget drops by KeepReason (slow, error); defined on first use. */
  private keepSlots: StaticArray<i32> | null = null;


  constructor(label: string, counters: Counters, podIp: string = "") {
    this.label = label;
    this.counters = counters;
    this.prefix = tagSegment(TAG_ROUTE, label) + (podIp.length > 0 ? tagSegment(TAG_POD_IP, podIp) : "");
    this.key = podIp.length > 0 ? label + "\0" + podIp : label;
    for (let i = 0; i < CODE_CLASS_COUNT; i++) this.requests[i] = NO_COUNTER;
    this.durationMs = host.defineMetric(host.MetricKind.Histogram, this.prefix + REQUEST_DURATION_MS);
    this.tracesStarted = counters.define(this.prefix + TRACES_STARTED_TOTAL);
    this.tracesSampled = counters.define(this.prefix + TRACES_SAMPLED_TOTAL);
  }

  bodyLimitExceededCounter(): i32 {
    if (this.bodyLimitExceeded == NO_COUNTER) {
      this.bodyLimitExceeded = this.counters.define(this.prefix + LLM_BODY_LIMIT_EXCEEDED_TOTAL);
    }
    return this.bodyLimitExceeded;
  }

  /** The counter of spans kept for `reason` on this route (`dropped`: dropped for the budget instead), defined on first use. */
  keepCounter(reason: KeepReason, dropped: bool): i32 {
    let slots = this.keepSlots;
    if (slots === null) {
      slots = new StaticArray<i32>(2 * KeepReason.COUNT);
      for (let i = 0; i < slots.length; i++) unchecked((slots[i] = NO_COUNTER));
      this.keepSlots = slots;
    }
    const index = (dropped ? KeepReason.COUNT : 0) + <i32>reason;
    let slot = unchecked(slots[index]);
    if (slot == NO_COUNTER) {
      slot = this.counters.define(this.prefix + tagSegment(TAG_KEEP_REASON, keepReasonName(reason)) + (dropped ? SPANS_BUDGET_DROPPED_TOTAL : SPANS_KEPT_TOTAL));
      unchecked((slots[index] = slot));
    }
    return slot;
  }

  /** The request counter of one response code class, defined on first use. */
  requestsFor(codeClass: i32): i32 {
    let slot = this.requests[codeClass];
    if (slot == NO_COUNTER) {
      slot = this.counters.define(this.prefix + tagSegment(TAG_STATUS_CLASS, codeClassName(codeClass)) + REQUESTS_TOTAL);
      this.requests[codeClass] = slot;
    }
    return slot;
  }
}

/**
 * Distinct error types a (route, model) pair labels its requests with; later ones count as `_OTHER`.
 * Each is a series Envoy keeps for the proxy's life, so a server answering with many codes cannot
 * grow them without bound (docs/filter.md, Stat budget).
 */
export const MAX_ERROR_TYPES: i32 = 8;

/** At most this many pairs per VM have a recent quantile (each up to 6 bytes x maxSamples + 1.7 KiB). */
export const MAX_RECENT_PAIRS: i32 = 64;
let recentPairs: i32 = 0;

/**
 * One of a pair's stats with a length-class label (length-classes.ts): a histogram (or a counter
 * slot) per class, each defined on first use (a class no request fell in costs no series). A
 * configuration with other boundaries names other classes: the ones defined before stay with Envoy,
 * as every stat does.
 */
class ClassedStat {
  private prefix: string;
  private tag: string;
  private name: string;
  /** A counter's slots come from here; null: a histogram. */
  private counters: Counters | null;
  /** The classes `ids` was made for; ids by class index, NO_HISTOGRAM until defined. */
  private classesOf: LengthClasses | null = null;
  private ids: StaticArray<u32> = new StaticArray<u32>(0);
  /** The histogram without a class label, for a configuration that turns the classes off. */
  private plain: u32 = NO_HISTOGRAM;

  constructor(prefix: string, tag: string, name: string, counters: Counters | null = null) {
    this.prefix = prefix;
    this.tag = tag;
    this.name = name;
    this.counters = counters;
  }

  private define(name: string): u32 {
    const counters = this.counters;
    return counters !== null ? <u32>counters.define(name) : host.defineMetric(host.MetricKind.Histogram, name);
  }

  forTokens(classes: LengthClasses, tokens: i64): u32 {
    if (!classes.enabled) {
      if (this.plain == NO_HISTOGRAM) this.plain = this.define(this.prefix + this.name);
      return this.plain;
    }
    if (this.classesOf !== classes) {
      this.classesOf = classes;
      const ids = new StaticArray<u32>(classes.names.length);
      for (let i = 0; i < ids.length; i++) unchecked((ids[i] = NO_HISTOGRAM));
      this.ids = ids;
    }
    const c = classes.classOf(tokens);
    let id = unchecked(this.ids[c]);
    if (id == NO_HISTOGRAM) {
      id = this.define(this.prefix + tagSegment(this.tag, unchecked(classes.names[c])) + this.name);
      unchecked((this.ids[c] = id));
    }
    return id;
  }
}

/** Not defined yet (host.NO_METRIC is a refused definition, which is kept so it is not asked again). */
const NO_HISTOGRAM: u32 = u32.MAX_VALUE - 1;

/** The LLM stats of one (route, model) pair. */
export class LlmStats {
  route: string;
  model: string;
  /** Tail keep's live thresholds of this pair (ns; -1: none), as found in `liveOf`'s spans.keep.live. */
  liveDurationNs: i64 = -1;
  liveTtftNs: i64 = -1;
  private liveOf: SpanConfig | null = null;
  /** Tail keep's recent quantile of this pair (spans.keep.recent), made on first use. */
  private recent: RecentQuantile | null = null;
  private prefix: string;
  private counters: Counters;
  /** Request counters by outcome key (see requestsFor), each defined on first use, with its slot. */
  private outcomeKeys: Array<i32> = [];
  private outcomeSlots: Array<i32> = [];
  /** The distinct error types this pair has counted (at most MAX_ERROR_TYPES). */
  private errorTypes: Array<i32> = [];
  private ttftMs: ClassedStat;
  private decodeMs: ClassedStat;
  tpotUs: u32;
  private durationMs: ClassedStat;
  /** Calls by input class (tokentrace_llm_prompts_total): with the duration's output classes, the pipeline's token-usage histograms. */
  private prompts: ClassedStat;
  inputTokens: i32;
  outputTokens: i32;
  streamChunks: i32;
  usageMissing: i32;

  constructor(route: RouteStats, model: string, counters: Counters) {
    this.route = route.label;
    this.model = model;
    const prefix = route.prefix + tagSegment(TAG_MODEL, model);
    this.prefix = prefix;
    this.counters = counters;
    this.ttftMs = new ClassedStat(prefix, TAG_INPUT_LENGTH, LLM_TTFT_MS);
    this.decodeMs = new ClassedStat(prefix, TAG_OUTPUT_LENGTH, LLM_DECODE_MS);
    this.tpotUs = host.defineMetric(host.MetricKind.Histogram, prefix + LLM_TPOT_US);
    this.durationMs = new ClassedStat(prefix, TAG_OUTPUT_LENGTH, LLM_DURATION_MS);
    this.prompts = new ClassedStat(prefix, TAG_INPUT_LENGTH, LLM_PROMPTS_TOTAL, counters);
    this.inputTokens = counters.define(prefix + LLM_INPUT_TOKENS_TOTAL);
    this.outputTokens = counters.define(prefix + LLM_OUTPUT_TOKENS_TOTAL);
    this.streamChunks = counters.define(prefix + LLM_STREAM_CHUNKS_TOTAL);
    this.usageMissing = counters.define(prefix + LLM_USAGE_MISSING_TOTAL);
  }

  /** The TTFT histogram of a request with `inputTokens` (negative: not known). */
  ttftFor(classes: LengthClasses, inputTokens: i64): u32 {
    return this.ttftMs.forTokens(classes, inputTokens);
  }

  /** The decode histogram of a request with `outputTokens` (negative: not known). */
  decodeFor(classes: LengthClasses, outputTokens: i64): u32 {
    return this.decodeMs.forTokens(classes, outputTokens);
  }

  /** The duration histogram of a request with `outputTokens` (negative: not known). */
  durationFor(classes: LengthClasses, outputTokens: i64): u32 {
    return this.durationMs.forTokens(classes, outputTokens);
  }

  /** The counter slot of a call with `inputTokens` known and classes on, else NO_COUNTER: a call whose usage is not known is no observation of token usage. */
  promptsFor(classes: LengthClasses, inputTokens: i64): i32 {
    return inputTokens < 0 || !classes.enabled ? NO_COUNTER : <i32>this.prompts.forTokens(classes, inputTokens);
  }

  /**
   * Looks this pair's live thresholds up in `spans` (its own entry, else its route's entry without a
   * model), once per configuration: a request then pays one comparison.
   */
  findLive(spans: SpanConfig): void {
    if (this.liveOf === spans) return;
    this.liveOf = spans;
    let durationMs: i32 = -1;
    let ttftMs: i32 = -1;
    let exact = false;
    const live = spans.keepLive;
    for (let i = 0; i < live.length && !exact; i++) {
      const t = unchecked(live[i]);
      if (t.route != this.route) continue;
      exact = t.model == this.model;
      if (exact || t.model.length == 0) {
        durationMs = t.durationMs;
        ttftMs = t.ttftMs;
      }
    }
    this.liveDurationNs = durationMs < 0 ? -1 : <i64>durationMs * 1_000_000;
    this.liveTtftNs = ttftMs < 0 ? -1 : <i64>ttftMs * 1_000_000;
  }

  /**
   * Adds a request that ended at `endMs` to the pair's recent window and returns how many times the
   * quantile's lower bound it took when it is above the quantile (0: not slow, or no tracker: more
   * pairs than MAX_RECENT_PAIRS). Within the quantile's own bucket, RecentQuantile.mayBeAboveInBucket decides.
   */
  recentRank(config: KeepRecentConfig, durationNs: i64, endMs: u32): f64 {
    let recent = this.recent;
    if (recent === null || !recent.hasSettings(config.quantile, config.windowMs, config.maxSamples)) {
      // Changed settings start the window again; a new configuration with the same ones (every
      // push of live thresholds is one) keeps it.
      if (recent === null && recentPairs >= MAX_RECENT_PAIRS) return 0;
      if (recent === null) recentPairs++;
      recent = new RecentQuantile(config.quantile, config.windowMs, config.maxSamples);
      this.recent = recent;
    }
    const us: u64 = durationNs > 0 ? <u64>durationNs / 1000 : 0;
    const bucket = bucketOfUs(us);
    recent.observe(bucket, endMs);
    const at = recent.quantileBucket;
    if (bucket < at || (bucket == at && !recent.mayBeAboveInBucket(us))) return 0;
    const lowerNs = <f64>bucketLowerUs(at) * 1000;
    return lowerNs > 0 ? <f64>durationNs / lowerNs : <f64>durationNs;
  }

  /**
   * The request counter of one outcome: stream or not, finish reason, status class and error type
   * (metrics.ts errorTypeIndex; the label is left out when the call did not fail, as OpenTelemetry
   * leaves error.type unset). Past MAX_ERROR_TYPES distinct error types a new one counts as `_OTHER`.
   */
  requestsFor(stream: bool, finishReason: i32, codeClass: i32, errorType: i32): i32 {
    const types = this.errorTypes;
    if (errorType != ERROR_TYPE_NONE && !types.includes(errorType)) {
      if (types.length < MAX_ERROR_TYPES) types.push(errorType);
      else errorType = ERROR_TYPE_OTHER;
    }
    const key = (errorType << 8) | (codeClass << 4) | (finishReason << 1) | (stream ? 1 : 0);
    const keys = this.outcomeKeys;
    for (let i = 0; i < keys.length; i++) if (unchecked(keys[i]) == key) return unchecked(this.outcomeSlots[i]);
    const errorName = errorTypeName(errorType);
    const slot = this.counters.define(
      this.prefix + tagSegment(TAG_STREAM, stream ? "true" : "false") + tagSegment(TAG_FINISH_REASON, finishReasonName(finishReason)) +
        tagSegment(TAG_STATUS_CLASS, codeClassName(codeClass)) + (errorName.length > 0 ? tagSegment(TAG_ERROR_TYPE, errorName) : "") + LLM_REQUESTS_TOTAL,
    );
    keys.push(key);
    this.outcomeSlots.push(slot);
    return slot;
  }

}

export class Stats {
  private routes: Map<string, RouteStats> = new Map();
  private other: RouteStats | null = null;
  private errors: StaticArray<i32> = new StaticArray<i32>(ErrorReason.COUNT);
  maxRoutes: i32;
  maxModels: i32;
  /** Distinct destination pods per VM (a waypoint's stats.maxDestinationPods; 0: not labelled). */
  maxDestinationPods: i32 = 0;
  private destinationPods: Set<string> = new Set();
  private byDestination: Map<string, RouteStats> = new Map();
  private counters: Counters = new Counters();
  private models: Set<string> = new Set();
  private llm: Map<string, LlmStats> = new Map();
  spansExported: i32;
  spansDropped: i32;
  spanExportFailures: i32;
  policyUpdates: i32;
  policyPollFailures: i32;
  /** Content capture: defined on first use (VMs that never capture export neither). */
  private redactions: StaticArray<i32> | null = null;
  private contentCaptured: i32 = NO_COUNTER;

  constructor(maxRoutes: i32, maxModels: i32) {
    this.maxRoutes = maxRoutes;
    this.maxModels = maxModels;
    const counters = this.counters;
    this.spansExported = counters.define(SPANS_EXPORTED_TOTAL);
    this.spansDropped = counters.define(SPANS_DROPPED_TOTAL);
    this.spanExportFailures = counters.define(SPAN_EXPORT_FAILURES_TOTAL);
    this.policyUpdates = counters.define(POLICY_UPDATES_TOTAL);
    this.policyPollFailures = counters.define(POLICY_POLL_FAILURES_TOTAL);
    for (let i = 0; i < ErrorReason.COUNT; i++) {
      this.errors[i] = counters.define(tagSegment(TAG_ERROR, errorReasonName(<ErrorReason>i)) + FILTER_ERRORS_TOTAL);
    }
  }

  // Most requests on a VM hit the same route as the one before: compare raw bytes, skip the decode.
  private lastRouteName: ArrayBuffer = new ArrayBuffer(0);
  private lastRoute: RouteStats | null = null;

  /** The stats of a route given the `length` bytes of its xds.route_name at `raw` (absent, -1, or empty: "default"). */
  forRouteName(raw: usize, length: i32): RouteStats {
    const n = length < 0 ? 0 : length;
    const last = this.lastRoute;
    const lastName = this.lastRouteName;
    if (last !== null && equalBytes(raw, n, changetype<usize>(lastName), lastName.byteLength)) return last;
    const stats = this.forRoute(n == 0 ? ROUTE_DEFAULT : sanitizeLabelValue(String.UTF8.decodeUnsafe(raw, n)));
    // Overflowed routes count an error per request, so they are not cached.
    if (stats.label != ROUTE_OTHER) {
      const name = new ArrayBuffer(n);
      memory.copy(changetype<usize>(name), raw, n);
      this.lastRouteName = name;
      this.lastRoute = stats;
    }
    return stats;
  }

  /** The stats of a sanitised route label; past the cap, the shared "other" route. */
  forRoute(label: string): RouteStats {
    if (this.routes.has(label)) return this.routes.get(label);
    if (this.routes.size >= this.maxRoutes) {
      this.error(ErrorReason.RouteOverflow);
      let other = this.other;
      if (other === null) {
        other = new RouteStats(ROUTE_OTHER, this.counters);
        this.other = other;
      }
      return other;
    }
    const stats = new RouteStats(label, this.counters);
    this.routes.set(label, stats);
    return stats;
  }

  // The (route, model) of the previous LLM call: most calls on a VM repeat it.
  private lastLlmRoute: RouteStats | null = null;
  private lastLlmModel: string = "";
  private lastLlm: LlmStats | null = null;

  /** LLM stats of a route and a sanitised model label; models past the cap count as "other". */
  forLlm(route: RouteStats, model: string): LlmStats {
    const last = this.lastLlm;
    if (last !== null && this.lastLlmRoute === route && this.lastLlmModel == model) return last;
    const stats = this.lookUpLlm(route, model);
    // A model past the cap counts an overflow on every call, so it is not remembered.
    if (this.models.has(model)) {
      this.lastLlmRoute = route;
      this.lastLlmModel = model;
      this.lastLlm = stats;
    }
    return stats;
  }

  private lookUpLlm(route: RouteStats, model: string): LlmStats {
    if (!this.models.has(model)) {
      if (this.models.size >= this.maxModels) {
        this.error(ErrorReason.ModelOverflow);
        model = MODEL_OTHER;
      } else {
        this.models.add(model);
      }
    }
    const key = route.key + "\0" + model;
    if (this.llm.has(key)) return this.llm.get(key);
    const stats = new LlmStats(route, model, this.counters);
    this.llm.set(key, stats);
    return stats;
  }

  /**
   * The stats of `route` for one destination pod (a sanitised IP); pods past maxDestinationPods
   * share "other" and count an overflow on every request.
   */
  forDestination(route: RouteStats, podIp: string): RouteStats {
    if (!this.destinationPods.has(podIp)) {
      if (this.destinationPods.size >= this.maxDestinationPods) {
        this.error(ErrorReason.DestinationOverflow);
        podIp = POD_IP_OTHER;
      } else {
        this.destinationPods.add(podIp);
      }
    }
    const key = route.label + "\0" + podIp;
    if (this.byDestination.has(key)) return this.byDestination.get(key);
    const stats = new RouteStats(route.label, this.counters, podIp);
    this.byDestination.set(key, stats);
    return stats;
  }

  /** Adds to a counter (a slot from this VM's stats), now or at the next flush. */
  count(slot: i32, delta: i64): void {
    this.counters.add(slot, delta);
  }

  /** Sends held counter increments to the host. */
  flushCounters(): void {
    this.counters.flush();
  }

  setBatching(batching: bool): void {
    if (!batching) this.counters.flush();
    this.counters.batching = batching;
  }

  /** Counts a span that carries captured content and the values redacted from it (the first `names.length` of `counts`, named by `names`). */
  contentExported(counts: StaticArray<i32>, names: StaticArray<string>): void {
    if (this.contentCaptured == NO_COUNTER) this.contentCaptured = this.counters.define(CONTENT_CAPTURED_TOTAL);
    this.count(this.contentCaptured, 1);
    let slots = this.redactions;
    for (let i = 0; i < names.length; i++) {
      const n = unchecked(counts[i]);
      if (n == 0) continue;
      if (slots === null) {
        slots = new StaticArray<i32>(names.length);
        for (let k = 0; k < names.length; k++) unchecked((slots[k] = NO_COUNTER));
        this.redactions = slots;
      }
      let slot = unchecked(slots[i]);
      if (slot == NO_COUNTER) {
        slot = this.counters.define(tagSegment(TAG_REDACTED, unchecked(names[i])) + CONTENT_REDACTIONS_TOTAL);
        unchecked((slots[i] = slot));
      }
      this.count(slot, n);
    }
  }

  /** Content capture's error counters (tokentrace_filter_errors_total{error=<name>}), each defined on first use. */
  private contentErrors: Map<string, i32> | null = null;

  private contentKeyUpdates: i32 = NO_COUNTER;

  /** Counts a new pseudonym key version taken into use. */
  contentKeyUpdated(): void {
    if (this.contentKeyUpdates == NO_COUNTER) this.contentKeyUpdates = this.counters.define(CONTENT_KEY_UPDATES_TOTAL);
    this.count(this.contentKeyUpdates, 1);
  }

  /** Counts `n` content capture errors of one reason (a name from the catalogue, never text from a request). */
  contentError(name: string, n: i64 = 1): void {
    let errors = this.contentErrors;
    if (errors === null) {
      errors = new Map();
      this.contentErrors = errors;
    }
    let slot = NO_COUNTER;
    if (errors.has(name)) {
      slot = errors.get(name);
    } else {
      slot = this.counters.define(tagSegment(TAG_ERROR, name) + FILTER_ERRORS_TOTAL);
      errors.set(name, slot);
    }
    this.count(slot, n);
  }

  error(reason: ErrorReason): void {
    this.count(this.errors[reason], 1);
  }

  /** Reports host calls that failed since the last report. */
  flushHostFailures(): void {
    const n = host.takeFailedHostCalls();
    if (n > 0) this.count(this.errors[ErrorReason.HostCallFailed], n);
  }
}
