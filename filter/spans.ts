// Token-flow spans: one OTLP span (JSON encoding) per sampled LLM request, batched per VM and sent
// with proxy_http_call. Export never blocks or fails traffic: a full buffer drops spans (counted),
// a failed export drops its batch (counted), and at most one export is in flight.
import { SpanConfig } from "./config";
import * as host from "./host";
import { Stats } from "./stats";
import { AUTHORITY, CONTENT_TYPE, JSON_TYPE, METHOD, PATH, POST, STATUS } from "./names";

/** What a span says about one LLM request; never prompt or completion text. */
export class SpanRecord {
  traceId: string = "";
  spanId: string = "";
  parentSpanId: string = "";
  operation: string = "chat";
  requestModel: string = "";
  responseModel: string = "";
  finishReason: string = "";
  inputTokens: i64 = -1;
  outputTokens: i64 = -1;
  tokenTraceId: string = "";
  route: string = "";
  statusCode: i64 = 0;
  startNs: i64 = 0;
  endNs: i64 = 0;
  firstTokenNs: i64 = 0;
}

/** The GenAI operation name of an OpenAI-compatible path (`length` bytes; -1: no path). */
export function operationOf(path: usize, length: i32): string {
  if (length < 0) return "chat";
  let s = String.UTF8.decodeUnsafe(path, length);
  const q = s.indexOf("?");
  if (q >= 0) s = s.substring(0, q);
  if (s.endsWith("/chat/completions")) return "chat";
  if (s.endsWith("/completions")) return "text_completion";
  if (s.endsWith("/embeddings")) return "embeddings";
  return "chat";
}

/** A JSON string literal. */
export function jsonString(s: string): string {
  let out = "\"";
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    out += s.substring(run, i);
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5c) out += "\\\\";
    else out += "\\u00" + (c < 0x10 ? "0" : "1") + "0123456789abcdef".charAt(c & 0xf);
    run = i + 1;
  }
  return out + s.substring(run) + "\"";
}

function stringAttr(key: string, value: string): string {
  return "{\"key\":\"" + key + "\",\"value\":{\"stringValue\":" + jsonString(value) + "}}";
}

function intAttr(key: string, value: i64): string {
  return "{\"key\":\"" + key + "\",\"value\":{\"intValue\":\"" + value.toString() + "\"}}";
}

/** One OTLP/JSON span object (ids as hex, times as decimal strings, as OTLP/JSON requires). */
export function encodeSpan(r: SpanRecord, providerName: string): string {
  const model = r.requestModel.length > 0 ? r.requestModel : r.responseModel;
  const attrs = new Array<string>();
  attrs.push(stringAttr("gen_ai.operation.name", r.operation));
  attrs.push(stringAttr("gen_ai.provider.name", providerName));
  if (r.requestModel.length > 0) attrs.push(stringAttr("gen_ai.request.model", r.requestModel));
  if (r.responseModel.length > 0) attrs.push(stringAttr("gen_ai.response.model", r.responseModel));
  if (r.inputTokens >= 0) attrs.push(intAttr("gen_ai.usage.input_tokens", r.inputTokens));
  if (r.outputTokens >= 0) attrs.push(intAttr("gen_ai.usage.output_tokens", r.outputTokens));
  if (r.finishReason.length > 0) {
    attrs.push("{\"key\":\"gen_ai.response.finish_reasons\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":" + jsonString(r.finishReason) + "}]}}}");
  }
  attrs.push(stringAttr("tokentrace.token_trace_id", r.tokenTraceId));
  attrs.push(stringAttr("http.route", r.route));
  if (r.statusCode > 0) attrs.push(intAttr("http.response.status_code", r.statusCode));
  let span = "{\"traceId\":\"" + r.traceId + "\",\"spanId\":\"" + r.spanId + "\"";
  if (r.parentSpanId.length > 0) span += ",\"parentSpanId\":\"" + r.parentSpanId + "\"";
  span += ",\"name\":" + jsonString(model.length > 0 ? r.operation + " " + model : r.operation);
  span += ",\"kind\":3,\"startTimeUnixNano\":\"" + r.startNs.toString() + "\",\"endTimeUnixNano\":\"" + r.endNs.toString() + "\"";
  span += ",\"attributes\":[" + attrs.join(",") + "]";
  if (r.firstTokenNs > 0) span += ",\"events\":[{\"timeUnixNano\":\"" + r.firstTokenNs.toString() + "\",\"name\":\"gen_ai.first_token\"}]";
  // OTLP status: 2 = ERROR for server errors; otherwise left unset.
  if (r.statusCode >= 500 || r.statusCode == 0) span += ",\"status\":{\"code\":2}";
  return span + "}";
}


export class SpanExporter {
  private buffered: Array<string> = [];
  private inFlightToken: i64 = -1;
  private inFlightSpans: i32 = 0;
  private stats: Stats;

  constructor(stats: Stats) {
    this.stats = stats;
  }

  /** Buffers a span; sends a batch when one is full and nothing is in flight. */
  add(span: string, config: SpanConfig): void {
    if (this.buffered.length >= config.maxBufferedSpans) {
      this.stats.count(this.stats.spansDropped, 1);
      return;
    }
    this.buffered.push(span);
    if (this.buffered.length >= config.batchSize) this.flush(config);
  }

  /** Sends up to one batch unless an export is in flight (called on tick and when a batch fills). */
  flush(config: SpanConfig): void {
    if (this.inFlightToken >= 0 || this.buffered.length == 0) return;
    const n = this.buffered.length < config.batchSize ? this.buffered.length : config.batchSize;
    const batch = this.buffered.slice(0, n);
    this.buffered = this.buffered.slice(n);
    const body = "{\"resourceSpans\":[{\"resource\":{\"attributes\":[" + stringAttr("service.name", config.serviceName) +
      "]},\"scopeSpans\":[{\"scope\":{\"name\":\"tokentrace\"},\"spans\":[" + batch.join(",") + "]}]}]}";
    const headers = host.encodePairs([METHOD, PATH, AUTHORITY, CONTENT_TYPE], [POST, config.path, config.authority, JSON_TYPE]);
    const token = host.httpCall(config.cluster, headers, String.UTF8.encode(body), <u32>config.timeoutMs);
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
