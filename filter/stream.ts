// One HTTP stream. Every callback continues: bad input is counted and replaced, host failures are
// counted, and nothing here can throw on the request path. Host calls are few and header values
// are handled as bytes, because this code runs on every request.
import { Context, FilterDataStatusValues, FilterHeadersStatusValues, RootContext } from "@solo-io/proxy-runtime/assembly";
import { isAllZero, writeHex } from "./bytes";
import { ActiveConfig, Config } from "./config";
import * as host from "./host";
import { isLlmPath, LlmExchange } from "./llm";
import { codeClassIndex, ErrorReason } from "./metrics";
import { forceRuleMatches, isSampled, rateFor, RequestMatch, thresholdFor, writeThreshold } from "./sampler";
import { encodeSpan, operationOf, SpanExporter, SpanRecord } from "./spans";
import { RouteStats, Stats } from "./stats";
import { isValidTokenTraceId, markUuidV4, MAX_TOKEN_TRACE_ID_LENGTH, UUID_LENGTH, writeUuid } from "./token-trace-id";
import { TraceHeaders } from "./trace-headers";
import {
  FLAG_RANDOM, FLAG_SAMPLED, PARENT_ID_OFFSET, parseTraceParent, TRACE_ID_OFFSET, TRACEPARENT_INVALID,
  TRACEPARENT_LENGTH, TRACEPARENT_REWRITE, writeFlags, writeTraceParent,
} from "./traceparent";
import { AUTHORITY, CONTENT_LENGTH, PATH, TRACEPARENT, TRACESTATE } from "./names";

const ROUTE_NAME_PROPERTY = host.utf8("xds\0route_name");
const RESPONSE_CODE_PROPERTY = host.utf8("response\0code");
const REQUEST_DURATION_PROPERTY = host.utf8("request\0duration");
const REQUEST_TIME_PROPERTY = host.utf8("request\0time");
const NS_PER_MS: u64 = 1_000_000;

// Random bytes for new ids, drawn together (host.fillRandom, pooled): 16 trace-id, 8 span-id, 16 token trace id, and
// 8 for this proxy's own span when it continues a trace and exports a span for it.
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
/** The whole request header map, read when a trace header came (most fit; a larger map arrives managed). */
const REQUEST_PAIRS = new host.HostValue(memory.data(4096), 4096);
const TRACE_HEADERS = new TraceHeaders();
/** Reused for every rate lookup (one stream runs at a time on a VM). */
const REQUEST_MATCH = new RequestMatch();
const NO_BYTES = new ArrayBuffer(0);
const OT_THRESHOLD_PREFIX = "ot=th:";
/** Streams between two garbage collections: amortises a collection, bounds the garbage between. */
const COLLECT_EVERY_STREAMS: i32 = 128;
let deletedSinceCollect: i32 = 0;

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
  /** Set when this request gets a span: its ids, filled in at proxy_on_log. */
  private span: SpanRecord | null = null;

  constructor(context_id: u32, root: RootContext, stats: Stats, active: ActiveConfig, exporter: SpanExporter) {
    super(context_id, root);
    this.stats = stats;
    this.active = active;
    this.exporter = exporter;
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
    if (llmConfig.enabled && PATH_VALUE.present && isLlmPath(PATH_VALUE.ptr, PATH_VALUE.length, llmConfig.pathSuffixes)) {
      this.llm = new LlmExchange(llmConfig, this.stats, route);
      // The body may grow by the include_usage member: its length is Envoy's to recompute.
      if (llmConfig.requestUsageInStream) host.removeHeader(host.HeaderMap.Request, CONTENT_LENGTH);
    }

    this.tokenTraceIdHeader = config.tokenTraceIdHeader;
    // Envoy's get_header_map_value answers with the first value only (Context::getHeaderMapValue,
    // entry[0]); when a trace header came at all, the whole map is read once to see every value.
    const hasParent = host.readHeader(host.HeaderMap.Request, TRACEPARENT, TRACEPARENT_IN);
    const hasTokenId = host.readHeader(host.HeaderMap.Request, config.tokenTraceIdHeader, TOKEN_ID_IN);
    const all = TRACE_HEADERS;
    const allRead = (hasParent || hasTokenId) && host.readHeaderPairs(host.HeaderMap.Request, REQUEST_PAIRS) &&
      all.read(REQUEST_PAIRS.ptr, REQUEST_PAIRS.length, config.tokenTraceIdHeader);
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

    let sampled = false;
    if (continuing) {
      // Without randomness there is no new parent-id, so the sampled flag stays as it came.
      sampled = this.continueTrace(parsed, setsSampled && haveRandom, newParent && haveRandom, exportsSpan, allRead);
    } else if (haveRandom) {
      sampled = this.startTrace(config, route, forced);
      if (sampled && exportsSpan) this.span = spanFromTraceParent(false);
    }
    const span = this.span;
    if (span !== null) span.operation = operationOf(PATH_VALUE.ptr, PATH_VALUE.length);
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
  private continueTrace(parsed: i32, setSampled: bool, newParent: bool, exportsSpan: bool, allRead: bool): bool {
    let flags = <u8>(parsed & 0xff);
    let rewrite = (parsed & TRACEPARENT_REWRITE) != 0;
    if (setSampled) {
      flags |= FLAG_SAMPLED;
      writeFlags(TRACEPARENT_OUT, flags);
      rewrite = true;
    }
    if (newParent) {
      if (isAllZero(OWN_SPAN_BYTES, 8)) store<u8>(OWN_SPAN_BYTES + 7, 1);
      if (exportsSpan) this.span = spanFromTraceParent(true);
      writeHex(TRACEPARENT_OUT + PARENT_ID_OFFSET, OWN_SPAN_BYTES, 8);
      const span = this.span;
      if (span !== null) span.spanId = String.UTF8.decodeUnsafe(TRACEPARENT_OUT + PARENT_ID_OFFSET, 16);
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
    const llm = this.llm;
    if (llm !== null) {
      llm.onResponseBody(<i32>body_buffer_length, end_of_stream);
      this.stats.flushHostFailures();
      host.collectIfDue(); // safe point: only `this` and `llm` are live, both reachable from the context map
    }
    return FilterDataStatusValues.Continue;
  }

  onResponseHeaders(headers: u32, end_of_stream: bool): FilterHeadersStatusValues {
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

  // The minimal runtime collects only when asked (it saves the incremental GC's write barriers,
  // a third of the module). proxy_on_delete is a safe point: no managed object of ours lives only
  // on the stack, and this context is still in the SDK's context map until the call returns.
  onDelete(): void {
    if (++deletedSinceCollect >= COLLECT_EVERY_STREAMS) {
      deletedSinceCollect = 0;
      host.collectNow();
    }
  }

  // Final per-request stats belong here: Envoy calls proxy_on_log once the stream is complete,
  // including streams reset before a response.
  onLog(): void {
    const route = this.route;
    if (route === null) return; // the stream ended before its request headers reached us
    const code = host.getIntProperty(RESPONSE_CODE_PROPERTY, 0);
    this.stats.count(route.requestsFor(codeClassIndex(code)), 1);
    const llm = this.llm;
    let durationNs = host.getIntProperty(REQUEST_DURATION_PROPERTY, -1);
    let startNs: i64 = 0;
    // The start time is needed for TTFT and spans only (and when the host gave no duration).
    if (durationNs < 0 || (llm !== null && (llm.firstContentNs > 0 || this.span !== null))) {
      startNs = host.getIntProperty(REQUEST_TIME_PROPERTY, 0);
    }
    if (durationNs < 0) {
      const nowNs = <i64>host.nowNs();
      durationNs = startNs > 0 && nowNs > startNs ? nowNs - startNs : 0;
    }
    if (llm !== null) {
      llm.record(startNs, startNs + durationNs);
      const span = this.span;
      const spans = this.active.config.spans;
      if (span !== null && spans !== null) {
        span.requestModel = llm.requestModel;
        span.responseModel = llm.responseModel;
        span.finishReason = llm.finishReason;
        span.inputTokens = llm.inputTokens;
        span.outputTokens = llm.outputTokens;
        span.firstTokenNs = llm.firstContentNs;
        const kept = this.keptTokenId;
        if (kept !== null) span.tokenTraceId = String.UTF8.decode(kept);
        else if (this.hasNewTokenId) span.tokenTraceId = String.UTF8.decodeUnsafe(this.writeNewTokenId(), UUID_LENGTH);
        span.route = route.label;
        span.statusCode = code;
        span.startNs = startNs;
        span.endNs = startNs + durationNs;
        this.exporter.add(encodeSpan(span, spans.providerName), spans);
      }
    }
    host.recordHistogram(route.durationMs, <u64>durationNs / NS_PER_MS);
    this.stats.flushHostFailures();
  }
}

/** A span record carrying the trace-id (and, when continuing, the incoming parent-id) in TRACEPARENT_OUT. */
function spanFromTraceParent(continuing: bool): SpanRecord {
  const span = new SpanRecord();
  span.traceId = String.UTF8.decodeUnsafe(TRACEPARENT_OUT + TRACE_ID_OFFSET, 32);
  const parentOrOwn = String.UTF8.decodeUnsafe(TRACEPARENT_OUT + PARENT_ID_OFFSET, 16);
  if (continuing) span.parentSpanId = parentOrOwn;
  else span.spanId = parentOrOwn; // a trace this proxy starts: its span is the root
  return span;
}
