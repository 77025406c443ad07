// Token-flow spans: one OTLP span (JSON encoding) per sampled LLM request, batched per VM and sent
// with proxy_http_call. Export never blocks or fails traffic: a full buffer drops spans (counted),
// a failed export drops its batch (counted), and at most one export is in flight.
import { SpanConfig } from "../config/config";
import { CaptureSink } from "../content/sink";
import { Param } from "../protocols/json-path";
import * as host from "../host/host";
import { Protocol } from "../protocols";
import { Stats } from "./stats";
import { errorTypeIndex, errorTypeName } from "./metrics";
import { AUTHORITY, CONTENT_TYPE, JSON_TYPE, METHOD, PATH, POST, STATUS } from "../host/names";
import { ByteWriter } from "../content/byte-writer";
import { sameBytes } from "../bytes";

/** What a span says about one LLM request; prompt and completion text only when it captures content (redacted). */
export class SpanRecord {
  /** The ids as lowercase hex, kept as the request wrote them: trace-id (32), span id (16), parent-id (16, when hasParent). */
  ids: StaticArray<u8> = new StaticArray<u8>(SPAN_IDS_BYTES);
  hasParent: bool = false;
  operation: Operation = Operation.Chat;
  requestModel: string = "";
  responseModel: string = "";
  responseId: string = "";
  finishReason: string = "";
  inputTokens: i64 = -1;
  outputTokens: i64 = -1;
  cachedTokens: i64 = -1;
  reasoningTokens: i64 = -1;
  /** Request parameters by Param (json-scan.ts), as their JSON text; null when the body had none. */
  params: StaticArray<string | null> | null = null;
  stream: bool = false;
  /** The token trace id's bytes as sent (null: none). */
  tokenTraceId: ArrayBuffer | null = null;
  route: string = "";
  /** The response status; 0 when the stream ended without one. */
  statusCode: i64 = 0;
  /** The response ended with end of stream (not cut by a reset). */
  responseComplete: bool = false;
  /** The host the request named, as bytes (null: none). */
  serverAddress: ArrayBuffer | null = null;
  serverPort: i64 = -1;
  startNs: i64 = 0;
  endNs: i64 = 0;
  firstChunkNs: i64 = 0;
  /** Tail keep: why an unsampled request's span was exported ("" for a sampled one). */
  keepReason: string = "";
  /** Captured content, redacted as it is written (content capture on, sampled requests only). */
  capture: CaptureSink | null = null;
}

/** A bound on the bytes a SpanRecord retains (its strings as UTF-16, the object and its params), for a reservoir bounded in bytes. */
export function retainedBytesOf(r: SpanRecord): i32 {
  let chars = r.requestModel.length + r.responseModel.length + r.responseId.length + r.finishReason.length + r.route.length + r.keepReason.length;
  const params = r.params;
  if (params !== null) {
    for (let i = 0; i < params.length; i++) {
      const p = unchecked(params[i]);
      if (p !== null) chars += p.length + 8;
    }
  }
  const token = r.tokenTraceId;
  const server = r.serverAddress;
  return 256 + SPAN_IDS_BYTES + (chars << 1) + (token !== null ? token.byteLength : 0) + (server !== null ? server.byteLength : 0);
}

/** Where the span id and the parent-id start in SpanRecord#ids (and in a stream's own copy of them). */
export const SPAN_ID_OFFSET: usize = 32;
export const SPAN_PARENT_OFFSET: usize = 48;
export const SPAN_IDS_BYTES: i32 = 64;

/** gen_ai.operation.name of an OpenAI-compatible endpoint. */
export const enum Operation { Chat, TextCompletion, Embeddings }

const CHAT_SUFFIX = String.UTF8.encode("/chat/completions");
const COMPLETIONS_SUFFIX = String.UTF8.encode("/completions");
const EMBEDDINGS_SUFFIX = String.UTF8.encode("/embeddings");

/**
 * The operation of a call: chat for the Responses API and Anthropic Messages, text completion for
 * TGI's and KServe's generate (a prompt in, text out), else from the OpenAI-compatible path
 * (`length` bytes; query ignored).
 */
export function operationOf(protocol: Protocol, path: usize, length: i32): Operation {
  if (protocol == Protocol.Responses || protocol == Protocol.Anthropic) return Operation.Chat;
  if (protocol == Protocol.Tgi || protocol == Protocol.KServe) return Operation.TextCompletion;
  let end = length;
  for (let i = 0; i < end; i++) {
    if (load<u8>(path + i) == 0x3f) {
      end = i;
      break;
    }
  }
  if (endsWith(path, end, CHAT_SUFFIX)) return Operation.Chat;
  if (endsWith(path, end, COMPLETIONS_SUFFIX)) return Operation.TextCompletion;
  if (endsWith(path, end, EMBEDDINGS_SUFFIX)) return Operation.Embeddings;
  return Operation.Chat;
}

function endsWith(p: usize, n: i32, suffix: ArrayBuffer): bool {
  const k = suffix.byteLength;
  return n >= k && sameBytes(p + n - k, changetype<usize>(suffix), k);
}

function operationName(op: Operation): string {
  return op == Operation.Embeddings ? "embeddings" : op == Operation.TextCompletion ? "text_completion" : "chat";
}

// Spans are written as UTF-8 straight into one buffer the VM reuses. Built as a string per attribute,
// joined, then encoded again, they made a request with tail keep cost 1.21x one without (now 1.04-1.06x; docs/sampling.md, Measured).
const out = new ByteWriter(2048);
/** Attributes written in the current list (a comma before every one but the first). */
let attrsWritten = 0;
const DIGITS: usize = memory.data(20);

/** A string with nothing to escape is written as it is; anything else as UTF-8 through ByteWriter#jsonText. */
function plainAscii(s: string): bool {
  const from = changetype<usize>(s);
  const n = s.length;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const v = v128.load(from + (<usize>i << 1));
    // Below 0x20 or from 0x80 up, as one unsigned compare: c - 0x20 >= 0x60.
    const outside = i16x8.ge_u(i16x8.sub(v, i16x8.splat(0x20)), i16x8.splat(0x60));
    if (v128.any_true(v128.or(outside, v128.or(i16x8.eq(v, i16x8.splat(0x22)), i16x8.eq(v, i16x8.splat(0x5c)))))) return false;
  }
  for (; i < n; i++) {
    const c = load<u16>(from + (<usize>i << 1));
    if (c < 0x20 || c == 0x22 || c == 0x5c || c >= 0x80) return false;
  }
  return true;
}

/** Text that is JSON already (a number's text, an attribute from the capture engine). */
function rawJson(s: string): void {
  if (plainAscii(s)) {
    out.ascii(s);
    return;
  }
  const bytes = String.UTF8.encode(s);
  out.bytes(changetype<usize>(bytes), bytes.byteLength);
}

/** `s` as a JSON string literal. */
function quoted(s: string): void {
  out.byte(0x22);
  unquoted(s);
  out.byte(0x22);
}

/** `s` as the inside of a JSON string literal. */
function unquoted(s: string): void {
  if (plainAscii(s)) {
    out.ascii(s);
  } else {
    const bytes = String.UTF8.encode(s);
    out.jsonText(changetype<usize>(bytes), bytes.byteLength);
  }
}

/** UTF-8 bytes from the request as a JSON string literal. */
function quotedBytes(bytes: ArrayBuffer): void {
  out.byte(0x22);
  out.jsonText(changetype<usize>(bytes), bytes.byteLength);
  out.byte(0x22);
}

function decimal(v: i64): void {
  if (v < 0) out.byte(0x2d);
  // Unsigned, so the most negative i64 has its magnitude too.
  let u: u64 = v < 0 ? <u64>0 - <u64>v : <u64>v;
  let n = 0;
  do {
    store<u8>(DIGITS + 19 - n, <u8>(0x30 + <i32>(u % 10)));
    u /= 10;
    n++;
  } while (u > 0);
  out.bytes(DIGITS + 20 - n, n);
}

function openAttr(key: string): void {
  if (attrsWritten++ > 0) out.byte(0x2c);
  out.ascii("{\"key\":\"");
  out.ascii(key);
  out.ascii("\",\"value\":{");
}

function stringAttr(key: string, value: string): void {
  openAttr(key);
  out.ascii("\"stringValue\":");
  quoted(value);
  out.ascii("}}");
}

function intAttr(key: string, value: i64): void {
  openAttr(key);
  out.ascii("\"intValue\":\"");
  decimal(value);
  out.ascii("\"}}");
}

function trueAttr(key: string): void {
  openAttr(key);
  out.ascii("\"boolValue\":true}}");
}

function stringArrayAttr(key: string, value: string): void {
  openAttr(key);
  out.ascii("\"arrayValue\":{\"values\":[{\"stringValue\":");
  quoted(value);
  out.ascii("}]}}}");
}

/** Nanoseconds (not negative) as decimal seconds: a JSON number, no float formatting needed, no trailing zeros. */
function seconds(ns: i64): void {
  decimal(ns / 1_000_000_000);
  let fraction = ns % 1_000_000_000;
  if (fraction == 0) return;
  let digits = 9;
  while (fraction % 10 == 0) {
    fraction /= 10;
    digits--;
  }
  out.byte(0x2e);
  for (let i = digits - 1; i >= 0; i--) {
    store<u8>(DIGITS + i, <u8>(0x30 + <i32>(fraction % 10)));
    fraction /= 10;
  }
  out.bytes(DIGITS, digits);
}

// gen_ai.request.* per Param (json-scan.ts), and whether each is an int (else a double or, for the
// last two, a string).
const PARAM_KEYS: StaticArray<string> = [
  "gen_ai.request.max_tokens", "gen_ai.request.temperature", "gen_ai.request.top_p", "gen_ai.request.top_k",
  "gen_ai.request.frequency_penalty", "gen_ai.request.presence_penalty", "gen_ai.request.seed", "gen_ai.request.choice.count",
  "gen_ai.embeddings.dimension.count", "gen_ai.request.encoding_formats", "gen_ai.output.type",
];
const INT_PARAMS: u32 = (1 << Param.MaxTokens) | (1 << Param.TopK) | (1 << Param.Seed) | (1 << Param.ChoiceCount) | (1 << Param.Dimensions);

function paramAttr(param: Param, text: string): void {
  const key = unchecked(PARAM_KEYS[param]);
  if (param == Param.EncodingFormat) {
    stringArrayAttr(key, text);
  } else if (param == Param.OutputType) {
    // OpenAI's response_format.type: json_object and json_schema request JSON (a well-known value).
    stringAttr(key, text == "json_object" || text == "json_schema" ? "json" : text);
  } else if ((INT_PARAMS & (1 << param)) != 0) {
    openAttr(key);
    out.ascii("\"intValue\":\"");
    rawJson(text);
    out.ascii("\"}}");
  } else {
    openAttr(key);
    out.ascii("\"doubleValue\":");
    rawJson(text);
    out.ascii("}}");
  }
}

/**
 * One OTLP/JSON span as UTF-8 (ids as hex, times as decimal strings, as OTLP/JSON requires) for an
 * inference or embeddings CLIENT span of the OpenTelemetry GenAI conventions (gen_ai.client.inference,
 * gen_ai.client.embeddings): every required and conditionally required attribute the request
 * and response carry, the recommended ones a proxy can see; no stop sequences (text the caller wrote).
 */
export function encodeSpan(r: SpanRecord, providerName: string): ArrayBuffer {
  const operation = operationName(r.operation);
  const embeddings = r.operation == Operation.Embeddings;
  // The same error.type as the call's stats (metrics.ts errorTypeIndex); docs/filter.md lists the values.
  const errorType = errorTypeName(errorTypeIndex(r.statusCode, r.responseComplete, r.finishReason == "error"));
  out.length = 0;
  const ids = changetype<usize>(r.ids);
  out.ascii("{\"traceId\":\"");
  out.bytes(ids, <i32>SPAN_ID_OFFSET);
  out.ascii("\",\"spanId\":\"");
  out.bytes(ids + SPAN_ID_OFFSET, 16);
  out.byte(0x22);
  if (r.hasParent) {
    out.ascii(",\"parentSpanId\":\"");
    out.bytes(ids + SPAN_PARENT_OFFSET, 16);
    out.byte(0x22);
  }
  // Span name: {gen_ai.operation.name} {gen_ai.request.model}, the operation alone without one.
  out.ascii(",\"name\":\"");
  out.ascii(operation);
  if (r.requestModel.length > 0) {
    out.byte(0x20);
    unquoted(r.requestModel);
  }
  out.byte(0x22);
  out.ascii(",\"kind\":3,\"startTimeUnixNano\":\"");
  decimal(r.startNs);
  out.ascii("\",\"endTimeUnixNano\":\"");
  decimal(r.endNs);
  out.ascii("\",\"attributes\":[");
  attrsWritten = 0;
  stringAttr("gen_ai.operation.name", operation);
  stringAttr("gen_ai.provider.name", providerName);
  if (errorType.length > 0) stringAttr("error.type", errorType);
  if (r.requestModel.length > 0) stringAttr("gen_ai.request.model", r.requestModel);
  const server = r.serverAddress;
  if (server !== null && server.byteLength > 0) {
    openAttr("server.address");
    out.ascii("\"stringValue\":");
    quotedBytes(server);
    out.ascii("}}");
    if (r.serverPort > 0) intAttr("server.port", r.serverPort);
  }
  if (r.stream) trueAttr("gen_ai.request.stream");
  const params = r.params;
  if (params !== null) {
    for (let i = 0; i < Param.COUNT; i++) {
      const text = unchecked(params[i]);
      // choice.count is conditionally required when it is not 1.
      if (text !== null && !(i == Param.ChoiceCount && text == "1")) paramAttr(<Param>i, text);
    }
  }
  if (r.responseId.length > 0) stringAttr("gen_ai.response.id", r.responseId);
  if (r.responseModel.length > 0) stringAttr("gen_ai.response.model", r.responseModel);
  // A finish reason expected but not received, the generation having failed: "error".
  if (r.finishReason.length > 0) stringArrayAttr("gen_ai.response.finish_reasons", r.finishReason);
  else if (errorType.length > 0 && !embeddings) stringArrayAttr("gen_ai.response.finish_reasons", "error");
  if (r.stream && r.firstChunkNs > 0 && r.firstChunkNs >= r.startNs) {
    openAttr("gen_ai.response.time_to_first_chunk");
    out.ascii("\"doubleValue\":");
    seconds(r.firstChunkNs - r.startNs);
    out.ascii("}}");
  }
  if (r.inputTokens >= 0) intAttr("gen_ai.usage.input_tokens", r.inputTokens);
  if (r.cachedTokens >= 0) intAttr("gen_ai.usage.cache_read.input_tokens", r.cachedTokens);
  if (r.outputTokens >= 0 && !embeddings) intAttr("gen_ai.usage.output_tokens", r.outputTokens);
  if (r.reasoningTokens >= 0 && !embeddings) intAttr("gen_ai.usage.reasoning.output_tokens", r.reasoningTokens);
  if (r.statusCode > 0) intAttr("http.response.status_code", r.statusCode);
  openAttr("tokentrace.token_trace_id");
  out.ascii("\"stringValue\":");
  const token = r.tokenTraceId;
  if (token !== null) quotedBytes(token);
  else out.ascii("\"\"");
  out.ascii("}}");
  stringAttr("tokentrace.route", r.route);
  if (r.keepReason.length > 0) stringAttr("tokentrace.keep_reason", r.keepReason);
  const capture = r.capture;
  if (capture !== null) {
    // The capture engine hands its attributes over as JSON text (content/sink.ts).
    const captured = new Array<string>();
    const truncated = capture.writeAttributes(captured, r.finishReason.length > 0 ? r.finishReason : errorType.length > 0 ? "error" : "");
    for (let i = 0; i < captured.length; i++) {
      if (attrsWritten++ > 0) out.byte(0x2c);
      rawJson(unchecked(captured[i]));
    }
    if (truncated) trueAttr("tokentrace.content.truncated");
  }
  out.byte(0x5d);
  // OTLP status 2 (ERROR) whenever error.type is set; otherwise left unset.
  if (errorType.length > 0) out.ascii(",\"status\":{\"code\":2}");
  out.byte(0x7d);
  return copyOut();
}

/** The writer's bytes in a buffer of their own. */
function copyOut(): ArrayBuffer {
  const bytes = new ArrayBuffer(out.length);
  memory.copy(changetype<usize>(bytes), out.dataStart(), out.length);
  return bytes;
}

export class SpanExporter {
  private buffered: Array<ArrayBuffer> = [];
  private inFlightToken: i64 = -1;
  private inFlightSpans: i32 = 0;
  /** Ticks per spans.flushIntervalMs (the tick is the shortest of the filter's intervals); a partial batch goes once this many have passed. */
  partialEveryTicks: i32 = 1;
  private ticksSinceSend: i32 = 0;
  private stats: Stats;

  constructor(stats: Stats) {
    this.stats = stats;
  }

  /** Buffers a span; sends a batch when one is full and nothing is in flight. */
  add(span: ArrayBuffer, config: SpanConfig): void {
    if (this.buffered.length >= config.maxBufferedSpans) {
      this.stats.count(this.stats.spansDropped, 1);
      return;
    }
    this.buffered.push(span);
    if (this.buffered.length >= config.batchSize) this.flush(config);
  }

  /** A tick passed: whether a partial batch is due (spans.flushIntervalMs since the last send). */
  flushDue(): bool {
    return ++this.ticksSinceSend >= this.partialEveryTicks;
  }

  /** Sends up to one batch unless an export is in flight (called on tick and when a batch fills). */
  flush(config: SpanConfig): void {
    if (this.inFlightToken >= 0 || this.buffered.length == 0) return;
    this.ticksSinceSend = 0;
    const n = this.buffered.length < config.batchSize ? this.buffered.length : config.batchSize;
    const batch = this.buffered.slice(0, n);
    this.buffered = this.buffered.slice(n);
    out.length = 0;
    out.ascii("{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    attrsWritten = 0;
    stringAttr("service.name", config.serviceName);
    out.ascii("]},\"scopeSpans\":[{\"scope\":{\"name\":\"tokentrace\"},\"spans\":[");
    for (let i = 0; i < n; i++) {
      if (i > 0) out.byte(0x2c);
      const span = unchecked(batch[i]);
      out.bytes(changetype<usize>(span), span.byteLength);
    }
    out.ascii("]}]}]}");
    const headers = host.encodePairs([METHOD, PATH, AUTHORITY, CONTENT_TYPE], [POST, config.path, config.authority, JSON_TYPE]);
    const token = host.httpCall(config.cluster, headers, copyOut(), <u32>config.timeoutMs);
    if (token < 0) {
      this.failed(n);
      return;
    }
    this.inFlightToken = token;
    this.inFlightSpans = n;
  }

  /** The host delivered an HTTP call response; returns false when the token is not ours. */
  onResponse(token: u32, headerCount: u32): bool {
    if (<i64>token != this.inFlightToken) return false;
    const n = this.inFlightSpans;
    this.inFlightToken = -1;
    this.inFlightSpans = 0;
    // No headers means the call failed (timeout, reset, no healthy upstream).
    const status = host.HTTP_CALL_STATUS;
    if (headerCount != 0 && host.readHttpCallResponseHeader(STATUS, status) && status.length == 3 && load<u8>(status.ptr) == 0x32) {
      this.stats.count(this.stats.spansExported, n);
    } else {
      this.failed(n);
    }
    return true;
  }

  private failed(spans: i32): void {
    this.stats.count(this.stats.spanExportFailures, 1);
    this.stats.count(this.stats.spansDropped, spans);
  }

  get pending(): i32 {
    return this.buffered.length;
  }
}
