// Header names and values the filter reads or writes, as UTF-8 bytes encoded once at start-up:
// the request path compares and passes bytes, never strings.

export const METHOD = String.UTF8.encode(":method");
export const PATH = String.UTF8.encode(":path");
export const AUTHORITY = String.UTF8.encode(":authority");
export const STATUS = String.UTF8.encode(":status");
export const TRACEPARENT = String.UTF8.encode("traceparent");
export const TRACESTATE = String.UTF8.encode("tracestate");
export const ACCEPT = String.UTF8.encode("accept");
export const CONTENT_TYPE = String.UTF8.encode("content-type");
export const CONTENT_LENGTH = String.UTF8.encode("content-length");
export const CONTENT_ENCODING = String.UTF8.encode("content-encoding");
export const X_PROMPT_TOKENS = String.UTF8.encode("x-prompt-tokens");
export const X_GENERATED_TOKENS = String.UTF8.encode("x-generated-tokens");

export const GET = String.UTF8.encode("GET");
export const POST = String.UTF8.encode("POST");
export const JSON_TYPE = String.UTF8.encode("application/json");
export const EVENT_STREAM = String.UTF8.encode("text/event-stream");
export const IDENTITY = String.UTF8.encode("identity");
