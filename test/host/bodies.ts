// The buffer host calls as Envoy answers them (envoyproxy/envoy source/extensions/common/wasm/context.cc
// Context::getBuffer and Buffer::copyFrom; proxy-wasm-cpp-host src/exports.cc get_buffer_bytes,
// get_buffer_status, set_buffer_bytes). A body is the chunk of the current body callback, or what the
// filter manager holds while the filter buffers; Envoy answers an absent body as an empty buffer.
import { BUFFER_TYPE_MAX, BufferType, WasmResult } from "./abi.js";
import type { HostCore, StreamState } from "./context.js";

/** A buffer Envoy hands out: its bytes, and how it can be changed (undefined: immutable). */
interface BufferView {
  bytes: Buffer;
  write?: (next: Buffer) => void;
}

const EMPTY = Buffer.alloc(0);
const EMPTY_VIEW: BufferView = { bytes: EMPTY };

/** What the VM gives getBuffer beyond the stream: configurations and the HTTP call response body. */
export interface BufferSources {
  vmConfiguration: Buffer;
  /** temp_plugin_'s configuration: set while proxy_on_configure (or a root's create) runs. */
  pluginConfiguration(): Buffer | undefined;
  /** The body of the HTTP call response being delivered to the current root context. */
  httpCallBody(): Buffer | undefined;
}

/** One direction's body bytes as Context::getBuffer sees them: the decoding/encoding buffer while buffering, else the current chunk. */
function bodyBytes(s: StreamState | undefined, request: boolean): Buffer {
  if (s === undefined) return EMPTY; // no stream: request_body_buffer_ is null, an empty buffer
  if (request ? s.bufferingRequest : s.bufferingResponse) return (request ? s.requestBuffered : s.responseBuffered) ?? EMPTY;
  return (request ? s.requestBody : s.responseBody) ?? EMPTY;
}

/** One direction's body (bodyBytes), with how set_buffer_bytes changes it. */
function bodyView(s: StreamState | undefined, request: boolean): BufferView {
  if (s === undefined) return EMPTY_VIEW;
  if (request ? s.bufferingRequest : s.bufferingResponse) {
    return {
      bytes: bodyBytes(s, request),
      write: (next) => {
        if (request) s.requestBuffered = next;
        else s.responseBuffered = next;
      },
    };
  }
  const chunk = request ? s.requestBody : s.responseBody;
  if (chunk === undefined) return EMPTY_VIEW;
  return {
    bytes: chunk,
    write: (next) => {
      if (request) s.requestBody = next;
      else s.responseBody = next;
    },
  };
}

/**
 * The bytes of Context::getBuffer alone, or undefined for NotFound: what a read needs. A body is
 * read once per chunk, so it is answered without building the writer a view carries.
 */
function bufferBytes(core: HostCore, sources: BufferSources, type: number): Buffer | undefined {
  if (type === BufferType.HttpRequestBody || type === BufferType.HttpResponseBody) return bodyBytes(core.stream(), type === BufferType.HttpRequestBody);
  return getBuffer(core, sources, type)?.bytes;
}

/** Context::getBuffer, or undefined for NotFound. */
function getBuffer(core: HostCore, sources: BufferSources, type: number): BufferView | undefined {
  switch (type) {
    case BufferType.HttpRequestBody:
      return bodyView(core.stream(), true);
    case BufferType.HttpResponseBody:
      return bodyView(core.stream(), false);
    case BufferType.NetworkDownstreamData:
    case BufferType.NetworkUpstreamData:
    case BufferType.GrpcReceiveBuffer:
      return EMPTY_VIEW; // buffer_.set(nullptr): an HTTP filter has no network or gRPC buffer
    case BufferType.VmConfiguration:
      return { bytes: sources.vmConfiguration };
    case BufferType.PluginConfiguration: {
      const cfg = sources.pluginConfiguration();
      return cfg === undefined ? undefined : { bytes: cfg };
    }
    case BufferType.HttpCallResponseBody: {
      const body = sources.httpCallBody();
      return body === undefined ? undefined : { bytes: body };
    }
  }
  return EMPTY_VIEW; // CallData: the context's scratch buffer_; what earlier buffer calls leave there is not modelled
}

/** The buffer host calls. */
export function bufferImports(core: HostCore, sources: BufferSources): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    // get_buffer_bytes: clipped to the buffer; nothing to copy gives pointer 0 and size 0.
    proxy_get_buffer_bytes: (type: number, start: number, length: number, ptrPtr: number, sizePtr: number): number => {
      if (u(type) > BUFFER_TYPE_MAX) return WasmResult.BadArgument;
      const bytes = bufferBytes(core, sources, u(type));
      if (bytes === undefined) return WasmResult.NotFound;
      const size = bytes.length;
      const st = u(start);
      let len = u(length);
      if (st > size) len = 0;
      else if (st + len > size) len = size - st;
      if (len === 0) {
        core.mem.u32(u(ptrPtr), 0, "proxy_get_buffer_bytes");
        core.mem.u32(u(sizePtr), 0, "proxy_get_buffer_bytes");
        return WasmResult.Ok;
      }
      return core.copyOut(bytes.subarray(st, st + len), u(ptrPtr), u(sizePtr), "proxy_get_buffer_bytes");
    },
    // get_buffer_status: the size, flags always 0.
    proxy_get_buffer_status: (type: number, lengthPtr: number, flagsPtr: number): number => {
      if (u(type) > BUFFER_TYPE_MAX) return WasmResult.BadArgument;
      const bytes = bufferBytes(core, sources, u(type));
      if (bytes === undefined) return WasmResult.NotFound;
      core.mem.u32(u(lengthPtr), bytes.length, "proxy_get_buffer_status length");
      core.mem.u32(u(flagsPtr), 0, "proxy_get_buffer_status flags");
      return WasmResult.Ok;
    },
    // set_buffer_bytes / Buffer::copyFrom: start 0 drains `length` bytes then prepends; start at or
    // past the end appends; anything else, and any immutable or absent buffer, is BadArgument.
    proxy_set_buffer_bytes: (type: number, start: number, length: number, dataPtr: number, dataSize: number): number => {
      if (u(type) > BUFFER_TYPE_MAX) return WasmResult.BadArgument;
      const buf = getBuffer(core, sources, u(type));
      if (buf === undefined) return WasmResult.NotFound;
      const data = Buffer.from(core.mem.bytes(u(dataPtr), u(dataSize), "proxy_set_buffer_bytes data"));
      if (buf.write === undefined) return WasmResult.BadArgument;
      const bytes = buf.bytes;
      const st = u(start);
      if (st === 0) {
        buf.write(Buffer.concat([data, bytes.subarray(Math.min(u(length), bytes.length))]));
        return WasmResult.Ok;
      }
      if (st >= bytes.length) {
        buf.write(Buffer.concat([bytes, data]));
        return WasmResult.Ok;
      }
      return WasmResult.BadArgument;
    },
  };
}
