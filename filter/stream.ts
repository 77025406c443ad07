// One HTTP stream. Every callback continues: bad input is counted and replaced, host failures are
// counted, and nothing here can throw on the request path. Host calls are kept few because each
// one crosses the VM boundary on every request.
import { Context, FilterHeadersStatusValues, RootContext } from "@solo-io/proxy-runtime/assembly";
import { ActiveConfig, Config } from "./config";
import * as host from "./host";
import { codeClassIndex, ErrorReason, ROUTE_DEFAULT, sanitizeLabelValue } from "./metrics";
import { forceRuleMatches, isSampled, rateFor, thresholdFor, thresholdTraceStateValue } from "./sampler";
import { RouteStats, Stats } from "./stats";
import { isValidTokenTraceId, uuidV4 } from "./token-trace-id";
import { FLAG_RANDOM, FLAG_SAMPLED, hexOf, isValidTraceState, parseTraceParent, TraceParent } from "./traceparent";

const TRACEPARENT = "traceparent";
const TRACESTATE = "tracestate";
const ROUTE_NAME_PROPERTY = "xds\0route_name";
const RESPONSE_CODE_PROPERTY = "response\0code";
const REQUEST_DURATION_PROPERTY = "request\0duration";
const REQUEST_TIME_PROPERTY = "request\0time";
const NS_PER_MS: u64 = 1_000_000;

// Random bytes for new ids, drawn in one host call: 16 trace-id, 8 span-id, 16 token trace id.
const RANDOM_BYTES: usize = memory.data(40);
const TRACE_ID_BYTES: usize = RANDOM_BYTES;
const SPAN_ID_BYTES: usize = RANDOM_BYTES + 16;
const TOKEN_ID_BYTES: usize = RANDOM_BYTES + 24;

export class TokentraceStream extends Context {
  private stats: Stats;
  private active: ActiveConfig;
  private route: RouteStats | null = null;
  private tokenTraceId: string = "";
  private tokenTraceIdHeader: string = "";

  constructor(context_id: u32, root: RootContext, stats: Stats, active: ActiveConfig) {
    super(context_id, root);
    this.stats = stats;
    this.active = active;
  }

  onRequestHeaders(headers: u32, end_of_stream: bool): FilterHeadersStatusValues {
    // The configuration in force when the request starts serves the whole request.
    const config = this.active.config;
    const routeName = host.getStringProperty(ROUTE_NAME_PROPERTY);
    const route = this.stats.forRoute(routeName.length == 0 ? ROUTE_DEFAULT : sanitizeLabelValue(routeName));
    this.route = route;

    this.tokenTraceIdHeader = config.tokenTraceIdHeader;
    const incomingTokenId = host.getHeader(host.HeaderMap.Request, config.tokenTraceIdHeader);
    const keepTokenId = incomingTokenId !== null && isValidTokenTraceId(incomingTokenId);
    if (incomingTokenId !== null && !keepTokenId) this.stats.error(ErrorReason.InvalidTokenTraceId);

    const incomingParent = host.getHeader(host.HeaderMap.Request, TRACEPARENT);
    const parent: TraceParent | null = incomingParent === null ? null : parseTraceParent(incomingParent);
    if (incomingParent !== null && parent === null) this.stats.error(ErrorReason.InvalidTraceParent);

    // One draw covers the new trace ids and the new token trace id, whichever are needed.
    const randomFrom = parent === null ? TRACE_ID_BYTES : TOKEN_ID_BYTES;
    const randomTo = keepTokenId ? TOKEN_ID_BYTES : TOKEN_ID_BYTES + 16;
    const haveRandom = randomTo <= randomFrom || host.fillRandom(randomFrom, <i32>(randomTo - randomFrom));
    if (!haveRandom) this.stats.error(ErrorReason.RandomUnavailable);

    const forced = this.isForced(config);
    let sampled = false;
    if (parent !== null) {
      sampled = this.continueTrace(parent, forced);
    } else if (haveRandom) {
      sampled = this.startTrace(config, routeName, route, forced);
    }
    // Without randomness no trace is started and traffic goes on as it came.
    if (sampled) host.incrementCounter(route.tracesSampled, 1);

    if (keepTokenId) {
      this.tokenTraceId = incomingTokenId!;
    } else if (haveRandom) {
      this.tokenTraceId = uuidV4(TOKEN_ID_BYTES);
      host.setHeader(host.HeaderMap.Request, config.tokenTraceIdHeader, this.tokenTraceId);
    } else if (incomingTokenId !== null) {
      host.removeHeader(host.HeaderMap.Request, config.tokenTraceIdHeader);
    }
    this.stats.flushHostFailures();
    return FilterHeadersStatusValues.Continue;
  }

  /** Keeps a valid incoming trace context; returns whether the request leaves sampled. */
  private continueTrace(parent: TraceParent, forced: bool): bool {
    let rewrite = parent.needsRewrite;
    if (forced && !parent.sampled()) {
      parent.flags |= FLAG_SAMPLED;
      rewrite = true;
    }
    if (rewrite) host.setHeader(host.HeaderMap.Request, TRACEPARENT, parent.format());
    const state = host.getHeader(host.HeaderMap.Request, TRACESTATE);
    if (state !== null && !isValidTraceState(state)) {
      this.stats.error(ErrorReason.InvalidTraceState);
      host.removeHeader(host.HeaderMap.Request, TRACESTATE);
    }
    return parent.sampled();
  }

  /** Starts a new trace from the random bytes already drawn; returns whether it is sampled. */
  private startTrace(config: Config, routeName: string, route: RouteStats, forced: bool): bool {
    ensureNonZero(TRACE_ID_BYTES, 16);
    ensureNonZero(SPAN_ID_BYTES, 8);
    const trace = new TraceParent();
    trace.traceId = hexOf(TRACE_ID_BYTES, 16);
    trace.parentId = hexOf(SPAN_ID_BYTES, 8);
    const rate = forced ? 1.0 : this.rateFor(config, routeName);
    const sampled = forced || isSampled(trace.traceId, rate);
    trace.flags = FLAG_RANDOM | (sampled ? FLAG_SAMPLED : 0);
    host.setHeader(host.HeaderMap.Request, TRACEPARENT, trace.format());
    // A tracestate that came without a valid traceparent belongs to no trace we know: a sampled
    // trace replaces it with our threshold, an unsampled one drops it.
    if (sampled) {
      host.setHeader(host.HeaderMap.Request, TRACESTATE, "ot=th:" + thresholdTraceStateValue(thresholdFor(rate)));
    } else {
      host.removeHeader(host.HeaderMap.Request, TRACESTATE);
    }
    host.incrementCounter(route.tracesStarted, 1);
    return sampled;
  }

  /** The sampling rate for this request; reads :path and :authority only when a rule needs them. */
  private rateFor(config: Config, routeName: string): f64 {
    let path: string | null = null;
    let authority: string | null = null;
    if (config.rulesUsePath) path = host.getHeader(host.HeaderMap.Request, ":path");
    if (config.rulesUseHost) authority = host.getHeader(host.HeaderMap.Request, ":authority");
    return rateFor(config, routeName, path === null ? "" : path, authority === null ? "" : authority);
  }

  private isForced(config: Config): bool {
    const rules = config.force;
    for (let i = 0; i < rules.length; i++) {
      if (forceRuleMatches(rules[i], host.getHeader(host.HeaderMap.Request, rules[i].header))) return true;
    }
    return false;
  }

  onResponseHeaders(headers: u32, end_of_stream: bool): FilterHeadersStatusValues {
    if (this.tokenTraceId.length > 0) {
      host.setHeader(host.HeaderMap.Response, this.tokenTraceIdHeader, this.tokenTraceId);
      this.stats.flushHostFailures();
    }
    return FilterHeadersStatusValues.Continue;
  }

  // Final per-request stats belong here: Envoy calls proxy_on_log once the stream is complete,
  // including streams reset before a response.
  onLog(): void {
    const route = this.route;
    if (route === null) return; // the stream ended before its request headers reached us
    const code = host.getIntProperty(RESPONSE_CODE_PROPERTY, 0);
    host.incrementCounter(route.requestsFor(codeClassIndex(code)), 1);
    let durationNs = host.getIntProperty(REQUEST_DURATION_PROPERTY, -1);
    if (durationNs < 0) {
      const startNs = host.getIntProperty(REQUEST_TIME_PROPERTY, 0);
      const nowNs = <i64>host.nowNs();
      durationNs = startNs > 0 && nowNs > startNs ? nowNs - startNs : 0;
    }
    host.recordHistogram(route.durationMs, <u64>durationNs / NS_PER_MS);
    this.stats.flushHostFailures();
  }
}

/** W3C forbids all-zero ids; a random draw of all zeros (p = 2^-64 or less) becomes ...01. */
function ensureNonZero(ptr: usize, length: i32): void {
  for (let i = 0; i < length; i++) if (load<u8>(ptr + i) != 0) return;
  store<u8>(ptr + length - 1, 1);
}
