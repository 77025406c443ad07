import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sendWithRetry, backoffMs } from "../../../control-plane/src/remote-write/retry.js";
import { HttpTransport, parseRetryAfter, type SendResult, type Transport } from "../../../control-plane/src/remote-write/transport.js";
import { FakeClock } from "../../support/fake-clock.js";

/** A transport that plays back scripted results and counts calls. */
class ScriptedTransport implements Transport {
  calls = 0;
  constructor(private readonly script: SendResult[]) {}
  async send(): Promise<SendResult> {
    return this.script[Math.min(this.calls++, this.script.length - 1)]!;
  }
}

/** Runs the retry loop, advancing the fake clock whenever it sleeps. */
async function drive(p: Promise<SendResult>, clock: FakeClock): Promise<SendResult> {
  let done = false;
  const r = p.finally(() => (done = true));
  while (!done) await clock.advance(100_000);
  return r;
}

const opts = (clock: FakeClock) => ({ minBackoffMs: 30, maxBackoffMs: 5000, maxRetryAfterMs: 300_000, clock, random: () => 0.5 });

describe("retry wrapper", () => {
  it("backs off exponentially with jitter up to the cap", () => {
    const o = { minBackoffMs: 30, maxBackoffMs: 5000 };
    assert.deepEqual([0, 1, 2, 3, 7, 8, 20].map((a) => backoffMs(a, o, 0)), [15, 30, 60, 120, 1920, 2500, 2500]);
    assert.deepEqual([0, 1, 8].map((a) => backoffMs(a, o, 0.999999)), [30, 60, 5000]);
  });

  it("retries network errors and 5xx, then returns the success", async () => {
    const clock = new FakeClock();
    const t = new ScriptedTransport([
      { kind: "retryable", reason: "network" },
      { kind: "retryable", reason: "http_5xx", status: 503 },
      { kind: "retryable", reason: "http_5xx", status: 500 },
      { kind: "success", status: 204 },
    ]);
    const r = await drive(sendWithRetry(t, new Uint8Array(1), "1.0", opts(clock)), clock);
    assert.deepEqual(r, { kind: "success", status: 204 });
    assert.equal(t.calls, 4);
    assert.deepEqual(clock.sleeps, [23, 45, 90]); // 30*2^n * (0.5 + 0.5*0.5), rounded
  });

  it("waits exactly the Retry-After of a 429 (capped), not its own backoff", async () => {
    const clock = new FakeClock();
    const t = new ScriptedTransport([
      { kind: "retryable", reason: "http_429", status: 429, retryAfterMs: 7000 },
      { kind: "retryable", reason: "http_429", status: 429, retryAfterMs: 3_600_000 },
      { kind: "success", status: 200 },
    ]);
    const r = await drive(sendWithRetry(t, new Uint8Array(1), "1.0", opts(clock)), clock);
    assert.equal(r.kind, "success");
    assert.deepEqual(clock.sleeps, [7000, 300_000]);
  });

  it("returns a 4xx at once without retrying", async () => {
    const clock = new FakeClock();
    const t = new ScriptedTransport([{ kind: "failed", reason: "http_400", status: 400 }]);
    assert.deepEqual(await sendWithRetry(t, new Uint8Array(1), "1.0", opts(clock)), { kind: "failed", reason: "http_400", status: 400 });
    assert.equal(t.calls, 1);
    assert.deepEqual(clock.sleeps, []);
  });

  it("gives up with reason deadline when the next wait would pass the deadline", async () => {
    const clock = new FakeClock();
    const t = new ScriptedTransport([{ kind: "retryable", reason: "http_5xx", status: 502 }]);
    const r = await drive(sendWithRetry(t, new Uint8Array(1), "1.0", { ...opts(clock), deadlineMs: 100 }), clock);
    assert.deepEqual(r, { kind: "failed", reason: "deadline", status: 502 });
    assert.deepEqual(clock.sleeps, [23, 45]); // 23 + 45 = 68; +90 would pass 100
    assert.equal(t.calls, 3);
  });

  it("stops retrying when aborted and reports it as retryable 'aborted'", async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const t = new ScriptedTransport([{ kind: "retryable", reason: "network" }]);
    const p = sendWithRetry(t, new Uint8Array(1), "1.0", { ...opts(clock), signal: ac.signal });
    await clock.advance(0);
    ac.abort();
    assert.deepEqual(await p, { kind: "retryable", reason: "aborted" });
  });

  it("parses Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("Wed, 02 Dec 2026 12:00:00 GMT");
    assert.equal(parseRetryAfter("120", now), 120_000);
    assert.equal(parseRetryAfter("Wed, 02 Dec 2026 12:00:30 GMT", now), 30_000);
    assert.equal(parseRetryAfter("Wed, 02 Dec 2026 11:00:00 GMT", now), 0);
    assert.equal(parseRetryAfter("soon", now), undefined);
    assert.equal(parseRetryAfter(null, now), undefined);
  });
});

describe("HTTP transport against a tiny receiver on 127.0.0.1", () => {
  async function receiver(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
    const server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/write` };
  }

  it("sends the 1.0 headers and classifies 204, 400, 415, 429 with Retry-After, 503 and a refused connection", async () => {
    const seen: Record<string, string | string[] | undefined>[] = [];
    const statuses = [204, 400, 415, 429, 503];
    let i = 0;
    const { server, url } = await receiver((req, res) => {
      seen.push({ ce: req.headers["content-encoding"], ct: req.headers["content-type"], v: req.headers["x-prometheus-remote-write-version"], ua: req.headers["user-agent"], org: String(req.headers["x-scope-orgid"]) });
      req.resume();
      req.on("end", () => {
        const status = statuses[i++]!;
        if (status === 429) res.setHeader("Retry-After", "3");
        res.writeHead(status).end("detail that must not be logged");
      });
    });
    const t = new HttpTransport({ url, headers: { "X-Scope-OrgID": "tenant-a" }, timeoutMs: 2000 });
    const results = [];
    for (let k = 0; k < statuses.length; k++) results.push(await t.send(Uint8Array.of(0), "1.0"));
    await new Promise<void>((r) => server.close(() => r()));
    results.push(await t.send(Uint8Array.of(0), "1.0"));
    assert.deepEqual(results, [
      { kind: "success", status: 204 },
      { kind: "failed", reason: "http_400", status: 400 },
      { kind: "failed", reason: "http_415", status: 415 },
      { kind: "retryable", reason: "http_429", status: 429, retryAfterMs: 3000 },
      { kind: "retryable", reason: "http_5xx", status: 503 },
      { kind: "retryable", reason: "network" },
    ]);
    assert.deepEqual(seen[0], { ce: "snappy", ct: "application/x-protobuf", v: "0.1.0", ua: "tokentrace-control-plane/0.1.0", org: "tenant-a" });
  });

  it("reports a receiver slower than the timeout as retryable 'timeout'", async () => {
    const { server, url } = await receiver((req, res) => {
      req.resume();
      setTimeout(() => res.writeHead(204).end(), 2000);
    });
    const t = new HttpTransport({ url, timeoutMs: 100 });
    assert.deepEqual(await t.send(Uint8Array.of(0), "2.0"), { kind: "retryable", reason: "timeout" });
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
});
