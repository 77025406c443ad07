// The "Editing a policy with curl" block of docs/policies.md, run as written with bash and curl
// against a real control plane on 127.0.0.1: create, GET, edit, PUT with If-Match (200), and the
// stale copy refused with 412, so the page cannot drift from what the API does; and it leaves
// nothing behind, in the working directory or the temp dir it writes into.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { call, startTestApp } from "../helpers.js";

const readme = readFileSync(fileURLToPath(new URL("../../../docs/policies.md", import.meta.url)), "utf8");

/** The first ```sh block after the heading. */
function block(heading: string): string {
  const at = readme.indexOf(heading);
  assert.ok(at >= 0, `docs/policies.md has no ${heading}`);
  const match = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(match !== null, `no sh block after ${heading}`);
  return match[1] as string;
}

describe("docs/policies.md curl flow", () => {
  it("creates, reads, edits with If-Match (200, new ETag) and refuses the stale copy (412), as docs/policies.md says, leaving no file behind", async () => {
    const token = "readme-example-token-0123";
    const app = await startTestApp({ tokens: `me:${token}` });
    try {
      const script = block("## Editing a policy with curl");
      assert.ok(script.includes(`TOKEN=\${TOKEN:-${token}}`), "the block uses the token the page starts make run with");
      const cwd = mkdtempSync(join(tmpdir(), "tt-readme-"));
      const scratch = mkdtempSync(join(tmpdir(), "tt-readme-tmp-"));
      const { stdout } = await promisify(execFile)("bash", ["-e", "-c", script], { cwd, env: { PATH: process.env.PATH ?? "", CP: app.url, TMPDIR: scratch } });
      assert.deepEqual(readdirSync(cwd), [], "the block leaves nothing in the working directory");
      assert.deepEqual(readdirSync(scratch), [], "nor in the temp dir it writes its copies into");
      const lines = stdout.trim().split("\n");
      const [created, edited, refused, code] = lines.map((l) => (/^\d+$/.test(l) ? l : (JSON.parse(l) as Record<string, unknown>)));
      assert.equal((created as { version: string }).version, "1");
      assert.deepEqual((edited as { version: string; policy: { pluginConfig: unknown } }).version, "2");
      assert.deepEqual((edited as { policy: { pluginConfig: unknown } }).policy.pluginConfig, { sampling: { defaultRate: 0.2 } });
      assert.equal((refused as { error: string }).error, "precondition failed");
      assert.equal(code, "412");
      assert.equal(lines.length, 4);
      const now = await call(app.url, "GET", "/v1/policies/chat");
      assert.equal(now.headers.get("etag"), '"2"');
    } finally {
      await app.close();
    }
  });
});
