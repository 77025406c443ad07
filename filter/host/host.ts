// The only module that calls the host. The SDK's own wrappers throw (and so abort the VM, taking
// every later request on the worker with it) on ordinary conditions such as an absent property
// or a failed metric definition (REFERENCE section 1); these wrappers call the raw imports and
// report failure as a value instead.
import * as imports from "@solo-io/proxy-runtime/assembly/imports";
import { endLoan, forgetAllocation, lend, REFUSED, releaseAllocation, TAKEN_MANAGED, takeAllocation } from "./host-memory";
import { sameBytes } from "../bytes";

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "random_get")
declare function wasi_random_get(buf: usize, length: usize): u16;

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "environ_sizes_get")
declare function wasi_environ_sizes_get(count: usize, size: usize): u16;
// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "environ_get")
declare function wasi_environ_get(pointers: usize, buffer: usize): u16;

const OK: u32 = 0;
const NOT_FOUND: u32 = 1;

export const enum HeaderMap { Request = 0, Response = 2 }
export const enum MetricKind { Counter = 0, Gauge = 1, Histogram = 2 }
export const enum LogLevel { Trace = 0, Debug = 1, Info = 2, Warn = 3, Error = 4, Critical = 5 }
const PLUGIN_CONFIGURATION_BUFFER: i32 = 7;

/** Returned by defineMetric when the host refused the definition. */
export const NO_METRIC: u32 = u32.MAX_VALUE;

// Out-parameters the host writes into (a pointer and a size).
const OUT_PTR: usize = memory.data(4);
const OUT_SIZE: usize = memory.data(4);
const OUT_U64: usize = memory.data(8);

/** Bytes the host handed over in managed buffers since the last collection. */
let bytesSinceCollect: usize = 0;
/** Garbage allowed to pile up inside a stream before a collection, when bodies stream through. */
const COLLECT_AFTER_BYTES: usize = 1 << 20;
/**
 * Garbage allowed between streams: a burst of requests with long header values (Envoy allows 60 KiB
 * per request) would otherwise leave up to 128 streams' worth behind before the next collection.
 */
const COLLECT_AFTER_STREAM_BYTES: usize = 192 << 10;
/** Streams between two collections when values are short: a collection marks the whole configuration and stat tables. */
const COLLECT_EVERY_STREAMS: i32 = 128;
let streamsSinceCollect: i32 = 0;

/**
 * Collects when enough host buffers were taken since the last collection. Call only at a safe
 * point: the end of a callback, where no managed object is referenced from the stack alone.
 */
export function collectIfDue(): void {
  if (bytesSinceCollect >= COLLECT_AFTER_BYTES) collectNow();
}

/** At the end of a stream (a safe point): collects after enough streams, or enough bytes taken. */
export function collectAfterStream(): void {
  if (++streamsSinceCollect >= COLLECT_EVERY_STREAMS || bytesSinceCollect >= COLLECT_AFTER_STREAM_BYTES) collectNow();
}

export function collectNow(): void {
  bytesSinceCollect = 0;
  streamsSinceCollect = 0;
  __collect();
}

/** Counts host calls that failed unexpectedly; the stream reads and reports it. */
let failedCalls: u32 = 0;

/** Host calls that failed since the last call (and resets the count). */
export function takeFailedHostCalls(): u32 {
  const n = failedCalls;
  failedCalls = 0;
  return n;
}

/**
 * Takes ownership of a buffer the host allocated through our exported malloc (which pins it);
 * unpinning hands it to the GC once the returned ArrayBuffer is unreachable.
 */
function takeHostBuffer(): ArrayBuffer | null {
  const ptr = load<usize>(OUT_PTR);
  const size = load<u32>(OUT_SIZE);
  if (ptr == 0) {
    releaseAllocation();
    if (size == 0) return new ArrayBuffer(0);
    failedCalls++; // a size without a pointer
    return null;
  }
  // Only the buffer the host allocated in this call, up to its size, is ever read.
  if (takeAllocation(ptr, size) != TAKEN_MANAGED) {
    failedCalls++;
    return null;
  }
  const buffer = changetype<ArrayBuffer>(ptr);
  __unpin(ptr);
  bytesSinceCollect += size;
  if (<u32>buffer.byteLength != size) return buffer.slice(0, <i32>size);
  return buffer;
}

/** Clears the out-parameters and forgets earlier allocations before a host call whose answer is taken. */
function resetOut(): void {
  store<usize>(OUT_PTR, 0);
  store<u32>(OUT_SIZE, 0);
  forgetAllocation();
}

/** UTF-8 bytes of a name or property path, encoded once (at start-up or configuration), not per request. */
export function utf8(s: string): ArrayBuffer {
  return String.UTF8.encode(s);
}

/**
 * A value read in place: the host copies it into this slot's static bytes (host-memory.ts), where
 * it stays until the slot is read into again, so it is never kept across callbacks. A value
 * larger than the slot arrives in a managed buffer, held here while it is in use.
 */
export class HostValue {
  /** Where the value's bytes are (valid when present). */
  ptr: usize = 0;
  /** Its length in bytes; -1 when absent. */
  length: i32 = -1;
  overflow: ArrayBuffer | null = null;

  constructor(public readonly base: usize, public readonly capacity: i32) {}

  get present(): bool {
    return this.length >= 0;
  }

  clear(): void {
    this.length = -1;
    this.overflow = null;
  }

  /** A managed copy, for a value that must outlive the callback (empty when absent). */
  copy(): ArrayBuffer {
    const n = this.length < 0 ? 0 : this.length;
    const out = new ArrayBuffer(n);
    memory.copy(changetype<usize>(out), this.ptr, n);
    return out;
  }
}

/** Settles the value of a successful host read into `into`; false when the host's answer is malformed. */
function takeInto(into: HostValue): bool {
  const ptr = load<usize>(OUT_PTR);
  const size = load<u32>(OUT_SIZE);
  if (ptr == 0) {
    releaseAllocation();
    if (size != 0) {
      failedCalls++; // a size without a pointer
      return false;
    }
    into.ptr = into.base;
    into.length = 0;
    return true;
  }
  // Only what the host allocated in this call (the lent slot or a managed buffer), up to its size.
  const taken = takeAllocation(ptr, size);
  if (taken == REFUSED) {
    failedCalls++;
    return false;
  }
  if (taken == TAKEN_MANAGED) {
    __unpin(ptr);
    into.overflow = changetype<ArrayBuffer>(ptr);
    bytesSinceCollect += size;
  }
  into.ptr = ptr;
  into.length = <i32>size;
  return true;
}

/** Readies a read into `into`: its slot is lent to the host for the one call that follows. */
function beginRead(into: HostValue): void {
  into.clear();
  resetOut();
  lend(into.base, into.capacity);
}

/** Settles a read begun with beginRead from the host call's status; false when absent or refused. */
function endRead(status: u32, into: HostValue): bool {
  endLoan();
  if (status == OK) return takeInto(into);
  releaseAllocation();
  if (status != NOT_FOUND) failedCalls++;
  return false;
}

/** Reads a property into `into`; false when absent. `path` is the NUL-joined segments, UTF-8. */
export function readProperty(path: ArrayBuffer, into: HostValue): bool {
  beginRead(into);
  return endRead(imports.proxy_get_property(changetype<usize>(path), path.byteLength, OUT_PTR, OUT_SIZE), into);
}

/** Reads a header into `into`; false when absent. */
export function readHeader(map: HeaderMap, name: ArrayBuffer, into: HostValue): bool {
  beginRead(into);
  return endRead(imports.proxy_get_header_map_value(map, changetype<usize>(name), name.byteLength, OUT_PTR, OUT_SIZE), into);
}

/** Reads a whole header map, every value of every name, in the pairs format into `into`; false when the host refused. */
export function readHeaderPairs(map: HeaderMap, into: HostValue): bool {
  beginRead(into);
  const status = imports.proxy_get_header_map_pairs(map, OUT_PTR, OUT_SIZE);
  if (status == NOT_FOUND) failedCalls++; // a header map is never absent
  return endRead(status, into);
}

const INT_VALUE = new HostValue(memory.data(8), 8);

/** An integer property (8 bytes little-endian), or `fallback` when absent or malformed. */
export function getIntProperty(path: ArrayBuffer, fallback: i64): i64 {
  if (!readProperty(path, INT_VALUE) || INT_VALUE.length != 8) return fallback;
  return load<i64>(INT_VALUE.ptr);
}

/** Sets a header to exactly one value (adds it when absent) from `length` bytes at `value`. */
export function setHeader(map: HeaderMap, name: ArrayBuffer, value: usize, length: i32): bool {
  const status = imports.proxy_replace_header_map_value(map, changetype<usize>(name), name.byteLength, value, length);
  if (status != OK) failedCalls++;
  return status == OK;
}

export function setHeaderBytes(map: HeaderMap, name: ArrayBuffer, value: ArrayBuffer): bool {
  return setHeader(map, name, changetype<usize>(value), value.byteLength);
}

export function removeHeader(map: HeaderMap, name: ArrayBuffer): bool {
  const status = imports.proxy_remove_header_map_value(map, changetype<usize>(name), name.byteLength);
  if (status != OK && status != NOT_FOUND) failedCalls++;
  return status == OK;
}

/** The plugin configuration handed to proxy_on_configure, as text. */
export function readPluginConfiguration(size: u32): string | null {
  if (size == 0) return "";
  resetOut();
  const status = imports.proxy_get_buffer_bytes(PLUGIN_CONFIGURATION_BUFFER, 0, size, OUT_PTR, OUT_SIZE);
  if (status != OK) {
    releaseAllocation();
    failedCalls++;
    return null;
  }
  const raw = takeHostBuffer();
  return raw === null ? null : String.UTF8.decode(raw);
}

/** Defines (or looks up) a metric; NO_METRIC when the host refuses. */
export function defineMetric(kind: MetricKind, name: string): u32 {
  const n = String.UTF8.encode(name);
  const status = imports.proxy_define_metric(kind, changetype<usize>(n), n.byteLength, OUT_PTR);
  if (status != OK) {
    failedCalls++;
    return NO_METRIC;
  }
  return load<u32>(OUT_PTR);
}

/** Adds `delta` (> 0, as Envoy requires for counters) to a counter. */
export function incrementCounter(id: u32, delta: i64): void {
  if (id == NO_METRIC || delta <= 0) return;
  if (imports.proxy_increment_metric(id, delta) != OK) failedCalls++;
}

export function recordHistogram(id: u32, value: u64): void {
  if (id == NO_METRIC) return;
  if (imports.proxy_record_metric(id, value) != OK) failedCalls++;
}

/** Wall-clock nanoseconds since the epoch, as the host sees them. */
export function nowNs(): u64 {
  if (imports.proxy_get_current_time_nanoseconds(OUT_U64) != OK) {
    failedCalls++;
    return 0;
  }
  return load<u64>(OUT_U64);
}

// Host randomness is drawn 4 KiB at a time (Envoy serves up to 64 KiB per random_get) and handed
// out in order: the same byte stream as one call per request, at one call per ~100 requests.
const RANDOM_POOL_BYTES: i32 = 4096;
const RANDOM_POOL: usize = memory.data(RANDOM_POOL_BYTES);
let randomPoolUsed: i32 = RANDOM_POOL_BYTES;

/** Fills `length` (<= 4096) bytes at `ptr` with host randomness (WASI random_get, pooled). */
export function fillRandom(ptr: usize, length: i32): bool {
  let done = 0;
  while (done < length) {
    if (randomPoolUsed == RANDOM_POOL_BYTES) {
      if (wasi_random_get(RANDOM_POOL, RANDOM_POOL_BYTES) != 0) {
        failedCalls++;
        return false;
      }
      randomPoolUsed = 0;
    }
    const available = RANDOM_POOL_BYTES - randomPoolUsed;
    const n = length - done < available ? length - done : available;
    memory.copy(ptr + done, RANDOM_POOL + randomPoolUsed, n);
    // Handed-out bytes are wiped, so the pool never holds an id already in use.
    memory.fill(RANDOM_POOL + randomPoolUsed, 0, n);
    randomPoolUsed += n;
    done += n;
  }
  return true;
}

/** Largest environment (vmConfig.env) read: names and values together. */
const MAX_ENVIRONMENT_BYTES: u32 = 64 << 10;

/**
 * The value of environment variable `name` (WASI environ_get: Envoy's vmConfig.env), or null when
 * absent or the environment cannot be read. The caller owns the copy (wipe it when it is a secret).
 */
export function readEnv(name: string): ArrayBuffer | null {
  if (wasi_environ_sizes_get(OUT_PTR, OUT_SIZE) != 0) {
    failedCalls++;
    return null;
  }
  const count = load<u32>(OUT_PTR);
  const size = load<u32>(OUT_SIZE);
  if (count == 0 || size > MAX_ENVIRONMENT_BYTES || count > size) return null;
  const pointers = new ArrayBuffer(<i32>count * 4);
  const buffer = new ArrayBuffer(<i32>size);
  const base = changetype<usize>(buffer);
  let found: ArrayBuffer | null = null;
  if (wasi_environ_get(changetype<usize>(pointers), base) != 0) {
    failedCalls++;
  } else {
    const key = String.UTF8.encode(name + "=");
    const k = key.byteLength;
    for (let i: u32 = 0; i < count && found === null; i++) {
      const entry = load<usize>(changetype<usize>(pointers) + (<usize>i << 2));
      if (entry < base || entry + <usize>k > base + size || !sameBytes(entry, changetype<usize>(key), k)) continue;
      let end = entry + k;
      while (end < base + size && load<u8>(end) != 0) end++;
      const value = new ArrayBuffer(<i32>(end - entry - k));
      memory.copy(changetype<usize>(value), entry + k, value.byteLength);
      found = value;
    }
  }
  memory.fill(base, 0, size); // the environment may hold other secrets: no copy outlives the call
  return found;
}

export function log(level: LogLevel, message: string): void {
  const m = String.UTF8.encode(message);
  imports.proxy_log(level, changetype<usize>(m), m.byteLength);
}

export const enum BodyBuffer { Request = 0, Response = 1 }

/** `length` bytes of the body chunk being processed, or null when the host has none. */
export function getBodyBytes(which: BodyBuffer, length: i32): ArrayBuffer | null {
  if (length <= 0) return null;
  resetOut();
  const status = imports.proxy_get_buffer_bytes(which, 0, length, OUT_PTR, OUT_SIZE);
  if (status != OK) {
    releaseAllocation();
    if (status != NOT_FOUND) failedCalls++;
    return null;
  }
  return takeHostBuffer();
}

/**
 * Reads `length` bytes of the body chunk being processed into `into`: in place when they fit its
 * slot (a streamed response's chunk, one per token, then leaves nothing for the collector); false
 * when the host has none.
 */
export function readBody(which: BodyBuffer, length: i32, into: HostValue): bool {
  if (length <= 0) {
    into.clear();
    return false;
  }
  beginRead(into);
  return endRead(imports.proxy_get_buffer_bytes(which, 0, length, OUT_PTR, OUT_SIZE), into);
}

/** Header map of an HTTP call's response (readable in proxy_on_http_call_response). */
export const HTTP_CALL_RESPONSE_HEADERS: i32 = 6;

/**
 * Starts an HTTP call to a cluster (proxy_http_call); returns its token, or -1 when the host
 * refused it (unknown cluster, bad headers). `headerPairs` is in the pairs format.
 */
export function httpCall(cluster: ArrayBuffer, headerPairs: ArrayBuffer, body: ArrayBuffer, timeoutMs: u32): i64 {
  const status = imports.proxy_http_call(
    changetype<usize>(cluster), cluster.byteLength,
    changetype<usize>(headerPairs), headerPairs.byteLength,
    changetype<usize>(body), body.byteLength,
    0, 0, timeoutMs, OUT_PTR,
  );
  if (status != OK) {
    failedCalls++;
    return -1;
  }
  return <i64>load<u32>(OUT_PTR);
}

/** Reads a header of the HTTP call response being delivered into `into`; false when absent. */
export function readHttpCallResponseHeader(name: ArrayBuffer, into: HostValue): bool {
  return readHeader(<HeaderMap>HTTP_CALL_RESPONSE_HEADERS, name, into);
}

/** The `:status` of an HTTP call response, read in place by whoever handles the response. */
export const HTTP_CALL_STATUS = new HostValue(memory.data(16), 16);

const CAS_MISMATCH: u32 = 8;
const OUT_CAS: usize = memory.data(4);

/**
 * Reads shared data (proxy_get_shared_data: one store for every worker's VM of this plugin) into
 * `into`; returns its CAS value, 0 when the key is absent, -1 when the host failed.
 */
export function getSharedData(key: ArrayBuffer, into: HostValue): i64 {
  beginRead(into);
  store<u32>(OUT_CAS, 0);
  const status = imports.proxy_get_shared_data(changetype<usize>(key), key.byteLength, OUT_PTR, OUT_SIZE, OUT_CAS);
  endLoan();
  if (status == OK) return takeInto(into) ? <i64>load<u32>(OUT_CAS) : -1;
  releaseAllocation();
  if (status == NOT_FOUND) return 0;
  failedCalls++;
  return -1;
}

/** proxy_set_shared_data of `length` bytes at `value`, if the key's CAS is still `cas` (0: whatever it is). */
export function setSharedData(key: ArrayBuffer, value: usize, length: i32, cas: u32): SharedWrite {
  const status = imports.proxy_set_shared_data(changetype<usize>(key), key.byteLength, value, length, cas);
  if (status == OK) return SharedWrite.Ok;
  if (status == CAS_MISMATCH) return SharedWrite.CasMismatch;
  failedCalls++;
  return SharedWrite.Failed;
}

export const enum SharedWrite { Ok, CasMismatch, Failed }

export function setTickPeriodMs(ms: u32): void {
  if (imports.proxy_set_tick_period_milliseconds(ms) != OK) failedCalls++;
}

/** Encodes header pairs in the proxy-wasm pairs format (count, sizes, then NUL-terminated bytes). */
export function encodePairs(names: Array<ArrayBuffer>, values: Array<ArrayBuffer>): ArrayBuffer {
  const n = names.length;
  let size = 4 + 8 * n;
  for (let i = 0; i < n; i++) size += names[i].byteLength + 1 + values[i].byteLength + 1;
  const out = new ArrayBuffer(size);
  const p = changetype<usize>(out);
  store<u32>(p, n);
  let at = p + 4 + 8 * n;
  for (let i = 0; i < n; i++) {
    const k = names[i];
    const v = values[i];
    store<u32>(p + 4 + 8 * i, k.byteLength);
    store<u32>(p + 8 + 8 * i, v.byteLength);
    memory.copy(at, changetype<usize>(k), k.byteLength);
    at += k.byteLength + 1; // the NUL is already zero
    memory.copy(at, changetype<usize>(v), v.byteLength);
    at += v.byteLength + 1;
  }
  return out;
}

const HTTP_CALL_RESPONSE_BODY: i32 = 4;

/** The body of the HTTP call response being delivered, or null. */
export function getHttpCallResponseBody(size: u32): ArrayBuffer | null {
  if (size == 0) return new ArrayBuffer(0);
  resetOut();
  const status = imports.proxy_get_buffer_bytes(HTTP_CALL_RESPONSE_BODY, 0, size, OUT_PTR, OUT_SIZE);
  if (status != OK) {
    releaseAllocation();
    failedCalls++;
    return null;
  }
  return takeHostBuffer();
}

/** Replaces the whole body buffer being processed (`length` bytes) with `data` (proxy_set_buffer_bytes). */
export function replaceBody(which: BodyBuffer, length: i32, data: ArrayBuffer): bool {
  // The SDK declares proxy_set_buffer_bytes under the name proxy_set_buffer_status (our patch binds it right).
  const status = imports.proxy_set_buffer_status(which, 0, length, changetype<usize>(data), data.byteLength);
  if (status != OK) failedCalls++;
  return status == OK;
}
