// The state the host keeps per context, named after the fields of Envoy's Context
// (envoyproxy/envoy source/extensions/common/wasm/context.h) and cpp-host's ContextBase, and the
// core every host-call area (headers, bodies, properties ...) works through.
import type { HostClock } from "./clock.js";
import type { HeaderList } from "./header-list.js";
import type { Memory } from "./memory.js";
import type { Pairs } from "./pairs.js";
import type { StreamInfo } from "./stream-info.js";

const EMPTY = Buffer.alloc(0);

/** A local reply the filter asked for with proxy_send_local_response. */
export interface LocalResponse {
  statusCode: number;
  details: string;
  body: Buffer;
  headers: Pairs;
  grpcStatus: number;
}

/** One callback that did not let the stream go on: the module's status and what Envoy made of it. */
export interface StopRecord {
  callback: string;
  /** What the module returned. */
  status: number;
  /** The filter status Envoy acted on (cpp-host's convertVmCallResultTo*Status, forced after a local reply). */
  filterStatus: number;
}

/** One HTTP stream context, as Envoy's Context and the filter manager keep it. */
export interface StreamState {
  id: number;
  /** The root context the stream was created under (its parent). */
  rootId: number;
  /** in_vm_context_created_: proxy_on_context_create ran (Envoy runs it with the request headers). */
  created: boolean;
  /** Every callback ran, the stream is gone. */
  ended: boolean;
  info: StreamInfo;

  // The maps of the stream, alive for the stream (Envoy's filter manager owns them) ...
  requestHeaders?: HeaderList;
  requestTrailers?: HeaderList;
  responseHeaders?: HeaderList;
  responseTrailers?: HeaderList;
  // ... and whether the Context points at each (request_headers_ etc.): only then may the module use it.
  requestHeadersSet: boolean;
  requestTrailersSet: boolean;
  responseHeadersSet: boolean;
  responseTrailersSet: boolean;
  /** access_log_phase_: inside proxy_on_log, where the access-log maps are readable. */
  accessLogPhase: boolean;
  /** end_of_stream_: one flag for both directions, as in Envoy's Context. */
  endOfStream: boolean;

  /** request_body_buffer_ / response_body_buffer_: the chunk of the current or last stopped body callback. */
  requestBody?: Buffer;
  responseBody?: Buffer;
  /** buffering_*_body_: the last body callback returned StopIterationAndBuffer. */
  bufferingRequest: boolean;
  bufferingResponse: boolean;
  /** The filter manager's decoding/encoding buffer while the filter buffers. */
  requestBuffered?: Buffer;
  responseBuffered?: Buffer;
  /**
   * FilterManager state_.decoder_filters_streaming_: whether the filter that holds request data
   * let it stream (watermarks pause the downstream) or buffers it whole (over the limit: 413).
   */
  decoderStreaming: boolean;
  /** What went on (upstream / downstream) from the last body callback of each direction. */
  lastRequestChunk: Buffer;
  lastResponseChunk: Buffer;

  inCallback: string | undefined;
  lastStatus: number | undefined;
  stops: StopRecord[];
  continueCalls: number[];
  closeCalls: number[];
  /** Why each direction of the filter chain is stopped at this filter (cleared by continue). */
  pausedBy: { request?: string; response?: string };
  /** end_of_stream seen per direction: Envoy calls nothing more for it. */
  requestDone: boolean;
  responseDone: boolean;
  /** The response started through the filter chain (encodeHeaders reached this filter). */
  responseStarted: boolean;
  /** The response headers went on from this filter (toward the codec). */
  responseEncoded: boolean;
  localResponse?: LocalResponse;
}

/** A root context: one per plugin configuration (Envoy's ECDS makes a new one per update). */
export interface RootState {
  id: number;
  /** active: takes new streams; retired: replaced, waits for its streams; pendingDone: on_done said false. */
  state: "active" | "retired" | "pendingDone" | "deleted";
  streams: number;
  /** Configuration bytes of the plugin (readable while Envoy holds temp_plugin_). */
  pluginConfig: Buffer;
  /** Tick period in ms (Wasm::setTimerPeriod keeps one per root context); 0: none. */
  tickMs: number;
  /** Context::status_code_ / status_message_, what proxy_get_status answers (set by HTTP call failures). */
  statusCode: number;
  statusMessage: string;
}

/** What a host-call area needs from its VM. */
export interface HostCore {
  readonly mem: Memory;
  readonly clock: HostClock;
  /** The context the current host call acts on (cpp-host's contextOrEffectiveContext). */
  contextId(): number;
  /** The stream context the current call acts on, if it is one. */
  stream(): StreamState | undefined;
  /** Throws AbiViolation when the current context is not a stream (calls Envoy has no stream for). */
  requireStream(call: string): StreamState;
  root(id: number): RootState | undefined;
  /** The root context of a context (the context itself when it is one). */
  rootOf(contextId: number): RootState | undefined;
  /** WasmBase::copyToPointerSize: malloc in the module, copy, write pointer and size. Ok, or InvalidMemoryAccess when malloc gave 0. */
  copyOut(data: Buffer | string | bigint, ptrPtr: number, sizePtr: number, what: string): number;
  /** Writes a pointer and size the module reads back (setWord twice). */
  writeOut(ptrPtr: number, sizePtr: number, ptr: number, size: number, what: string): void;
  /** WasmBase::allocMemory: a module allocation of `size` bytes, or 0 when malloc refused. */
  alloc(size: number, what: string): number;
  /** A pairs buffer written by the module (malformed: AbiViolation). */
  readPairs(ptr: number, size: number, what: string): Pairs;
  /** wasm()->addAfterVmCallAction: runs once the current call into the VM has returned. */
  afterCall(action: () => void): void;
  /** WasmBase::stopNextIteration (set by send_local_response). */
  stopNextIteration(stop: boolean): void;
}

/** A fresh stream's state: nothing set, nothing created. */
export function newStreamState(id: number, rootId: number, info: StreamState["info"]): StreamState {
  return {
    id,
    rootId,
    created: false,
    ended: false,
    info,
    requestHeadersSet: false,
    requestTrailersSet: false,
    responseHeadersSet: false,
    responseTrailersSet: false,
    accessLogPhase: false,
    endOfStream: false,
    bufferingRequest: false,
    bufferingResponse: false,
    decoderStreaming: true, // filter_manager.h State: decoder_filters_streaming_{true}
    lastRequestChunk: EMPTY,
    lastResponseChunk: EMPTY,
    inCallback: undefined,
    lastStatus: undefined,
    stops: [],
    continueCalls: [],
    closeCalls: [],
    pausedBy: {},
    requestDone: false,
    responseDone: false,
    responseStarted: false,
    responseEncoded: false,
  };
}
