// proxy_send_local_response as Envoy runs it: cpp-host's send_local_response (src/exports.cc) copies
// the reply and sets stopNextIteration, so the callback's status becomes a stop; Envoy's
// Context::sendLocalResponse (source/extensions/common/wasm/context.cc) queues
// decoder_callbacks_->sendLocalReply after the VM call, which StreamLifecycle.localReply plays.
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";
import type { StreamLifecycle } from "./lifecycle.js";

/** The local-reply host call. */
export function localReplyImports(core: HostCore, lifecycle: StreamLifecycle): Record<string, (...args: never[]) => unknown> {
  const u = (x: number): number => x >>> 0;
  return {
    proxy_send_local_response: (code: number, detailsPtr: number, detailsSize: number, bodyPtr: number, bodySize: number, headersPtr: number, headersSize: number, grpcStatus: number): number => {
      const details = core.mem.string(u(detailsPtr), u(detailsSize), "proxy_send_local_response details");
      const body = Buffer.from(core.mem.bytes(u(bodyPtr), u(bodySize), "proxy_send_local_response body"));
      const headers = core.readPairs(u(headersPtr), u(headersSize), "proxy_send_local_response headers");
      const s = core.requireStream("proxy_send_local_response");
      const reply = { statusCode: u(code), details, body, headers, grpcStatus: grpcStatus | 0 };
      // The request is a HEAD request when its headers said so (FilterManager state_.is_head_request_).
      const head = s.requestHeaders?.get(":method") === "HEAD";
      core.afterCall(() => lifecycle.localReply(s, reply, head));
      core.stopNextIteration(true);
      return WasmResult.Ok;
    },
  };
}
