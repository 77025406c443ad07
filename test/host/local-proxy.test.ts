// The local proxy: one filter stream per request, headers as the filter left them, bodies chunk by
// chunk (SSE flows), route names, ticks at the filter's period, admin endpoints, fail-open.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, request, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { startLocalProxy, type ExchangeInfo, type LocalProxy, type LocalProxyOptions } from "./local-proxy.js";
import { callDrop, callStore, proxyModule, seq, loadAt } from "./support/proxy-module.js";
import { op } from "./support/wasm-writer.js";
import { encodePairs } from "./pairs.js";

const i = op.i32;
const text = (offset: number, s: string): { offset: number; bytes: string } => ({ offset, bytes: s });

/** A module that adds headers both ways, echoes the route name upstream and counts body chunks and logs. */
const headerModule = proxyModule({
  imports: ["proxy_add_header_map_value", "proxy_get_property", "proxy_define_metric", "proxy_increment_metric"],
  data: [text(1024, "x-from-filter"), text(1040, "1"), text(1050, "xds\0route_name"), text(1070, "x-route"), text(1080, "chunks_total"), text(1100, "logged_total"), text(1120, "x-resp")],
  callbacks: {
    proxy_on_configure: seq(callStore(100, "env.proxy_define_metric", i(0), i(1080), i(12), i(40)), callStore(104, "env.proxy_define_metric", i(0), i(1100), i(12), i(44))),
    proxy_on_request_headers: seq(
      callDrop("env.proxy_add_header_map_value", i(0), i(1024), i(13), i(1040), i(1)),
      callStore(108, "env.proxy_get_property", i(1050), i(14), i(16), i(20)),
      callDrop("env.proxy_add_header_map_value", i(0), i(1070), i(7), loadAt(16), loadAt(20)),
    ),
    proxy_on_response_headers: callDrop("env.proxy_add_header_map_value", i(2), i(1120), i(6), i(1040), i(1)),
    proxy_on_response_body: callDrop("env.proxy_increment_metric", loadAt(40), op.i64(1)),
    proxy_on_log: callDrop("env.proxy_increment_metric", loadAt(44), op.i64(1)),
  },
});

interface Upstream {
  url: string;
  seen: IncomingHttpHeaders[];
  close(): Promise<void>;
}

async function startUpstream(handler: (res: ServerResponse, path: string) => void): Promise<Upstream> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on("end", () => handler(res, req.url ?? "/"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    }),
  };
}

async function withProxy(
  upstream: Upstream,
  opts: Partial<LocalProxyOptions>,
  fn: (p: LocalProxy, ends: ExchangeInfo[], firstEnd: Promise<void>) => Promise<void>,
): Promise<void> {
  const ends: ExchangeInfo[] = [];
  let onFirst: () => void = () => {};
  const firstEnd = new Promise<void>((r) => (onFirst = r));
  const onExchangeEnd = (e: ExchangeInfo): void => {
    ends.push(e);
    onFirst();
  };
  const proxy = await startLocalProxy({ wasm: headerModule, upstream: upstream.url, routes: [{ prefix: "/v1/chat", name: "chat" }], onExchangeEnd, ...opts });
  try {
    await fn(proxy, ends, firstEnd);
  } finally {
    await proxy.close();
    await upstream.close();
  }
}

test("headers the filter left go upstream and downstream; the route name comes from the first matching prefix", async () => {
  const up = await startUpstream((res) => res.end("ok"));
  await withProxy(up, {}, async (proxy, ends) => {
    const chat = await fetch(`${proxy.url}/v1/chat/completions`, { method: "POST", body: "{}" });
    assert.equal(await chat.text(), "ok");
    assert.equal(chat.headers.get("x-resp"), "1");
    const other = await fetch(`${proxy.url}/health`);
    assert.equal(await other.text(), "ok");
    assert.equal(up.seen[0]!["x-from-filter"], "1");
    assert.equal(up.seen[0]!["x-route"], "chat");
    assert.equal(up.seen[1]!["x-route"], "default");
    assert.equal(up.seen[0]!["x-forwarded-proto"], "http");
    assert.match(String(up.seen[0]!["x-request-id"]), /^[0-9a-f-]{36}$/);
    assert.equal(proxy.vm.stats.counter("logged_total"), 2);
    assert.deepEqual(ends, [{ route: "chat", failOpen: false, aborted: false }, { route: "default", failOpen: false, aborted: false }]);
  });
});

test("SSE flows chunk by chunk: the client reads the first event before the upstream writes the second", async () => {
  let second: (() => void) | undefined;
  const up = await startUpstream((res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: one\n\n");
    second = () => res.end("data: [DONE]\n\n");
  });
  await withProxy(up, {}, async (proxy) => {
    const res = await fetch(`${proxy.url}/v1/chat/completions`, { method: "POST", body: "{}" });
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(Buffer.from(first.value!).toString(), "data: one\n\n");
    assert.equal(proxy.vm.stats.counter("chunks_total"), 1, "the filter saw the first chunk on its own");
    second!();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    assert.equal(rest, "data: [DONE]\n\n");
  });
});

test("a client that goes away mid-stream still gets proxy_on_log (the stream ends)", async () => {
  const up = await startUpstream((res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: one\n\n");
  });
  await withProxy(up, {}, async (proxy, ends, firstEnd) => {
    await new Promise<void>((resolve, reject) => {
      const req = request(`${proxy.url}/v1/chat/completions`, { method: "POST" }, (res) => {
        res.once("data", () => {
          req.destroy();
          resolve();
        });
      });
      req.on("error", () => {});
      req.end("{}");
      setTimeout(() => reject(new Error("no first chunk")), 5000).unref();
    });
    await firstEnd;
    assert.deepEqual(ends, [{ route: "chat", failOpen: false, aborted: true }]);
    assert.equal(proxy.vm.stats.counter("logged_total"), 1);
  });
});

test("ticks run at the period the filter set", async () => {
  const tickModule = proxyModule({
    imports: ["proxy_set_tick_period_milliseconds", "proxy_define_metric", "proxy_increment_metric"],
    data: [text(1024, "ticks_total")],
    callbacks: {
      proxy_on_vm_start: callDrop("env.proxy_set_tick_period_milliseconds", i(250)),
      proxy_on_configure: callStore(100, "env.proxy_define_metric", i(0), i(1024), i(11), i(40)),
      proxy_on_tick: callDrop("env.proxy_increment_metric", loadAt(40), op.i64(1)),
    },
  });
  const scheduled: Array<{ fn: () => void; ms: number; cleared: boolean }> = [];
  const timers = {
    setInterval: (fn: () => void, ms: number) => {
      const h = { fn, ms, cleared: false };
      scheduled.push(h);
      return h;
    },
    clearInterval: (h: unknown) => {
      (h as { cleared: boolean }).cleared = true;
    },
  };
  const up = await startUpstream((res) => res.end());
  await withProxy(up, { wasm: tickModule, timers }, async (proxy) => {
    assert.equal(scheduled.length, 1);
    assert.equal(scheduled[0]!.ms, 250);
    scheduled[0]!.fn();
    scheduled[0]!.fn();
    assert.equal(proxy.vm.stats.counter("ticks_total"), 2);
  });
  assert.equal(scheduled[0]!.cleared, true, "close() stops the ticker");
});

test("admin: /stats/prometheus renders the stats, /ready answers, POST /config applies or rejects with 400", async () => {
  const rejecting = proxyModule({ callbacks: {}, returns: { proxy_on_configure: 0 } });
  const up = await startUpstream((res) => res.end());
  await withProxy(up, {}, async (proxy) => {
    await fetch(`${proxy.url}/v1/chat`);
    const stats = await fetch(`${proxy.adminUrl}/stats/prometheus`);
    assert.equal(stats.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    assert.equal(await stats.text(), "# TYPE chunks_total counter\nchunks_total{} 0\n\n# TYPE logged_total counter\nlogged_total{} 1\n\n");
    const ready = await fetch(`${proxy.adminUrl}/ready`);
    assert.deepEqual([ready.status, await ready.text()], [200, "LIVE\n"]);
    const cfg = await fetch(`${proxy.adminUrl}/config`, { method: "POST", body: '{"x":1}' });
    assert.deepEqual([cfg.status, await cfg.text()], [200, "accepted\n"]);
    assert.equal((await fetch(`${proxy.adminUrl}/nope`)).status, 404);
  });
  const up2 = await startUpstream((res) => res.end());
  await withProxy(up2, { wasm: rejecting }, async (proxy) => {
    const cfg = await fetch(`${proxy.adminUrl}/config`, { method: "POST", body: "bad" });
    assert.deepEqual([cfg.status, await cfg.text()], [400, "rejected: proxy_on_configure returned false\n"]);
  });
});

test("a failed VM never breaks traffic: requests pass without the filter and a counter shows it", async () => {
  const trapping = proxyModule({ callbacks: { proxy_on_request_headers: () => op.unreachable } });
  const up = await startUpstream((res) => res.end("through"));
  await withProxy(up, { wasm: trapping }, async (proxy, ends) => {
    for (let n = 0; n < 2; n++) {
      const res = await fetch(`${proxy.url}/v1/chat`);
      assert.deepEqual([res.status, await res.text()], [200, "through"]);
    }
    assert.equal(proxy.vm.failed, true);
    assert.equal(proxy.vm.stats.hostCounter("local_proxy.wasm_fail_open"), 2);
    assert.deepEqual(ends.map((e) => e.failOpen), [true, true]);
    const stats = await (await fetch(`${proxy.adminUrl}/stats/prometheus`)).text();
    assert.equal(stats, "# TYPE envoy_local_proxy_wasm_fail_open counter\nenvoy_local_proxy_wasm_fail_open{} 2\n\n");
  });
});

test("an unreachable upstream becomes Envoy's 503 local reply, through the filter's response path", async () => {
  const up = await startUpstream((res) => res.end());
  const deadUrl = up.url;
  await up.close();
  const proxy = await startLocalProxy({ wasm: headerModule, upstream: deadUrl });
  try {
    const res = await fetch(`${proxy.url}/x`);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("x-resp"), "1");
    assert.equal(await res.text(), "upstream connect error or disconnect/reset before headers. reset reason: connection failure");
  } finally {
    await proxy.close();
  }
});

test("a filter stop cannot hold traffic in the local proxy: it is resumed and counted", async () => {
  const stopping = proxyModule({ returns: { proxy_on_request_headers: 1 } });
  const up = await startUpstream((res) => res.end("went through"));
  await withProxy(up, { wasm: stopping }, async (proxy) => {
    const res = await fetch(`${proxy.url}/v1/chat`);
    assert.deepEqual([res.status, await res.text()], [200, "went through"]);
    assert.equal(proxy.vm.stats.hostCounter("local_proxy.filter_stop_resumed"), 1);
  });
});

test("a local response from the filter is sent to the client through the response path, the upstream untouched", async () => {
  const extra = encodePairs([["x-reason", "policy"]]);
  const denying = proxyModule({
    imports: ["proxy_send_local_response", "proxy_add_header_map_value"],
    data: [text(1024, "denied"), text(1040, "no"), { offset: 1100, bytes: extra }, text(1200, "x-resp"), text(1210, "1")],
    callbacks: {
      proxy_on_request_headers: callStore(100, "env.proxy_send_local_response", i(403), i(1024), i(6), i(1040), i(2), i(1100), i(extra.length), i(-1)),
      proxy_on_response_headers: callDrop("env.proxy_add_header_map_value", i(2), i(1200), i(6), i(1210), i(1)),
    },
  });
  const up = await startUpstream((res) => res.end("upstream"));
  await withProxy(up, { wasm: denying }, async (proxy, ends) => {
    const res = await fetch(`${proxy.url}/v1/chat`, { method: "POST", body: "{}" });
    assert.deepEqual([res.status, await res.text(), res.headers.get("x-reason"), res.headers.get("x-resp")], [403, "no", "policy", "1"]);
    assert.equal(up.seen.length, 0);
    assert.deepEqual(ends, [{ route: "chat", failOpen: false, aborted: false }]);
  });
});
