// One LLM call as it passes, in whichever protocol its path says (filter/protocols/): the
// request's model and stream flag, the response's usage, finish reason and content chunks, and the
// times of the first and last byte. Bodies are observed chunk by chunk and never held back; their
// text is kept only when the request's span captures content (a sink, content/sink.ts), for that span alone.
import { equalAsciiLowerCase } from "../bytes";
import { ENVOY_BUFFER_LIMIT_BYTES, LlmConfig } from "../config/config";
import { CaptureSink } from "../content/sink";
import * as host from "../host/host";
import { JsonScanner } from "./json-scan";
import { codeClassIndex, ERROR_TYPE_NONE, ErrorReason, errorTypeIndex, FINISH_REASON_ERROR, finishReasonIndex, MODEL_UNKNOWN, sanitizeLabelValue } from "../telemetry/metrics";
import { finishReasonOf, Protocol } from "../protocols";
import { SseScanner } from "./sse";
import { LlmStats, RouteStats, Stats } from "../telemetry/stats";
import { CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, EVENT_STREAM, IDENTITY, X_GENERATED_TOKENS, X_PROMPT_TOKENS } from "../host/names";

const NS_PER_MS: i64 = 1_000_000;
const NS_PER_US: i64 = 1_000;

const INCLUDE_USAGE = String.UTF8.encode("\"stream_options\":{\"include_usage\":true},");

/** The body with the include_usage member first in its top-level object, or null when it is not one. */
export function insertIncludeUsage(body: ArrayBuffer): ArrayBuffer | null {
  const p = changetype<usize>(body);
  const n = body.byteLength;
  let at = 0;
  while (at < n) {
    const c = load<u8>(p + at);
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    at++;
  }
  // A streaming request has a "stream" member, so its object is not empty and the comma is right.
  if (at == n || load<u8>(p + at) != 0x7b) return null;
  const insert = INCLUDE_USAGE.byteLength;
  const out = new ArrayBuffer(n + insert);
  const o = changetype<usize>(out);
  memory.copy(o, p, at + 1);
  memory.copy(o + at + 1, changetype<usize>(INCLUDE_USAGE), insert);
  memory.copy(o + at + 1 + insert, p + at + 1, n - at - 1);
  return out;
}

/** The media type of the `length`-byte content-type value at `p`: up to ";", without surrounding spaces. */
function mediaTypeLength(p: usize, length: i32): i32 {
  let n = length;
  for (let i = 0; i < n; i++) {
    if (load<u8>(p + i) == 0x3b) {
      n = i;
      break;
    }
  }
  while (n > 0 && load<u8>(p + n - 1) == 0x20) n--;
  return n;
}

const enum ResponseKind { NotRead, Encoded, Json, EventStream }

// The response headers classifyResponse inspects, read in place (host.HostValue).
const CONTENT_ENCODING_VALUE = new host.HostValue(memory.data(64), 64);
const CONTENT_TYPE_VALUE = new host.HostValue(memory.data(128), 128);
const TOKEN_COUNT_VALUE = new host.HostValue(memory.data(24), 24);
/**
 * A response body chunk, read in place: a stream's chunks (one per token) allocate nothing. The
 * scanners keep no pointer into it (what they keep, they copy). Larger chunks arrive managed.
 */
const RESPONSE_CHUNK = new host.HostValue(memory.data(16384), 16384);

/** A header's count (1 to 15 decimal digits: token counts, content-length), else -1. */
function readCount(map: host.HeaderMap, name: ArrayBuffer): i64 {
  if (!host.readHeader(map, name, TOKEN_COUNT_VALUE)) return -1;
  const n = TOKEN_COUNT_VALUE.length;
  if (n < 1 || n > 15) return -1;
  let value: i64 = 0;
  for (let i = 0; i < n; i++) {
    const d = <u32>load<u8>(TOKEN_COUNT_VALUE.ptr + i) - 0x30;
    if (d >= 10) return -1;
    value = value * 10 + <i64>d;
  }
  return value;
}

export class LlmExchange {
  private config: LlmConfig;
  private stats: Stats;
  private route: RouteStats;
  readonly protocol: Protocol;
  /** Where the text of this call goes, when its span captures content (set before any body byte). */
  capture: CaptureSink | null = null;
  /** TGI's x-prompt-tokens / x-generated-tokens response headers (-1: absent). */
  private headerPromptTokens: i64 = -1;
  private headerCompletionTokens: i64 = -1;
  /** Created with the first request body byte: most of what a headers-only call never needs. */
  private requestScanner: JsonScanner | null = null;
  private requestBytes: i32 = 0;
  private requestReadable: bool = true;
  /** requestUsageInStream: the request body is held in Envoy to add include_usage (see holdsRequestBody). */
  private holdRequest: bool = false;
  /** The request's content-length, when it was read (-1: unknown). */
  private requestLength: i64 = -1;
  private responseKind: ResponseKind = ResponseKind.NotRead;
  private json: JsonScanner | null = null;
  private sse: SseScanner | null = null;
  private responseStarted: bool = false;
  /** Streams: wall-clock ns when the first body chunk arrived, when the first event with content had, and of the last body byte; 0 until then. */
  firstChunkNs: i64 = 0;
  firstContentNs: i64 = 0;
  lastByteNs: i64 = 0;
  // What record() found, for the request's span.
  requestModel: string = "";
  responseModel: string = "";
  responseId: string = "";
  finishReason: string = "";
  /** error.type of the call as metrics.ts errorTypeIndex gives it (ERROR_TYPE_NONE: it did not fail). */
  errorType: i32 = ERROR_TYPE_NONE;
  inputTokens: i64 = -1;
  outputTokens: i64 = -1;
  cachedTokens: i64 = -1;
  reasoningTokens: i64 = -1;
  isStream: bool = false;
  params: StaticArray<string | null> | null = null;
  /** The (route, model) stats record() counted this call in. */
  counted: LlmStats | null = null;

  constructor(config: LlmConfig, stats: Stats, route: RouteStats, protocol: Protocol, pathModel: string) {
    this.config = config;
    this.stats = stats;
    this.route = route;
    this.protocol = protocol;
    this.requestModel = pathModel;
  }

  /**
   * requestUsageInStream, in proxy_on_request_headers: whether the request body will be held in
   * Envoy (StopIterationAndBuffer) until it ends, so include_usage can be added. Only when its
   * length is known and the held body, grown by the member, stays within Envoy's buffer limit:
   * Envoy answers 413 to a held body past it, and adds each chunk to what it holds before the
   * filter sees it (Context::decodeData, addDecodedData), so no later check could stop it. The
   * codec never passes more than content-length (RFC 9112 6.3; RFC 9113 8.1.1: a mismatch is
   * malformed). Any other body is read as it passes, like one without requestUsageInStream, and
   * one over llm.maxRequestBodyBytes passes untouched and is counted.
   */
  holdsRequestBody(): bool {
    if (!this.config.requestUsageInStream) return false;
    const length = readCount(host.HeaderMap.Request, CONTENT_LENGTH);
    this.requestLength = length;
    this.holdRequest = length > 0 && length <= <i64>this.config.maxRequestBodyBytes && length + <i64>INCLUDE_USAGE.byteLength <= <i64>ENVOY_BUFFER_LIMIT_BYTES;
    return this.holdRequest;
  }

  /**
   * A request body callback; `length` is the chunk, or while the body is held the whole body
   * buffered so far (Envoy shows a StopIterationAndBuffer'ed body again with the next chunk).
   * Returns true to ask Envoy to keep buffering.
   */
  onRequestBody(length: i32, endOfStream: bool): bool {
    if (this.holdRequest) return this.onBufferedRequestBody(length, endOfStream);
    if (!this.requestReadable || length <= 0) return false;
    if (this.requestBytes + length > this.config.maxRequestBodyBytes) {
      this.tooLarge();
      return false;
    }
    const bytes = host.getBodyBytes(host.BodyBuffer.Request, length);
    if (bytes === null) return false;
    this.requestBytes += length;
    this.scanRequest(bytes);
    return false;
  }

  private request(): JsonScanner {
    let scanner = this.requestScanner;
    if (scanner === null) {
      scanner = this.scanner();
      scanner.request = true;
      this.requestScanner = scanner;
    }
    return scanner;
  }

  /** Too large to look into: the body passes untouched and the model stays unknown. */
  private tooLarge(): void {
    this.requestReadable = false;
    this.stats.count(this.route.bodyLimitExceededCounter(), 1);
  }

  private scanRequest(bytes: ArrayBuffer): void {
    const request = this.request();
    request.feed(changetype<usize>(bytes), bytes.byteLength);
    if (request.failed) {
      this.requestReadable = false;
      this.stats.error(ErrorReason.BodyNotJson);
    }
  }

  /**
   * requestUsageInStream, a held body: buffer it so a streaming request without stream_options can
   * get `"stream_options":{"include_usage":true}` before it goes upstream.
   */
  private onBufferedRequestBody(length: i32, endOfStream: bool): bool {
    if (!this.requestReadable) return false;
    if (<i64>length > this.requestLength) {
      // More than its content-length said (a codec would not pass it): hold nothing more.
      this.holdRequest = false;
      this.tooLarge(); // what was buffered goes upstream unchanged
      return false;
    }
    if (!endOfStream) return true;
    const bytes = host.getBodyBytes(host.BodyBuffer.Request, length);
    if (bytes === null) return false;
    this.requestBytes = length;
    this.scanRequest(bytes);
    const request = this.request();
    request.finish();
    if (!request.done || request.stream != 1 || request.hasStreamOptions) return false;
    const withUsage = insertIncludeUsage(bytes);
    if (withUsage !== null) host.replaceBody(host.BodyBuffer.Request, length, withUsage);
    return false;
  }

  /**
   * Decides how the response body will be read, from the response headers. Envoy lets a filter read
   * them only inside proxy_on_response_headers (Context::encodeHeaders drops the map once the
   * callback continues), so it runs there; a response that ends with its headers needs no reads.
   */
  onResponseHeaders(endOfStream: bool): void {
    if (!endOfStream) this.classifyResponse();
  }

  private scanner(): JsonScanner {
    const json = new JsonScanner();
    json.protocol = this.protocol;
    json.sink = this.capture;
    return json;
  }

  private classifyResponse(): void {
    if (this.protocol == Protocol.Tgi) {
      // TGI's /generate answers its token counts in headers (router/src/server.rs, generate).
      this.headerPromptTokens = readCount(host.HeaderMap.Response, X_PROMPT_TOKENS);
      this.headerCompletionTokens = readCount(host.HeaderMap.Response, X_GENERATED_TOKENS);
    }
    const encoding = CONTENT_ENCODING_VALUE;
    if (host.readHeader(host.HeaderMap.Response, CONTENT_ENCODING, encoding) && !equalAsciiLowerCase(encoding.ptr, encoding.length, IDENTITY)) {
      this.responseKind = ResponseKind.Encoded; // gzip etc.: counted at the first body byte, not decoded
      return;
    }
    const contentType = CONTENT_TYPE_VALUE;
    if (!host.readHeader(host.HeaderMap.Response, CONTENT_TYPE, contentType)) return;
    const n = mediaTypeLength(contentType.ptr, contentType.length);
    const types = this.config.contentTypes;
    for (let i = 0; i < types.length; i++) {
      if (!equalAsciiLowerCase(contentType.ptr, n, types[i])) continue;
      if (equalAsciiLowerCase(contentType.ptr, n, EVENT_STREAM)) {
        this.responseKind = ResponseKind.EventStream;
        this.sse = new SseScanner(this.protocol, this.capture);
      } else {
        this.responseKind = ResponseKind.Json;
        this.json = this.scanner();
      }
      return;
    }
  }

  onResponseBody(length: i32, endOfStream: bool): void {
    if (length > 0 && !this.responseStarted) {
      this.responseStarted = true;
      if (this.responseKind == ResponseKind.Encoded) this.stats.error(ErrorReason.BodyEncoded);
    }
    if (this.responseKind == ResponseKind.NotRead || this.responseKind == ResponseKind.Encoded) return;
    const sse = this.sse;
    if (length > 0) {
      const chunk = RESPONSE_CHUNK;
      if (host.readBody(host.BodyBuffer.Response, length, chunk)) {
        if (sse !== null) {
          // Time to first chunk is to the first chunk received, whatever it holds (semantic-conventions-genai
          // e8fc5751 model/gen-ai/registry.yaml); TTFT is to the first event carrying content (a role-only
          // first event is no token), the same instant when that chunk had content.
          const first = this.firstChunkNs == 0;
          if (first) this.firstChunkNs = <i64>host.nowNs();
          sse.feed(chunk.ptr, chunk.length);
          if (this.firstContentNs == 0 && sse.contentChunks > 0) this.firstContentNs = first ? this.firstChunkNs : <i64>host.nowNs();
        } else {
          const json = this.json!;
          if (!json.failed) json.feed(chunk.ptr, chunk.length);
        }
        chunk.clear(); // a chunk too large for the slot is not held until the next one
      }
    }
    if (endOfStream) {
      if (sse !== null && this.firstContentNs > 0) this.lastByteNs = <i64>host.nowNs();
      this.endResponse();
    }
  }

  private responseEnded: bool = false;

  private endResponse(): void {
    if (this.responseEnded) return;
    this.responseEnded = true;
    const sse = this.sse;
    if (sse !== null) sse.finish();
    const json = this.json;
    if (json !== null) json.finish();
  }

  /**
   * Records the call's stats, under `route` (the request's, or on a waypoint its destination pod's);
   * `startNs` and `endNs` are wall-clock request start and end, `statusCode` the response's (0: none),
   * `responseComplete` whether the response ended whole.
   */
  record(startNs: i64, endNs: i64, statusCode: i64, responseComplete: bool, route: RouteStats): void {
    this.endResponse();
    const request = this.requestScanner;
    if (request !== null) request.finish();
    let stream = request !== null && request.stream == 1;
    let finishReason = "";
    let promptTokens: i64 = -1;
    let completionTokens: i64 = -1;
    let responseModel = "";
    let responseId = "";
    let cachedTokens: i64 = -1;
    let reasoningTokens: i64 = -1;
    let cacheCreationTokens: i64 = -1;
    let outputTokenSum: i64 = -1;
    let status = "";
    let incompleteReason = "";
    let recognized = false;
    let read = false;
    let chunks = 0;
    const sse = this.sse;
    const json = this.json;
    if (sse !== null) {
      stream = true;
      read = sse.jsonEvents > 0;
      recognized = sse.recognized;
      responseModel = sse.model;
      responseId = sse.id;
      cachedTokens = sse.cachedTokens;
      reasoningTokens = sse.reasoningTokens;
      finishReason = sse.finishReason;
      promptTokens = sse.promptTokens;
      completionTokens = sse.completionTokens;
      cacheCreationTokens = sse.cacheCreationTokens;
      outputTokenSum = sse.outputTokenSum;
      status = sse.status;
      incompleteReason = sse.incompleteReason;
      // TGI without details: one event per generated token.
      if (this.protocol == Protocol.Tgi && completionTokens < 0 && sse.tokenEvents > 0) completionTokens = sse.tokenEvents;
      chunks = sse.contentChunks;
      if (sse.malformedEvents > 0) this.stats.error(ErrorReason.SseMalformed);
      if (sse.usageInvalid > 0) this.stats.error(ErrorReason.UsageInvalid);
    } else if (json !== null) {
      if (json.usageInvalid > 0) this.stats.error(ErrorReason.UsageInvalid);
      if (json.done) {
        read = true;
        recognized = json.recognized;
        responseModel = json.model;
        responseId = json.id;
        cachedTokens = json.cachedTokens;
        reasoningTokens = json.reasoningTokens;
        finishReason = json.finishReason;
        promptTokens = json.promptTokens;
        completionTokens = json.completionTokens;
        cacheCreationTokens = json.cacheCreationTokens;
        outputTokenSum = json.outputTokenDelta;
        status = json.status;
        incompleteReason = json.incompleteReason;
      } else if (json.failed) {
        this.stats.error(ErrorReason.BodyNotJson);
      }
    }
    // A body of a shape the protocol reader does not know is counted, never guessed at (errors have their own shapes).
    if (read && !recognized && statusCode >= 200 && statusCode < 300) this.stats.error(ErrorReason.UnknownShape);
    if (promptTokens < 0) promptTokens = this.headerPromptTokens;
    if (completionTokens < 0) completionTokens = outputTokenSum >= 0 ? outputTokenSum : this.headerCompletionTokens;
    // Anthropic's input_tokens leaves out cached input: the GenAI total adds the cache reads and writes.
    if (this.protocol == Protocol.Anthropic && promptTokens >= 0) {
      if (cachedTokens > 0) promptTokens += cachedTokens;
      if (cacheCreationTokens > 0) promptTokens += cacheCreationTokens;
    }
    finishReason = finishReasonOf(this.protocol, finishReason, status, incompleteReason);
    // The path's model (KServe) stands unless the body names one.
    if (request !== null && request.model.length > 0) this.requestModel = request.model;
    this.params = request === null ? null : request.params;
    this.isStream = stream;
    this.responseModel = responseModel;
    this.responseId = responseId;
    this.cachedTokens = cachedTokens;
    this.reasoningTokens = reasoningTokens;
    this.finishReason = finishReason;
    this.inputTokens = promptTokens;
    this.outputTokens = completionTokens;
    // The model asked for names the series; the one that answered stands in when the request had none.
    const model = this.requestModel.length > 0 ? this.requestModel : responseModel;
    const llm = this.stats.forLlm(route, model.length == 0 ? MODEL_UNKNOWN : sanitizeLabelValue(model));
    this.counted = llm;
    const finishIndex = finishReasonIndex(finishReason);
    const errorType = errorTypeIndex(statusCode, responseComplete, finishIndex == FINISH_REASON_ERROR);
    this.errorType = errorType;
    this.stats.count(llm.requestsFor(stream, finishIndex, codeClassIndex(statusCode), errorType), 1);
    const durationNs = endNs - startNs;
    const config = this.config;
    if (durationNs >= 0) host.recordHistogram(llm.durationFor(config.outputClasses, completionTokens), <u64>(durationNs / NS_PER_MS));
    // Streams only: a non-streaming response's first byte is the whole generation, not a first token.
    const firstContentNs = this.firstContentNs;
    if (firstContentNs > 0 && firstContentNs >= startNs) host.recordHistogram(llm.ttftFor(config.inputClasses, promptTokens), <u64>((firstContentNs - startNs) / NS_PER_MS));
    this.stats.count(llm.promptsFor(config.inputClasses, promptTokens), 1);
    if (promptTokens > 0) this.stats.count(llm.inputTokens, promptTokens);
    if (completionTokens > 0) this.stats.count(llm.outputTokens, completionTokens);
    if (chunks > 0) this.stats.count(llm.streamChunks, chunks);
    const usageSeen = promptTokens >= 0 || completionTokens >= 0;
    const bodyRead = this.responseStarted && (this.responseKind == ResponseKind.Json || this.responseKind == ResponseKind.EventStream);
    if (!usageSeen && bodyRead) this.stats.count(llm.usageMissing, 1);
    // Decode (last byte - first content chunk) and time per output token: per stream that ended
    // whole (end of stream, else [DONE] before trailers); a cut stream has no decode time.
    const lastNs = this.lastByteNs > 0 ? this.lastByteNs : sse !== null && sse.sawDone ? endNs : 0;
    if (firstContentNs > 0 && lastNs >= firstContentNs) {
      host.recordHistogram(llm.decodeFor(config.outputClasses, completionTokens), <u64>((lastNs - firstContentNs) / NS_PER_MS));
      if (completionTokens > 1) host.recordHistogram(llm.tpotUs, <u64>((lastNs - firstContentNs) / NS_PER_US / (completionTokens - 1)));
    }
  }
}
