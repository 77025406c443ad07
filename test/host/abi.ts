// Numeric constants of the proxy-wasm ABI 0.2.x (spec abi-versions/v0.2.1), as Envoy uses them.

/** WasmResult values returned by every proxy_* host call. */
export const WasmResult = {
  Ok: 0,
  NotFound: 1,
  BadArgument: 2,
  SerializationFailure: 3,
  ParseFailure: 4,
  BadExpression: 5,
  InvalidMemoryAccess: 6,
  Empty: 7,
  CasMismatch: 8,
  ResultMismatch: 9,
  InternalFailure: 10,
  BrokenConnection: 11,
  Unimplemented: 12,
} as const;

/** proxy_*_header_map_* map types. */
export const HeaderMapType = {
  RequestHeaders: 0,
  RequestTrailers: 1,
  ResponseHeaders: 2,
  ResponseTrailers: 3,
  GrpcReceiveInitialMetadata: 4,
  GrpcReceiveTrailingMetadata: 5,
  HttpCallResponseHeaders: 6,
  HttpCallResponseTrailers: 7,
} as const;
export const HEADER_MAP_TYPE_MAX = 7;

/** proxy_*_buffer_* buffer types. */
export const BufferType = {
  HttpRequestBody: 0,
  HttpResponseBody: 1,
  NetworkDownstreamData: 2,
  NetworkUpstreamData: 3,
  HttpCallResponseBody: 4,
  GrpcReceiveBuffer: 5,
  VmConfiguration: 6,
  PluginConfiguration: 7,
  CallData: 8,
} as const;
export const BUFFER_TYPE_MAX = 8;

/** proxy_define_metric types. */
export const MetricType = { Counter: 0, Gauge: 1, Histogram: 2 } as const;

/** proxy_continue_stream / proxy_close_stream stream types. */
export const StreamType = { Request: 0, Response: 1, Downstream: 2, Upstream: 3 } as const;
export const STREAM_TYPE_MAX = 3;

/** Log levels (trace .. critical), Envoy's spdlog order. */
export const LogLevel = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, critical: 5 } as const;
export const LOG_LEVEL_MAX = 5;

/** Header statuses returned by proxy_on_*_headers. */
export const FilterHeadersStatus = {
  Continue: 0,
  StopIteration: 1,
  ContinueAndEndStream: 2,
  StopAllIterationAndBuffer: 3,
  StopAllIterationAndWatermark: 4,
} as const;

/** FilterDataStatus (body callbacks). */
export const FilterDataStatus = { Continue: 0, StopIterationAndBuffer: 1, StopIterationAndWatermark: 2, StopIterationNoBuffer: 3 } as const;

/** Limits Envoy's host applies to a header-map pairs buffer (proxy-wasm-cpp-host limits.h). */
export const PAIRS_MAX_BYTES = 1024 * 1024;
export const PAIRS_MAX_COUNT = 1024;

/** Envoy's cap on one WASI random_get call. */
export const RANDOM_GET_MAX_BYTES = 64 * 1024;

/** WASI errno values Envoy's host returns. */
export const Errno = {
  Success: 0,
  Badf: 8,
  Fault: 21,
  Inval: 28,
  Noent: 44,
  Nosys: 52,
  Notsup: 58,
  Notdir: 20,
} as const;
