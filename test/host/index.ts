// The proxy-wasm test host: everything the filter tests, the local proxy and the benchmarks use.
export { ManualClock, realClock, type HostClock } from "./clock.js";
export { AbiViolation, VmFailedError } from "./errors.js";
export { FilterVm, type FilterVmOptions, type HostFault, type LogEntry } from "./vm.js";
export { FilterStream, type LocalResponse, type StopRecord } from "./stream.js";
export type { StreamProperties, NodeFacts, PeerAddress, TlsInfo, UpstreamFacts, Locality } from "./stream-info.js";
export { HostProcess } from "./process.js";
export { HeaderList, type HeaderMap } from "./header-list.js";
export { StatsStore, extractTags, istioTagRegex, escapeLabelValue, prometheusMetricName, ENVOY_DEFAULT_BUCKETS, DEFAULT_STAT_TAGS, WASM_CUSTOM_PREFIX } from "./stats.js";
export { encodePairs, decodePairs, pairsByteLength, PairsFormatError, type Pairs } from "./pairs.js";
export { propertyPath, splitPropertyPath, encodeInt64, getProperty } from "./properties.js";
export { WasmResult, HeaderMapType, BufferType, MetricType, StreamType, LogLevel, FilterHeadersStatus, FilterDataStatus } from "./abi.js";
