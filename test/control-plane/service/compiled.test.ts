// The control plane as its image runs it: `make dist` compiles it with tsc into control-plane/dist/,
// and `node control-plane/dist/main.js` runs it with no TypeScript loader. What the sources read
// relative to themselves must be there too: the dashboard's static files (copied beside the
// compiled dashboard), the filter's config schema (policy validation and the OpenAPI document),
// the package's version, and control-plane/node_modules (its own ajv 8, where the root has eslint's 6).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { call, samplePolicy } from "../helpers.js";
import { spawnControlPlane, waitForLine } from "./process.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const token = "deploy-bot-token-0123456789";

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)));
}

describe("compiled control plane (make dist)", () => {
  it("has a JavaScript module for every TypeScript source, and every static file of the dashboard", () => {
    const src = join(root, "control-plane/src");
    const dist = join(root, "control-plane/dist");
    const needed = files(src).filter((f) => f.endsWith(".ts") || f.startsWith("dashboard/static/"));
    assert.ok(needed.some((f) => f.startsWith("dashboard/static/")), "the dashboard's static files are found in the sources");
    for (const file of needed) {
      const built = file.replace(/\.ts$/, ".js");
      assert.ok(existsSync(join(dist, built)), `control-plane/dist/${built} is missing (from control-plane/src/${file})`);
    }
  });

  it("starts under plain node, validates policies against the filter's schema, serves the dashboard and OpenAPI, and stops on SIGTERM", async () => {
    const storePath = join(mkdtempSync(join(tmpdir(), "tt-compiled-")), "policies.json");
    const proc = spawnControlPlane({ TOKENTRACE_LISTEN_PORT: "0", TOKENTRACE_STORE_PATH: storePath, TOKENTRACE_API_TOKENS: `deploy-bot:${token}`, TOKENTRACE_ADAPTIVE_ENABLED: "false" }, [], { compiled: true });
    const listening = await waitForLine(proc, (r) => r.msg === "listening");
    const url = listening.url as string;
    const version = (JSON.parse(readFileSync(join(root, "control-plane/package.json"), "utf8")) as { version: string }).version;
    assert.equal(listening.version, version);

    assert.equal((await call(url, "PUT", "/v1/policies/chat", { body: samplePolicy(), token })).status, 201);
    const invalid = await call(url, "PUT", "/v1/policies/bad", { body: { ...samplePolicy("bad"), pluginConfig: { sampling: { defaultRate: 2 } } }, token });
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.body, { error: "invalid policy", details: [{ field: "pluginConfig.sampling.defaultRate", reason: "must be <= 1" }] });

    const openapi = await fetch(`${url}/openapi.json`);
    assert.equal(openapi.status, 200);
    assert.match(await openapi.text(), /"defaultRate"/, "the OpenAPI document carries the filter's schema");
    for (const [path, file] of [["/dashboard", "index.html"], ["/dashboard/app.js", "app.js"]] as const) {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.status, 200, path);
      assert.equal(await res.text(), readFileSync(join(root, "control-plane/src/dashboard/static", file), "utf8"), path);
    }
    assert.equal((await fetch(`${url}/dashboard/vendor/uPlot.iife.min.js`)).status, 200);

    proc.child.kill("SIGTERM");
    assert.equal(await proc.exited, 0);
    assert.ok(![...proc.lines, ...proc.stderr].join("\n").includes(token), "the API token is in no log line");
  });
});
