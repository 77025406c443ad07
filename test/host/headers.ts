// The header-map host calls with Envoy's lifetimes (envoyproxy/envoy
// source/extensions/common/wasm/context.cc, Context::getMap / getConstMap and the calls on them;
// proxy-wasm-cpp-host src/exports.cc for the ABI side). A stream's maps live as long as the stream,
// but the Context points at one only while its callback runs or the stream is stopped there; any
// other access gets Envoy's status, never a value.
import { HeaderMapType, HEADER_MAP_TYPE_MAX, WasmResult } from "./abi.js";
import type { HostCore, StreamState } from "./context.js";
import { HeaderList } from "./header-list.js";
import { pairsMaxByteLength, writePairs } from "./pairs.js";

/** Where header maps are encoded before the module's malloc gives them a place (grows to the largest map). */
let pairsScratch = Buffer.allocUnsafe(4096);

/** The HTTP call response being delivered (Context::http_call_response_ of the root context). */
export interface HttpCallMaps {
  headers: HeaderList;
  /** Absent when the response had no trailers (ResponseMessage::trailers() is null). */
  trailers: HeaderList | undefined;
}

/** Context::getMap: the map a write (or a size) may use, or undefined for BadArgument. */
export function writableMap(s: StreamState | undefined, type: number): HeaderList | undefined {
  if (s === undefined) return undefined; // a root context points at no stream map
  switch (type) {
    case HeaderMapType.RequestHeaders:
      return s.requestHeadersSet ? s.requestHeaders : undefined;
    case HeaderMapType.RequestTrailers:
      // Trailers can be added in the last request body callback (decoder_callbacks_->addDecodedTrailers()).
      if (!s.requestTrailersSet && s.requestBody !== undefined && s.endOfStream) {
        s.requestTrailers = new HeaderList([], "trailers");
        s.requestTrailersSet = true;
      }
      return s.requestTrailersSet ? s.requestTrailers : undefined;
    case HeaderMapType.ResponseHeaders:
      return s.responseHeadersSet ? s.responseHeaders : undefined;
    case HeaderMapType.ResponseTrailers:
      if (!s.responseTrailersSet && s.responseBody !== undefined && s.endOfStream) {
        s.responseTrailers = new HeaderList([], "trailers");
        s.responseTrailersSet = true;
      }
      return s.responseTrailersSet ? s.responseTrailers : undefined;
  }
  return undefined; // gRPC metadata and HTTP call responses are never writable
}

/** Context::getConstMap: the map a read uses, or undefined. In proxy_on_log, the access-log maps. */
export function readableMap(s: StreamState | undefined, type: number, httpCall: () => HttpCallMaps | undefined): HeaderList | undefined {
  switch (type) {
    case HeaderMapType.HttpCallResponseHeaders:
      return httpCall()?.headers;
    case HeaderMapType.HttpCallResponseTrailers:
      return httpCall()?.trailers;
    case HeaderMapType.GrpcReceiveInitialMetadata:
    case HeaderMapType.GrpcReceiveTrailingMetadata:
      return undefined; // gRPC is not emulated: never inside a gRPC callback
  }
  if (s === undefined) return undefined;
  if (s.accessLogPhase) {
    // Context::log sets the access-log request/response headers and response trailers; no request trailers.
    if (type === HeaderMapType.RequestHeaders) return s.requestHeaders;
    if (type === HeaderMapType.ResponseHeaders) return s.responseHeaders;
    if (type === HeaderMapType.ResponseTrailers) return s.responseTrailers;
    return undefined;
  }
  switch (type) {
    case HeaderMapType.RequestHeaders:
      return s.requestHeadersSet ? s.requestHeaders : undefined;
    case HeaderMapType.RequestTrailers:
      return s.requestTrailersSet ? s.requestTrailers : undefined;
    case HeaderMapType.ResponseHeaders:
      return s.responseHeadersSet ? s.responseHeaders : undefined;
  }
  return s.responseTrailersSet ? s.responseTrailers : undefined;
}

/** The header-map host calls. `httpCall` is the response being delivered to the current root, if any. */
export function headerImports(core: HostCore, httpCall: () => HttpCallMaps | undefined): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    // get_header_map_value / Context::getHeaderMapValue: the first value; no map: NotFound while logging, else BadArgument.
    proxy_get_header_map_value: (type: number, keyPtr: number, keySize: number, valuePtrPtr: number, valueSizePtr: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const key = core.mem.string(u(keyPtr), u(keySize), "proxy_get_header_map_value key");
      const s = core.stream();
      const map = readableMap(s, u(type), httpCall);
      if (map === undefined) return s?.accessLogPhase ? WasmResult.NotFound : WasmResult.BadArgument;
      const v = map.get(key);
      if (v === undefined) return WasmResult.NotFound;
      return core.copyOut(v, u(valuePtrPtr), u(valueSizePtr), "proxy_get_header_map_value");
    },
    // add_header_map_value / Context::addHeaderMapValue: addCopy on the writable map.
    proxy_add_header_map_value: (type: number, keyPtr: number, keySize: number, valuePtr: number, valueSize: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const key = core.mem.string(u(keyPtr), u(keySize), "proxy_add_header_map_value key");
      const value = core.mem.string(u(valuePtr), u(valueSize), "proxy_add_header_map_value value");
      const map = writableMap(core.stream(), u(type));
      if (map === undefined) return WasmResult.BadArgument;
      map.add(key, value);
      return WasmResult.Ok;
    },
    // replace_header_map_value / Context::replaceHeaderMapValue: setCopy (every value goes, one stays).
    proxy_replace_header_map_value: (type: number, keyPtr: number, keySize: number, valuePtr: number, valueSize: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const key = core.mem.string(u(keyPtr), u(keySize), "proxy_replace_header_map_value key");
      const value = core.mem.string(u(valuePtr), u(valueSize), "proxy_replace_header_map_value value");
      const map = writableMap(core.stream(), u(type));
      if (map === undefined) return WasmResult.BadArgument;
      map.replace(key, value);
      return WasmResult.Ok;
    },
    // remove_header_map_value / Context::removeHeaderMapValue: every value of the name; Ok when absent.
    proxy_remove_header_map_value: (type: number, keyPtr: number, keySize: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const key = core.mem.string(u(keyPtr), u(keySize), "proxy_remove_header_map_value key");
      const map = writableMap(core.stream(), u(type));
      if (map === undefined) return WasmResult.BadArgument;
      map.remove(key);
      return WasmResult.Ok;
    },
    // get_header_map_pairs / Context::getHeaderMapPairs: every entry; a missing map is an empty one (Ok).
    proxy_get_header_map_pairs: (type: number, ptrPtr: number, sizePtr: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const map = readableMap(core.stream(), u(type), httpCall);
      const pairs = map === undefined ? [] : map.raw();
      if (pairs.length === 0) return core.copyOut("", u(ptrPtr), u(sizePtr), "proxy_get_header_map_pairs");
      // Encoded once, into scratch, then copied: sizing it first took a second pass over every string.
      const max = pairsMaxByteLength(pairs);
      if (pairsScratch.length < max) pairsScratch = Buffer.allocUnsafe(Math.max(max, 2 * pairsScratch.length));
      const size = writePairs(pairs, pairsScratch, 0);
      const ptr = core.alloc(size, "proxy_get_header_map_pairs");
      if (ptr === 0) return WasmResult.InvalidMemoryAccess;
      core.mem.view().set(pairsScratch.subarray(0, size), ptr);
      core.writeOut(u(ptrPtr), u(sizePtr), ptr, size, "proxy_get_header_map_pairs");
      return WasmResult.Ok;
    },
    // set_header_map_pairs / Context::setHeaderMapPairs: every entry removed, the pairs added.
    proxy_set_header_map_pairs: (type: number, ptr: number, size: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const pairs = core.readPairs(u(ptr), u(size), "proxy_set_header_map_pairs");
      const map = writableMap(core.stream(), u(type));
      if (map === undefined) return WasmResult.BadArgument;
      map.setAll(pairs);
      return WasmResult.Ok;
    },
    // get_header_map_size / Context::getHeaderMapSize: byteSize of the writable map (getMap, not getConstMap).
    proxy_get_header_map_size: (type: number, sizePtr: number): number => {
      if (u(type) > HEADER_MAP_TYPE_MAX) return WasmResult.BadArgument;
      const map = writableMap(core.stream(), u(type));
      if (map === undefined) return WasmResult.BadArgument;
      core.mem.u32(u(sizePtr), map.byteSize(), "proxy_get_header_map_size");
      return WasmResult.Ok;
    },
  };
}
