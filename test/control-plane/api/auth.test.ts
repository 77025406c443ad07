// Bearer tokens: several from a file and env, ids (never tokens) in errors, constant-time
// comparison against every token, no prefix/suffix/case tricks on the token, a case-insensitive scheme.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyScopes, authenticate, loadTokens } from "../../../control-plane/src/api/auth.js";

describe("API tokens", () => {
  it("loads several tokens from a file and the env value and identifies callers by id", () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-tokens-")), "tokens");
    writeFileSync(path, "# deployers\nalice:alice-token-0123456789\n\nbob:bob-token-0123456789ab\n");
    const { tokens, errors } = loadTokens(path, "ci:ci-token-0123456789abc");
    assert.deepEqual(errors, []);
    assert.deepEqual(tokens.map((t) => t.id), ["alice", "bob", "ci"]);
    const cases: [string | undefined, string | undefined][] = [
      ["Bearer alice-token-0123456789", "alice"],
      ["Bearer bob-token-0123456789ab", "bob"],
      ["Bearer ci-token-0123456789abc", "ci"],
      ["Bearer alice-token-012345678", undefined],
      ["Bearer alice-token-01234567890", undefined],
      ["Bearer ALICE-TOKEN-0123456789", undefined],
      // RFC 9110 §11.1: the scheme is case-insensitive, and 1*SP separates it from the token.
      ["bearer alice-token-0123456789", "alice"],
      ["BEARER alice-token-0123456789", "alice"],
      ["Bearer  alice-token-0123456789", "alice"],
      ["Basic alice-token-0123456789", undefined],
      ["Bearer alice-token-0123456789 extra", undefined],
      ["Bearer\talice-token-0123456789", undefined],
      ["Bearer", undefined],
      ["Beareralice-token-0123456789", undefined],
      [undefined, undefined],
    ];
    for (const [header, expected] of cases) assert.equal(authenticate(tokens, header), expected, String(header));
  });

  it("rejects short tokens, bad ids and duplicate ids without ever echoing a token", () => {
    const { tokens, errors } = loadTokens("", "ok:ok-token-0123456789,short:abc,bad id:bad-token-0123456789,ok:other-token-0123456789,plain");
    assert.deepEqual(tokens.map((t) => t.id), ["ok", "ok"]);
    assert.deepEqual(errors, [
      "api.tokens item 2 (id short): token shorter than 16 characters",
      "api.tokens item 3: expected <id>:<token> with an id of letters, digits, _ . @ -",
      "api.tokens item 5: expected <id>:<token> with an id of letters, digits, _ . @ -",
      "api tokens: id ok is defined twice",
    ]);
    for (const secret of ["abc", "bad-token", "other-token", "plain"]) assert.ok(!errors.join("\n").includes(secret), secret);
  });

  it("reports an unreadable tokens file by path", () => {
    assert.deepEqual(loadTokens("/nonexistent/tokens", "").errors, ["api.tokensFile: cannot read /nonexistent/tokens (ENOENT)"]);
  });
});

describe("token scopes (api.scopes)", () => {
  it("grants read, write or admin by id; an unlisted id keeps write; errors name the item, never a token", () => {
    const { tokens } = loadTokens("", "viewer:viewer-token-0123456789,deployer:deploy-token-0123456789,ops:ops-token-0123456789abc");
    assert.deepEqual(applyScopes(tokens, "viewer=read, ops=admin"), []);
    assert.deepEqual(tokens.map((t) => [t.id, t.scope]), [["viewer", "read"], ["deployer", "write"], ["ops", "admin"]]);
    assert.deepEqual(applyScopes(tokens, "ghost=read,viewer=root,ops=admin,ops=read"), [
      "api.scopes: no token has the id ghost",
      'api.scopes: expected <id>=read|write|admin, got "viewer=root"',
      "api.scopes: id ops is given a scope twice",
    ]);
  });

  it("reads need scope read when api.reads is token; a read token cannot write (403); traces keep captured content from anonymous readers", async () => {
    const { adminToken, viewerToken, call, startTestApp } = await import("../helpers.js");
    const open = await startTestApp({ traces: true });
    const closed = await startTestApp({ reads: "token", traces: true });
    try {
      assert.equal((await call(closed.url, "GET", "/v1/policies", { token: viewerToken })).status, 200);
      assert.equal((await call(closed.url, "GET", "/v1/policies")).status, 401);
      const denied = await call(closed.url, "PUT", "/v1/policies/chat", { token: viewerToken, body: {} });
      assert.equal(denied.status, 403);
      assert.match(denied.text, /token viewer has scope read; this needs write/);
      assert.equal((await call(open.url, "GET", "/v1/content-keys", { token: viewerToken })).status, 403);
      assert.equal((await call(open.url, "GET", "/v1/content-keys", { token: adminToken })).status, 200);
      // A span with captured content, as the receiver holds it.
      const traces = open.traces!;
      traces.add([{ traceId: "ab".repeat(16), spanId: "cd".repeat(8), parentSpanId: "", name: "chat", kind: 3, startMs: 1, endMs: 2, statusCode: 0, service: "s", attributes: new Map<string, string | number | boolean | string[]>([["gen_ai.operation.name", "chat"], ["gen_ai.input.messages", "my card is [PAYMENT_CARD]"]]), events: [] }]);
      const anonymous = (await call(open.url, "GET", "/v1/dashboard/traces")).body as { items: { attributes: Record<string, unknown>; contentWithheld?: boolean }[] };
      assert.deepEqual([anonymous.items[0]?.attributes["gen_ai.input.messages"], anonymous.items[0]?.contentWithheld], [undefined, true]);
      const reader = (await call(open.url, "GET", "/v1/dashboard/traces", { token: viewerToken })).body as { items: { attributes: Record<string, unknown> }[] };
      assert.equal(reader.items[0]?.attributes["gen_ai.input.messages"], "my card is [PAYMENT_CARD]");
    } finally {
      await open.close();
      await closed.close();
    }
  });
});
