// Each failure a hostile or careless client found in the policy API (issue 13), as a request
// over real HTTP on 127.0.0.1 and the answer it must get now: never a 500, nothing stored that
// validation did not see, HTTP semantics as RFC 9110 and the Kubernetes API server have them.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { metricNames } from "../../../control-plane/src/api/metrics.js";
import { adminToken, call, samplePolicy, startTestApp, type TestApp } from "../helpers.js";

const mergePatch = { "content-type": "application/merge-patch+json" };

async function history(app: TestApp, name: string): Promise<{ action: string; version: string }[]> {
  return ((await call(app.url, "GET", `/v1/policies/${name}/history`)).body as { items: { action: string; version: string }[] }).items;
}

describe("policy API under hostile input", () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp({ bodyLimitBytes: 1 << 20 });
  });
  afterEach(() => app.close());

  it("refuses a merge patch that reaches a prototype (__proto__) instead of storing an invalid policy; pulls keep answering", async () => {
    assert.equal((await call(app.url, "POST", "/v1/policies", { body: samplePolicy("p1", { target: { namespace: "llm", selector: { matchLabels: { app: "vllm" } } } }), token: adminToken })).status, 201);
    const tricks = [
      '{"target":null,"__proto__":{"target":{"namespace":"llm","selector":{"matchLabels":{}}}}}',
      '{"name":null,"__proto__":{"name":"p1"}}',
      '{"target":{"selector":null,"__proto__":{"selector":{"matchLabels":{}}}}}',
      '{"adaptive":{"__proto__":{"targetTracesPerSecond":1}}}',
    ];
    for (const raw of tricks) {
      const res = await call(app.url, "PATCH", "/v1/policies/p1", { rawBody: raw, token: adminToken, headers: mergePatch });
      assert.equal(res.status, 400, raw);
      assert.ok((res.body as { details: { field: string }[] }).details.some((d) => d.field.endsWith("__proto__")), raw);
    }
    assert.equal((await call(app.url, "GET", "/v1/filters/llm.vllm/config")).status, 200);
    assert.equal((await call(app.url, "GET", "/v1/filters/other.anything/config")).status, 404);
    assert.deepEqual((await history(app, "p1")).map((h) => h.version), ["1"]);
  });

  it("serves a policy named constructor like any other, with no phantom before it exists and no version reused", async () => {
    assert.equal((await call(app.url, "GET", "/v1/policies/constructor")).status, 404);
    assert.equal((await call(app.url, "GET", "/v1/policies/constructor/history")).status, 404);
    const created = await call(app.url, "POST", "/v1/policies", { body: samplePolicy("constructor"), token: adminToken });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("etag"), '"1"');
    const next = await call(app.url, "POST", "/v1/policies", { body: samplePolicy("tostring"), token: adminToken });
    assert.equal(next.headers.get("etag"), '"2"');
    assert.equal((await call(app.url, "GET", "/v1/policies/constructor")).status, 200);
    assert.equal((await call(app.url, "GET", "/v1/filters/llm.chat/config")).status, 200);
  });

  it("answers 400, not 500, to a path parameter with malformed percent-encoding", async () => {
    for (const [method, path] of [["GET", "/v1/policies/%zz"], ["GET", "/v1/policies/%zz/history"], ["DELETE", "/v1/policies/%E0%A4%A"], ["GET", "/v1/filters/%zz/config"]] as const) {
      const res = await call(app.url, method, path, { token: adminToken });
      assert.equal(res.status, 400, path);
      assert.deepEqual(res.body, { error: "invalid path", details: [{ field: "path", reason: "malformed percent-encoding" }] }, path);
    }
  });

  it("answers 400, not 500, to a body nested 20,000 levels deep, naming the depth limit", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    const deep = `${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}`;
    for (const [method, path, headers] of [["PATCH", "/v1/policies/chat", mergePatch], ["PUT", "/v1/policies/chat", {}], ["POST", "/v1/validate", {}]] as const) {
      const res = await call(app.url, method, path, { rawBody: deep, token: adminToken, headers: { "content-type": "application/json", ...headers } });
      assert.equal(res.status, 400, path);
      assert.equal((res.body as { details: { reason: string }[] }).details[0]?.reason, "nested deeper than 64 levels", path);
    }
    const array = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
    assert.equal((await call(app.url, "PATCH", "/v1/policies/chat", { rawBody: array, token: adminToken, headers: mergePatch })).status, 400);
  });

  it("makes no version, history entry or audit line for a no-op PATCH {} or an identical PUT (200 with the current ETag)", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    await call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy("chat", { pluginConfig: {} }), token: adminToken });
    for (let i = 0; i < 55; i++) {
      const patched = await call(app.url, "PATCH", "/v1/policies/chat", { body: {}, token: adminToken, headers: mergePatch });
      assert.equal(patched.status, 200);
      assert.equal(patched.headers.get("etag"), '"2"');
      const same = await call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy("chat", { pluginConfig: {} }), token: adminToken });
      assert.equal(same.status, 200);
      assert.equal(same.headers.get("etag"), '"2"');
    }
    assert.deepEqual((await history(app, "chat")).map((h) => [h.action, h.version]), [["create", "1"], ["replace", "2"]]);
    assert.equal(app.audit.length, 2);
    const rolled = await call(app.url, "POST", "/v1/policies/chat/rollback", { body: { version: "1" }, token: adminToken });
    assert.equal(rolled.status, 200);
    assert.equal(rolled.headers.get("etag"), '"3"');
  });

  it("refuses duplicate JSON keys, naming the key and its path, as Kubernetes' strict decoding does", async () => {
    const cases: [string, string][] = [
      ['{"name":"chat","name":"other","target":{"namespace":"llm","selector":{"matchLabels":{}}},"pluginConfig":{}}', "name"],
      ['{"name":"chat","target":{"namespace":"llm","selector":{"matchLabels":{"app":"a","app":"b"}}},"pluginConfig":{}}', "target.selector.matchLabels.app"],
      ['{"name":"chat","target":{"namespace":"llm","selector":{"matchLabels":{}}},"pluginConfig":{"sampling":{"routes":[{"rate":1,"routeName":"a","rate":0}]}}}', "pluginConfig.sampling.routes[0].rate"],
      ['{"name":"chat","\\u006eame":"x"}', "name"],
    ];
    for (const [raw, field] of cases) {
      const res = await call(app.url, "POST", "/v1/policies", { rawBody: raw, token: adminToken, headers: { "content-type": "application/json" } });
      assert.equal(res.status, 400, raw);
      assert.deepEqual(res.body, { error: "invalid JSON", details: [{ field, reason: "duplicate key" }] }, raw);
    }
    assert.equal((await call(app.url, "GET", "/v1/policies")).text, '{"items":[]}');
  });

  it("evaluates If-Match lists with strong comparison (a weak tag never matches) and If-None-Match on writes", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    const put = (rate: number, headers: Record<string, string>) =>
      call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: rate } } }), token: adminToken, headers });
    assert.equal((await put(0.2, { "if-match": '"7", "1"' })).status, 200, "a list containing the current version");
    assert.equal((await put(0.3, { "if-match": 'W/"2"' })).status, 412, "weak tags fail strong comparison");
    assert.equal((await put(0.3, { "if-match": '"1", "9"' })).status, 412);
    assert.equal((await put(0.3, { "if-none-match": "*" })).status, 412, "If-None-Match: * on an existing policy");
    assert.equal((await put(0.3, { "if-none-match": 'W/"2"' })).status, 412, "If-None-Match compares weakly");
    assert.equal((await put(0.3, { "if-none-match": '"1"' })).status, 200);
    const absent = await call(app.url, "PUT", "/v1/policies/new", { body: samplePolicy("new"), token: adminToken, headers: { "if-none-match": "*" } });
    assert.equal(absent.status, 201);
    const bad = await put(0.4, { "if-match": "3" });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: "invalid header", details: [{ field: "if-match", reason: 'must be "*" or a list of quoted entity tags, e.g. "3"' }] });
    const conditionalPost = await call(app.url, "POST", "/v1/policies", { body: samplePolicy("other"), token: adminToken, headers: { "if-match": '"1"' } });
    assert.equal(conditionalPost.status, 400, "POST does not ignore a precondition");
    assert.equal((await call(app.url, "GET", "/v1/policies/other")).status, 404);
    const notModified = await call(app.url, "GET", "/v1/policies/chat", { headers: { "if-none-match": 'W/"3"' } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers.get("etag"), '"3"');
  });

  it("accepts the Bearer scheme in any case (RFC 9110 §11.1)", async () => {
    for (const [i, scheme] of ["bearer", "BEARER", "bEaReR"].entries()) {
      const res = await call(app.url, "PUT", `/v1/policies/p${i}`, { body: samplePolicy(`p${i}`), headers: { authorization: `${scheme} ${adminToken}` } });
      assert.equal(res.status, 201, scheme);
    }
  });

  it("answers a known path's unserved method with 405 and Allow, and OPTIONS with 204 and Allow", async () => {
    const cases: [string, string, string][] = [
      ["DELETE", "/v1/policies", "GET, POST, HEAD, OPTIONS"],
      ["POST", "/v1/policies/chat", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"],
      ["PUT", "/v1/filters/llm.chat/config", "GET, HEAD, OPTIONS"],
      ["GET", "/v1/validate", "POST, OPTIONS"],
      ["PATCH", "/healthz", "GET, HEAD, OPTIONS"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await call(app.url, method, path, { token: adminToken });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get("allow"), allow, `${method} ${path}`);
      const options = await call(app.url, "OPTIONS", path);
      assert.equal(options.status, 204, path);
      assert.equal(options.headers.get("allow"), allow, path);
    }
    assert.equal((await call(app.url, "DELETE", "/v2/nothing", { token: adminToken })).status, 404);
  });

  it("refuses a gzip body with the 415 that says only unencoded bodies are accepted", async () => {
    const res = await fetch(`${app.url}/v1/policies`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip", authorization: `Bearer ${adminToken}` },
      body: gzipSync(JSON.stringify(samplePolicy())),
    });
    assert.equal(res.status, 415);
    assert.deepEqual(await res.json(), { error: "unsupported media type", details: [{ field: "content-encoding", reason: 'only unencoded (identity) bodies are accepted, got "gzip"' }] });
    assert.equal((await call(app.url, "GET", "/v1/policies/chat")).status, 404);
  });

  it("accepts back on PUT what GET returned, and treats its version as a precondition (409 when stale)", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    const got = (await call(app.url, "GET", "/v1/policies/chat")).body as { version: string; policy: { pluginConfig: { sampling: { defaultRate: number } } } };
    const unchanged = await call(app.url, "PUT", "/v1/policies/chat", { body: got, token: adminToken });
    assert.equal(unchanged.status, 200);
    assert.equal(unchanged.headers.get("etag"), '"1"');
    got.policy.pluginConfig.sampling.defaultRate = 0.5;
    const edited = await call(app.url, "PUT", "/v1/policies/chat", { body: got, token: adminToken });
    assert.equal(edited.status, 200);
    assert.equal(edited.headers.get("etag"), '"2"');
    got.policy.pluginConfig.sampling.defaultRate = 0.7;
    const stale = await call(app.url, "PUT", "/v1/policies/chat", { body: got, token: adminToken });
    assert.equal(stale.status, 409);
    assert.deepEqual(stale.body, { error: "conflict", details: [{ field: "version", reason: "policy chat is at version 2, not 1; get it again and apply your change to it" }] });
    const wrong = await call(app.url, "PUT", "/v1/policies/chat", { body: { ...got, version: "2", pluginConfig: {} }, token: adminToken });
    assert.deepEqual(wrong.body, { error: "invalid policy", details: [{ field: "pluginConfig", reason: "unknown field" }] });
    const invalid = await call(app.url, "PUT", "/v1/policies/chat", { body: { version: "2", policy: { ...got.policy, target: {} } }, token: adminToken });
    assert.deepEqual((invalid.body as { details: unknown[] }).details[0], { field: "policy.target.namespace", reason: "required" });
  });
});

describe("policy store records that no longer validate", () => {
  it("are quarantined at start (a log line, a metric, never served) while pulls and the other policies keep answering", async () => {
    const storePath = join(mkdtempSync(join(tmpdir(), "tt-quarantine-")), "policies.json");
    const at = "2026-12-02T12:00:00.000Z";
    const record = (policy: object, version: string) => ({ current: { policy, version, updatedAt: at, updatedBy: "admin" }, history: [{ action: "create", version, at, by: "admin", policy }] });
    // What the merge-patch bug left in a store file: p1 with no target at all.
    writeFileSync(storePath, JSON.stringify({ formatVersion: 1, nextVersion: 3, policies: { good: record(samplePolicy("good"), "1"), p1: record({ name: "p1", pluginConfig: {} }, "2") } }));
    const logs: { msg?: string; policy?: string }[] = [];
    const app = await startTestApp({ storePath, log: (r) => logs.push(r) });
    try {
      assert.equal((await call(app.url, "GET", "/v1/filters/llm.vllm/config")).status, 404);
      assert.equal((await call(app.url, "GET", "/v1/filters/other.anything/config")).status, 404);
      assert.equal(((await call(app.url, "GET", "/v1/filters/llm.chat/config")).body as { policy: string }).policy, "good");
      assert.equal((await call(app.url, "GET", "/v1/policies/p1")).status, 404);
      assert.deepEqual(logs.map((l) => [l.msg, l.policy]), [["policy quarantined: the stored record does not validate and is not served", "p1"]]);
      assert.ok((await call(app.url, "GET", "/metrics")).text.includes(`${metricNames.quarantined} 1\n`));
      const fixed = await call(app.url, "PUT", "/v1/policies/p1", { body: samplePolicy("p1"), token: adminToken });
      assert.equal(fixed.status, 201);
      assert.equal(fixed.headers.get("etag"), '"3"');
    } finally {
      await app.close();
    }
  });
});
