// The span receiver under hostile callers, on the real filter-facing listener over HTTP: what it
// keeps is bounded by bytes (every retained byte counted, strings owned copies: measured on the
// heap), bodies are refused by declared size before they are read and by nesting before any tree
// is built, one source cannot evict the others, nobody plants a span under another's
// x-token-trace-id, and every drop is counted by reason.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createMetrics, metricNames, type ControlPlaneMetrics } from "../../../control-plane/src/api/metrics.js";
import { ContentKeyRing } from "../../../control-plane/src/content/keys.js";
import { createFilterApp } from "../../../control-plane/src/filters/app.js";
import { listenOn } from "../../../control-plane/src/listen.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { TraceStore } from "../../../control-plane/src/traces/store.js";
import { exportJson, exportProtobuf, llmSpan } from "./otlp-fixtures.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heapUsed = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const MiB = 1024 * 1024;
const xfcc = (namespace: string, account: string) => `By=spiffe://cluster.local/ns/tokentrace-system/sa/cp;URI=spiffe://cluster.local/ns/${namespace}/sa/${account}`;

interface Receiver {
  url: string;
  store: TraceStore;
  metrics: ControlPlaneMetrics;
  close(): Promise<void>;
}

async function receiver(opts: { maxBytes: number; maxSpans?: number; maxBodyBytes?: number; maxInflightBytes?: number }): Promise<Receiver> {
  const store = new TraceStore(opts.maxSpans ?? 100_000, { maxBytes: opts.maxBytes });
  const metrics = createMetrics();
  const policies = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-recv-")), "policies.json"), fsync: false });
  const app = createFilterApp({
    auth: "mesh",
    trustDomain: "cluster.local",
    tokens: [],
    store: policies,
    overrides: () => undefined,
    metrics,
    keys: new ContentKeyRing(""),
    traces: { store, maxBodyBytes: opts.maxBodyBytes ?? 4 * MiB, maxInflightBytes: opts.maxInflightBytes ?? 0, maxDepth: 32 },
    log: () => undefined,
  });
  const server: Server = await listenOn(app, 0, "127.0.0.1", "test");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    store,
    metrics,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await policies.close();
    },
  };
}

const post = (url: string, body: string | Buffer, source: string, type = "application/json") =>
  fetch(`${url}/v1/traces`, { method: "POST", headers: { "content-type": type, "x-forwarded-client-cert": xfcc("llm", source) }, body });

async function metricValue(metrics: ControlPlaneMetrics, name: string, labels = ""): Promise<number> {
  const text = await metrics.registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

describe("span receiver bounds", () => {
  let r: Receiver;
  before(async () => {
    r = await receiver({ maxBytes: 8 * MiB });
  });
  after(() => r.close());

  it("120 one-span requests each carrying a 1 MiB attribute (JSON and protobuf) leave the heap within the byte budget", async () => {
    const before = heapUsed();
    for (let i = 0; i < 120; i++) {
      const body = exportJson([llmSpan(i, { extra: [{ key: "huge", value: `${i}`.padEnd(MiB, "x") }] })]);
      const res = i % 2 === 0 ? await post(r.url, body, "flood") : await post(r.url, exportProtobuf(body), "flood", "application/x-protobuf");
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    const grown = heapUsed() - before;
    assert.equal(r.store.size, 120, "small after the cut, every span fits");
    assert.ok(r.store.bytes <= 8 * MiB);
    // Each kept attribute is 256 characters; what they keep alive is far below one request body.
    assert.ok(grown < 8 * MiB, `heap grew ${(grown / MiB).toFixed(1)} MiB holding ${r.store.size} spans (${(r.store.bytes / MiB).toFixed(2)} MiB counted)`);
  });

  it("counts at least every byte the held spans keep (measured on the heap)", async () => {
    const store = new TraceStore(1_000_000, { maxBytes: 1024 * MiB });
    const { decodeExportRequest } = await import("../../../control-plane/src/traces/otlp-json.js");
    const batches = Array.from({ length: 40 }, (_, b) =>
      JSON.parse(exportJson(Array.from({ length: 100 }, (_, i) => llmSpan(b * 100 + i, { extra: Array.from({ length: 20 }, (_, k) => ({ key: `attr.${k}`, value: `${b}-${i}-${k}`.padEnd(40 + k * 10, "v") })) })))),
    );
    const before = heapUsed();
    for (const batch of batches) store.add(decodeExportRequest(batch).spans, "calibration");
    batches.length = 0;
    const grown = heapUsed() - before;
    assert.equal(store.size, 4000);
    assert.ok(grown <= store.bytes, `the heap grew ${grown} bytes, more than the ${store.bytes} counted`);
  });

  it("refuses a declared Content-Length over the limit before reading a byte of the body", async () => {
    const small = await receiver({ maxBytes: MiB, maxBodyBytes: 64 * 1024 });
    try {
      const port = new URL(small.url).port;
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1", () => {
          // Headers only: the 100 MB body is never sent, so only a server that does not wait for it answers.
          socket.write(`POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\nx-forwarded-client-cert: ${xfcc("llm", "a")}\r\n\r\n`);
        });
        let text = "";
        socket.on("data", (c: Buffer) => (text += c.toString("latin1")));
        socket.on("close", () => resolve(text));
        socket.on("error", reject);
      });
      assert.match(answer, /^HTTP\/1\.1 413 /);
      assert.match(answer, /connection: close/i);
      assert.equal(await metricValue(small.metrics, metricNames.spanRequestsRefused, '{reason="too_large"}'), 1);
    } finally {
      await small.close();
    }
  });

  it("refuses nesting past the limit before building a tree: JSON a million deep, protobuf arrays nested past it", async () => {
    const deep = Buffer.from(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);
    const res = await post(r.url, deep, "deep");
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { message: string }).message, /nests deeper than 32 levels/);
    // An attribute whose AnyValue nests arrays 40 deep, encoded as a Collector would.
    let nested: unknown = { stringValue: "x" };
    for (let i = 0; i < 40; i++) nested = { arrayValue: { values: [nested] } };
    const span = llmSpan(1) as { attributes: unknown[] };
    span.attributes.push({ key: "nested", value: nested });
    const protobuf = await post(r.url, exportProtobuf(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] })), "deep", "application/x-protobuf");
    assert.equal(protobuf.status, 400);
    assert.equal((await post(r.url, exportProtobuf(exportJson([llmSpan(2)])), "deep", "application/x-protobuf")).status, 200, "ordinary nesting passes");
    assert.equal(await metricValue(r.metrics, metricNames.spanRequestsRefused, '{reason="too_deep"}'), 2);
  });

  it("one source flooding evicts its own spans, never the others' while it holds more", async () => {
    const fair = await receiver({ maxBytes: 2 * MiB });
    try {
      for (let i = 0; i < 20; i++) assert.equal((await post(fair.url, exportJson([llmSpan(10_000 + i)]), "quiet")).status, 200);
      const quietBytes = fair.store.bytes;
      for (let round = 0; round < 40; round++) {
        const spans = Array.from({ length: 50 }, (_, i) => llmSpan(round * 50 + i, { extra: [{ key: "pad", value: "p".repeat(200) }] }));
        assert.equal((await post(fair.url, exportJson(spans), "flood")).status, 200);
      }
      const bySource = new Map(fair.store.bytesBySource());
      assert.ok(fair.store.bytes <= 2 * MiB);
      assert.equal(fair.store.lookup("ttid-10000").length, 1, "the quiet source's first span is still held");
      assert.equal(bySource.get("spiffe://cluster.local/ns/llm/sa/quiet"), quietBytes);
      assert.ok((await metricValue(fair.metrics, metricNames.spansDropped, '{reason="evicted"}')) > 0);
    } finally {
      await fair.close();
    }
  });

  it("refuses a span under another source's x-token-trace-id unless it continues that trace, and counts it", async () => {
    const victim = llmSpan(1, { tokenTraceId: "victim-request", traceId: "1".repeat(32) });
    assert.equal((await post(r.url, exportJson([victim]), "victim")).status, 200);
    const planted = await post(r.url, exportJson([llmSpan(2, { tokenTraceId: "victim-request" })]), "attacker");
    assert.equal(planted.status, 200);
    assert.equal(((await planted.json()) as { partialSuccess: { rejectedSpans: string } }).partialSuccess.rejectedSpans, "1");
    // The next hop of the same trace (it knows the 128-bit trace id) and a retry by the same source are kept.
    assert.equal((await post(r.url, exportJson([llmSpan(3, { tokenTraceId: "victim-request", traceId: "1".repeat(32) })]), "gateway")).status, 200);
    // (The retry gets a trace of its own: a lookup also lists every span of the traces it finds, and
    // the default trace id of llmSpan(4) is one the flood above also used.)
    assert.equal((await post(r.url, exportJson([llmSpan(4, { tokenTraceId: "victim-request", traceId: "4".repeat(32) })]), "victim")).status, 200);
    const held = r.store.lookup("victim-request");
    assert.deepEqual(held.map((c) => c.source.replace(/^.*\/sa\//, "")).sort(), ["gateway", "victim", "victim"]);
    assert.equal(await metricValue(r.metrics, metricNames.spansDropped, '{reason="token_trace_id_conflict"}'), 1);
  });

  it("answers 429 with Retry-After while too many body bytes are being read, before reading this one", async () => {
    const tight = await receiver({ maxBytes: MiB, maxBodyBytes: 64 * 1024, maxInflightBytes: 64 * 1024 });
    try {
      const port = Number(new URL(tight.url).port);
      // A first request declares 60 KiB and sends half: its reservation stays while it trickles.
      const slow = connect(port, "127.0.0.1");
      await new Promise<void>((resolve) => slow.on("connect", () => resolve()));
      slow.write(`POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 61440\r\nx-forwarded-client-cert: ${xfcc("llm", "slow")}\r\n\r\n${" ".repeat(30000)}`);
      let second: Response | undefined;
      const body = exportJson([llmSpan(1, { extra: [{ key: "pad", value: "p".repeat(8192) }] })]);
      for (let i = 0; i < 50 && second?.status !== 429; i++) second = await post(tight.url, body, "other");
      assert.equal(second?.status, 429);
      assert.equal(second?.headers.get("retry-after"), "1");
      slow.destroy();
      assert.ok((await metricValue(tight.metrics, metricNames.spanRequestsRefused, '{reason="inflight"}')) >= 1);
    } finally {
      await tight.close();
    }
  });
});
