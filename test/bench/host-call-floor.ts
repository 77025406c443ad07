// A hand-built module that makes, per request, the host calls filter.wasm makes on the
// filter-overhead bench's request (a new, unsampled trace on an LLM path), with the same names and
// value sizes and no logic at all: what those calls alone cost in the test host. The bench checks
// that its calls per request match the filter's, so the two cannot drift apart unnoticed.
import { callDrop, loadAt, proxyModule, resetHeap, seq } from "../host/support/proxy-module.js";
import { op } from "../host/support/wasm-writer.js";

const REQUEST = 0;
const RESPONSE = 2;
const HISTOGRAM = 2;
// Static data: names, property paths, metric names, the values written, metric ids, out-params.
const OUT_PTR = 16;
const OUT_SIZE = 20;
const AT = {
  path: 1024,
  tokenId: 1040,
  traceparent: 1060,
  tracestate: 1080,
  routeName: 1100,
  responseCode: 1120,
  requestDuration: 1140,
  durationMetric: 1160,
  llmDurationMetric: 1180,
  traceparentValue: 1200,
  tokenIdValue: 1300,
  durationId: 1400,
  llmDurationId: 1404,
};
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02";
const TOKEN_ID = "7f2c6f7e-3b1a-4a8e-9d0e-2b7c1e4f5a6b";

const str = (at: number, s: string): number[][] => [op.i32(at), op.i32(Buffer.byteLength(s))];
const getHeader = (map: number, at: number, name: string) => callDrop("env.proxy_get_header_map_value", op.i32(map), ...str(at, name), op.i32(OUT_PTR), op.i32(OUT_SIZE));
const getProperty = (at: number, path: string) => callDrop("env.proxy_get_property", ...str(at, path), op.i32(OUT_PTR), op.i32(OUT_SIZE));
const replaceHeader = (map: number, at: number, name: string, valueAt: number, value: string) => callDrop("env.proxy_replace_header_map_value", op.i32(map), ...str(at, name), ...str(valueAt, value));
const record = (idAt: number) => (fn: (name: string) => number): number[] => [...loadAt(idAt), ...op.i64(12), ...op.call(fn("env.proxy_record_metric")), ...op.drop];

/** The module (see the file comment). */
export function hostCallFloorModule(): Uint8Array {
  return proxyModule({
    imports: ["proxy_get_header_map_value", "proxy_replace_header_map_value", "proxy_remove_header_map_value", "proxy_get_property", "proxy_define_metric", "proxy_record_metric"],
    data: [
      { offset: AT.path, bytes: ":path" },
      { offset: AT.tokenId, bytes: "x-token-trace-id" },
      { offset: AT.traceparent, bytes: "traceparent" },
      { offset: AT.tracestate, bytes: "tracestate" },
      { offset: AT.routeName, bytes: "xds\0route_name" },
      { offset: AT.responseCode, bytes: "response\0code" },
      { offset: AT.requestDuration, bytes: "request\0duration" },
      { offset: AT.durationMetric, bytes: "floor_duration_ms" },
      { offset: AT.llmDurationMetric, bytes: "floor_llm_duration_ms" },
      { offset: AT.traceparentValue, bytes: TRACEPARENT },
      { offset: AT.tokenIdValue, bytes: TOKEN_ID },
    ],
    callbacks: {
      proxy_on_vm_start: seq(
        callDrop("env.proxy_define_metric", op.i32(HISTOGRAM), ...str(AT.durationMetric, "floor_duration_ms"), op.i32(AT.durationId)),
        callDrop("env.proxy_define_metric", op.i32(HISTOGRAM), ...str(AT.llmDurationMetric, "floor_llm_duration_ms"), op.i32(AT.llmDurationId)),
      ),
      proxy_on_request_headers: seq(
        resetHeap,
        getProperty(AT.routeName, "xds\0route_name"),
        getHeader(REQUEST, AT.path, ":path"),
        getHeader(REQUEST, AT.tokenId, "x-token-trace-id"),
        getHeader(REQUEST, AT.traceparent, "traceparent"),
        replaceHeader(REQUEST, AT.traceparent, "traceparent", AT.traceparentValue, TRACEPARENT),
        callDrop("env.proxy_remove_header_map_value", op.i32(REQUEST), ...str(AT.tracestate, "tracestate")),
        replaceHeader(REQUEST, AT.tokenId, "x-token-trace-id", AT.tokenIdValue, TOKEN_ID),
      ),
      proxy_on_response_headers: replaceHeader(RESPONSE, AT.tokenId, "x-token-trace-id", AT.tokenIdValue, TOKEN_ID),
      proxy_on_log: seq(
        resetHeap,
        getProperty(AT.responseCode, "response\0code"),
        getProperty(AT.requestDuration, "request\0duration"),
        record(AT.durationId),
        record(AT.llmDurationId),
      ),
    },
  });
}
