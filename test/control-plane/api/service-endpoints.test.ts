// /openapi.json (covers exactly the routes the app serves), /healthz, /readyz and /metrics.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createApp } from "../../../control-plane/src/app.js";
import { createMetrics, metricNames } from "../../../control-plane/src/api/metrics.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TraceStore } from "../../../control-plane/src/traces/store.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { adminToken, call, samplePolicy, startTestApp, type TestApp } from "../helpers.js";

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

// Every (METHOD, /path/{param}) the express app routes, read from its router stack.
function servedRoutes(): string[] {
  const app = createApp({
    store: new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-routes-")), "policies.json") }),
    tokens: [],
    reads: "public",
    bodyLimitBytes: 1024,
    metrics: createMetrics(),
    overrides: () => undefined,
    readiness: () => ({}),
    log: () => undefined,
    traces: { store: new TraceStore(10), linkTemplate: "" },
  });
  const out: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) out.push(`${method.toUpperCase()} ${layer.route.path.replace(/:([A-Za-z]+)/g, "{$1}")}`);
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack);
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out.sort();
}

describe("service endpoints", () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  it("describes in /openapi.json exactly the routes the app serves", async () => {
    const res = await call(app.url, "GET", "/openapi.json");
    assert.equal(res.status, 200);
    const doc = res.body as { openapi: string; paths: Record<string, Record<string, unknown>> };
    assert.equal(doc.openapi, "3.1.0");
    const described = Object.entries(doc.paths)
      // HEAD and OPTIONS are derived for every path (express answers them itself); x-* are extensions.
      .flatMap(([path, item]) => Object.keys(item).filter((k) => !["parameters", "head", "options"].includes(k) && !k.startsWith("x-")).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    const components = (doc as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas;
    for (const ref of refs) {
      const name = ref.replace(/^"\$ref":"#\/components\/schemas\//, "").replace(/"$/, "");
      assert.ok(Object.hasOwn(components, name), `unresolved ${ref}`);
    }
    assert.ok(refs.length >= 10);
    const served = servedRoutes();
    assert.equal(served.length, 25);
    assert.deepEqual(described, served);
  });

  it("reports liveness always and readiness from its checks", async () => {
    assert.deepEqual((await call(app.url, "GET", "/healthz")).body, { status: "ok" });
    const ready = await call(app.url, "GET", "/readyz");
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { ready: true, checks: { store: { ok: true, detail: "loaded" } } });
    app.readiness.kubernetes = { ok: false, detail: "list wasmplugins failed: 503" };
    const notReady = await call(app.url, "GET", "/readyz");
    assert.equal(notReady.status, 503);
    assert.deepEqual(notReady.body, { ready: false, checks: { store: { ok: true, detail: "loaded" }, kubernetes: { ok: false, detail: "list wasmplugins failed: 503" } } });
    delete app.readiness.kubernetes;
  });

  it("exports API requests by route pattern and code on /metrics", async () => {
    const fresh = await startTestApp();
    after(() => fresh.close());
    const app = fresh;
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    await call(app.url, "GET", "/v1/policies/chat");
    await call(app.url, "GET", "/v1/policies/none");
    await call(app.url, "GET", "/no/such/path");
    const res = await call(app.url, "GET", "/metrics");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8; version=0.0.4");
    const lines = res.text.split("\n").filter((l) => l.startsWith(`${metricNames.apiRequests}{`));
    assert.deepEqual(lines.sort(), [
      `${metricNames.apiRequests}{method="GET",route="/v1/policies/:name",code="200"} 1`,
      `${metricNames.apiRequests}{method="GET",route="/v1/policies/:name",code="404"} 1`,
      `${metricNames.apiRequests}{method="GET",route="unmatched",code="404"} 1`,
      `${metricNames.apiRequests}{method="POST",route="/v1/policies",code="201"} 1`,
    ].sort());
    assert.ok(res.text.includes(`${metricNames.policies} 1\n`));
    for (const name of [metricNames.pushes, metricNames.pushFailures, metricNames.reconcileLag, metricNames.adaptiveUpdates]) {
      assert.ok(res.text.includes(`# TYPE ${name} `), name);
    }
  });
});
