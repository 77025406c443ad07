import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Scraper, scrapeOnce, type ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { FakeClock, until } from "../../support/fake-clock.js";

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; base: string; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = (): Promise<void> => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  };
  servers.push(close);
  return { server, base, close };
}

// A failed assertion must not leave a server holding the process open.
const servers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of servers) await close();
});

const target = (id: string, url: string, over: Partial<ScrapeTarget> = {}): ScrapeTarget => ({ id, kind: "static", url, intervalMs: 1000, timeoutMs: 500, ...over });

describe("scraper", () => {
  it("streams the body into the parser and keeps the good lines of a scrape with a bad one", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4" });
      res.write("# TYPE a counter\na_total 1\nbroken{ 2\n");
      setTimeout(() => res.end('b{x="y"} 3\n'), 20);
    });
    const clock = new FakeClock();
    const r = await scrapeOnce(target("t", `${s.base}/metrics`), clock);
    assert.equal(r.ok, true);
    assert.equal(r.timestampMs, clock.now());
    assert.deepEqual(r.samples, [{ name: "a_total", labels: [], value: 1 }, { name: "b", labels: ["x", "y"], value: 3 }]);
    assert.deepEqual(r.parseErrors, [{ line: 3, reason: 'broken: invalid label name starting with "2"' }]);
    await s.close();
  });

  it("reports http_<status>, network, timeout and body_too_large as failed scrapes", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/500") res.writeHead(500).end("oops");
      else if (req.url === "/big") res.writeHead(200).end("x 1\n".repeat(1000));
      // "/hang" never answers
    });
    const clock = new FakeClock();
    const r500 = await scrapeOnce(target("a", `${s.base}/500`), clock);
    const rBig = await scrapeOnce(target("b", `${s.base}/big`), clock, 1000);
    const rHang = await scrapeOnce(target("c", `${s.base}/hang`, { timeoutMs: 150 }), clock);
    await s.close();
    const rDown = await scrapeOnce(target("d", `${s.base}/gone`), clock);
    assert.deepEqual([r500, rBig, rHang, rDown].map((r) => [r.ok, r.error, r.samples.length]), [
      [false, "http_500", 0], [false, "body_too_large", 0], [false, "timeout", 0], [false, "network", 0],
    ]);
  });

  it("scrapes each target on its own interval", async () => {
    const hits = new Map<string, number>();
    const s = await serve((req, res) => {
      hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
      res.writeHead(200).end("m 1\n");
    });
    const clock = new FakeClock();
    const results: ScrapeResult[] = [];
    const sc = new Scraper({ clock, concurrency: 4, spreadStart: false, onResult: (r) => results.push(r) });
    sc.setTargets([target("fast", `${s.base}/fast`, { intervalMs: 1000 }), target("slow", `${s.base}/slow`, { intervalMs: 3000 })]);
    sc.start();
    await until(() => results.length === 2, "first round");
    for (let k = 1; k <= 6; k++) {
      await clock.advance(1000);
      await until(() => results.length === 2 + k + (k % 3 === 0 ? 1 : 0) + (k > 3 ? 1 : 0), `round ${k}`);
    }
    assert.deepEqual([hits.get("/fast"), hits.get("/slow")], [7, 3]);
    const fastTimes = results.filter((r) => r.target.id === "fast").map((r) => r.timestampMs - 1_800_000_000_000);
    assert.deepEqual(fastTimes, [0, 1000, 2000, 3000, 4000, 5000, 6000]);
    await sc.stop();
    await s.close();
  });

  it("a hanging target holds one slot until its timeout and never delays the others", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/hang") return; // never answers
      res.writeHead(200).end("m 1\n");
    });
    const clock = new FakeClock();
    const order: string[] = [];
    const sc = new Scraper({ clock, concurrency: 2, spreadStart: false, onResult: (r) => order.push(`${r.target.id}:${r.ok ? "ok" : r.error}`) });
    sc.setTargets([
      target("hang", `${s.base}/hang`, { timeoutMs: 2000 }),
      target("a", `${s.base}/a`),
      target("b", `${s.base}/b`),
      target("c", `${s.base}/c`),
    ]);
    sc.start();
    await until(() => order.length === 4, "all four results");
    assert.deepEqual(order, ["a:ok", "b:ok", "c:ok", "hang:timeout"]);
    await sc.stop();
    await s.close();
  });

  it("drops a removed target from the schedule and reports it", async () => {
    const s = await serve((_req, res) => res.writeHead(200).end("m 1\n"));
    const clock = new FakeClock();
    const sc = new Scraper({ clock, concurrency: 1, spreadStart: false, onResult: () => undefined });
    sc.setTargets([target("x", `${s.base}/x`), target("y", `${s.base}/y`)]);
    const removed = sc.setTargets([target("y", `${s.base}/y`)]);
    assert.deepEqual(removed.map((t) => t.id), ["x"]);
    assert.deepEqual(sc.targets.map((t) => t.id), ["y"]);
    await s.close();
  });
});
