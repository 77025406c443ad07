// One HTTP stream through the filter in Envoy's order, with Envoy's statuses and map lifetimes:
// envoyproxy/envoy source/extensions/common/wasm/context.cc (Context::decodeHeaders ... encodeTrailers,
// log, onDestroy, continueStream, closeStream), proxy-wasm-cpp-host src/context.cc
// (ContextBase::onRequestHeaders ..., convertVmCallResultTo*Status) and the HTTP connection manager
// (ConnectionManagerImpl::doDeferredStreamDestroy: completeRequest, log, then destroyFilters).
import { FilterDataStatus, FilterHeadersStatus, StreamType, WasmResult } from "./abi.js";
import type { HostClock } from "./clock.js";
import type { HostCore, LocalResponse, StreamState } from "./context.js";
import { HeaderList } from "./header-list.js";

/** Which status table a callback's result goes through. */
export type CallbackKind = "headers" | "data" | "trailers";

const FilterTrailersStatusStopIteration = 1;

/**
 * cpp-host's ContextBase::convertVmCallResultTo{FilterHeaders,FilterData,FilterTrailers}Status, then
 * Envoy's convertFilter*Status: a send_local_response in the callback forces a stop; headers
 * StopIteration becomes StopAllIterationAndWatermark (allow_on_headers_stop_iteration defaults to
 * false); out-of-range values stop; ContinueAndEndStream (2) is Continue to Envoy.
 */
export function filterStatus(kind: CallbackKind, result: number, nextIterationStopped: boolean): number {
  if (kind === "headers") {
    if (nextIterationStopped || result > FilterHeadersStatus.StopAllIterationAndWatermark || result === FilterHeadersStatus.StopIteration) {
      return FilterHeadersStatus.StopAllIterationAndWatermark;
    }
    return result === FilterHeadersStatus.ContinueAndEndStream ? FilterHeadersStatus.Continue : result;
  }
  if (kind === "data") {
    if (nextIterationStopped || result > FilterDataStatus.StopIterationNoBuffer) return FilterDataStatus.StopIterationNoBuffer;
    return result;
  }
  return nextIterationStopped || result > FilterTrailersStatusStopIteration ? FilterTrailersStatusStopIteration : result;
}

/**
 * Envoy's default stream buffer limit: the listener's per_connection_buffer_limit_bytes, "If
 * unspecified, an implementation defined default is applied (1MiB)" (envoy
 * api/envoy/config/listener/v3/listener.proto 00e5a41c).
 */
export const DEFAULT_BUFFER_LIMIT_BYTES = 1024 * 1024;

/** What the lifecycle needs from its VM. */
export interface StreamVm {
  readonly core: HostCore;
  readonly clock: HostClock;
  /** The stream's buffer limit (FilterManager buffer_limit_, from the connection's). */
  readonly bufferLimitBytes: number;
  /** Calls a stream callback (0 when the module lacks it); a status callback's result comes back converted. */
  callFilter(contextId: number, name: string, a: number, b: number, kind?: CallbackKind): number;
  /** The module's own result of the last callFilter. */
  lastResult(): number;
  /** proxy_on_context_create(id, root) through ContextBase::onCreate. */
  createContext(s: StreamState): void;
  /** The stream has gone: its root may now be torn down (ECDS). */
  streamGone(s: StreamState): void;
}

const EMPTY = Buffer.alloc(0);
const concat = (a: Buffer | undefined, b: Buffer): Buffer => (a === undefined || a.length === 0 ? b : b.length === 0 ? a : Buffer.concat([a, b]));

/** Drives streams through their callbacks. */
export class StreamLifecycle {
  constructor(private readonly vm: StreamVm) {}

  // ContextBase::onCreate, from Context::decodeHeaders (or Context::log for a stream the filter never saw).
  private onCreate(s: StreamState): void {
    if (s.created) return;
    this.vm.createContext(s);
    s.created = true;
  }

  /** One status callback: records stops, pauses the direction on a stop that nothing continued. */
  private filterCallback(s: StreamState, name: string, a: number, b: number, kind: CallbackKind, endOfStream: boolean): number {
    const continuesBefore = s.continueCalls.length;
    const hadLocalReply = s.localResponse !== undefined;
    s.inCallback = name;
    let status: number;
    try {
      status = this.vm.callFilter(s.id, name, a, b, kind);
    } finally {
      s.inCallback = undefined;
    }
    const result = this.vm.lastResult();
    s.lastStatus = result;
    const localReplied = !hadLocalReply && s.localResponse !== undefined;
    if (status !== 0 || localReplied) s.stops.push({ callback: name, status: result, filterStatus: status });
    if (status === 0 || s.ended) return status;
    const side = name.includes("_request_") ? "request" : "response";
    // proxy_continue_stream in the same callback runs once it returns (an after-VM-call action), so it wins.
    const continued = s.continueCalls.slice(continuesBefore).includes(side === "request" ? StreamType.Request : StreamType.Response);
    // Headers and trailers stops hold the direction; a body stop holds it once the body has ended.
    if (!continued && (kind !== "data" || endOfStream)) s.pausedBy[side] = `${name} returned ${result}`;
    return status;
  }

  /** Context::decodeHeaders: request_headers_ set for the callback, cleared when it returns Continue. */
  requestHeaders(s: StreamState, headers: ReadonlyArray<readonly [string, string]>, endOfStream: boolean): number {
    this.onCreate(s);
    s.requestHeaders = new HeaderList(headers, "request");
    s.requestHeadersSet = true;
    s.endOfStream = endOfStream;
    s.requestDone = endOfStream;
    const status = this.filterCallback(s, "proxy_on_request_headers", s.requestHeaders.size, endOfStream ? 1 : 0, "headers", endOfStream);
    if (status === FilterHeadersStatus.Continue) s.requestHeadersSet = false;
    return status;
  }

  /** Context::encodeHeaders: skipped when the context was never created; response.code is the router's. */
  responseHeaders(s: StreamState, headers: ReadonlyArray<readonly [string, string]>, endOfStream: boolean): number {
    const map = new HeaderList(headers, "response");
    const code = Number(map.get(":status"));
    if (s.localResponse === undefined && Number.isInteger(code)) s.info.responseCode = code; // Router::Filter::onUpstreamHeaders
    s.responseHeaders = map;
    s.responseStarted = true;
    s.responseDone = endOfStream;
    if (!s.created) {
      s.responseEncoded = true;
      return FilterHeadersStatus.Continue;
    }
    s.responseHeadersSet = true;
    s.endOfStream = endOfStream;
    const status = this.filterCallback(s, "proxy_on_response_headers", map.size, endOfStream ? 1 : 0, "headers", endOfStream);
    if (status === FilterHeadersStatus.Continue && !s.ended) {
      s.responseHeadersSet = false;
      s.responseEncoded = true;
    }
    return status;
  }

  /**
   * Context::decodeData / encodeData: the chunk is request_body_buffer_ for the callback; while the
   * filter buffers (StopIterationAndBuffer) Envoy adds each chunk to its buffer and shows all of it.
   */
  body(s: StreamState, request: boolean, chunk: Buffer, endOfStream: boolean): number {
    if (request) s.requestDone = endOfStream;
    else s.responseDone = endOfStream;
    if (!s.created) {
      this.passOn(s, request, chunk);
      return FilterDataStatus.Continue;
    }
    const buffering = request ? s.bufferingRequest : s.bufferingResponse;
    const held = request ? s.requestBuffered : s.responseBuffered;
    if (buffering) {
      // Context::decodeData: addDecodedData(data, false) before the VM call; a 413 there
      // destroys the context and the VM is not called (returns StopIterationAndBuffer).
      this.setHeld(s, request, concat(held, chunk));
      if (request && this.overLimit(s, false)) return FilterDataStatus.StopIterationAndBuffer;
    }
    this.setChunk(s, request, buffering ? EMPTY : chunk);
    s.endOfStream = endOfStream;
    const size = buffering ? (request ? s.requestBuffered : s.responseBuffered)!.length : chunk.length;
    const name = request ? "proxy_on_request_body" : "proxy_on_response_body";
    const status = this.filterCallback(s, name, size, endOfStream ? 1 : 0, "data", endOfStream);
    if (s.ended) return status;
    if (request) s.bufferingRequest = false;
    else s.bufferingResponse = false;
    const current = (request ? s.requestBody : s.responseBody) ?? EMPTY;
    const nowHeld = request ? s.requestBuffered : s.responseBuffered;
    switch (status) {
      case FilterDataStatus.Continue:
        if (nowHeld !== undefined) {
          // commonHandleAfterDataCallback: after a stop, the chunk joins the buffered data before
          // the chain goes on (commonHandleBufferData, then commonContinue): the limit applies.
          this.setHeld(s, request, concat(nowHeld, current));
          if (request && this.overLimit(s, s.decoderStreaming)) return status;
        }
        // What the filter manager holds goes on with this chunk (as the filter left both).
        this.setHeld(s, request, undefined);
        this.setChunk(s, request, undefined);
        this.passOn(s, request, concat(nowHeld, current));
        break;
      case FilterDataStatus.StopIterationAndBuffer:
      case FilterDataStatus.StopIterationAndWatermark:
        // The filter manager moves the chunk into its buffer; only Buffer shows it again (buffering_*_body_).
        if (status === FilterDataStatus.StopIterationAndBuffer) {
          if (request) s.bufferingRequest = true;
          else s.bufferingResponse = true;
        }
        this.setHeld(s, request, concat(nowHeld, current));
        this.setChunk(s, request, EMPTY);
        this.passOn(s, request, EMPTY);
        // commonHandleAfterDataCallback: buffer_was_streaming = (status == StopIterationAndWatermark).
        if (request) s.decoderStreaming = status === FilterDataStatus.StopIterationAndWatermark;
        if (request && this.overLimit(s, s.decoderStreaming)) return status;
        break;
      default:
        // StopIterationNoBuffer: the data is the filter's to keep; nothing goes on.
        this.setChunk(s, request, EMPTY);
        this.passOn(s, request, EMPTY);
    }
    return status;
  }

  /**
   * The decoding buffer's high watermark is the stream's buffer limit (ActiveStreamDecoderFilter::
   * createBuffer, setWatermarks(buffer_limit_); envoy source/common/http/filter_manager.cc
   * 00e00299). Past it, requestDataTooLarge: a streaming filter only pauses the downstream
   * (flow control); one that buffers the whole body gets a local 413, "Payload Too Large", details
   * request_payload_too_large. Returns true when the stream ended that way.
   */
  private overLimit(s: StreamState, streaming: boolean): boolean {
    if ((s.requestBuffered?.length ?? 0) <= this.vm.bufferLimitBytes || streaming) return false;
    this.localReply(s, { statusCode: 413, details: "request_payload_too_large", body: Buffer.from("Payload Too Large"), headers: [], grpcStatus: -1 }, false);
    return true;
  }

  private setChunk(s: StreamState, request: boolean, chunk: Buffer | undefined): void {
    if (request) s.requestBody = chunk;
    else s.responseBody = chunk;
  }

  private setHeld(s: StreamState, request: boolean, held: Buffer | undefined): void {
    if (request) s.requestBuffered = held;
    else s.responseBuffered = held;
  }

  /** What left the filter in this direction (upstream or downstream). */
  private passOn(s: StreamState, request: boolean, data: Buffer): void {
    if (request) {
      s.lastRequestChunk = data;
      s.info.bytesReceived += data.length;
    } else {
      s.lastResponseChunk = data;
      s.info.bytesSent += data.length;
    }
  }

  /** Context::decodeTrailers / encodeTrailers: the trailers map is set for the callback, cleared on Continue. */
  trailers(s: StreamState, request: boolean, trailers: ReadonlyArray<readonly [string, string]>): number {
    const map = new HeaderList(trailers, request ? "other" : "trailers");
    if (request) {
      s.requestTrailers = map;
      s.requestDone = true;
    } else {
      s.responseTrailers = map;
      s.responseDone = true;
    }
    if (!s.created) return 0;
    if (request) s.requestTrailersSet = true;
    else s.responseTrailersSet = true;
    const status = this.filterCallback(s, request ? "proxy_on_request_trailers" : "proxy_on_response_trailers", map.size, 0, "trailers", true);
    if (status === 0) {
      if (request) s.requestTrailersSet = false;
      else s.responseTrailersSet = false;
    }
    return status;
  }

  /**
   * doDeferredStreamDestroy: completeRequest (request.duration), the access log (Context::log:
   * proxy_on_log with the access-log maps, creating the context first if the filter never saw the
   * stream), then destroyFilters (Context::onDestroy: proxy_on_done, proxy_on_delete). Idempotent.
   */
  end(s: StreamState): void {
    if (s.ended) return;
    s.info.durationNs = this.vm.clock.monotonicNs() - s.info.monoStartNs;
    try {
      this.onCreate(s);
      s.accessLogPhase = true;
      try {
        this.vm.callFilter(s.id, "proxy_on_log", 0, 0);
      } finally {
        s.accessLogPhase = false;
      }
      this.vm.callFilter(s.id, "proxy_on_done", 0, 0);
      s.ended = true;
      this.vm.callFilter(s.id, "proxy_on_delete", 0, 0);
    } finally {
      s.ended = true;
      this.vm.streamGone(s);
    }
  }

  /**
   * Context::continueStream: the request maps are dropped at once (for either direction, as Envoy
   * does), continueDecoding/continueEncoding runs after the VM call: what the filter held goes on.
   */
  continueStream(s: StreamState, type: number): number {
    if (type === StreamType.Downstream) return WasmResult.Ok;
    if (type === StreamType.Upstream) return WasmResult.Unimplemented;
    s.continueCalls.push(type);
    this.vm.core.afterCall(() => this.resume(s, type === StreamType.Request ? "request" : "response"));
    s.requestHeadersSet = false;
    s.requestBody = undefined;
    s.requestTrailersSet = false;
    return WasmResult.Ok;
  }

  /** continueDecoding / continueEncoding: the direction goes on, with what the filter manager held. */
  resume(s: StreamState, side: "request" | "response"): void {
    if (s.ended) return;
    delete s.pausedBy[side];
    const request = side === "request";
    const held = request ? s.requestBuffered : s.responseBuffered;
    if (request) s.bufferingRequest = false;
    else s.bufferingResponse = false;
    this.setHeld(s, request, undefined);
    if (held !== undefined) this.passOn(s, request, held);
  }

  /** Context::closeStream: Request/Response reset the stream after the VM call; Downstream/Upstream are for network filters. */
  closeStream(s: StreamState, type: number): number {
    s.closeCalls.push(type);
    if (type === StreamType.Request || type === StreamType.Response) {
      s.info.responseCodeDetails ??= "wasm_close_stream";
      this.vm.core.afterCall(() => this.end(s));
    }
    return WasmResult.Ok;
  }

  /**
   * FilterManager::sendLocalReply, run after the VM call that asked for it: before the response
   * started, through the filter chain (this filter's proxy_on_response_headers/body with the reply),
   * then the stream ends; once response headers went through this filter but not downstream,
   * straight to the codec; after that, a reset. response.code is the local status.
   */
  localReply(s: StreamState, reply: LocalResponse, headRequest: boolean): void {
    if (s.ended) return;
    s.localResponse = reply;
    s.info.responseCodeDetails = reply.details.replace(/\s/g, "_");
    const headers: Array<[string, string]> = [[":status", String(reply.statusCode)]];
    if (reply.body.length > 0) headers.push(["content-length", String(reply.body.length)], ["content-type", "text/plain"]);
    headers.push(...reply.headers);
    if (!s.responseStarted) {
      s.info.responseCode = reply.statusCode;
      const noBody = reply.body.length === 0 || headRequest;
      this.responseHeaders(s, headers, noBody);
      if (!noBody && !s.ended && s.pausedBy.response === undefined) this.body(s, false, reply.body, true);
      if (s.pausedBy.response === undefined) this.end(s);
      return;
    }
    if (!s.responseEncoded) {
      s.info.responseCode = reply.statusCode;
      s.responseHeaders = new HeaderList(headers, "response");
      this.passOn(s, false, headRequest ? EMPTY : reply.body);
    }
    this.end(s);
  }
}

/** proxy_continue_stream and proxy_close_stream (cpp-host exports.cc continue_stream / close_stream). */
export function streamControlImports(core: HostCore, lifecycle: StreamLifecycle): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    proxy_continue_stream: (type: number): number => {
      if (u(type) > StreamType.Upstream) return WasmResult.BadArgument;
      return lifecycle.continueStream(core.requireStream("proxy_continue_stream"), u(type));
    },
    proxy_close_stream: (type: number): number => {
      if (u(type) > StreamType.Upstream) return WasmResult.BadArgument;
      return lifecycle.closeStream(core.requireStream("proxy_close_stream"), u(type));
    },
  };
}
