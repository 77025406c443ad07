// One HTTP stream. Every callback continues: bad input is counted and replaced, host failures are
// counted, and nothing here can throw on the request path. Host calls are few and header values
// are handled as bytes, because this code runs on every request.
import { Context, FilterDataStatusValues, FilterHeadersStatusValues, FilterTrailersStatusValues, RootContext } from "@solo-io/proxy-runtime/assembly";
import { equalBytes, isAllZero, writeHex } from "./bytes";
import { ActiveConfig, Config, SpanConfig } from "./config/config";
import * as host from "./host/host";
import { LlmExchange } from "./llm/llm";
import { matchedPrefixLength, protocolOf } from "./protocols/llm-paths";
import { kserveModelOf } from "./protocols/kserve";
import { Protocol } from "./protocols";
import { contentEngine } from "./capture";
import { codeClassIndex, CONTENT_UNAVAILABLE, ERROR_TYPE_NONE, ErrorReason, KeepReason, keepReasonName, sanitizeLabelValue } from "./telemetry/metrics";
import { forceRuleMatches, hostLength, isSampled, rateFor, RequestMatch, thresholdFor, writeThreshold } from "./trace/sampler";
import { encodeSpan, Operation, operationOf, SPAN_ID_OFFSET, SPAN_IDS_BYTES, SPAN_PARENT_OFFSET, SpanExporter, SpanRecord } from "./telemetry/spans";
import { RouteStats, Stats } from "./telemetry/stats";
import { TailKeep } from "./telemetry/tail-keep";
import { noteNowNs, recentNowMs } from "./telemetry/recent-quantile";
import { isValidTokenTraceId, markUuidV4, MAX_TOKEN_TRACE_ID_LENGTH, UUID_LENGTH, writeUuid } from "./trace/token-trace-id";
import { TraceHeaders } from "./trace/trace-headers";
import {
  FLAG_RANDOM, FLAG_SAMPLED, PARENT_ID_OFFSET, parseTraceParent, TRACE_ID_OFFSET, TRACEPARENT_INVALID,
  TRACEPARENT_LENGTH, TRACEPARENT_REWRITE, writeFlags, writeTraceParent,
} from "./trace/traceparent";
import { AUTHORITY, CONTENT_LENGTH, PATH, TRACEPARENT, TRACESTATE } from "./host/names";

const ROUTE_NAME_PROPERTY = host.utf8("xds\0route_name");
const RESPONSE_CODE_PROPERTY = host.utf8("response\0code");
const REQUEST_DURATION_PROPERTY = host.utf8("request\0duration");
const REQUEST_TIME_PROPERTY = host.utf8("request\0time");
const REQUEST_HOST_PROPERTY = host.utf8("request\0host");
const REQUEST_SCHEME_PROPERTY = host.utf8("request\0scheme");
const UPSTREAM_ADDRESS_PROPERTY = host.utf8("upstream\0address");
const NS_PER_MS: u64 = 1_000_000;
/** Tail keep: an error outranks any slow request in the budget's order. */
const ERROR_PRIORITY: f64 = 1e12;

// Random bytes for new ids, drawn together (host.fillRandom, pooled): 16 trace-id, 8 span-id, 16 token trace id, and
// 8 for a new parent-id when it continues a trace (its own span's id, or one for a sampled flag it sets).
const RANDOM_BYTES: usize = memory.data(48);
const TRACE_ID_BYTES: usize = RANDOM_BYTES;
const SPAN_ID_BYTES: usize = RANDOM_BYTES + 16;
const TOKEN_ID_BYTES: usize = RANDOM_BYTES + 24;
const OWN_SPAN_BYTES: usize = RANDOM_BYTES + 40;
const RANDOM_END: usize = RANDOM_BYTES + 48;
// The outgoing traceparent, tracestate and new token trace id are written here; the host copies them on set.
const TRACEPARENT_OUT: usize = memory.data(TRACEPARENT_LENGTH);
const TRACESTATE_OUT: usize = memory.data(32);
const TOKEN_ID_OUT: usize = memory.data(UUID_LENGTH);
const TOKEN_ID_RAW: usize = memory.data(16);
// Values read in place (host.HostValue), one slot each, sized for ordinary values; a longer one
// arrives in a managed buffer. They hold for one callback only.
const ROUTE_NAME = new host.HostValue(memory.data(128), 128);
const PATH_VALUE = new host.HostValue(memory.data(512), 512);
const TOKEN_ID_IN = new host.HostValue(memory.data(MAX_TOKEN_TRACE_ID_LENGTH), MAX_TOKEN_TRACE_ID_LENGTH);
const TRACEPARENT_IN = new host.HostValue(memory.data(128), 128);
const TRACESTATE_IN = new host.HostValue(memory.data(512), 512);
const AUTHORITY_VALUE = new host.HostValue(memory.data(256), 256);
const FORCE_VALUE = new host.HostValue(memory.data(256), 256);
const SERVER_VALUE = new host.HostValue(memory.data(256), 256);
const SCHEME_VALUE = new host.HostValue(memory.data(16), 16);
const UPSTREAM_ADDRESS = new host.HostValue(memory.data(128), 128);
/** The whole request header map, read when a trace header came (most fit; a larger map arrives managed). */
const REQUEST_PAIRS = new host.HostValue(memory.data(4096), 4096);
const TRACE_HEADERS = new TraceHeaders();
/** Reused for every rate lookup (one stream runs at a time on a VM). */
const REQUEST_MATCH = new RequestMatch();
const NO_BYTES = new ArrayBuffer(0);
const OT_THRESHOLD_PREFIX = "ot=th:";

export class TokentraceStream extends Context {
  private stats: Stats;
  private active: ActiveConfig;
  private route: RouteStats | null = null;
  /**
   * The id returned downstream: one that came in, or the 16 bytes of a new UUID (written out when
   * sent, so a request allocates nothing for it). The header is the config's at request start.
   */
  private keptTokenId: ArrayBuffer | null = null;
  private newTokenIdHigh: u64 = 0;
  private newTokenIdLow: u64 = 0;
  private hasNewTokenId: bool = false;
  private tokenTraceIdHeader: ArrayBuffer = NO_BYTES;
  /** Set for LLM calls only; other traffic never has its bodies read. */
  private llm: LlmExchange | null = null;
  private exporter: SpanExporter;
  /**
   * LLM calls with span export on: the span configuration at request start and the ids the span
   * would carry, as hex (trace-id 32, span id 16, parent-id 16 bytes; a zero span id is drawn
   * when needed, an empty parent marks a root). Kept as bytes in the context itself (ids0..ids7,
   * no allocation per request): a span is written only when it goes.
   */
  private spanConfig: SpanConfig | null = null;
  private hasSpanIds: bool = false;
  private ids0: u64 = 0;
  private ids1: u64 = 0;
  private ids2: u64 = 0;
  private ids3: u64 = 0;
  private ids4: u64 = 0;
  private ids5: u64 = 0;
  private ids6: u64 = 0;
  private ids7: u64 = 0;
  private spanHasParent: bool = false;
  /** The request left sampled with this proxy's span in it: the span is exported at proxy_on_log. */
  private spanSampled: bool = false;
  /** A force rule sampled it. */
  private forced: bool = false;
  private tailKeep: TailKeep;
  private operation: Operation = Operation.Chat;
  /** Tail keep: this request's slow threshold (ns; -1: none). */
  private keepSlowerThanNs: i64 = -1;
  /** The response ended with end of stream, not cut by a reset. */
  private responseComplete: bool = false;

  constructor(context_id: u32, root: RootContext, stats: Stats, active: ActiveConfig, exporter: SpanExporter, tailKeep: TailKeep) {
    super(context_id, root);
    this.stats = stats;
    this.active = active;
    this.exporter = exporter;
    this.tailKeep = tailKeep;
  }

  onRequestHeaders(headers: u32, end_of_stream: bool): FilterHeadersStatusValues {
    // The configuration in force when the request starts serves the whole request.
    const config = this.active.config;
    host.readProperty(ROUTE_NAME_PROPERTY, ROUTE_NAME);
    const route = this.stats.forRouteName(ROUTE_NAME.ptr, ROUTE_NAME.length);
    this.route = route;
    const llmConfig = config.llm;
    PATH_VALUE.clear();
    if (llmConfig.enabled || config.rulesUsePath) host.readHeader(host.HeaderMap.Request, PATH, PATH_VALUE);
    const protocol = llmConfig.enabled && PATH_VALUE.present ? protocolOf(PATH_VALUE.ptr, PATH_VALUE.length, llmConfig.paths) : -1;
    if (protocol >= 0) {
      // KServe names the model in the path: /v2/models/{model}/generate.
      const pathModel = protocol == Protocol.KServe && matchedPrefixLength > 0 ? kserveModelOf(PATH_VALUE.ptr, PATH_VALUE.length, matchedPrefixLength) : "";
      this.llm = new LlmExchange(llmConfig, this.stats, route, <Protocol>protocol, pathModel);
      // A body held to add the include_usage member may grow by it: its length is Envoy's to recompute.
      if (this.llm!.holdsRequestBody()) host.removeHeader(host.HeaderMap.Request, CONTENT_LENGTH);
    }

    this.tokenTraceIdHeader = config.tokenTraceIdHeader;
    // Envoy's get_header_map_value answers with the first value only (Context::getHeaderMapValue,
    // entry[0]); when a trace header came at all, the whole map is read once to see every value.
    const hasParent = host.readHeader(host.HeaderMap.Request, TRACEPARENT, TRACEPARENT_IN);
    const hasTokenId = host.readHeader(host.HeaderMap.Request, config.tokenTraceIdHeader, TOKEN_ID_IN);
    const all = TRACE_HEADERS;
    let allRead = false;
    if ((hasParent || hasTokenId) && host.readHeaderPairs(host.HeaderMap.Request, REQUEST_PAIRS)) {
      allRead = all.read(REQUEST_PAIRS.ptr, REQUEST_PAIRS.length, config.tokenTraceIdHeader);
      if (!allRead) this.stats.error(ErrorReason.HostCallFailed); // an answer that is no pairs buffer: the first values serve
    }
    const parentCount = allRead ? all.traceParentCount : hasParent ? 1 : 0;
    const tokenIdCount = allRead ? all.tokenIdCount : hasTokenId ? 1 : 0;

    // One value, well-formed; a repeated header is ambiguous and replaced like a malformed one.
    const keepTokenId = tokenIdCount == 1 && isValidTokenTraceId(TOKEN_ID_IN.ptr, TOKEN_ID_IN.length);
    if (tokenIdCount > 0 && !keepTokenId) this.stats.error(ErrorReason.InvalidTokenTraceId);
    // W3C: two traceparent values are invalid, and an invalid traceparent restarts the trace.
    const parsed = parentCount == 1 ? parseTraceParent(TRACEPARENT_IN.ptr, TRACEPARENT_IN.length, TRACEPARENT_OUT) : TRACEPARENT_INVALID;
    if (parentCount > 0 && parsed == TRACEPARENT_INVALID) this.stats.error(ErrorReason.InvalidTraceParent);
    const continuing = parsed != TRACEPARENT_INVALID;

    const forced = this.isForced(config);
    this.forced = forced;
    // With span export on, this proxy is a hop for sampled LLM requests: it sends its own span id
    // upstream as the parent-id, so the model server's spans nest under it. A force rule that
    // turns the sampled flag on needs a new parent-id too (W3C: "The parent-id field MUST be set to
    // a new value with the sampled flag update"), and then that span is this proxy's.
    const exportsSpan = config.spans !== null && this.llm !== null;
    const setsSampled = continuing && forced && (parsed & FLAG_SAMPLED) == 0;
    const newParent = continuing && (setsSampled || (exportsSpan && (parsed & FLAG_SAMPLED) != 0));

    // One draw covers whichever new ids are needed (see RANDOM_BYTES).
    const randomFrom = !continuing ? TRACE_ID_BYTES : keepTokenId ? OWN_SPAN_BYTES : TOKEN_ID_BYTES;
    const randomTo = newParent ? RANDOM_END : keepTokenId ? TOKEN_ID_BYTES : OWN_SPAN_BYTES;
    const haveRandom = randomTo <= randomFrom || host.fillRandom(randomFrom, <i32>(randomTo - randomFrom));
    if (!haveRandom) this.stats.error(ErrorReason.RandomUnavailable);

    // The span's ids are kept only for a request that may export one: sampled, or tail keep on.
    const spans = config.spans;
    let keeps = false;
    if (exportsSpan && spans !== null) keeps = spans.keeps;
    let ids: usize = 0;
    if (continuing && (keeps || (exportsSpan && ((parsed & FLAG_SAMPLED) != 0 || setsSampled)))) ids = this.spanIdsFor(spans!);
    let sampled = false;
    if (continuing) {
      // Without randomness there is no new parent-id, so the sampled flag stays as it came.
      sampled = this.continueTrace(parsed, setsSampled && haveRandom, newParent && haveRandom, ids, allRead);
    } else if (haveRandom) {
      sampled = this.startTrace(config, route, forced);
      // A trace this proxy starts: its span is the root, with the id sent upstream as the parent-id.
      if (exportsSpan && (sampled || keeps)) {
        ids = this.spanIdsFor(spans!);
        memory.copy(ids, TRACEPARENT_OUT + TRACE_ID_OFFSET, 32);
        memory.copy(ids + SPAN_ID_OFFSET, TRACEPARENT_OUT + PARENT_ID_OFFSET, 16);
      }
    }
    this.spanSampled = sampled && ids != 0;
    // Content capture: sampled LLM calls only (a tail-kept span has none), when the policy and route ask for it.
    const content = spans !== null ? spans.content : null;
    if (this.spanSampled && content !== null && content.enabledFor(ROUTE_NAME.ptr, ROUTE_NAME.length)) {
      const engine = contentEngine();
      if (engine !== null) this.llm!.capture = engine.startCapture(content);
      else this.stats.contentError(CONTENT_UNAVAILABLE); // the default module: no capture code
    }
    // Without randomness no trace is started and traffic goes on as it came.
    if (sampled) this.stats.count(route.tracesSampled, 1);

    // Replacing (Envoy's setCopy: every value of the name goes, one stays) leaves exactly one value upstream.
    if (keepTokenId) {
      this.keptTokenId = TOKEN_ID_IN.copy();
    } else if (haveRandom) {
      markUuidV4(TOKEN_ID_BYTES);
      this.newTokenIdHigh = load<u64>(TOKEN_ID_BYTES);
      this.newTokenIdLow = load<u64>(TOKEN_ID_BYTES + 8);
      this.hasNewTokenId = true;
      host.setHeader(host.HeaderMap.Request, config.tokenTraceIdHeader, this.writeNewTokenId(), UUID_LENGTH);
    } else if (tokenIdCount > 0) {
      host.removeHeader(host.HeaderMap.Request, config.tokenTraceIdHeader);
    }
    this.stats.flushHostFailures();
    host.collectIfDue(); // safe point: only `this` and `llm` are live, both reachable from the context map
    return FilterHeadersStatusValues.Continue;
  }

  /** Room for this request's span ids, with the span settings and what the span needs from the request headers. */
  private spanIdsFor(spans: SpanConfig): usize {
    this.hasSpanIds = true;
    const ids = this.spanIdsAddress();
    this.spanConfig = spans;
    this.operation = operationOf(this.llm!.protocol, PATH_VALUE.ptr, PATH_VALUE.length);
    if (spans.keeps) this.keepSlowerThanNs = keepThresholdNs(spans, ROUTE_NAME.ptr, ROUTE_NAME.length);
    return ids;
  }

  /** Where ids0..ids7 live: 64 bytes of this context (u64 fields are laid out in order), written as raw bytes, holding no managed reference. */
  private spanIdsAddress(): usize {
    return changetype<usize>(this) + offsetof<TokentraceStream>("ids0");
  }

  /** Writes the new token trace id's 36 characters at TOKEN_ID_OUT and returns that address. */
  private writeNewTokenId(): usize {
    store<u64>(TOKEN_ID_RAW, this.newTokenIdHigh);
    store<u64>(TOKEN_ID_RAW + 8, this.newTokenIdLow);
    writeUuid(TOKEN_ID_OUT, TOKEN_ID_RAW);
    return TOKEN_ID_OUT;
  }

  /**
   * Keeps a valid incoming trace context (canonical form, unknown flags zeroed, in TRACEPARENT_OUT).
   * `setSampled` turns the sampled flag on; `newParent` puts this proxy's span id (OWN_SPAN_BYTES)
   * in place of the parent-id, and with `exportsSpan` that span is exported. The tracestate lines
   * are checked as one list. Returns whether the request leaves sampled.
   */
  private continueTrace(parsed: i32, setSampled: bool, newParent: bool, ids: usize, allRead: bool): bool {
    let flags = <u8>(parsed & 0xff);
    let rewrite = (parsed & TRACEPARENT_REWRITE) != 0;
    if (setSampled) {
      flags |= FLAG_SAMPLED;
      writeFlags(TRACEPARENT_OUT, flags);
      rewrite = true;
    }
    if (ids != 0) {
      // The span's trace-id and its parent: the incoming parent-id (the span id follows, or is drawn later).
      const p = ids;
      memory.copy(p, TRACEPARENT_OUT + TRACE_ID_OFFSET, 32);
      memory.copy(p + SPAN_PARENT_OFFSET, TRACEPARENT_OUT + PARENT_ID_OFFSET, 16);
      this.spanHasParent = true;
    }
    if (newParent) {
      if (isAllZero(OWN_SPAN_BYTES, 8)) store<u8>(OWN_SPAN_BYTES + 7, 1);
      writeHex(TRACEPARENT_OUT + PARENT_ID_OFFSET, OWN_SPAN_BYTES, 8);
      if (ids != 0) memory.copy(ids + SPAN_ID_OFFSET, TRACEPARENT_OUT + PARENT_ID_OFFSET, 16);
      rewrite = true;
    }
    if (rewrite) host.setHeader(host.HeaderMap.Request, TRACEPARENT, TRACEPARENT_OUT, TRACEPARENT_LENGTH);
    const all = TRACE_HEADERS;
    const lines = all.traceState;
    if (!allRead) {
      // The whole map could not be read: the first tracestate line is all there is to go on.
      lines.clear();
      if (host.readHeader(host.HeaderMap.Request, TRACESTATE, TRACESTATE_IN)) lines.add(TRACESTATE_IN.ptr, TRACESTATE_IN.length);
    }
    if (lines.count == 0) return (flags & FLAG_SAMPLED) != 0;
    if (all.tooManyTraceStateLines || !lines.validate()) {
      this.stats.error(ErrorReason.InvalidTraceState);
      host.removeHeader(host.HeaderMap.Request, TRACESTATE);
    } else if (lines.count > 1 || (rewrite && lines.hasDuplicateKeys)) {
      // Several lines leave as one (RFC 9110 field order); a proxy that changed traceparent may
      // drop the later entries of a repeated key (W3C: "discard duplicate keys"), and does.
      const combined = new ArrayBuffer(lines.combinedBytes);
      const n = lines.write(changetype<usize>(combined), rewrite);
      if (n == 0) host.removeHeader(host.HeaderMap.Request, TRACESTATE);
      else host.setHeader(host.HeaderMap.Request, TRACESTATE, changetype<usize>(combined), n);
    }
    return (flags & FLAG_SAMPLED) != 0;
  }

  /** Starts a new trace from the random bytes already drawn; returns whether it is sampled. */
  private startTrace(config: Config, route: RouteStats, forced: bool): bool {
    // W3C forbids all-zero ids; an all-zero draw (p = 2^-64 or less) becomes ...01.
    if (isAllZero(TRACE_ID_BYTES, 16)) store<u8>(TRACE_ID_BYTES + 15, 1);
    if (isAllZero(SPAN_ID_BYTES, 8)) store<u8>(SPAN_ID_BYTES + 7, 1);
    const rate = forced ? 1.0 : this.rateFor(config);
    const sampled = forced || isSampled(TRACE_ID_BYTES, rate);
    writeTraceParent(TRACEPARENT_OUT, TRACE_ID_BYTES, SPAN_ID_BYTES, FLAG_RANDOM | (sampled ? FLAG_SAMPLED : 0));
    host.setHeader(host.HeaderMap.Request, TRACEPARENT, TRACEPARENT_OUT, TRACEPARENT_LENGTH);
    // A tracestate that came without a valid traceparent belongs to no trace we know: a sampled
    // trace replaces it with our threshold, an unsampled one drops it.
    if (sampled) {
      const prefixLength = String.UTF8.encodeUnsafe(changetype<usize>(OT_THRESHOLD_PREFIX), OT_THRESHOLD_PREFIX.length, TRACESTATE_OUT);
      const n = <i32>prefixLength + writeThreshold(TRACESTATE_OUT + prefixLength, thresholdFor(rate));
      host.setHeader(host.HeaderMap.Request, TRACESTATE, TRACESTATE_OUT, n);
    } else {
      host.removeHeader(host.HeaderMap.Request, TRACESTATE);
    }
    this.stats.count(route.tracesStarted, 1);
    return sampled;
  }

  /** The sampling rate for this request; reads :authority only when a rule needs it (:path is read already). */
  private rateFor(config: Config): f64 {
    if (config.routes.length == 0) return config.defaultRate;
    const req = REQUEST_MATCH;
    req.routeName = ROUTE_NAME.ptr;
    req.routeNameLength = ROUTE_NAME.length;
    req.path = PATH_VALUE.ptr;
    req.pathLength = PATH_VALUE.length;
    AUTHORITY_VALUE.clear();
    if (config.rulesUseHost) host.readHeader(host.HeaderMap.Request, AUTHORITY, AUTHORITY_VALUE);
    req.authority = AUTHORITY_VALUE.ptr;
    req.authorityLength = AUTHORITY_VALUE.length;
    return rateFor(config, req);
  }

  private isForced(config: Config): bool {
    const rules = config.force;
    for (let i = 0; i < rules.length; i++) {
      host.readHeader(host.HeaderMap.Request, rules[i].headerBytes, FORCE_VALUE);
      if (forceRuleMatches(rules[i], FORCE_VALUE.ptr, FORCE_VALUE.length)) return true;
    }
    return false;
  }

  onRequestBody(body_buffer_length: usize, end_of_stream: bool): FilterDataStatusValues {
    const llm = this.llm;
    if (llm !== null) {
      const keepBuffering = llm.onRequestBody(<i32>body_buffer_length, end_of_stream);
      this.stats.flushHostFailures();
      host.collectIfDue(); // safe point: only `this` and `llm` are live, both reachable from the context map
      if (keepBuffering) return FilterDataStatusValues.StopIterationAndBuffer;
    }
    return FilterDataStatusValues.Continue;
  }

  onResponseBody(body_buffer_length: usize, end_of_stream: bool): FilterDataStatusValues {
    if (end_of_stream) this.responseComplete = true;
    const llm = this.llm;
    if (llm !== null) {
      llm.onResponseBody(<i32>body_buffer_length, end_of_stream);
      this.stats.flushHostFailures();
      host.collectIfDue(); // safe point: only `this` and `llm` are live, both reachable from the context map
    }
    return FilterDataStatusValues.Continue;
  }

  onResponseTrailers(trailers: u32): FilterTrailersStatusValues {
    this.responseComplete = true; // trailers end a response
    return FilterTrailersStatusValues.Continue;
  }

  onResponseHeaders(headers: u32, end_of_stream: bool): FilterHeadersStatusValues {
    if (end_of_stream) this.responseComplete = true;
    const kept = this.keptTokenId;
    if (kept !== null) {
      host.setHeaderBytes(host.HeaderMap.Response, this.tokenTraceIdHeader, kept);
    } else if (this.hasNewTokenId) {
      host.setHeader(host.HeaderMap.Response, this.tokenTraceIdHeader, this.writeNewTokenId(), UUID_LENGTH);
    }
    // The response headers are readable only now (Envoy drops the map when this callback continues).
    const llm = this.llm;
    if (llm !== null) llm.onResponseHeaders(end_of_stream);
    this.stats.flushHostFailures();
    return FilterHeadersStatusValues.Continue;
  }

  /**
   * Tail keep's verdict on an unsampled request (KeepReason.None: not kept), with its rank in
   * `keepPriority`: an error (error.type set on its span: a 4xx, a 5xx, a reset) outranks every slow
   * one; a slow one (duration over its threshold, or TTFT over the live TTFT threshold) ranks by how
   * many times its threshold it took.
   */
  private keepPriority: f64 = 0;

  private keepReason(spans: SpanConfig, llm: LlmExchange, code: i64, startNs: i64, durationNs: i64, recentRank: f64): KeepReason {
    // error.type set on its span: the same verdict as the call's stats (llm.record).
    if (spans.keepErrors && llm.errorType != ERROR_TYPE_NONE) {
      this.keepPriority = ERROR_PRIORITY + <f64>durationNs;
      return KeepReason.Error;
    }
    let threshold = this.keepSlowerThanNs;
    let ttftThreshold: i64 = -1;
    const counted = llm.counted;
    // The live thresholds in force now: a push during the request is the same policy with fresher
    // numbers, and one that withdrew a pair's entry (a quiet window) leaves it to the static ones.
    const current = this.active.config.spans;
    const live = current !== null ? current : spans;
    if (counted !== null && live.keepLive.length > 0) {
      counted.findLive(live);
      if (counted.liveDurationNs >= 0) threshold = counted.liveDurationNs;
      ttftThreshold = counted.liveTtftNs;
    }
    let rank: f64 = recentRank;
    if (threshold >= 0 && durationNs > threshold) {
      const r = <f64>durationNs / <f64>(threshold > 0 ? threshold : <i64>1);
      if (r > rank) rank = r;
    }
    const ttftNs = llm.firstContentNs > 0 && startNs > 0 ? llm.firstContentNs - startNs : -1;
    if (ttftThreshold >= 0 && ttftNs > ttftThreshold) {
      const r = <f64>ttftNs / <f64>(ttftThreshold > 0 ? ttftThreshold : <i64>1);
      if (r > rank) rank = r;
    }
    this.keepPriority = rank;
    return rank > 0 ? KeepReason.Slow : KeepReason.None;
  }

  /** The span of this request from its ids and what the exchange found; null when no span id could be drawn. */
  private spanRecord(llm: LlmExchange, route: RouteStats, code: i64, startNs: i64, durationNs: i64): SpanRecord | null {
    const ids = this.spanIdsAddress();
    if (load<u64>(ids + SPAN_ID_OFFSET) == 0 && load<u64>(ids + SPAN_ID_OFFSET + 8) == 0) {
      // No span id was sent upstream (an unsampled trace passed through): one for the span alone.
      if (!host.fillRandom(OWN_SPAN_BYTES, 8)) {
        this.stats.error(ErrorReason.RandomUnavailable);
        return null;
      }
      if (isAllZero(OWN_SPAN_BYTES, 8)) store<u8>(OWN_SPAN_BYTES + 7, 1);
      writeHex(ids + SPAN_ID_OFFSET, OWN_SPAN_BYTES, 8);
    }
    const span = new SpanRecord();
    // The context's ids are laid out as the record's: copied whole, written out as they are.
    memory.copy(changetype<usize>(span.ids), ids, SPAN_IDS_BYTES);
    span.hasParent = this.spanHasParent;
    span.operation = this.operation;
    span.requestModel = llm.requestModel;
    span.responseModel = llm.responseModel;
    span.responseId = llm.responseId;
    span.finishReason = llm.finishReason;
    span.inputTokens = llm.inputTokens;
    span.outputTokens = llm.outputTokens;
    span.cachedTokens = llm.cachedTokens;
    span.reasoningTokens = llm.reasoningTokens;
    span.params = llm.params;
    span.stream = llm.isStream;
    span.firstChunkNs = llm.firstChunkNs;
    const kept = this.keptTokenId;
    if (kept !== null) {
      span.tokenTraceId = kept;
    } else if (this.hasNewTokenId) {
      const id = new ArrayBuffer(UUID_LENGTH);
      memory.copy(changetype<usize>(id), this.writeNewTokenId(), UUID_LENGTH);
      span.tokenTraceId = id;
    }
    span.route = route.label;
    span.statusCode = code;
    span.responseComplete = this.responseComplete;
    span.startNs = startNs;
    span.endNs = startNs + durationNs;
    // server.address / server.port: the authority the request named (the server behind this proxy).
    if (host.readProperty(REQUEST_HOST_PROPERTY, SERVER_VALUE)) {
      const n = SERVER_VALUE.length;
      const p = SERVER_VALUE.ptr;
      const hostEnd = hostLength(p, n);
      let hostStart = 0;
      let hostStop = hostEnd;
      if (hostEnd >= 2 && load<u8>(p) == 0x5b) {
        hostStart = 1; // an IPv6 literal without its brackets
        hostStop = hostEnd - 1;
      }
      const address = new ArrayBuffer(hostStop - hostStart);
      memory.copy(changetype<usize>(address), p + hostStart, hostStop - hostStart);
      span.serverAddress = address;
      span.serverPort = hostEnd < n ? parsePort(p + hostEnd + 1, n - hostEnd - 1) : defaultPort();
    }
    return span;
  }

  // The minimal runtime collects only when asked (it saves the incremental GC's write barriers,
  // a third of the module). proxy_on_delete is a safe point: no managed object of ours lives only
  // on the stack, and this context is still in the SDK's context map until the call returns.
  onDelete(): void {
    host.collectAfterStream();
  }

  // Final per-request stats belong here: Envoy calls proxy_on_log once the stream is complete,
  // including streams reset before a response.
  onLog(): void {
    let route = this.route;
    if (route === null) return; // the stream ended before its request headers reached us
    // On a waypoint the stats of one pod's calls are the pod's own (its GPUs join them downstream).
    if (this.stats.maxDestinationPods > 0) route = destinationRoute(this.stats, route);
    const code = host.getIntProperty(RESPONSE_CODE_PROPERTY, 0);
    this.stats.count(route.requestsFor(codeClassIndex(code)), 1);
    const llm = this.llm;
    let durationNs = host.getIntProperty(REQUEST_DURATION_PROPERTY, -1);
    const spans = this.spanConfig;
    let startNs: i64 = 0;
    // The start time is needed for TTFT and sampled spans (and when the host gave no duration).
    if (durationNs < 0 || (llm !== null && (this.spanSampled || llm.firstContentNs > 0))) {
      startNs = host.getIntProperty(REQUEST_TIME_PROPERTY, 0);
    }
    if (durationNs < 0) {
      const nowNs = <i64>host.nowNs();
      durationNs = startNs > 0 && nowNs > startNs ? nowNs - startNs : 0;
    }
    if (llm !== null) {
      llm.record(startNs, startNs + durationNs, code, this.responseComplete, route);
      // Which span goes: a sampled request's, or (tail keep) an unsampled one that failed or was slow.
      if (spans !== null) {
        // Every LLM request of the pair joins its recent window, sampled or not.
        const recent = spans.keepRecent;
        const counted = llm.counted;
        let recentRank: f64 = 0;
        if (recent !== null && counted !== null) {
          if (startNs > 0) noteNowNs(startNs + durationNs);
          recentRank = counted.recentRank(recent, durationNs, recentNowMs());
        }
        const reason = this.spanSampled ? (this.forced ? KeepReason.Forced : KeepReason.Head) : spans.keeps ? this.keepReason(spans, llm, code, startNs, durationNs, recentRank) : KeepReason.None;
        if (reason != KeepReason.None) this.exportSpan(spans, llm, route, reason, code, startNs, durationNs);
      }
    }
    host.recordHistogram(route.durationMs, <u64>durationNs / NS_PER_MS);
    this.stats.flushHostFailures();
  }

  /** Exports this request's span: at once when sampled (or without a budget), else through the budget's reservoir. */
  private exportSpan(spans: SpanConfig, llm: LlmExchange, route: RouteStats, reason: KeepReason, code: i64, startNs: i64, durationNs: i64): void {
    if (startNs == 0) startNs = host.getIntProperty(REQUEST_TIME_PROPERTY, 0);
    const span = this.spanRecord(llm, route, code, startNs, durationNs);
    if (span === null) return;
    const tail = reason == KeepReason.Slow || reason == KeepReason.Error;
    // The span says a reset apart from an HTTP error (the stat's label folds both into error).
    if (tail) span.keepReason = reason == KeepReason.Error && (code <= 0 || !this.responseComplete) ? "reset" : keepReasonName(reason);
    // Captured content (sampled requests only) goes through the content engine's seam (capture.ts).
    const capture = llm.capture;
    if (capture !== null && !capture.isEmpty()) span.capture = capture;
    const budget = spans.keepBudget;
    if (tail && budget !== null) {
      // Encoded at the tick, if the budget grants it (a tail-kept span has no captured content).
      this.tailKeep.offer(span, this.keepPriority, route.keepCounter(reason, false), route.keepCounter(reason, true), budget.reservoirBytes);
    } else {
      this.exporter.add(encodeSpan(span, spans.providerName), spans);
      this.stats.count(route.keepCounter(reason, false), 1);
      if (budget !== null) this.tailKeep.spendHead();
    }
    if (capture !== null && span.capture !== null) contentEngine()!.report(capture, this.stats);
  }
}

const ENVOY_INTERNAL_PREFIX = "envoy://";

/**
 * `route`'s stats for the pod a request went to: the host of upstream.address, the upstream host's
 * address (envoy 00ab8ce9 source/extensions/filters/common/expr/context.cc, UpstreamLookupValues).
 * On a waypoint that host is an internal address whose endpoint id is the pod's ip:port (istio
 * 86c9f01f pilot/pkg/xds/endpoints/endpoint_builder.go builds it with BuildInternalAddressWithIdentifier;
 * envoy f182cf98 source/common/network/address_impl.cc EnvoyInternalInstance prints it
 * envoy://<listener>/<endpoint id>); elsewhere ip:port or [ipv6]:port. No upstream (a local reply): the route's.
 */
function destinationRoute(stats: Stats, route: RouteStats): RouteStats {
  if (!host.readProperty(UPSTREAM_ADDRESS_PROPERTY, UPSTREAM_ADDRESS)) return route;
  let p = UPSTREAM_ADDRESS.ptr;
  let n = UPSTREAM_ADDRESS.length;
  if (n > ENVOY_INTERNAL_PREFIX.length && load<u64>(p) == 0x2f2f3a796f766e65) {
    // "envoy://" then the listener name: the endpoint id follows the next '/'.
    let i = ENVOY_INTERNAL_PREFIX.length;
    while (i < n && load<u8>(p + i) != 0x2f) i++;
    p += i + 1;
    n -= i + 1;
  }
  let start = 0;
  let end = n;
  if (n > 0 && load<u8>(p) == 0x5b) {
    start = 1; // [ipv6]:port
    end = 1;
    while (end < n && load<u8>(p + end) != 0x5d) end++;
  } else {
    for (let i = n - 1; i >= 0; i--) {
      if (load<u8>(p + i) == 0x3a) {
        end = i;
        break;
      }
    }
  }
  if (end <= start) return route;
  return stats.forDestination(route, sanitizeLabelValue(String.UTF8.decodeUnsafe(p + start, end - start)));
}

/** Tail keep: a route's own slow threshold, else the default, in ns (-1: none). */
function keepThresholdNs(spans: SpanConfig, routeName: usize, routeNameLength: i32): i64 {
  const routes = spans.keepRoutes;
  let ms = spans.keepSlowerThanMs;
  for (let i = 0; i < routes.length; i++) {
    const name = routes[i].routeNameBytes;
    if (routeNameLength >= 0 && equalBytes(routeName, routeNameLength, changetype<usize>(name), name.byteLength)) {
      ms = routes[i].slowerThanMs;
      break;
    }
  }
  return ms < 0 ? -1 : <i64>ms * <i64>NS_PER_MS;
}

/** A port number of 1 to 5 digits (1..65535), else -1. */
function parsePort(p: usize, n: i32): i64 {
  if (n < 1 || n > 5) return -1;
  let port: i64 = 0;
  for (let i = 0; i < n; i++) {
    const d = <u32>load<u8>(p + i) - 0x30;
    if (d >= 10) return -1;
    port = port * 10 + <i64>d;
  }
  return port >= 1 && port <= 65535 ? port : -1;
}

/** The port an authority without one means: 443 for https, else 80. */
function defaultPort(): i64 {
  const https = host.readProperty(REQUEST_SCHEME_PROPERTY, SCHEME_VALUE) && SCHEME_VALUE.length == 5 &&
    load<u32>(SCHEME_VALUE.ptr) == 0x70747468 && load<u8>(SCHEME_VALUE.ptr + 4) == 0x73; // "https"
  return https ? 443 : 80;
}
