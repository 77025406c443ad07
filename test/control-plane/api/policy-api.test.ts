// The /v1 policy API over real HTTP on 127.0.0.1: CRUD, ETag/If-Match, validation errors,
// limits, auth, audit, history and rollback, and the dry-run validate endpoint.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { namespaceCheck } from "../../../control-plane/src/policy/admission.js";
import { adminToken, call, ciToken, samplePolicy, startTestApp, type TestApp } from "../helpers.js";

describe("policy API", () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
  });
  afterEach(() => app.close());

  it("creates a policy with 201, ETag, Location and one audit line naming the token id", async () => {
    const res = await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("etag"), '"1"');
    assert.equal(res.headers.get("location"), "/v1/policies/chat");
    assert.deepEqual(res.body, { version: "1", updatedAt: "2026-12-02T12:00:00.000Z", updatedBy: "admin", policy: samplePolicy() });
    assert.deepEqual(app.audit, [{ who: "admin", action: "create", policy: "chat", oldVersion: null, newVersion: "1", at: "2026-12-02T12:00:00.000Z" }]);
    assert.ok(!JSON.stringify(app.audit).includes(adminToken));
    const again = await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    assert.equal(again.status, 409);
    assert.deepEqual(again.body, { error: "policy exists", details: [{ field: "name", reason: "a policy named chat exists; use PUT to replace it" }] });
  });

  it("lists and gets policies; GET carries the ETag", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy("b-policy"), token: adminToken });
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy("a-policy"), token: ciToken });
    const list = await call(app.url, "GET", "/v1/policies");
    assert.equal(list.status, 200);
    assert.deepEqual((list.body as { items: { policy: { name: string }; version: string; updatedBy: string }[] }).items.map((i) => [i.policy.name, i.version, i.updatedBy]), [
      ["a-policy", "2", "ci"],
      ["b-policy", "1", "admin"],
    ]);
    const one = await call(app.url, "GET", "/v1/policies/a-policy");
    assert.equal(one.status, 200);
    assert.equal(one.headers.get("etag"), '"2"');
    const missing = await call(app.url, "GET", "/v1/policies/nope");
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: "policy not found", details: [{ field: "name", reason: "no policy named nope" }] });
  });

  it("rejects invalid policies with 400 and one {field, reason} per problem, changing nothing", async () => {
    const bad = {
      name: "Bad_Name",
      target: { namespace: "llm", selector: { matchLabels: { app: "chat" } }, extra: 1 },
      pluginConfig: { sampling: { routes: [{ routeName: "x", rate: 1.5 }, { rate: 0.1 }], force: [{ header: "X-Upper" }] }, colour: "blue" },
      adaptive: { targetTracesPerSecond: 0 },
    };
    const res = await call(app.url, "POST", "/v1/policies", { body: bad, token: adminToken });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, {
      error: "invalid policy",
      details: [
        { field: "name", reason: 'must match pattern "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"' },
        { field: "target.extra", reason: "unknown field" },
        { field: "pluginConfig.colour", reason: "unknown field" },
        { field: "pluginConfig.sampling.routes[0].rate", reason: "must be <= 1" },
        { field: "pluginConfig.sampling.routes[1]", reason: "must NOT have fewer than 2 properties" },
        { field: "pluginConfig.sampling.force[0].header", reason: "must match pattern \"^[a-z0-9!#$%&'*+.^_`|~-]+$\"" },
        { field: "adaptive.targetTracesPerSecond", reason: "must be > 0" },
      ],
    });
    const both = await call(app.url, "POST", "/v1/policies", {
      body: { ...samplePolicy(), target: { namespace: "llm", selector: { matchLabels: {} }, targetRefs: [{ kind: "Service", name: "chat" }] } },
      token: adminToken,
    });
    assert.deepEqual(both.body, { error: "invalid policy", details: [{ field: "target", reason: "exactly one of selector or targetRefs is required" }] });
    const labels = await call(app.url, "POST", "/v1/policies", {
      body: { ...samplePolicy(), target: { namespace: "llm", selector: { matchLabels: { "bad key": "x", tier: "not ok!" } } } },
      token: adminToken,
    });
    assert.deepEqual(labels.body, {
      error: "invalid policy",
      details: [
        { field: "target.selector.matchLabels.bad key", reason: "invalid label key" },
        { field: "target.selector.matchLabels.tier", reason: "invalid label value" },
      ],
    });
    const bootstrap = await call(app.url, "POST", "/v1/policies", {
      body: samplePolicy("chat", { pluginConfig: { policySource: { cluster: "control-plane", workload: "llm.chat" } } as never }),
      token: adminToken,
    });
    assert.deepEqual(bootstrap.body, { error: "invalid policy", details: [{ field: "pluginConfig.policySource", reason: "only for a filter's local pluginConfig, never in a policy" }] });
    const missing = await call(app.url, "POST", "/v1/policies", { body: { name: "x" }, token: adminToken });
    assert.deepEqual(missing.body, { error: "invalid policy", details: [{ field: "target", reason: "required" }, { field: "pluginConfig", reason: "required" }] });
    assert.deepEqual(app.store.list(), []);
    assert.deepEqual(app.audit, []);
  });

  it("stores per-protocol path matchers and content capture; refuses bad ones naming the field, never echoing a pseudonym salt", async () => {
    const salt = "short-secret-0123456789abcdef-0123456789";
    const pluginConfig = {
      llm: { protocols: { kserve: { pathPrefixes: ["/triton/v2/models/"] }, tgi: { pathSuffixes: [] }, anthropic: { pathSuffixes: ["/anthropic/v1/messages"] } } },
      spans: { cluster: "otel", content: { enabled: true, maxBytes: 2048, routes: [{ routeName: "billing", enabled: false }], pseudonyms: {} } },
    };
    const created = await call(app.url, "POST", "/v1/policies", { body: samplePolicy("chat", { pluginConfig: pluginConfig as never }), token: adminToken });
    assert.equal(created.status, 201);
    assert.deepEqual((created.body as { policy: { pluginConfig: unknown } }).policy.pluginConfig, pluginConfig);
    const bad = {
      llm: { protocols: { vllm: {}, tgi: { pathSuffixes: ["generate"] } } },
      spans: { cluster: "otel", content: { maxBytes: 100, routes: [{ routeName: "x" }], pseudonyms: { salt } } },
    };
    const res = await call(app.url, "POST", "/v1/policies", { body: samplePolicy("other", { pluginConfig: bad as never }), token: adminToken });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, {
      error: "invalid policy",
      details: [
        { field: "pluginConfig.llm.protocols.vllm", reason: "unknown field" },
        { field: "pluginConfig.llm.protocols.tgi.pathSuffixes[0]", reason: 'must match pattern "^/"' },
        { field: "pluginConfig.spans.content.routes[0].enabled", reason: "required" },
        { field: "pluginConfig.spans.content.maxBytes", reason: "must be >= 256" },
        { field: "pluginConfig.spans.content.pseudonyms.salt", reason: "unknown field" },
      ],
    });
    assert.ok(!JSON.stringify(res.body).includes(salt), "the error names the salt, never shows it");
    assert.ok(!JSON.stringify(app.audit).includes(salt), "the audit line holds no salt");
    assert.deepEqual(app.store.list().map((r) => r.policy.name), ["chat"]);
  });

  it("enforces the body limit (413), JSON content type (415) and JSON syntax (400)", async () => {
    const huge = samplePolicy("huge", { pluginConfig: { sampling: { routes: Array.from({ length: 400 }, (_, i) => ({ routeName: `route-${i}-${"x".repeat(40)}`, rate: 0.5 })) } } });
    const tooLarge = await call(app.url, "POST", "/v1/policies", { body: huge, token: adminToken });
    assert.equal(tooLarge.status, 413);
    assert.deepEqual(tooLarge.body, { error: "request body too large", details: [{ field: "(body)", reason: "larger than 16384 bytes" }] });
    const text = await call(app.url, "POST", "/v1/policies", { rawBody: "name=chat", token: adminToken, headers: { "content-type": "text/plain" } });
    assert.equal(text.status, 415);
    const broken = await call(app.url, "POST", "/v1/policies", { rawBody: "{", token: adminToken, headers: { "content-type": "application/json" } });
    assert.equal(broken.status, 400);
    assert.deepEqual(broken.body, { error: "invalid JSON", details: [{ field: "(body)", reason: "not valid JSON: unexpected end of input" }] });
    assert.deepEqual(app.store.list(), []);
  });

  it("requires a known bearer token for every write", async () => {
    const none = await call(app.url, "POST", "/v1/policies", { body: samplePolicy() });
    assert.equal(none.status, 401);
    assert.equal(none.headers.get("www-authenticate"), 'Bearer realm="tokentrace"');
    assert.deepEqual(none.body, { error: "unauthorized", details: [{ field: "authorization", reason: "missing or unknown bearer token" }] });
    const wrong = await call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy(), token: `${adminToken}x` });
    assert.equal(wrong.status, 401);
    const del = await call(app.url, "DELETE", "/v1/policies/chat");
    assert.equal(del.status, 401);
    const validate = await call(app.url, "POST", "/v1/validate", { body: samplePolicy() });
    assert.equal(validate.status, 401);
    assert.deepEqual(app.store.list(), []);
  });

  it("replaces with PUT, and answers 412 to a stale If-Match without changing anything", async () => {
    await call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy(), token: adminToken });
    const changed = samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: 0.5 } } });
    const ok = await call(app.url, "PUT", "/v1/policies/chat", { body: changed, token: ciToken, headers: { "if-match": '"1"' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("etag"), '"2"');
    const stale = await call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy(), token: adminToken, headers: { "if-match": '"1"' } });
    assert.equal(stale.status, 412);
    assert.deepEqual(stale.body, { error: "precondition failed", details: [{ field: "if-match", reason: "the policy changed since that version; get it again and retry" }] });
    assert.deepEqual(app.store.get("chat")?.policy, changed);
    const mismatch = await call(app.url, "PUT", "/v1/policies/other", { body: samplePolicy(), token: adminToken });
    assert.equal(mismatch.status, 400);
    assert.deepEqual(mismatch.body, { error: "invalid policy", details: [{ field: "name", reason: "must equal the name in the path (other)" }] });
    assert.deepEqual(app.audit.map((a) => [a.action, a.who, a.oldVersion, a.newVersion]), [
      ["create", "admin", null, "1"],
      ["replace", "ci", "1", "2"],
    ]);
  });

  it("merge-patches a policy (RFC 7386), validates the result, and keeps force rules", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    const patched = await call(app.url, "PATCH", "/v1/policies/chat", {
      body: { pluginConfig: { sampling: { defaultRate: 0.3 } }, adaptive: { targetTracesPerSecond: 2 } },
      token: adminToken,
      headers: { "content-type": "application/merge-patch+json", "if-match": '"1"' },
    });
    assert.equal(patched.status, 200);
    const policy = (patched.body as { policy: ReturnType<typeof samplePolicy> }).policy;
    assert.deepEqual(policy.pluginConfig.sampling, { defaultRate: 0.3, routes: [{ routeName: "completions", rate: 0.2 }], force: [{ header: "x-debug", value: "1" }] });
    assert.deepEqual(policy.adaptive, { targetTracesPerSecond: 2 });
    const removed = await call(app.url, "PATCH", "/v1/policies/chat", { body: { adaptive: null }, token: adminToken, headers: { "content-type": "application/merge-patch+json" } });
    assert.equal((removed.body as { policy: { adaptive?: unknown } }).policy.adaptive, undefined);
    const invalid = await call(app.url, "PATCH", "/v1/policies/chat", { body: { pluginConfig: { sampling: { defaultRate: 2 } } }, token: adminToken, headers: { "content-type": "application/merge-patch+json" } });
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.body, { error: "invalid policy", details: [{ field: "pluginConfig.sampling.defaultRate", reason: "must be <= 1" }] });
    const rename = await call(app.url, "PATCH", "/v1/policies/chat", { body: { name: "other" }, token: adminToken, headers: { "content-type": "application/merge-patch+json" } });
    assert.equal(rename.status, 400);
    const missing = await call(app.url, "PATCH", "/v1/policies/nope", { body: {}, token: adminToken, headers: { "content-type": "application/merge-patch+json" } });
    assert.equal(missing.status, 404);
    assert.equal(app.store.get("chat")?.version, "3");
  });

  it("deletes, keeps the history, and rolls back to an earlier version as a new version", async () => {
    await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken });
    await call(app.url, "PUT", "/v1/policies/chat", { body: samplePolicy("chat", { pluginConfig: {} }), token: adminToken });
    const staleDelete = await call(app.url, "DELETE", "/v1/policies/chat", { token: adminToken, headers: { "if-match": '"1"' } });
    assert.equal(staleDelete.status, 412);
    const del = await call(app.url, "DELETE", "/v1/policies/chat", { token: ciToken, headers: { "if-match": '"2"' } });
    assert.equal(del.status, 204);
    assert.equal(del.text, "");
    assert.equal((await call(app.url, "GET", "/v1/policies/chat")).status, 404);
    const rolled = await call(app.url, "POST", "/v1/policies/chat/rollback", { body: { version: "1" }, token: adminToken });
    assert.equal(rolled.status, 200);
    assert.equal(rolled.headers.get("etag"), '"4"');
    assert.deepEqual((rolled.body as { policy: unknown }).policy, samplePolicy());
    const history = await call(app.url, "GET", "/v1/policies/chat/history");
    assert.deepEqual((history.body as { items: { action: string; version: string; by: string; at: string; policy?: unknown }[] }).items.map((h) => [h.action, h.version, h.by, h.at, h.policy !== undefined]), [
      ["create", "1", "admin", "2026-12-02T12:00:00.000Z", true],
      ["replace", "2", "admin", "2026-12-02T12:00:01.000Z", true],
      ["delete", "3", "ci", "2026-12-02T12:00:02.000Z", false],
      ["rollback", "4", "admin", "2026-12-02T12:00:03.000Z", true],
    ]);
    const noVersion = await call(app.url, "POST", "/v1/policies/chat/rollback", { body: { version: "3" }, token: adminToken });
    assert.equal(noVersion.status, 404);
    const badBody = await call(app.url, "POST", "/v1/policies/chat/rollback", { body: { version: "1", force: true }, token: adminToken });
    assert.deepEqual(badBody.body, { error: "invalid rollback", details: [{ field: "force", reason: "unknown field" }] });
    assert.deepEqual(app.audit.map((a) => [a.action, a.oldVersion, a.newVersion]), [
      ["create", null, "1"],
      ["replace", "1", "2"],
      ["delete", "2", null],
      ["rollback", null, "4"],
    ]);
    assert.equal((await call(app.url, "GET", "/v1/policies/never/history")).status, 404);
  });

  it("validates without storing (dry run)", async () => {
    const ok = await call(app.url, "POST", "/v1/validate", { body: samplePolicy(), token: ciToken });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { valid: true, policy: samplePolicy() });
    const bad = await call(app.url, "POST", "/v1/validate", { body: samplePolicy("chat", { pluginConfig: { stats: { maxRoutes: 0 } } }), token: ciToken });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: "invalid policy", details: [{ field: "pluginConfig.stats.maxRoutes", reason: "must be >= 1" }] });
    assert.deepEqual(app.store.list(), []);
    assert.deepEqual(app.audit, []);
  });

  it("answers unknown paths with the JSON error shape", async () => {
    const res = await call(app.url, "GET", "/v2/nothing");
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { error: "not found", details: [{ field: "path", reason: "no route for GET /v2/nothing" }] });
  });
});

describe("policy API in Kubernetes mode with one managed namespace", () => {
  it("refuses policies for other namespaces, on create and on patch", async () => {
    const app = await startTestApp({ policyCheck: namespaceCheck("llm") });
    try {
      const elsewhere = await call(app.url, "POST", "/v1/policies", { body: samplePolicy("x", { target: { namespace: "batch", selector: { matchLabels: {} } } }), token: adminToken });
      assert.equal(elsewhere.status, 400);
      assert.deepEqual(elsewhere.body, { error: "invalid policy", details: [{ field: "target.namespace", reason: "must be llm: this control plane manages WasmPlugins only there" }] });
      assert.equal((await call(app.url, "POST", "/v1/policies", { body: samplePolicy(), token: adminToken })).status, 201);
      const moved = await call(app.url, "PATCH", "/v1/policies/chat", { body: { target: { namespace: "batch" } }, token: adminToken, headers: { "content-type": "application/merge-patch+json" } });
      assert.equal(moved.status, 400);
      assert.equal(app.store.get("chat")?.policy.target.namespace, "llm");
    } finally {
      await app.close();
    }
  });
});

describe("policy API with reads requiring a token", () => {
  it("refuses anonymous reads and serves token reads", async () => {
    const app = await startTestApp({ reads: "token" });
    try {
      assert.equal((await call(app.url, "GET", "/v1/policies")).status, 401);
      assert.equal((await call(app.url, "GET", "/v1/filters/llm.chat/config")).status, 401);
      assert.equal((await call(app.url, "GET", "/v1/policies", { token: ciToken })).status, 200);
      assert.equal((await call(app.url, "GET", "/healthz")).status, 200);
    } finally {
      await app.close();
    }
  });
});
