// proxy_http_call as a real HTTP/1.1 request to a cluster's base URL on 127.0.0.1. Envoy's async
// client answers a timeout with a local 504 and a connect failure with a local 503; a reset after
// the response started is a failure (proxy_on_http_call_response with 0 headers).
import { request } from "node:http";
import { HeaderList } from "./headers.js";
import type { Pairs } from "./pairs.js";

/** What proxy_on_http_call_response can read. */
export interface HttpCallResponse {
  headers: HeaderList;
  body: Buffer;
  trailers: HeaderList;
}

/** One outgoing call. */
export interface HttpCallRequest {
  base: string;
  headers: Pairs;
  body: Buffer;
  trailers: Pairs;
  timeoutMs: number;
}

function localReply(status: number, text: string): HttpCallResponse {
  const body = Buffer.from(text);
  return {
    headers: new HeaderList([[":status", String(status)], ["content-length", String(body.length)], ["content-type", "text/plain"]]),
    body,
    trailers: new HeaderList(),
  };
}

/** Sends the call; resolves with the response, a local reply, or a failure. */
export function startHttpCall(req: HttpCallRequest): Promise<HttpCallResponse | { failure: string }> {
  return new Promise((resolve) => {
    const map = new HeaderList(req.headers);
    const url = new URL(map.get(":path") ?? "/", req.base);
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of map.raw()) {
      if (k.startsWith(":")) continue;
      const prev = out[k];
      out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    out.host = map.get(":authority") ?? url.host;
    if (req.body.length > 0) out["content-length"] = String(req.body.length);
    let settled = false;
    const finish = (r: HttpCallResponse | { failure: string }): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(r);
    };
    const r = request(url, { method: map.get(":method"), headers: out, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", () => finish({ failure: "reset" }));
      res.on("aborted", () => finish({ failure: "reset" }));
      res.on("end", () => {
        const headers = new HeaderList([[":status", String(res.statusCode ?? 0)]]);
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.add(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const trailers = new HeaderList();
        for (let i = 0; i + 1 < res.rawTrailers.length; i += 2) trailers.add(res.rawTrailers[i]!, res.rawTrailers[i + 1]!);
        finish({ headers, body: Buffer.concat(chunks), trailers });
      });
    });
    const timer =
      req.timeoutMs > 0
        ? setTimeout(() => {
            finish(localReply(504, "upstream request timeout"));
            r.destroy();
          }, req.timeoutMs)
        : undefined;
    r.on("error", () => finish(localReply(503, "upstream connect error or disconnect/reset before headers. reset reason: connection failure")));
    r.end(req.body);
  });
}
