// Bearer tokens: several from a file and env, ids (never tokens) in errors, constant-time
// comparison against every token, no prefix/suffix/case tricks on the token, a case-insensitive scheme.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authenticate, loadTokens } from "../../../control-plane/src/api/auth.js";

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
