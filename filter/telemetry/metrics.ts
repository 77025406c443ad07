// The stat catalogue and how names carry labels. Pure logic: no host calls.
//
// Envoy stats have no labels; Istio turns `TAG=.=VALUE;.;` segments of a stat name into Prometheus
// labels for every TAG listed in extraStatTags (REFERENCE section 3). A stat defined as
// `route=.=chat;.;status_class=.=2xx;.;tokentrace_requests_total` is exported from
// /stats/prometheus as `tokentrace_requests_total{route="chat",status_class="2xx"}`.
// Istio's tag regexes are unanchored (`TAG=\.=(.+?);\.;`), so no tag name may end with another
// (`reason` would match inside `finish_reason`), and none may reuse a name Istio already extracts
// with its own regex (`response_code_class`).
import { decimal } from "../decimal";

export const REQUESTS_TOTAL = "tokentrace_requests_total";
export const REQUEST_DURATION_MS = "tokentrace_request_duration_ms";
export const TRACES_STARTED_TOTAL = "tokentrace_traces_started_total";
export const TRACES_SAMPLED_TOTAL = "tokentrace_traces_sampled_total";
export const FILTER_ERRORS_TOTAL = "tokentrace_filter_errors_total";

export const LLM_REQUESTS_TOTAL = "tokentrace_llm_requests_total";
export const LLM_TTFT_MS = "tokentrace_llm_ttft_ms";
export const LLM_DECODE_MS = "tokentrace_llm_decode_ms";
export const LLM_TPOT_US = "tokentrace_llm_tpot_us";
export const LLM_DURATION_MS = "tokentrace_llm_duration_ms";
export const LLM_INPUT_TOKENS_TOTAL = "tokentrace_llm_input_tokens_total";
export const LLM_OUTPUT_TOKENS_TOTAL = "tokentrace_llm_output_tokens_total";
/** Calls by input-length class, usage known (the pipeline's gen_ai_client_token_usage of input tokens). */
export const LLM_PROMPTS_TOTAL = "tokentrace_llm_prompts_total";
export const LLM_STREAM_CHUNKS_TOTAL = "tokentrace_llm_stream_chunks_total";
export const LLM_USAGE_MISSING_TOTAL = "tokentrace_llm_usage_missing_total";
export const LLM_BODY_LIMIT_EXCEEDED_TOTAL = "tokentrace_llm_body_limit_exceeded_total";

export const SPANS_EXPORTED_TOTAL = "tokentrace_spans_exported_total";
export const SPANS_DROPPED_TOTAL = "tokentrace_spans_dropped_total";
export const SPAN_EXPORT_FAILURES_TOTAL = "tokentrace_span_export_failures_total";
export const SPANS_KEPT_TOTAL = "tokentrace_spans_kept_total";
export const SPANS_BUDGET_DROPPED_TOTAL = "tokentrace_spans_budget_dropped_total";

export const CONTENT_CAPTURED_TOTAL = "tokentrace_content_captured_total";
export const CONTENT_REDACTIONS_TOTAL = "tokentrace_content_redactions_total";
export const CONTENT_KEY_UPDATES_TOTAL = "tokentrace_content_key_updates_total";

export const POLICY_UPDATES_TOTAL = "tokentrace_policy_updates_total";
export const POLICY_POLL_FAILURES_TOTAL = "tokentrace_policy_poll_failures_total";

/**
 * tokentrace_filter_errors_total reasons of content capture, each defined on first use: capture
 * asked of the default module, which has no capture code (use build/filter-content.wasm); a
 * message's text dropped instead of exported (fail closed), by why; a span written with typed
 * placeholders although its policy asks for pseudonyms, by why no key was in force.
 */
export const CONTENT_UNAVAILABLE = "content_unavailable";
export const CONTENT_DROPPED: StaticArray<string> = ["content_dropped_unterminated", "content_dropped_bad_escape", "content_dropped_malformed_utf8"];
export const PSEUDONYM_FALLBACKS: StaticArray<string> = ["pseudonym_key_missing", "pseudonym_key_refused", "pseudonym_key_unreachable"];

export const TAG_ROUTE = "route";
export const TAG_MODEL = "model";
export const TAG_STREAM = "stream";
export const TAG_FINISH_REASON = "finish_reason";
export const TAG_STATUS_CLASS = "status_class";
export const TAG_ERROR = "error";
/** OpenTelemetry's error.type on LLM calls that failed (no tag ends with "error_type", and it ends with none). */
export const TAG_ERROR_TYPE = "error_type";
/** Why a span went (head, forced, slow, error); no tag ends with "keep_reason", and it ends with none. */
export const TAG_KEEP_REASON = "keep_reason";
/**
 * A request's input and output token class (llm.lengthClasses; length-classes.ts) on the TTFT, and on
 * the decode and duration histograms. Neither ends with another tag, and no tag ends with either.
 */
export const TAG_INPUT_LENGTH = "input_length";
export const TAG_OUTPUT_LENGTH = "output_length";
/** The type of a value redacted from captured content (no tag ends with "redacted", and it ends with none). */
export const TAG_REDACTED = "redacted";
/**
 * On a waypoint (stats.maxDestinationPods > 0): the IP of the pod a request went to, so the
 * pipeline can join the waypoint's stats with that pod's GPUs. No tag ends with "pod_ip", and it ends with none.
 */
export const TAG_POD_IP = "pod_ip";

/** Label value for requests whose route name is empty (Istio's unnamed routes). */
export const ROUTE_DEFAULT = "default";
/** Label value for routes past the configured cap. */
export const ROUTE_OTHER = "other";

/** The bounded set of reasons for tokentrace_filter_errors_total. */
export const enum ErrorReason {
  InvalidTraceParent,
  InvalidTraceState,
  InvalidTokenTraceId,
  HostCallFailed,
  ConfigRejected,
  RouteOverflow,
  RandomUnavailable,
  BodyNotJson,
  BodyEncoded,
  SseMalformed,
  ModelOverflow,
  UsageInvalid,
  UnknownShape,
  DestinationOverflow,
  COUNT,
}

export function errorReasonName(reason: ErrorReason): string {
  switch (reason) {
    case ErrorReason.InvalidTraceParent: return "invalid_traceparent";
    case ErrorReason.InvalidTraceState: return "invalid_tracestate";
    case ErrorReason.InvalidTokenTraceId: return "invalid_token_trace_id";
    case ErrorReason.HostCallFailed: return "host_call_failed";
    case ErrorReason.ConfigRejected: return "config_rejected";
    case ErrorReason.RouteOverflow: return "route_overflow";
    case ErrorReason.RandomUnavailable: return "random_unavailable";
    case ErrorReason.BodyNotJson: return "body_not_json";
    case ErrorReason.BodyEncoded: return "body_encoded";
    case ErrorReason.SseMalformed: return "sse_malformed";
    case ErrorReason.ModelOverflow: return "model_overflow";
    case ErrorReason.UsageInvalid: return "usage_invalid";
    case ErrorReason.UnknownShape: return "unknown_shape";
    case ErrorReason.DestinationOverflow: return "destination_overflow";
    default: return "unknown";
  }
}

/** Why a span was exported: the head decision (or a force rule), or tail keep (slow, error). */
export const enum KeepReason { None, Head, Forced, Slow, Error, COUNT }

export function keepReasonName(reason: KeepReason): string {
  switch (reason) {
    case KeepReason.Head: return "head";
    case KeepReason.Forced: return "forced";
    case KeepReason.Slow: return "slow";
    case KeepReason.Error: return "error";
    default: return "none";
  }
}

/** Response code classes; index 0 means no response code (stream reset before a response). */
export const CODE_CLASS_COUNT: i32 = 6;

export function codeClassIndex(code: i64): i32 {
  if (code >= 100 && code <= 599) return <i32>(code / 100);
  return 0;
}

export function codeClassName(index: i32): string {
  return index == 0 ? "none" : decimal(index) + "xx";
}

/** Longest label value kept; longer values are cut. */
export const MAX_LABEL_LENGTH: i32 = 64;

/**
 * A label value safe inside a stat name: characters outside [A-Za-z0-9_.:/-] become "_" (so the
 * `;` and `=` of the tag convention can never appear), and so does a "." that would complete one of
 * Istio's unanchored built-in tag patterns (see completesIstioTag); cut to MAX_LABEL_LENGTH; empty
 * becomes "unknown".
 */
export function sanitizeLabelValue(value: string): string {
  const n = value.length < MAX_LABEL_LENGTH ? value.length : MAX_LABEL_LENGTH;
  if (n == 0) return "unknown";
  let clean = true;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (!isLabelChar(c) || (c == 0x2e && completesIstioTag(value, i, n))) {
      clean = false;
      break;
    }
  }
  if (clean) return n == value.length ? value : value.substring(0, n);
  // One "_" per character that may not appear, counting a surrogate pair as the one character it is.
  const out = new StaticArray<u16>(n);
  let k = 0;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) == 0xdc00) i++;
    out[k++] = isLabelChar(c) && !(c == 0x2e && completesIstioTag(value, i, n)) ? <u16>c : 0x5f;
  }
  return String.UTF16.decodeUnsafe(changetype<usize>(out), k * 2);
}

/**
 * Istio's bootstrap extracts some tags with patterns anchored nowhere (istio/istio
 * tools/packaging/common/envoy_bootstrap.json stats_tags: `(cache\.(.+?)\.)`, `(component\.(.+?)\.)`,
 * `(tag\.(.+?);\.)`, `(wasm_filter\.(.+?)\.)`, `rbac(\.(allowed|denied))`,
 * `(\.istio_dry_run_(allow|deny)_)`, `(\.shadow_(allowed|denied))`): inside a route named
 * `llm.cache.v1` the first would find a `cache` label. True for a "." those patterns could use: one
 * after cache, component, tag, wasm_filter or rbac, or before istio_dry_run_ or shadow_ (the last
 * three a little wider than the patterns, which costs nothing but an underscore).
 */
function completesIstioTag(value: string, dot: i32, n: i32): bool {
  return (
    endsAt(value, dot, "cache") || endsAt(value, dot, "component") || endsAt(value, dot, "tag") || endsAt(value, dot, "wasm_filter") ||
    endsAt(value, dot, "rbac") || startsAt(value, dot + 1, n, "istio_dry_run_") || startsAt(value, dot + 1, n, "shadow_")
  );
}

function endsAt(value: string, end: i32, word: string): bool {
  const start = end - word.length;
  if (start < 0) return false;
  for (let i = 0; i < word.length; i++) if (value.charCodeAt(start + i) != word.charCodeAt(i)) return false;
  return true;
}

function startsAt(value: string, start: i32, n: i32, word: string): bool {
  if (start + word.length > n) return false;
  for (let i = 0; i < word.length; i++) if (value.charCodeAt(start + i) != word.charCodeAt(i)) return false;
  return true;
}

function isLabelChar(c: i32): bool {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c == 0x5f || c == 0x2d || c == 0x2e || c == 0x3a || c == 0x2f;
}

/** `tag=.=value;.;` for one already-sanitised value. */
export function tagSegment(tag: string, value: string): string {
  return tag + "=.=" + value + ";.;";
}

/** finish_reason label values: OpenAI's set and "error" (a generation that failed); anything else is "other", absent is "none". */
export const FINISH_REASON_COUNT: i32 = 8;
/** The finish reason of a generation that failed (the Responses API's `failed` status). */
export const FINISH_REASON_ERROR: i32 = 6;

export function finishReasonIndex(reason: string): i32 {
  if (reason.length == 0) return 0;
  if (reason == "stop") return 1;
  if (reason == "length") return 2;
  if (reason == "tool_calls") return 3;
  if (reason == "content_filter") return 4;
  if (reason == "function_call") return 5;
  if (reason == "error") return FINISH_REASON_ERROR;
  return 7;
}

export function finishReasonName(index: i32): string {
  switch (index) {
    case 0: return "none";
    case 1: return "stop";
    case 2: return "length";
    case 3: return "tool_calls";
    case 4: return "content_filter";
    case 5: return "function_call";
    case FINISH_REASON_ERROR: return "error";
    default: return "other";
  }
}

/**
 * error.type of an LLM call as a closed set of small integers (0: no error), shared by its span and
 * its stats: an error status is its code (400..599); below them the reasons without one. Per
 * open-telemetry/semantic-conventions@00e4b4e docs/http/http-spans.md (error.type note): the status
 * code as a string when the response says error, a low-cardinality identifier when it failed before
 * one; @0ebb1a0 docs/registry/attributes/error.md: `_OTHER` when the instrumentation defines no value
 * (a generation that failed under a 2xx, a code outside 100..599).
 */
export const ERROR_TYPE_NONE: i32 = 0;
export const ERROR_TYPE_RESET_BEFORE_RESPONSE: i32 = 1;
export const ERROR_TYPE_RESET_DURING_RESPONSE: i32 = 2;
export const ERROR_TYPE_OTHER: i32 = 3;

export function errorTypeIndex(statusCode: i64, responseComplete: bool, failed: bool): i32 {
  if (statusCode >= 400 && statusCode <= 599) return <i32>statusCode;
  if (statusCode <= 0) return ERROR_TYPE_RESET_BEFORE_RESPONSE;
  if (statusCode > 599 || statusCode < 100) return ERROR_TYPE_OTHER;
  if (!responseComplete) return ERROR_TYPE_RESET_DURING_RESPONSE;
  return failed ? ERROR_TYPE_OTHER : ERROR_TYPE_NONE;
}

/** The error.type value of an errorTypeIndex ("" for none). */
export function errorTypeName(index: i32): string {
  switch (index) {
    case ERROR_TYPE_NONE: return "";
    case ERROR_TYPE_RESET_BEFORE_RESPONSE: return "reset_before_response";
    case ERROR_TYPE_RESET_DURING_RESPONSE: return "reset_during_response";
    case ERROR_TYPE_OTHER: return "_OTHER";
    default: return decimal(index);
  }
}

/** Model label for requests whose model is not known. */
export const MODEL_UNKNOWN = "unknown";
export const MODEL_OTHER = "other";
/** Label value for destination pods past stats.maxDestinationPods. */
export const POD_IP_OTHER = "other";
