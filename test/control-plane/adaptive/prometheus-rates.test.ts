// Request rates for adaptive sampling from a Prometheus query API, against an emulated
// /api/v1/query endpoint on 127.0.0.1: the exact query sent, vector parsing, and failures.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { defaultRateQuery, PrometheusRateSource } from "../../../control-plane/src/adaptive/prometheus.js";

describe("Prometheus rate source (emulated Prometheus query API)", () => {
  let server: Server;
  let url = "";
  const queries: string[] = [];
  let reply: { status: number; body: unknown } = { status: 200, body: {} };

  before(async () => {
    server = createServer((req, res) => {
      const u = new URL(req.url ?? "/", "http://x");
      assert.equal(u.pathname, "/api/v1/query");
      queries.push(u.searchParams.get("query") ?? "");
      res.writeHead(reply.status, { "content-type": "application/json" });
      res.end(JSON.stringify(reply.body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("emulated: sends the templated query and returns one rate per route, skipping NaN and series without a route", async () => {
    const source = new PrometheusRateSource({ url, query: defaultRateQuery, namespaceOf: (p) => (p === "chat" ? "llm" : undefined) });
    reply = {
      status: 200,
      body: {
        status: "success",
        data: {
          resultType: "vector",
          result: [
            { metric: { route: "completions" }, value: [1764676800, "812.5"] },
            { metric: { route: "default" }, value: [1764676800, "3"] },
            { metric: { route: "embeddings" }, value: [1764676800, "NaN"] },
            { metric: {}, value: [1764676800, "7"] },
          ],
        },
      },
    };
    queries.length = 0;
    assert.deepEqual(await source.requestRates("chat"), [
      { route: "completions", requestsPerSecond: 812.5 },
      { route: "default", requestsPerSecond: 3 },
    ]);
    assert.deepEqual(queries, ['sum by (route) (rate(tokentrace_requests_total{namespace="llm"}[2m]))']);
    assert.deepEqual(await source.requestRates("gone"), []);
    assert.equal(queries.length, 1);
  });

  it("emulated: escapes label values in the template", () => {
    const source = new PrometheusRateSource({ url, query: 'x{namespace="{namespace}",policy="{policy}"}', namespaceOf: () => "llm" });
    assert.equal(source.queryFor('a"b', "llm\\x"), 'x{namespace="llm\\\\x",policy="a\\"b"}');
  });

  it("emulated: throws on an error status or a non-vector result, so the sampler skips the policy", async () => {
    const source = new PrometheusRateSource({ url, query: defaultRateQuery, namespaceOf: () => "llm" });
    reply = { status: 400, body: { status: "error", errorType: "bad_data", error: "parse error at char 5" } };
    await assert.rejects(source.requestRates("chat"), { message: "prometheus query failed: HTTP 400: parse error at char 5" });
    reply = { status: 200, body: { status: "success", data: { resultType: "matrix", result: [] } } };
    await assert.rejects(source.requestRates("chat"), { message: "prometheus query returned matrix, expected vector" });
  });
});
