// Stats defined once per VM: ids are cached by route so that the request path costs one map
// lookup, and distinct route labels are capped (Envoy never frees a stat: REFERENCE section 2).
import { equalBuffers } from "./bytes";
import * as host from "./host";
import {
  FINISH_REASON_COUNT, finishReasonName, LLM_BODY_LIMIT_EXCEEDED_TOTAL, LLM_DURATION_MS, LLM_INPUT_TOKENS_TOTAL,
  LLM_OUTPUT_TOKENS_TOTAL, LLM_REQUESTS_TOTAL, LLM_STREAM_CHUNKS_TOTAL, LLM_TPOT_US, LLM_TTFT_MS, LLM_USAGE_MISSING_TOTAL,
  MODEL_OTHER, POLICY_POLL_FAILURES_TOTAL, POLICY_UPDATES_TOTAL, SPAN_EXPORT_FAILURES_TOTAL, SPANS_DROPPED_TOTAL, SPANS_EXPORTED_TOTAL, TAG_FINISH_REASON, TAG_MODEL, TAG_STREAM,
  CODE_CLASS_COUNT, codeClassName, ErrorReason, errorReasonName, FILTER_ERRORS_TOTAL, REQUEST_DURATION_MS,
  REQUESTS_TOTAL, ROUTE_DEFAULT, ROUTE_OTHER, sanitizeLabelValue, tagSegment, TAG_ERROR, TAG_STATUS_CLASS, TAG_ROUTE, TRACES_SAMPLED_TOTAL,
  TRACES_STARTED_TOTAL,
} from "./metrics";

/** The stat ids of one route label value. */
export class RouteStats {
  label: string;
  private prefix: string;
  private requests: StaticArray<u32> = new StaticArray<u32>(CODE_CLASS_COUNT);
  durationMs: u32;
  tracesStarted: u32;
  tracesSampled: u32;
  /** Defined on the route's first LLM request whose body was too large to read. */
  private bodyLimitExceeded: u32 = host.NO_METRIC;

  constructor(label: string) {
    this.label = label;
    this.prefix = tagSegment(TAG_ROUTE, label);
    for (let i = 0; i < CODE_CLASS_COUNT; i++) this.requests[i] = host.NO_METRIC;
    this.durationMs = host.defineMetric(host.MetricKind.Histogram, this.prefix + REQUEST_DURATION_MS);
    this.tracesStarted = host.defineMetric(host.MetricKind.Counter, this.prefix + TRACES_STARTED_TOTAL);
    this.tracesSampled = host.defineMetric(host.MetricKind.Counter, this.prefix + TRACES_SAMPLED_TOTAL);
  }

  bodyLimitExceededCounter(): u32 {
    if (this.bodyLimitExceeded == host.NO_METRIC) {
      this.bodyLimitExceeded = host.defineMetric(host.MetricKind.Counter, this.prefix + LLM_BODY_LIMIT_EXCEEDED_TOTAL);
    }
    return this.bodyLimitExceeded;
  }

  /** The request counter of one response code class, defined on first use. */
  requestsFor(codeClass: i32): u32 {
    let id = this.requests[codeClass];
    if (id == host.NO_METRIC) {
      id = host.defineMetric(
        host.MetricKind.Counter,
        this.prefix + tagSegment(TAG_STATUS_CLASS, codeClassName(codeClass)) + REQUESTS_TOTAL,
      );
      this.requests[codeClass] = id;
    }
    return id;
  }
}

/** The LLM stat ids of one (route, model) pair. */
export class LlmStats {
  private prefix: string;
  /** [stream 0/1][finish reason] request counters, defined on first use. */
  private requests: StaticArray<u32> = new StaticArray<u32>(2 * FINISH_REASON_COUNT);
  ttftMs: u32;
  tpotUs: u32;
  durationMs: u32;
  inputTokens: u32;
  outputTokens: u32;
  streamChunks: u32;
  usageMissing: u32;

  constructor(route: string, model: string) {
    const prefix = tagSegment(TAG_ROUTE, route) + tagSegment(TAG_MODEL, model);
    this.prefix = prefix;
    for (let i = 0; i < 2 * FINISH_REASON_COUNT; i++) this.requests[i] = host.NO_METRIC;
    this.ttftMs = host.defineMetric(host.MetricKind.Histogram, prefix + LLM_TTFT_MS);
    this.tpotUs = host.defineMetric(host.MetricKind.Histogram, prefix + LLM_TPOT_US);
    this.durationMs = host.defineMetric(host.MetricKind.Histogram, prefix + LLM_DURATION_MS);
    this.inputTokens = host.defineMetric(host.MetricKind.Counter, prefix + LLM_INPUT_TOKENS_TOTAL);
    this.outputTokens = host.defineMetric(host.MetricKind.Counter, prefix + LLM_OUTPUT_TOKENS_TOTAL);
    this.streamChunks = host.defineMetric(host.MetricKind.Counter, prefix + LLM_STREAM_CHUNKS_TOTAL);
    this.usageMissing = host.defineMetric(host.MetricKind.Counter, prefix + LLM_USAGE_MISSING_TOTAL);
  }

  requestsFor(stream: bool, finishReason: i32): u32 {
    const index = (stream ? FINISH_REASON_COUNT : 0) + finishReason;
    let id = this.requests[index];
    if (id == host.NO_METRIC) {
      id = host.defineMetric(
        host.MetricKind.Counter,
        this.prefix + tagSegment(TAG_STREAM, stream ? "true" : "false") + tagSegment(TAG_FINISH_REASON, finishReasonName(finishReason)) + LLM_REQUESTS_TOTAL,
      );
      this.requests[index] = id;
    }
    return id;
  }
}

/**
 * Counter increments held in the VM and sent to the host in one call per counter on a tick: a
 * request then costs no counter call at all (histograms are still recorded as they happen).
 */
class CounterBatch {
  private slots: Map<u32, i32> = new Map();
  private ids: Array<u32> = [];
  private deltas: Array<i64> = [];

  add(id: u32, delta: i64): void {
    let slot: i32;
    if (this.slots.has(id)) {
      slot = this.slots.get(id);
    } else {
      slot = this.ids.length;
      this.slots.set(id, slot);
      this.ids.push(id);
      this.deltas.push(0);
    }
    unchecked((this.deltas[slot] += delta));
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

export class Stats {
  private routes: Map<string, RouteStats> = new Map();
  private other: RouteStats | null = null;
  private errors: StaticArray<u32> = new StaticArray<u32>(ErrorReason.COUNT);
  maxRoutes: i32;
  maxModels: i32;
  /** Counters go through the batch (flushed on tick) when true, straight to the host when false. */
  private batching: bool = false;
  private batch: CounterBatch = new CounterBatch();
  private models: Set<string> = new Set();
  private llm: Map<string, LlmStats> = new Map();
  spansExported: u32;
  spansDropped: u32;
  spanExportFailures: u32;
  policyUpdates: u32;
  policyPollFailures: u32;

  constructor(maxRoutes: i32, maxModels: i32) {
    this.maxRoutes = maxRoutes;
    this.maxModels = maxModels;
    this.spansExported = host.defineMetric(host.MetricKind.Counter, SPANS_EXPORTED_TOTAL);
    this.spansDropped = host.defineMetric(host.MetricKind.Counter, SPANS_DROPPED_TOTAL);
    this.spanExportFailures = host.defineMetric(host.MetricKind.Counter, SPAN_EXPORT_FAILURES_TOTAL);
    this.policyUpdates = host.defineMetric(host.MetricKind.Counter, POLICY_UPDATES_TOTAL);
    this.policyPollFailures = host.defineMetric(host.MetricKind.Counter, POLICY_POLL_FAILURES_TOTAL);
    for (let i = 0; i < ErrorReason.COUNT; i++) {
      this.errors[i] = host.defineMetric(
        host.MetricKind.Counter,
        tagSegment(TAG_ERROR, errorReasonName(<ErrorReason>i)) + FILTER_ERRORS_TOTAL,
      );
    }
  }

  // Most requests on a VM hit the same route as the one before: compare raw bytes, skip the decode.
  private lastRouteName: ArrayBuffer = new ArrayBuffer(0);
  private lastRoute: RouteStats | null = null;

  /** The stats of a route given its raw xds.route_name (null or empty: "default"). */
  forRouteName(raw: ArrayBuffer | null): RouteStats {
    const name = raw === null ? new ArrayBuffer(0) : raw;
    const last = this.lastRoute;
    if (last !== null && equalBuffers(name, this.lastRouteName)) return last;
    const stats = this.forRoute(name.byteLength == 0 ? ROUTE_DEFAULT : sanitizeLabelValue(String.UTF8.decode(name)));
    // Overflowed routes count an error per request, so they are not cached.
    if (stats.label != ROUTE_OTHER) {
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
        other = new RouteStats(ROUTE_OTHER);
        this.other = other;
      }
      return other;
    }
    const stats = new RouteStats(label);
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
    const key = route.label + "\0" + model;
    if (this.llm.has(key)) return this.llm.get(key);
    const stats = new LlmStats(route.label, model);
    this.llm.set(key, stats);
    return stats;
  }

  /** Adds to a counter, now or at the next flush. */
  count(id: u32, delta: i64): void {
    if (id == host.NO_METRIC || delta <= 0) return;
    if (this.batching) this.batch.add(id, delta);
    else host.incrementCounter(id, delta);
  }

  /** Sends held counter increments to the host. */
  flushCounters(): void {
    this.batch.flush();
  }

  setBatching(batching: bool): void {
    if (!batching) this.batch.flush();
    this.batching = batching;
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
