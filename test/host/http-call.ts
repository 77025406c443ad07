// proxy_http_call as Envoy runs it (source/extensions/common/wasm/context.cc Context::httpCall,
// onHttpCallSuccess, onHttpCallFailure; cpp-host exports.cc http_call): the call belongs to the
// caller's root context; a real HTTP/1.1 request goes to the cluster's base URL on 127.0.0.1; the
// response comes back later through proxy_on_http_call_response, with its maps and body readable
// only during that callback. Envoy's async client answers a timeout with a local 504 and a connect
// failure with a local 503; a reset after the response started is a failure (no headers, status
// BrokenConnection with message "reset").
import { request } from "node:http";
import { WasmResult } from "./abi.js";
import type { HostCore } from "./context.js";
import { HeaderList } from "./header-list.js";
import type { Pairs } from "./pairs.js";

/** What proxy_on_http_call_response can read. */
export interface HttpCallResponse {
  headers: HeaderList;
  body: Buffer;
  /** Absent when the response had no trailers. */
  trailers: HeaderList | undefined;
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
    headers: new HeaderList([[":status", String(status)], ["content-length", String(body.length)], ["content-type", "text/plain"]], "response"),
    body,
    trailers: undefined,
  };
}

/** Sends the call; resolves with the response, a local reply, or a failure. */
export function sendHttpCall(req: HttpCallRequest): Promise<HttpCallResponse | { failure: string }> {
  return new Promise((resolve) => {
    const map = new HeaderList(req.headers, "request");
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
        const headers = new HeaderList([[":status", String(res.statusCode ?? 0)]], "response");
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.add(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        let trailers: HeaderList | undefined;
        for (let i = 0; i + 1 < res.rawTrailers.length; i += 2) (trailers ??= new HeaderList([], "trailers")).add(res.rawTrailers[i]!, res.rawTrailers[i + 1]!);
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

/** How HTTP calls reach back into their VM. */
export interface HttpCallVm {
  readonly core: HostCore;
  /** False once the VM failed or the root context is gone (Envoy cancels the call then). */
  canDeliver(rootId: number): boolean;
  /** proxy_on_http_call_response(root, token, headers, body, trailers) as one call into the VM. */
  deliver(rootId: number, token: number, headers: number, bodySize: number, trailers: number): void;
}

/** The VM's HTTP calls: in flight, and the one being delivered. */
export class HttpCalls {
  private readonly inflight = new Map<number, Promise<void>>();
  private nextToken = 1;
  private backgroundError: unknown;
  /** The response being delivered and the root it goes to (Context::http_call_response_). */
  private delivering: { rootId: number; response: HttpCallResponse } | undefined;

  constructor(
    private readonly vm: HttpCallVm,
    private readonly clusters: Readonly<Record<string, string>>,
  ) {}

  /** The response a context may read now: only its own root's, only during delivery. */
  responseFor(contextId: number): HttpCallResponse | undefined {
    const d = this.delivering;
    if (d === undefined) return undefined;
    return this.vm.core.rootOf(contextId)?.id === d.rootId ? d.response : undefined;
  }

  get pending(): number {
    return this.inflight.size;
  }

  /** Awaits every call in flight and the delivery of its response. */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight.values()]);
    if (this.backgroundError !== undefined) {
      const e = this.backgroundError;
      this.backgroundError = undefined;
      throw e;
    }
  }

  private start(token: number, rootId: number, req: HttpCallRequest): void {
    const promise = sendHttpCall(req)
      .then((res) => this.onResponse(token, rootId, res))
      .catch((e: unknown) => {
        if (this.backgroundError === undefined) this.backgroundError = e;
      })
      .finally(() => this.inflight.delete(token));
    this.inflight.set(token, promise);
  }

  private onResponse(token: number, rootId: number, res: HttpCallResponse | { failure: string }): void {
    if (!this.vm.canDeliver(rootId)) return;
    const root = this.vm.core.root(rootId)!;
    if ("failure" in res) {
      // Context::onHttpCallFailure: status BrokenConnection / "reset" for the call; the message is cleared after it.
      root.statusCode = WasmResult.BrokenConnection;
      root.statusMessage = res.failure;
      try {
        this.vm.deliver(rootId, token, 0, 0, 0);
      } finally {
        root.statusMessage = "";
      }
      return;
    }
    this.delivering = { rootId, response: res };
    try {
      this.vm.deliver(rootId, token, res.headers.size, res.body.length, res.trailers?.size ?? 0);
    } finally {
      this.delivering = undefined;
    }
  }

  /** proxy_http_call and proxy_get_status. */
  imports(): Record<string, (...args: never[]) => unknown> {
    const core = this.vm.core;
    const u = (x: number): number => x >>> 0;
    return {
      proxy_http_call: (uriPtr: number, uriSize: number, hPtr: number, hSize: number, bodyPtr: number, bodySize: number, tPtr: number, tSize: number, timeoutMs: number, tokenPtr: number): number => {
        const cluster = core.mem.string(u(uriPtr), u(uriSize), "proxy_http_call cluster");
        const body = Buffer.from(core.mem.bytes(u(bodyPtr), u(bodySize), "proxy_http_call body"));
        const headers = core.readPairs(u(hPtr), u(hSize), "proxy_http_call headers");
        const trailers = core.readPairs(u(tPtr), u(tSize), "proxy_http_call trailers");
        core.mem.u32(u(tokenPtr), 0, "proxy_http_call token"); // verified before anything starts
        if ((timeoutMs | 0) < 0) return WasmResult.BadArgument;
        const base = Object.hasOwn(this.clusters, cluster) ? this.clusters[cluster] : undefined;
        if (base === undefined) return WasmResult.BadArgument; // no such thread-local cluster
        const map = new HeaderList(headers, "request");
        if (map.get(":path") === undefined || map.get(":method") === undefined || map.get(":authority") === undefined) return WasmResult.BadArgument;
        const root = core.rootOf(core.contextId());
        if (root === undefined) return WasmResult.BadArgument;
        const token = this.nextToken++;
        this.start(token, root.id, { base, headers: map.entries(), body, trailers, timeoutMs: u(timeoutMs) });
        core.mem.u32(u(tokenPtr), token, "proxy_http_call token");
        return WasmResult.Ok;
      },
      // get_status answers for the root context of the caller.
      proxy_get_status: (codePtr: number, msgPtrPtr: number, msgSizePtr: number): number => {
        const root = core.rootOf(core.contextId());
        core.mem.u32(u(codePtr), root?.statusCode ?? 0, "proxy_get_status");
        return core.copyOut(root?.statusMessage ?? "", u(msgPtrPtr), u(msgSizePtr), "proxy_get_status");
      },
    };
  }
}
