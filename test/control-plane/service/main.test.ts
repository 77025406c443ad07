// The control plane as a process: `node --import tsx control-plane/src/main.ts` starts on
// 127.0.0.1 with embedded defaults, serves the API, writes audit lines without tokens, stops
// cleanly on SIGTERM, keeps its policies across a restart, and refuses a bad config naming the key.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, samplePolicy } from "../helpers.js";
import { spawnControlPlane, waitForLine } from "./process.js";

const token = "deploy-bot-token-0123456789";

// The three processes are independent (own ports and store files), so they start side by side.
describe("control plane process", { concurrency: true }, () => {
  it("starts on 127.0.0.1, serves and audits, stops on SIGTERM with exit 0, and keeps policies across a restart", async () => {
    const storePath = join(mkdtempSync(join(tmpdir(), "tt-main-")), "policies.json");
    const env = { TOKENTRACE_LISTEN_PORT: "0", TOKENTRACE_STORE_PATH: storePath, TOKENTRACE_API_TOKENS: `deploy-bot:${token}`, TOKENTRACE_ADAPTIVE_ENABLED: "false" };
    const first = spawnControlPlane(env);
    const listening = await waitForLine(first, (r) => r.msg === "listening");
    const url = listening.url as string;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(listening.mode, "embedded");
    const put = await call(url, "PUT", "/v1/policies/chat", { body: samplePolicy(), token });
    assert.equal(put.status, 201);
    const audit = await waitForLine(first, (r) => r.msg === "audit");
    assert.match(String(audit.at), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual({ ...audit, time: undefined, at: undefined }, { time: undefined, level: "info", msg: "audit", who: "deploy-bot", action: "create", policy: "chat", oldVersion: null, newVersion: "1", at: undefined });
    assert.ok(!first.lines.join("\n").includes(token));
    assert.equal((await call(url, "GET", "/v1/filters/llm.chat/config")).status, 200);
    assert.equal((await call(url, "GET", "/readyz")).status, 200);

    first.child.kill("SIGTERM");
    assert.equal(await first.exited, 0);
    await waitForLine(first, (r) => r.msg === "stopped");
    await assert.rejects(fetch(`${url}/healthz`));

    const second = spawnControlPlane(env);
    const url2 = (await waitForLine(second, (r) => r.msg === "listening")).url as string;
    const got = await call(url2, "GET", "/v1/policies/chat");
    assert.equal(got.status, 200);
    assert.equal(got.headers.get("etag"), '"1"');
    second.child.kill("SIGTERM");
    assert.equal(await second.exited, 0);
  });

  it("finishes a request that is in flight when SIGTERM arrives, then exits 0", async () => {
    const storePath = join(mkdtempSync(join(tmpdir(), "tt-main-")), "policies.json");
    const proc = spawnControlPlane({ TOKENTRACE_LISTEN_PORT: "0", TOKENTRACE_STORE_PATH: storePath, TOKENTRACE_API_TOKENS: `deploy-bot:${token}`, TOKENTRACE_ADAPTIVE_ENABLED: "false" });
    const url = new URL((await waitForLine(proc, (r) => r.msg === "listening")).url as string);
    const body = Buffer.from(JSON.stringify(samplePolicy()));
    // Expect: 100-continue makes the server confirm it is handling the request before the body is
    // sent; only then does the signal go out, and the body follows once shutdown has begun.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: "/v1/policies",
        headers: { "content-type": "application/json", "content-length": String(body.length), authorization: `Bearer ${token}`, expect: "100-continue" },
      }, (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on("error", reject);
      req.on("continue", () => {
        proc.child.kill("SIGTERM");
        void waitForLine(proc, (r) => r.msg === "shutting down").then(() => req.end(body));
      });
      req.flushHeaders();
    });
    const done = await response;
    assert.equal(done.status, 201);
    assert.equal((JSON.parse(done.body) as { version: string }).version, "1");
    assert.equal(await proc.exited, 0);
    // Idle keep-alive connections are closed as soon as their response ends, not after the 5 s keep-alive timeout.
    const at = (msg: string) => Date.parse((proc.lines.map((l) => JSON.parse(l) as { msg: string; time: string }).find((r) => r.msg === msg) as { time: string }).time);
    assert.ok(at("stopped") - at("shutting down") < 4000, `shutdown took ${at("stopped") - at("shutting down")} ms`);
  });

  it("refuses to start a pipeline that discovers pods without sharding, saying why", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tt-unsharded-"));
    const config = join(dir, "config.yaml");
    writeFileSync(config, "pipeline:\n  enabled: true\n  scrape:\n    kubernetes:\n      enabled: true\n");
    const proc = spawnControlPlane({ TOKENTRACE_LISTEN_PORT: "0" }, ["--config", config]);
    assert.equal(await proc.exited, 2);
    assert.match(proc.stderr.join(""), /^config error: pipeline\.sharding\.enabled: must be true when scrape\.kubernetes\.enabled is true: /);
    assert.deepEqual(proc.lines, [], "nothing started");
  });

  it("exits with code 2 and names the key when the config is invalid", async () => {
    const proc = spawnControlPlane({ TOKENTRACE_LISTEN_PORT: "99999", TOKENTRACE_STORE_MODE: "etcd" });
    assert.equal(await proc.exited, 2);
    assert.equal(proc.stderr.join(""), 'config error: listen.port: must be <= 65535, got 99999\nconfig error: store.mode: must be one of "embedded", "kubernetes", got "etcd"\n');
  });
});
