// A local HTTP proxy on 127.0.0.1 that runs one filter stream per request through the test host,
// like an Istio sidecar's HTTP filter chain: headers and every body chunk pass through the filter as
// they arrive (SSE keeps flowing), and a failed VM never breaks traffic (fail-open, counted).
import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import type { HostClock } from "./clock.js";
import type { FilterStream } from "./stream.js";
import { FilterVm, type FilterVmOptions } from "./vm.js";

/** A route: requests whose path starts with `prefix` get route name `name` (a VirtualService http route name). */
export interface LocalRoute {
  prefix: string;
  name: string;
}

/** Options of startLocalProxy. */
export interface LocalProxyOptions {
  wasm: string | Uint8Array;
  pluginConfig?: string;
  /** Base URL of the upstream, "http://127.0.0.1:port". */
  upstream: string;
  routes?: LocalRoute[];
  /** proxy_http_call clusters; "upstream" points at the upstream unless given. */
  clusters?: Record<string, string>;
  /** 0 (default) = ephemeral. */
  listenPort?: number;
  adminPort?: number;
  statTags?: string[];
  clock?: HostClock;
  /** Any other FilterVm option (logLevel, env, random, histogramBuckets ...). */
  vm?: Partial<FilterVmOptions>;
  /** Timer functions driving proxy_on_tick (tests inject their own), default the global ones. */
  timers?: TickTimers;
  /** Called once per exchange when its stream has ended (or was never run). */
  onExchangeEnd?: (info: ExchangeInfo) => void;
}

/** How the proxy schedules ticks. */
export interface TickTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** What onExchangeEnd reports. */
export interface ExchangeInfo {
  route: string;
  /** The filter was skipped for (part of) this exchange because the VM had failed. */
  failOpen: boolean;
  /** The client went away before the response finished. */
  aborted: boolean;
}

/** A running proxy. */
export interface LocalProxy {
  url: string;
  adminUrl: string;
  vm: FilterVm;
  close(): Promise<void>;
}

/** Host counter of requests that passed without the filter because its VM had failed. */
export const FAIL_OPEN_COUNTER = "local_proxy.wasm_fail_open";
/** Host counter of filter stops the proxy resumed (the filter is expected to always continue). */
export const STOP_IGNORED_COUNTER = "local_proxy.filter_stop_resumed";
/** The cluster name the proxy gives the upstream (xds.cluster_name). */
export const UPSTREAM_CLUSTER = "upstream";

// Connection-specific headers a proxy never forwards (RFC 9110 section 7.6.1).
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade", "trailer", "host"]);

function routeFor(path: string, routes: LocalRoute[]): string {
  for (const r of routes) if (path.startsWith(r.prefix)) return r.name;
  return "default";
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
  });
}

function readAll(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Headers for Node from a header map: pseudo-headers and hop-by-hop headers dropped, repeats kept. */
function outgoingHeaders(entries: Array<[string, string]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of entries) {
    if (k.startsWith(":") || HOP_BY_HOP.has(k)) continue;
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

function incomingPairs(raw: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    if (HOP_BY_HOP.has(k)) continue;
    out.push([k, raw[i + 1]!]);
  }
  return out;
}

/** Starts the proxy and its admin server. */
export async function startLocalProxy(opts: LocalProxyOptions): Promise<LocalProxy> {
  const upstream = new URL(opts.upstream);
  const vm = await FilterVm.load({
    ...opts.vm,
    wasm: opts.wasm,
    pluginConfig: opts.pluginConfig,
    clusters: { [UPSTREAM_CLUSTER]: opts.upstream, ...opts.clusters },
    statTags: opts.statTags ?? opts.vm?.statTags,
    clock: opts.clock ?? opts.vm?.clock,
  });
  const routes = opts.routes ?? [];
  const agent = new Agent({ keepAlive: true });

  const timers: TickTimers = opts.timers ?? {
    setInterval: (fn, ms) => setInterval(fn, ms).unref(),
    clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
  };
  let ticker: unknown;
  const setTicker = (ms: number): void => {
    if (ticker !== undefined) timers.clearInterval(ticker);
    ticker = undefined;
    if (ms <= 0) return;
    ticker = timers.setInterval(() => {
      if (vm.failed) return;
      try {
        vm.tick();
      } catch {
        // the VM is now failed; traffic keeps flowing without it
      }
    }, ms);
  };
  vm.onTickPeriodChange(setTicker);
  setTicker(vm.tickPeriodMs);

  const server = createServer((req, res) => handle(req, res));

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? "/";
    const headers: Array<[string, string]> = [
      [":authority", req.headers.host ?? upstream.host],
      [":path", path],
      [":method", req.method ?? "GET"],
      [":scheme", "http"],
      ...incomingPairs(req.rawHeaders),
    ];
    if (!req.headers["x-forwarded-proto"]) headers.push(["x-forwarded-proto", "http"]);
    if (!req.headers["x-request-id"]) headers.push(["x-request-id", randomUUID()]);
    const hasBody = req.headers["content-length"] !== undefined ? Number(req.headers["content-length"]) > 0 : req.headers["transfer-encoding"] !== undefined;

    // Every filter call goes through `filter`: a throw (failed VM) turns the filter off for the rest of the exchange.
    let stream: FilterStream | undefined;
    let counted = false;
    const failOpen = (): void => {
      stream = undefined;
      if (!counted) vm.stats.incrementHostCounter(FAIL_OPEN_COUNTER);
      counted = true;
    };
    const filter = (fn: (s: FilterStream) => void): void => {
      if (!stream || stream.ended) return;
      if (vm.failed) return failOpen();
      try {
        fn(stream);
        vm.runPosted(); // what the dispatcher was handed (queue deliveries) runs next
      } catch {
        failOpen();
        return;
      }
      // A stop would hold the exchange in Envoy; here traffic must keep flowing, so it is counted and resumed.
      const p = stream.paused;
      if (!stream.ended && (p.request !== undefined || p.response !== undefined)) {
        vm.stats.incrementHostCounter(STOP_IGNORED_COUNTER);
        stream.resume();
      }
    };
    let ended = false;
    let aborted = false;
    const route = routeFor(path, routes);
    const endStream = (): void => {
      if (ended) return;
      ended = true;
      filter((s) => s.end());
      opts.onExchangeEnd?.({ route, failOpen: counted, aborted });
    };

    if (vm.failed) failOpen();
    else {
      try {
        stream = vm.newStream({ routeName: route, clusterName: UPSTREAM_CLUSTER });
      } catch {
        failOpen();
      }
    }
    filter((s) => s.requestHeaders(headers, !hasBody));
    const requestOut = (): Array<[string, string]> => (stream ? stream.request.entries() : headers);

    const respond = (status: number, respHeaders: Array<[string, string]>, body: Buffer | undefined): void => {
      const all: Array<[string, string]> = [[":status", String(status)], ...respHeaders];
      filter((s) => s.responseHeaders(all, body === undefined || body.length === 0));
      const out = stream ? stream.response.entries() : all;
      const code = Number(out.find(([k]) => k === ":status")?.[1] ?? status);
      res.writeHead(code, outgoingHeaders(out));
      let payload = body ?? Buffer.alloc(0);
      if (payload.length > 0) filter((s) => {
        s.responseBody(payload, true);
        payload = s.lastResponseChunk;
      });
      res.end(payload);
      endStream();
    };

    // A local reply has already gone through the filter's response callbacks and ended the stream.
    const sendLocalReply = (s: FilterStream): void => {
      const out = s.response.entries();
      res.writeHead(Number(out.find(([k]) => k === ":status")?.[1] ?? s.localResponse!.statusCode), outgoingHeaders(out));
      res.end(s.lastResponseChunk);
      endStream();
    };
    if (stream?.localResponse) {
      req.resume();
      sendLocalReply(stream);
      return;
    }

    const out = requestOut();
    const upstreamReq = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: out.find(([k]) => k === ":method")?.[1] ?? req.method,
        path: out.find(([k]) => k === ":path")?.[1] ?? path,
        headers: { ...outgoingHeaders(out), host: out.find(([k]) => k === ":authority")?.[1] ?? upstream.host },
        agent,
      },
      (up) => {
        const respHeaders: Array<[string, string]> = [[":status", String(up.statusCode ?? 502)], ...incomingPairs(up.rawHeaders)];
        const noBody = req.method === "HEAD" || up.statusCode === 204 || up.statusCode === 304 || up.headers["content-length"] === "0";
        filter((s) => s.responseHeaders(respHeaders, noBody));
        if (stream?.localResponse) {
          up.destroy();
          sendLocalReply(stream);
          return;
        }
        const final = stream ? stream.response.entries() : respHeaders;
        const code = Number(final.find(([k]) => k === ":status")?.[1] ?? up.statusCode ?? 502);
        res.writeHead(code, outgoingHeaders(final));
        res.flushHeaders();
        up.on("data", (chunk: Buffer) => {
          let data = chunk;
          filter((s) => {
            s.responseBody(chunk, false);
            data = s.lastResponseChunk;
          });
          if (data.length > 0) res.write(data);
        });
        up.on("end", () => {
          let tail: Buffer = Buffer.alloc(0);
          if (!noBody) filter((s) => {
            s.responseBody(Buffer.alloc(0), true);
            tail = s.lastResponseChunk;
          });
          res.end(tail);
          endStream();
        });
        up.on("error", () => {
          res.destroy();
          endStream();
        });
      },
    );
    upstreamReq.on("error", () => {
      if (res.headersSent) {
        res.destroy();
        endStream();
        return;
      }
      const body = Buffer.from("upstream connect error or disconnect/reset before headers. reset reason: connection failure");
      respond(503, [["content-length", String(body.length)], ["content-type", "text/plain"]], body);
    });
    req.on("data", (chunk: Buffer) => {
      let data = chunk;
      filter((s) => {
        s.requestBody(chunk, false);
        data = s.lastRequestChunk;
      });
      if (data.length > 0) upstreamReq.write(data);
    });
    req.on("end", () => {
      let tail: Buffer = Buffer.alloc(0);
      if (hasBody) filter((s) => {
        s.requestBody(Buffer.alloc(0), true);
        tail = s.lastRequestChunk;
      });
      upstreamReq.end(tail);
    });
    // The client went away before the exchange finished: stop the upstream call and close the stream.
    res.on("close", () => {
      if (!res.writableFinished) {
        aborted = true;
        upstreamReq.destroy();
        endStream();
      }
    });
  }

  const admin = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/stats/prometheus") {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
      res.end(vm.stats.prometheus());
      return;
    }
    if (req.method === "GET" && path === "/ready") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("LIVE\n");
      return;
    }
    if (req.method === "POST" && path === "/config") {
      void readAll(req).then((body) => {
        const before = vm.logs.length;
        let accepted: boolean;
        try {
          accepted = vm.configure(body);
        } catch (e) {
          res.writeHead(503, { "content-type": "text/plain" });
          res.end(`the filter VM has failed: ${e instanceof Error ? e.message : String(e)}\n`);
          return;
        }
        if (accepted) {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end("accepted\n");
          return;
        }
        const reasons = vm.logs.slice(before).filter((l) => l.level >= 3).map((l) => l.message);
        res.writeHead(400, { "content-type": "text/plain" });
        res.end(`rejected: ${reasons.length > 0 ? reasons.join("; ") : "proxy_on_configure returned false"}\n`);
      });
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  });

  const port = await listen(server, opts.listenPort ?? 0);
  const adminPort = await listen(admin, opts.adminPort ?? 0);

  return {
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    vm,
    close: async () => {
      if (ticker !== undefined) timers.clearInterval(ticker);
      const closing = [server, admin].map((s) => new Promise<void>((r) => s.close(() => r())));
      server.closeAllConnections();
      admin.closeAllConnections();
      agent.destroy();
      await Promise.all(closing);
      if (!vm.failed) {
        try {
          vm.shutdown();
        } catch {
          // a failing shutdown leaves nothing to clean up
        }
      }
    },
  };
}
