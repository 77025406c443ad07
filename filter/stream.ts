// One HTTP stream. Every callback continues: bad input is counted and replaced, host failures are
// counted, and nothing here can throw on the request path.
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
const NS_PER_MS: u64 = 1_000_000;

// Random bytes for new ids: 16 trace-id + 8 span-id + 16 token trace id.
const RANDOM_BYTES: usize = memory.data(40);

export class TokentraceStream extends Context {
  private stats: Stats;
  private active: ActiveConfig;
  private route: RouteStats | null = null;
  private tokenTraceId: string = "";
  private tokenTraceIdHeader: string = "";
  private startNs: u64 = 0;

  constructor(context_id: u32, root: RootContext, stats: Stats, active: ActiveConfig) {
    super(context_id, root);
    this.stats = stats;
    this.active = active;
  }

  onRequestHeaders(headers: u32, end_of_stream: bool): FilterHeadersStatusValues {
    // The configuration in force when the request starts serves the whole request.
    const config = this.active.config;
    this.startNs = host.nowNs();
    const routeName = host.getStringProperty(ROUTE_NAME_PROPERTY);
    const route = this.stats.forRoute(routeName.length == 0 ? ROUTE_DEFAULT : sanitizeLabelValue(routeName));
    this.route = route;

    const sampled = this.propagateTraceContext(config, routeName, route);
    if (sampled) host.incrementCounter(route.tracesSampled, 1);
    this.propagateTokenTraceId(config);
    this.stats.flushHostFailures();
    return FilterHeadersStatusValues.Continue;
  }

  /** Keeps a valid incoming trace context or starts a new one; returns whether the request leaves sampled. */
  private propagateTraceContext(config: Config, routeName: string, route: RouteStats): bool {
    const forced = this.isForced(config);
    const incoming = host.getHeader(host.HeaderMap.Request, TRACEPARENT);
    if (incoming !== null) {
      const parent = parseTraceParent(incoming);
      if (parent !== null) return this.continueTrace(parent, forced);
      this.stats.error(ErrorReason.InvalidTraceParent);
    }
    return this.startTrace(config, routeName, route, forced);
  }

  private continueTrace(parent: TraceParent, forced: bool): bool {
    let rewrite = parent.futureVersion;
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

  private startTrace(config: Config, routeName: string, route: RouteStats, forced: bool): bool {
    if (!host.fillRandom(RANDOM_BYTES, 24)) {
      // Without randomness there is no trace-id worth starting; traffic goes on untouched.
      this.stats.error(ErrorReason.RandomUnavailable);
      return false;
    }
    ensureNonZero(RANDOM_BYTES, 16);
    ensureNonZero(RANDOM_BYTES + 16, 8);
    const trace = new TraceParent();
    trace.traceId = hexOf(RANDOM_BYTES, 16);
    trace.parentId = hexOf(RANDOM_BYTES + 16, 8);
    let rate: f64 = 1;
    if (!forced) {
      const path = host.getHeader(host.HeaderMap.Request, ":path");
      const authority = config.routes.length > 0 ? host.getHeader(host.HeaderMap.Request, ":authority") : null;
      rate = rateFor(config, routeName, path === null ? "" : path, authority === null ? "" : authority);
    }
    const sampled = forced || isSampled(trace.traceId, rate);
    trace.flags = FLAG_RANDOM | (sampled ? FLAG_SAMPLED : 0);
    host.setHeader(host.HeaderMap.Request, TRACEPARENT, trace.format());
    // A tracestate that arrived with no valid traceparent belongs to no trace we know.
    host.removeHeader(host.HeaderMap.Request, TRACESTATE);
    if (sampled) {
      host.setHeader(host.HeaderMap.Request, TRACESTATE, "ot=th:" + thresholdTraceStateValue(thresholdFor(rate)));
    }
    host.incrementCounter(route.tracesStarted, 1);
    return sampled;
  }

  private isForced(config: Config): bool {
    const rules = config.force;
    for (let i = 0; i < rules.length; i++) {
      if (forceRuleMatches(rules[i], host.getHeader(host.HeaderMap.Request, rules[i].header))) return true;
    }
    return false;
  }

  private propagateTokenTraceId(config: Config): void {
    const name = config.tokenTraceIdHeader;
    this.tokenTraceIdHeader = name;
    const incoming = host.getHeader(host.HeaderMap.Request, name);
    if (incoming !== null && isValidTokenTraceId(incoming)) {
      this.tokenTraceId = incoming;
      return;
    }
    if (incoming !== null) this.stats.error(ErrorReason.InvalidTokenTraceId);
    if (!host.fillRandom(RANDOM_BYTES + 24, 16)) {
      this.stats.error(ErrorReason.RandomUnavailable);
      if (incoming !== null) host.removeHeader(host.HeaderMap.Request, name);
      return;
    }
    this.tokenTraceId = uuidV4(RANDOM_BYTES + 24);
    host.setHeader(host.HeaderMap.Request, name, this.tokenTraceId);
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
    if (route === null) return; // the request never reached us (no request headers)
    const code = host.getIntProperty(RESPONSE_CODE_PROPERTY, 0);
    host.incrementCounter(route.requestsFor(codeClassIndex(code)), 1);
    let durationNs = host.getIntProperty(REQUEST_DURATION_PROPERTY, -1);
    if (durationNs < 0) {
      const now = host.nowNs();
      durationNs = now > this.startNs ? <i64>(now - this.startNs) : 0;
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
