// proxy_get_property / proxy_set_property as Envoy answers them. The attribute set is Envoy's
// (envoyproxy/envoy source/extensions/filters/common/expr/context.{h,cc} and evaluator.cc
// StreamActivation::FindValue, plus the wasm-only names of source/extensions/common/wasm/context.cc
// Context::findValue), walked segment by segment like Context::getProperty and encoded like
// serializeValue: strings raw, integers/uint64/doubles/durations/timestamps as 8 bytes
// little-endian, booleans as 1 byte, messages as protobuf, maps (and lists) in the pairs format.
// Everything else is NotFound. Envoy >= 1.33 removed the top-level route_name, cluster_name and node.
import { WasmResult } from "./abi.js";
import type { HostCore, StreamState } from "./context.js";
import type { HeaderList } from "./header-list.js";
import { encodeLocality, encodeMetadata, encodeNode, type JsonObject, type JsonValue } from "./proto.js";
import { writableState, type Locality, type NodeFacts, type StreamInfo, type TlsInfo } from "./stream-info.js";

/** A CEL value as Envoy's property lookup produces one. */
export type CelValue =
  | { t: "string"; v: string }
  | { t: "bytes"; v: Uint8Array }
  | { t: "int"; v: bigint }
  | { t: "uint"; v: bigint }
  | { t: "double"; v: number }
  | { t: "bool"; v: boolean }
  | { t: "duration"; ns: bigint }
  | { t: "timestamp"; ns: bigint }
  | { t: "null" }
  /** keys() undefined: Envoy's wrapper maps do not list their keys (BaseWrapper::ListKeys). */
  | { t: "map"; get(key: string): CelValue | undefined; keys(): string[] | undefined }
  | { t: "list"; items: CelValue[] }
  /** A protobuf message: its bytes, and its fields by name (Context::getProperty's IsMessage case). */
  | { t: "message"; bytes(): Uint8Array; field(name: string): CelValue | undefined };

/** What the VM answers in any context (the plugin and Envoy's local info). */
export interface VmFacts {
  rootId: string;
  pluginName: string;
  vmId: string;
  node: NodeFacts;
}

/** Joins property path segments the way a module sends them. */
export function propertyPath(...segments: string[]): string {
  return segments.join("\0");
}

/** Splits a NUL-joined property path into its segments (Context::getProperty). */
export function splitPropertyPath(path: string): string[] {
  return path.split("\0");
}

/** An integer property value: int64, little-endian, 8 bytes. */
export function encodeInt64(v: bigint | number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt.asIntN(64, BigInt(v)));
  return b;
}

const str = (v: string | undefined): CelValue | undefined => (v === undefined ? undefined : { t: "string", v });
const int = (v: number | bigint | undefined): CelValue | undefined => (v === undefined ? undefined : { t: "int", v: BigInt(v) });

// ---- header maps (HeadersWrapper) -------------------------------------------------------------

// HeaderUtility::headerNameIsValid: HTTP token characters (and a leading ':' for pseudo-headers).
const HEADER_NAME = /^:?[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** HeadersWrapper: a key is every value of the header joined by "," (getAllOfHeaderAsString); keys deduplicated. */
function headersMap(h: HeaderList | undefined): CelValue {
  return {
    t: "map",
    get: (key) => {
      if (h === undefined || !HEADER_NAME.test(key)) return undefined;
      const all = h.getAll(key.toLowerCase());
      return all.length === 0 ? undefined : { t: "string", v: all.join(",") };
    },
    keys: () => {
      if (h === undefined) return [];
      const seen = new Set<string>();
      for (const [k] of h.raw()) seen.add(k);
      return [...seen];
    },
  };
}

// ---- messages ------------------------------------------------------------------------------------

/** A google.protobuf.Struct as CEL sees it (CelProtoWrapper unwraps it to a map). */
function structValue(o: JsonObject): CelValue {
  return { t: "map", get: (k) => (Object.hasOwn(o, k) ? jsonValue(o[k]!) : undefined), keys: () => Object.keys(o) };
}

function jsonValue(v: JsonValue): CelValue {
  if (v === null) return { t: "null" };
  if (typeof v === "number") return { t: "double", v };
  if (typeof v === "string") return { t: "string", v };
  if (typeof v === "boolean") return { t: "bool", v };
  if (Array.isArray(v)) return { t: "list", items: v.map(jsonValue) };
  return structValue(v);
}

/** envoy.config.core.v3.Metadata: its one field filter_metadata is a map of Structs. */
function metadataMessage(byNs: Record<string, JsonObject> | undefined): CelValue {
  const m = byNs ?? {};
  const filterMetadata: CelValue = { t: "map", get: (k) => (Object.hasOwn(m, k) ? structValue(m[k]!) : undefined), keys: () => Object.keys(m) };
  return { t: "message", bytes: () => encodeMetadata(m), field: (name) => (name === "filter_metadata" ? filterMetadata : name === "typed_filter_metadata" ? EMPTY_MAP : undefined) };
}

const EMPTY_MAP: CelValue = { t: "map", get: () => undefined, keys: () => [] };

function localityMessage(l: Locality): CelValue {
  const f: Record<string, string> = { region: l.region ?? "", zone: l.zone ?? "", sub_zone: l.subZone ?? "" };
  return { t: "message", bytes: () => encodeLocality(l), field: (name) => (Object.hasOwn(f, name) ? { t: "string", v: f[name]! } : undefined) };
}

function nodeMessage(n: NodeFacts): CelValue {
  return {
    t: "message",
    bytes: () => encodeNode(n),
    field: (name) => {
      switch (name) {
        case "id":
          return { t: "string", v: n.id };
        case "cluster":
          return { t: "string", v: n.cluster };
        case "metadata":
          return structValue(n.metadata ?? {});
        case "locality":
          return localityMessage(n.locality ?? {});
      }
      return undefined;
    },
  };
}

// ---- the wrappers -------------------------------------------------------------------------------

/** A wrapper map (RequestWrapper, ResponseWrapper ...): looks keys up, cannot list them. */
const wrapper = (get: (key: string) => CelValue | undefined): CelValue => ({ t: "map", get, keys: () => undefined });

// SslExtractorsValues: the TLS attributes of connection.* and upstream.*.
function tlsAttribute(tls: TlsInfo | undefined, key: string): CelValue | undefined {
  if (tls === undefined) return undefined;
  switch (key) {
    case "tls_version":
      return str(tls.tlsVersion);
    case "subject_local_certificate":
      return str(tls.subjectLocalCertificate);
    case "subject_peer_certificate":
      return str(tls.subjectPeerCertificate);
    case "uri_san_local_certificate":
      return str(tls.uriSanLocalCertificate);
    case "uri_san_peer_certificate":
      return str(tls.uriSanPeerCertificate);
    case "dns_san_local_certificate":
      return str(tls.dnsSanLocalCertificate);
    case "dns_san_peer_certificate":
      return str(tls.dnsSanPeerCertificate);
    case "sha256_peer_certificate_digest":
      return str(tls.sha256PeerCertificateDigest);
  }
  return undefined;
}

// RequestLookupValues.
function requestAttribute(info: StreamInfo, h: HeaderList | undefined, key: string): CelValue | undefined {
  switch (key) {
    case "headers":
      return headersMap(h);
    case "time":
      return { t: "timestamp", ns: info.startTimeNs };
    case "size": {
      const cl = h?.get("content-length");
      if (cl !== undefined) return /^\d+$/.test(cl) ? int(BigInt(cl)) : undefined;
      return int(info.bytesReceived);
    }
    case "total_size":
      return int(info.bytesReceived + (h?.byteSize() ?? 0));
    case "duration":
      return info.durationNs === undefined ? undefined : { t: "duration", ns: info.durationNs };
    case "protocol":
      return str(info.protocol);
  }
  if (h === undefined) return undefined;
  switch (key) {
    case "path":
      return str(h.get(":path"));
    case "url_path": {
      const p = h.get(":path") ?? "";
      const q = p.indexOf("?");
      return str(q < 0 ? p : p.slice(0, q));
    }
    case "host":
      return str(h.get(":authority"));
    case "scheme":
      return str(h.get(":scheme"));
    case "method":
      return str(h.get(":method"));
    case "referer":
      return str(h.get("referer"));
    case "id":
      return str(h.get("x-request-id"));
    case "useragent":
      return str(h.get("user-agent"));
    case "query": {
      const p = h.get(":path") ?? "";
      const q = p.indexOf("?");
      if (q < 0) return { t: "string", v: "" };
      const rest = p.slice(q + 1);
      const f = rest.indexOf("#");
      return { t: "string", v: f < 0 ? rest : rest.slice(0, f) };
    }
  }
  return undefined;
}

// Grpc::Utility::httpToGrpcStatus: the gRPC status inferred from an HTTP status.
function httpToGrpcStatus(code: number): number {
  switch (code) {
    case 400:
      return 13;
    case 401:
      return 16;
    case 403:
      return 7;
    case 404:
      return 12;
    case 429:
    case 502:
    case 503:
    case 504:
      return 14;
  }
  return 2;
}

// ResponseLookupValues.
function responseAttribute(info: StreamInfo, h: HeaderList | undefined, trailers: HeaderList | undefined, key: string): CelValue | undefined {
  switch (key) {
    case "code":
      return int(info.responseCode);
    case "size":
      return int(info.bytesSent);
    case "headers":
      return headersMap(h);
    case "trailers":
      return headersMap(trailers);
    case "flags":
      return int(info.responseFlags ?? 0);
    case "grpc_status": {
      // Grpc::Common::getGrpcStatus(trailers, headers, info): trailers, then headers, then the HTTP status.
      for (const m of [trailers, h]) {
        const s = m?.get("grpc-status");
        if (s !== undefined && s !== "") return int(/^\d+$/.test(s) && Number(s) <= 16 ? Number(s) : -1);
      }
      return info.responseCode === undefined ? undefined : int(httpToGrpcStatus(info.responseCode));
    }
    case "total_size":
      return int(info.bytesSent + (h?.byteSize() ?? 0) + (trailers?.byteSize() ?? 0));
    case "code_details":
      return str(info.responseCodeDetails);
    case "backend_latency":
      return undefined; // needs upstream byte timings, which the tests do not give
  }
  return undefined;
}

// ConnectionLookupValues.
function connectionAttribute(info: StreamInfo, key: string): CelValue | undefined {
  switch (key) {
    case "mtls":
      return { t: "bool", v: info.downstreamTls?.peerCertificatePresented ?? false };
    case "requested_server_name":
      return { t: "string", v: info.requestedServerName ?? "" };
    case "id":
      return info.connectionId === undefined ? undefined : { t: "uint", v: info.connectionId };
    case "termination_details":
      return str(info.connectionTerminationDetails);
    case "transport_failure_reason":
      return info.downstreamTransportFailureReason ? str(info.downstreamTransportFailureReason) : undefined;
  }
  return tlsAttribute(info.downstreamTls, key);
}

// UpstreamLookupValues.
function upstreamAttribute(info: StreamInfo, key: string): CelValue | undefined {
  const u = info.upstream;
  switch (key) {
    case "address":
      return u === undefined ? undefined : str(u.address);
    case "port":
      return u === undefined ? undefined : int(u.port);
    case "local_address":
      return u === undefined ? undefined : str(u.localAddress);
    case "locality":
      return u === undefined ? undefined : localityMessage(u.locality ?? {});
    case "transport_failure_reason":
      return u === undefined ? undefined : { t: "string", v: u.transportFailureReason ?? "" };
    case "cx_pool_ready_duration":
      return u?.poolReadyNs === undefined ? undefined : { t: "duration", ns: u.poolReadyNs };
    case "request_attempt_count":
      return { t: "uint", v: BigInt(info.attemptCount ?? 0) };
  }
  return tlsAttribute(u?.tls, key);
}

// PeerWrapper (source / destination).
function peerAttribute(peer: { address: string; port: number } | undefined, key: string): CelValue | undefined {
  if (peer === undefined) return undefined;
  if (key === "address") return { t: "string", v: peer.address };
  if (key === "port") return int(peer.port);
  return undefined;
}

// XDSLookupValues; without stream info (a root context) only node is served.
function xdsAttribute(vm: VmFacts, info: StreamInfo | undefined, key: string): CelValue | undefined {
  if (key === "node") return nodeMessage(vm.node);
  if (info === undefined) return undefined;
  switch (key) {
    case "cluster_name":
      return str(info.clusterName);
    case "cluster_metadata":
      return info.clusterName === undefined ? undefined : metadataMessage(info.clusterMetadata);
    case "route_name":
      return str(info.routeName);
    case "route_metadata":
      return info.routeName === undefined ? undefined : metadataMessage(info.routeMetadata);
    case "virtual_host_name":
      return info.routeName === undefined ? undefined : { t: "string", v: info.virtualHostName ?? "" };
    case "virtual_host_metadata":
      return info.routeName === undefined ? undefined : metadataMessage(info.virtualHostMetadata);
    case "upstream_host_metadata":
      return info.upstream === undefined ? undefined : metadataMessage(info.upstream.hostMetadata);
    case "filter_chain_name":
      return { t: "string", v: info.filterChainName ?? "" };
    case "listener_metadata":
      return metadataMessage(info.listenerMetadata);
    case "listener_direction":
      return int(info.listenerDirection ?? 0);
  }
  return undefined;
}

/** The request headers an attribute lookup sees: the live map, else the access-log one (Context::findValue). */
function activationRequestHeaders(s: StreamState): HeaderList | undefined {
  if (s.requestHeadersSet) return s.requestHeaders;
  return s.accessLogPhase ? s.requestHeaders : undefined;
}

function activationResponseHeaders(s: StreamState): HeaderList | undefined {
  if (s.responseHeadersSet) return s.responseHeaders;
  return s.accessLogPhase ? s.responseHeaders : undefined;
}

function activationResponseTrailers(s: StreamState): HeaderList | undefined {
  if (s.responseTrailersSet) return s.responseTrailers;
  return s.accessLogPhase ? s.responseTrailers : undefined;
}

/**
 * `name.key` for the wrapper maps, looked up without making the wrapper (every request reads a few
 * of these); `undefined` as the second element when `name` is not a wrapper.
 */
function wrapperAttribute(name: string, key: string, vm: VmFacts, s: StreamState | undefined): [found: boolean, value: CelValue | undefined] {
  if (name === "xds") return [true, xdsAttribute(vm, s?.info, key)];
  if (s === undefined) return [false, undefined];
  const info = s.info;
  switch (name) {
    case "request":
      return [true, requestAttribute(info, activationRequestHeaders(s), key)];
    case "response":
      return [true, responseAttribute(info, activationResponseHeaders(s), activationResponseTrailers(s), key)];
    case "connection":
      return [true, connectionAttribute(info, key)];
    case "upstream":
      return [true, upstreamAttribute(info, key)];
    case "source":
      return [true, peerAttribute(info.source, key)];
    case "destination":
      return [true, peerAttribute(info.destination, key)];
  }
  return [false, undefined];
}

/** Context::findValue: a top-level name. */
function topLevel(name: string, vm: VmFacts, s: StreamState | undefined): CelValue | undefined {
  const info = s?.info;
  switch (name) {
    case "xds":
      return wrapper((k) => xdsAttribute(vm, info, k));
    case "plugin_name":
      return { t: "string", v: vm.pluginName };
    case "plugin_root_id":
      return { t: "string", v: vm.rootId };
    case "plugin_vm_id":
      return { t: "string", v: vm.vmId };
  }
  if (s === undefined || info === undefined) return undefined;
  switch (name) {
    case "request":
      return wrapper((k) => requestAttribute(info, activationRequestHeaders(s), k));
    case "response":
      return wrapper((k) => responseAttribute(info, activationResponseHeaders(s), activationResponseTrailers(s), k));
    case "connection":
      return wrapper((k) => connectionAttribute(info, k));
    case "upstream":
      return wrapper((k) => upstreamAttribute(info, k));
    case "source":
      return wrapper((k) => peerAttribute(info.source, k));
    case "destination":
      return wrapper((k) => peerAttribute(info.destination, k));
    case "metadata":
      return metadataMessage(info.dynamicMetadata);
    case "filter_state":
      return wrapper((k) => {
        const v = info.state.get(k);
        return v === undefined ? undefined : { t: "bytes", v };
      });
    case "upstream_filter_state":
      return undefined; // no upstream filter state in this host
    case "connection_id":
      return info.connectionId === undefined ? undefined : { t: "uint", v: info.connectionId };
  }
  // Any other name: a CelState the module set with proxy_set_property (filter state "wasm.<name>").
  const state = info.state.get(`wasm.${name}`);
  return state === undefined ? undefined : { t: "bytes", v: state };
}

/** One segment below a value (Context::getProperty's loop). */
function child(value: CelValue, part: string): CelValue | undefined {
  switch (value.t) {
    case "map":
      return value.get(part);
    case "message":
      return value.field(part);
    case "list": {
      if (!/^-?\d+$/.test(part)) return undefined;
      return value.items[Number(part)];
    }
  }
  return undefined;
}

/** serializeValue: the bytes the module gets, or a WasmResult on failure. */
export function serializeValue(value: CelValue): Buffer | string | bigint | number {
  switch (value.t) {
    case "string":
      return value.v;
    case "bytes":
      return Buffer.from(value.v);
    case "int":
    case "uint":
      return value.v;
    case "double": {
      const b = Buffer.alloc(8);
      b.writeDoubleLE(value.v);
      return b;
    }
    case "bool":
      return Buffer.from([value.v ? 1 : 0]);
    case "duration":
      return value.ns;
    case "timestamp":
      return value.ns;
    case "message":
      return Buffer.from(value.bytes());
    case "map": {
      const keys = value.keys();
      if (keys === undefined) return WasmResult.SerializationFailure;
      const pairs: Array<[Buffer, Buffer]> = [];
      for (const k of keys) {
        const v = value.get(k);
        const bytes = v === undefined ? WasmResult.SerializationFailure : serializeValue(v);
        if (typeof bytes === "number") return WasmResult.SerializationFailure;
        pairs.push([Buffer.from(k, "utf8"), toBuffer(bytes)]);
      }
      return pairsOfBuffers(pairs);
    }
    case "list": {
      const pairs: Array<[Buffer, Buffer]> = [];
      for (const item of value.items) {
        const bytes = serializeValue(item);
        if (typeof bytes === "number") return WasmResult.SerializationFailure;
        pairs.push([toBuffer(bytes), Buffer.alloc(0)]);
      }
      return pairsOfBuffers(pairs);
    }
  }
  return WasmResult.SerializationFailure;
}

function toBuffer(v: Buffer | string | bigint): Buffer {
  if (typeof v === "string") return Buffer.from(v, "utf8");
  if (typeof v === "bigint") return encodeInt64(v);
  return v;
}

/** PairsUtil::marshalPairs over byte strings. */
function pairsOfBuffers(pairs: Array<[Buffer, Buffer]>): Buffer {
  let size = 4;
  for (const [k, v] of pairs) size += 8 + k.length + 1 + v.length + 1;
  const out = Buffer.alloc(size);
  out.writeUInt32LE(pairs.length, 0);
  let at = 4 + 8 * pairs.length;
  pairs.forEach(([k, v], i) => {
    out.writeUInt32LE(k.length, 4 + 8 * i);
    out.writeUInt32LE(v.length, 8 + 8 * i);
    k.copy(out, at);
    at += k.length + 1;
    v.copy(out, at);
    at += v.length + 1;
  });
  return out;
}

const SPLIT_CACHE = new Map<string, string[]>();
const NOT_A_WRAPPER: [boolean, CelValue | undefined] = [false, undefined];

/**
 * Context::getProperty: the serialized value at `path`, or a WasmResult (NotFound,
 * SerializationFailure). An empty path, or one ending in NUL, stops at the segment before.
 */
export function getProperty(path: string, vm: VmFacts, s: StreamState | undefined): Buffer | string | bigint | number {
  let parts = SPLIT_CACHE.get(path);
  if (parts === undefined) {
    parts = path.split("\0");
    if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
    if (SPLIT_CACHE.size < 4096) SPLIT_CACHE.set(path, parts);
  }
  if (path.length === 0) return WasmResult.SerializationFailure; // no segment: an empty CelValue
  let value: CelValue | undefined;
  let next = 1;
  const direct = parts.length > 1 ? wrapperAttribute(parts[0]!, parts[1]!, vm, s) : NOT_A_WRAPPER;
  if (direct[0]) {
    value = direct[1];
    next = 2;
  } else {
    value = topLevel(parts[0]!, vm, s);
  }
  for (let i = next; i < parts.length && value !== undefined; i++) value = child(value, parts[i]!);
  if (value === undefined) return WasmResult.NotFound;
  return serializeValue(value);
}

/** Context::setProperty: a CelState in the stream's filter state under "wasm.<path>"; NotFound without a stream. */
export function setProperty(path: string, value: Buffer, s: StreamState | undefined): number {
  if (s === undefined) return WasmResult.NotFound;
  writableState(s.info).set(`wasm.${path}`, value);
  return WasmResult.Ok;
}

/** The property host calls. */
export function propertyImports(core: HostCore, vm: () => VmFacts): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    proxy_get_property: (pathPtr: number, pathSize: number, valuePtrPtr: number, valueSizePtr: number): number => {
      const path = core.mem.string(u(pathPtr), u(pathSize), "proxy_get_property path");
      const value = getProperty(path, vm(), core.stream());
      if (typeof value === "number") return value;
      return core.copyOut(value, u(valuePtrPtr), u(valueSizePtr), "proxy_get_property");
    },
    proxy_set_property: (pathPtr: number, pathSize: number, valuePtr: number, valueSize: number): number => {
      const path = core.mem.string(u(pathPtr), u(pathSize), "proxy_set_property path");
      const value = Buffer.from(core.mem.bytes(u(valuePtr), u(valueSize), "proxy_set_property value"));
      return setProperty(path, value, core.stream());
    },
  };
}

