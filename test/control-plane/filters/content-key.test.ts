// The pseudonym key's home and delivery (the contract between filter and control plane): files in
// content.keysDir, served only on the filter-facing listener to callers of the namespace, rotated
// without a restart, and absent from every log, read, spec and audit line.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMetrics } from "../../../control-plane/src/api/metrics.js";
import { parseTokens } from "../../../control-plane/src/api/auth.js";
import { ContentKeyRing } from "../../../control-plane/src/content/keys.js";
import { createFilterApp } from "../../../control-plane/src/filters/app.js";
import type { FilterAuth } from "../../../control-plane/src/filters/config.js";
import { listenOn } from "../../../control-plane/src/listen.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { adminToken, call, samplePolicy, startTestApp, type TestApp } from "../helpers.js";

const SIDECAR = "By=spiffe://cluster.local/ns/tokentrace-system/sa/tokentrace-control-plane;Hash=3b5f;Subject=\"\";URI=";
const xfcc = (namespace: string, account = "default") => `${SIDECAR}spiffe://cluster.local/ns/${namespace}/sa/${account}`;
const key1 = randomBytes(32).toString("hex");
const key2 = randomBytes(48).toString("hex").toUpperCase();

/** A keys directory laid out as kubelet mounts a Secret: files are links into a `..data` directory swapped atomically. */
function secretDir(files: Record<string, string>): { dir: string; swap(next: Record<string, string>): void } {
  const dir = mkdtempSync(join(tmpdir(), "tt-keys-"));
  let generation = 0;
  let linked = new Set<string>();
  // kubelet's AtomicWriter (kubernetes pkg/volume/util/atomic_writer.go): a new timestamped
  // directory, `..data` swapped to it by rename, then a link per key, and stale links removed.
  const write = (next: Record<string, string>) => {
    const data = join(dir, `..2026_${generation++}`);
    mkdirSync(data);
    for (const [name, text] of Object.entries(next)) writeFileSync(join(data, name), text);
    symlinkSync(data.slice(dir.length + 1), join(dir, "..data_tmp"));
    renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
    for (const name of Object.keys(next)) if (!linked.has(name)) symlinkSync(join("..data", name), join(dir, name));
    for (const name of linked) if (!(name in next) && existsSync(join(dir, name)) && lstatSync(join(dir, name)).isSymbolicLink()) unlinkSync(join(dir, name));
    linked = new Set(Object.keys(next));
  };
  write(files);
  return { dir, swap: write };
}

interface Listener {
  url: string;
  close(): Promise<void>;
}

async function filterListener(opts: { auth: FilterAuth; keys: ContentKeyRing; store: FilePolicyStore; tokens?: string }): Promise<Listener> {
  const app = createFilterApp({
    auth: opts.auth,
    trustDomain: "cluster.local",
    tokens: parseTokens(opts.tokens ?? "", "test", /,/).tokens,
    store: opts.store,
    overrides: () => undefined,
    metrics: createMetrics(),
    keys: opts.keys,
    log: () => undefined,
  });
  const server: Server = await listenOn(app, 0, "127.0.0.1", "test");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const keyOf = (url: string, workload: string, headers: Record<string, string> = {}, query = "") => fetch(`${url}/v1/filters/${workload}/content-key${query}`, { headers });

describe("the content key on the filter-facing listener", () => {
  let api: TestApp;
  let secret: ReturnType<typeof secretDir>;
  const logs: object[] = [];
  let keys: ContentKeyRing;
  let mesh: Listener;

  before(async () => {
    api = await startTestApp();
    const withPseudonyms = samplePolicy("chat", { pluginConfig: { spans: { cluster: "otel", content: { enabled: true, pseudonyms: {} } } } as never });
    assert.equal((await call(api.url, "POST", "/v1/policies", { body: withPseudonyms, token: adminToken })).status, 201);
    const placeholdersOnly = samplePolicy("plain", { target: { namespace: "plain", selector: { matchLabels: { app: "x" } } }, pluginConfig: { spans: { cluster: "otel", content: { enabled: true } } } as never });
    assert.equal((await call(api.url, "POST", "/v1/policies", { body: placeholdersOnly, token: adminToken })).status, 201);
    secret = secretDir({ v1: `${key1}\n`, current: "v1\n" });
    keys = new ContentKeyRing(secret.dir, (r) => logs.push(r));
    keys.reload();
    mesh = await filterListener({ auth: "mesh", keys, store: api.store });
  });
  after(async () => {
    await mesh.close();
    await api.close();
  });

  it("answers 200 {version, key} with ETag and no-store to a sidecar of the namespace, 304 for the current version", async () => {
    const res = await keyOf(mesh.url, "llm.chat-7d9f", { "x-forwarded-client-cert": xfcc("llm") });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("etag"), '"v1"');
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.deepEqual(await res.json(), { version: "v1", key: key1 });
    assert.equal((await keyOf(mesh.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm") }, "?version=v1")).status, 304);
    assert.equal((await keyOf(mesh.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm"), "if-none-match": 'W/"v1"' })).status, 304);
    assert.equal((await keyOf(mesh.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm") }, "?version=v0")).status, 200);
    assert.equal((await keyOf(mesh.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm") }, "?key=1")).status, 400);
  });

  it("reads only the element the sidecar added last: what a client puts before it changes nothing", async () => {
    const forged = `URI=spiffe://cluster.local/ns/llm/sa/default,${xfcc("intruder")}`;
    const res = await keyOf(mesh.url, "llm.chat", { "x-forwarded-client-cert": forged });
    assert.equal(res.status, 403);
    assert.ok(!(await res.text()).includes(key1));
    // Two header lines are one list (RFC 9110 §5.3): the last line's last element still decides.
    const twoLines = new Headers([["x-forwarded-client-cert", xfcc("llm")], ["x-forwarded-client-cert", xfcc("intruder")]]);
    assert.equal((await fetch(`${mesh.url}/v1/filters/llm.chat/content-key`, { headers: twoLines })).status, 403);
  });

  it("401 without a usable identity, 403 for another namespace, 404 where no policy turns pseudonyms on", async () => {
    const cases: [Record<string, string>, number][] = [
      [{}, 401],
      [{ "x-forwarded-client-cert": "garbage" }, 401],
      [{ "x-forwarded-client-cert": `${SIDECAR}spiffe://other.domain/ns/llm/sa/default` }, 401],
      [{ "x-forwarded-client-cert": `${SIDECAR}spiffe://cluster.local/ns/llm/sa/default;URI=spiffe://cluster.local/ns/llm/sa/two` }, 401],
      [{ "x-forwarded-client-cert": xfcc("plain") }, 403],
    ];
    for (const [headers, status] of cases) assert.equal((await keyOf(mesh.url, "llm.chat", headers)).status, status, JSON.stringify(headers));
    const none = await keyOf(mesh.url, "plain.x", { "x-forwarded-client-cert": xfcc("plain") });
    assert.equal(none.status, 404);
    assert.match(await none.text(), /no policy in namespace plain turns pseudonyms on/);
  });

  it("per-namespace tokens for meshes without mTLS; none (loopback only) serves every namespace", async () => {
    const token = "llm-namespace-token-0123456789";
    const tokens = await filterListener({ auth: "token", keys, store: api.store, tokens: `llm:${token},plain:plain-namespace-token-0123` });
    const open = await filterListener({ auth: "none", keys, store: api.store });
    try {
      assert.equal((await keyOf(tokens.url, "llm.chat", { authorization: `Bearer ${token}` })).status, 200);
      assert.equal((await keyOf(tokens.url, "llm.chat", { authorization: "Bearer plain-namespace-token-0123" })).status, 403);
      assert.equal((await keyOf(tokens.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm") })).status, 401, "mesh identity means nothing under token auth");
      assert.equal((await keyOf(open.url, "llm.chat")).status, 200);
    } finally {
      await tokens.close();
      await open.close();
    }
  });

  it("is not served on the API listener, and 404 says so when no key directory is configured", async () => {
    assert.equal((await keyOf(api.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm") })).status, 404);
    const unkeyed = await filterListener({ auth: "mesh", keys: new ContentKeyRing(""), store: api.store });
    try {
      const res = await keyOf(unkeyed.url, "llm.chat", { "x-forwarded-client-cert": xfcc("llm") });
      assert.equal(res.status, 404);
      assert.match(await res.text(), /content\.keysDir/);
    } finally {
      await unkeyed.close();
    }
  });

  it("rotates without a restart when kubelet swaps the Secret's files, and keeps the last good key when the new state is broken", async () => {
    const watched = new ContentKeyRing(secret.dir, (r) => logs.push(r));
    const timers: (() => unknown)[] = [];
    watched.start((_name, _ms, task) => timers.push(task), 10_000);
    try {
      assert.equal(watched.current()?.version, "v1");
      secret.swap({ v1: key1, v2: key2, current: "v2" });
      // The directory watch reports the swap; the interval task (run by hand here) is the fallback.
      const deadline = Date.now() + 5000;
      while (watched.current()?.version !== "v2" && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      if (watched.current()?.version !== "v2") timers.forEach((t) => t());
      assert.deepEqual(watched.current(), { version: "v2", keyHex: key2.toLowerCase() });
      secret.swap({ v2: key2, current: "v3" });
      timers.forEach((t) => t());
      assert.equal(watched.current()?.version, "v2", "current names a missing version: the last good key stays");
      assert.match(String(watched.status().problem), /current names version v3, which has no valid key file/);
      secret.swap({ v2: key2, v3: "not-hex-at-all", current: "v3" });
      timers.forEach((t) => t());
      assert.equal(watched.current()?.version, "v2");
      assert.match(String(watched.status().problem), /v3: not a key/);
    } finally {
      watched.stop();
    }
  });

  it("the key appears in no log line, policy read, pull, audit line, metric or status", async () => {
    const probes = [key1, key2.toLowerCase(), key2].map((k) => k.slice(8, 24));
    const api2 = await call(api.url, "GET", "/v1/policies");
    const pull = await call(api.url, "GET", "/v1/filters/llm.chat/config");
    const metrics = await call(api.url, "GET", "/metrics");
    const everything = [JSON.stringify(logs), api2.text, pull.text, metrics.text, JSON.stringify(api.audit), JSON.stringify(keys.status())].join("\n");
    for (const probe of probes) assert.ok(!everything.includes(probe), `key material ${probe} leaked`);
    assert.ok(logs.some((l) => (l as { msg?: string }).msg === "content key in force"), "rotation is logged, by version");
  });
});
