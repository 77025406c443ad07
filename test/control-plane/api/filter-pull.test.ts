// The pull contract the filter's policySource relies on, exactly:
//   GET /v1/filters/{namespace}.{name}/config?version=<last>&labels=k=v,...
// 200 {"version","policy","config"} + ETag "<version>"; 304 (no body) when version or
// If-None-Match is current; 404 {error, details} when nothing matches.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { configVersion } from "../../../control-plane/src/policy/effective.js";
import { adminToken, call, samplePolicy, startTestApp, type TestApp } from "../helpers.js";

describe("filter pull endpoint", () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy("chat"), token: adminToken });
  });
  afterEach(() => app.close());

  it("returns the policy's pluginConfig with an opaque version and a matching ETag", async () => {
    const res = await call(app.url, "GET", "/v1/filters/llm.chat/config");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
    const version = configVersion("chat", samplePolicy().pluginConfig);
    assert.match(version, /^[0-9a-f]{16}$/);
    assert.equal(res.headers.get("etag"), `"${version}"`);
    assert.deepEqual(res.body, { version, policy: "chat", config: samplePolicy().pluginConfig });
  });

  it("answers 304 with no body when ?version= or If-None-Match is current, and 200 when it is not", async () => {
    const first = await call(app.url, "GET", "/v1/filters/llm.chat/config");
    const version = (first.body as { version: string }).version;
    const byQuery = await call(app.url, "GET", `/v1/filters/llm.chat/config?version=${version}`);
    assert.equal(byQuery.status, 304);
    assert.equal(byQuery.text, "");
    const byHeader = await call(app.url, "GET", "/v1/filters/llm.chat/config", { headers: { "if-none-match": `"${version}"` } });
    assert.equal(byHeader.status, 304);
    const old = await call(app.url, "GET", "/v1/filters/llm.chat/config?version=0000000000000000");
    assert.equal(old.status, 200);
    assert.deepEqual(old.body, first.body);
  });

  it("changes the version when the policy changes (PUT) and when adaptive sampling overrides a rate", async () => {
    const v1 = ((await call(app.url, "GET", "/v1/filters/llm.chat/config")).body as { version: string }).version;
    const changed = samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: 0.9, force: [{ header: "x-debug", value: "1" }] } } });
    await call(app.url, "PUT", "/v1/policies/chat", { body: changed, token: adminToken });
    const after = await call(app.url, "GET", `/v1/filters/llm.chat/config?version=${v1}`);
    assert.equal(after.status, 200);
    const v2 = (after.body as { version: string }).version;
    assert.notEqual(v2, v1);
    assert.deepEqual((after.body as { config: unknown }).config, changed.pluginConfig);
    app.overrides.set("chat", { defaultRate: 0.125, routeRates: new Map() });
    const adapted = await call(app.url, "GET", `/v1/filters/llm.chat/config?version=${v2}`);
    assert.equal(adapted.status, 200);
    assert.deepEqual((adapted.body as { config: unknown }).config, { sampling: { defaultRate: 0.125, force: [{ header: "x-debug", value: "1" }] } });
    assert.notEqual((adapted.body as { version: string }).version, v2);
  });

  it("picks the most specific matching policy in the workload's namespace, ties by name, default labels app=<name>", async () => {
    const policy = (name: string, namespace: string, matchLabels: Record<string, string>) =>
      samplePolicy(name, { target: { namespace, selector: { matchLabels } }, pluginConfig: { sampling: { defaultRate: 0.5 } } });
    for (const p of [
      policy("z-gpu", "llm", { app: "chat", tier: "gpu" }),
      policy("a-gpu", "llm", { app: "chat", tier: "gpu" }),
      policy("all", "llm", {}),
      policy("other-ns", "batch", { app: "chat" }),
      samplePolicy("refs", { target: { namespace: "llm", targetRefs: [{ kind: "Service", name: "chat" }] } }),
    ]) {
      assert.equal((await call(app.url, "POST", "/v1/policies", { body: p, token: adminToken })).status, 201);
    }
    const cases: [string, string, string | number][] = [
      ["/v1/filters/llm.chat/config", "default labels app=chat -> the one-label policy", "chat"],
      ["/v1/filters/llm.chat/config?labels=app=chat,tier=gpu", "two labels win; tie broken by name", "a-gpu"],
      ["/v1/filters/llm.embed/config", "empty matchLabels matches anything in the namespace", "all"],
      ["/v1/filters/batch.chat/config", "namespace must match", "other-ns"],
      ["/v1/filters/infer.chat/config", "no policy in the namespace", 404],
      ["/v1/filters/batch.embed/config?labels=app=chat", "labels given replace the default", "other-ns"],
    ];
    for (const [path, why, expected] of cases) {
      const res = await call(app.url, "GET", path);
      if (typeof expected === "number") {
        assert.equal(res.status, expected, why);
        assert.deepEqual(res.body, { error: "no policy", details: [{ field: "workload", reason: "no policy in namespace infer selects these labels" }] }, why);
      } else {
        assert.equal(res.status, 200, why);
        assert.equal((res.body as { policy: string }).policy, expected, why);
      }
    }
  });

  it("rejects malformed workloads and queries with 400", async () => {
    const cases: [string, { field: string; reason: string }][] = [
      ["/v1/filters/chat/config", { field: "workload", reason: "must be <namespace>.<name>" }],
      ["/v1/filters/LLM.chat/config", { field: "workload", reason: "must be <namespace>.<name>" }],
      ["/v1/filters/llm.chat/config?labels=app", { field: "labels", reason: "must be k=v pairs separated by commas" }],
      ["/v1/filters/llm.chat/config?labels=app=a,app=b", { field: "labels", reason: "must be k=v pairs separated by commas" }],
      ["/v1/filters/llm.chat/config?verison=1", { field: "verison", reason: "unknown query parameter" }],
    ];
    for (const [path, detail] of cases) {
      const res = await call(app.url, "GET", path);
      assert.equal(res.status, 400, path);
      assert.deepEqual((res.body as { details: unknown[] }).details, [detail], path);
    }
  });

  it("counts a pull push for each 200 and none for 304", async () => {
    const first = await call(app.url, "GET", "/v1/filters/llm.chat/config");
    await call(app.url, "GET", `/v1/filters/llm.chat/config?version=${(first.body as { version: string }).version}`);
    await call(app.url, "GET", "/v1/filters/llm.chat/config");
    const pushes = await app.metrics.pushes.get();
    assert.deepEqual(pushes.values.map((v) => [v.labels.mode, v.value]), [["pull", 2]]);
  });
});
