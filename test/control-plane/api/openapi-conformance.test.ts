// /openapi.json against real responses: for every operation it describes (HEAD and OPTIONS
// included) and every status it lists, a request below gets exactly that status from a real
// server on 127.0.0.1, and no request gets a status the document does not list for its
// operation (405 for a method a path does not serve is listed once per path, x-other-methods).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { pathMethods } from "../../../control-plane/src/api/method-guard.js";
import { PolicyJournal } from "../../../control-plane/src/policy/journal.js";
import { adminToken, call, ciToken, samplePolicy, startTestApp, viewerToken, type TestApp } from "../helpers.js";
import { documentedStatuses, statusKey, type OpenApiPaths } from "./openapi-statuses.js";

/** A journal whose fsynced appends fail while `failing` is set (a full or broken disk). */
class FailingJournal extends PolicyJournal {
  failing = false;
  override append(entries: readonly unknown[], durable: boolean): void {
    if (this.failing && durable) throw new Error("EIO: injected");
    return super.append(entries, durable);
  }
}

type AppName = "public" | "token" | "broken";

interface Row {
  app: AppName;
  method: string;
  path: string;
  status: number;
  token?: boolean;
  /** Send this token instead of the admin one. */
  as?: string;
  headers?: Record<string, string>;
  /** The body, or a function of the versions the seeded policies got (versions are global). */
  body?: unknown;
  rawBody?: string;
  /** Runs first (e.g. creates the policy the request needs), against the same app. */
  seed?: string[];
}

const json = { "content-type": "application/json" };
const mergePatch = { "content-type": "application/merge-patch+json" };
const big = "x".repeat(20_000);
const changed = (name: string) => samplePolicy(name, { pluginConfig: { sampling: { defaultRate: 0.5 } } });

// Each documented status of each operation, as a request that produces it.
const rows: Row[] = [
  { app: "public", method: "GET", path: "/v1/policies", status: 200 },
  { app: "token", method: "GET", path: "/v1/policies", status: 401 },
  { app: "public", method: "POST", path: "/v1/policies", token: true, body: samplePolicy("created"), status: 201 },
  { app: "public", method: "POST", path: "/v1/policies", token: true, body: { name: "x" }, status: 400 },
  { app: "public", method: "POST", path: "/v1/policies", body: samplePolicy("anon"), status: 401 },
  { app: "public", method: "POST", path: "/v1/policies", token: true, body: samplePolicy("dup"), seed: ["dup"], status: 409 },
  { app: "public", method: "POST", path: "/v1/policies", token: true, rawBody: big, headers: json, status: 413 },
  { app: "public", method: "POST", path: "/v1/policies", token: true, rawBody: "name=x", headers: { "content-type": "text/plain" }, status: 415 },
  { app: "broken", method: "POST", path: "/v1/policies", token: true, body: samplePolicy("down"), status: 503 },

  { app: "public", method: "GET", path: "/v1/policies/get-me", seed: ["get-me"], status: 200 },
  { app: "public", method: "GET", path: "/v1/policies/get-me", headers: { "if-none-match": 'W/"999", *' }, status: 200 },
  { app: "public", method: "GET", path: "/v1/policies/get-me", headers: { "if-none-match": "*" }, status: 304 },
  { app: "public", method: "GET", path: "/v1/policies/%zz", status: 400 },
  { app: "token", method: "GET", path: "/v1/policies/chat", status: 401 },
  { app: "public", method: "GET", path: "/v1/policies/absent", status: 404 },

  { app: "public", method: "PUT", path: "/v1/policies/put-200", token: true, body: changed("put-200"), seed: ["put-200"], status: 200 },
  { app: "public", method: "PUT", path: "/v1/policies/put-201", token: true, body: samplePolicy("put-201"), status: 201 },
  { app: "public", method: "PUT", path: "/v1/policies/put-400", token: true, body: samplePolicy("other"), status: 400 },
  { app: "public", method: "PUT", path: "/v1/policies/put-401", body: samplePolicy("put-401"), status: 401 },
  { app: "public", method: "PUT", path: "/v1/policies/put-409", token: true, body: { version: "999", policy: changed("put-409") }, seed: ["put-409"], status: 409 },
  { app: "public", method: "PUT", path: "/v1/policies/put-412", token: true, body: changed("put-412"), headers: { "if-match": '"999"' }, seed: ["put-412"], status: 412 },
  { app: "public", method: "PUT", path: "/v1/policies/put-413", token: true, rawBody: big, headers: json, status: 413 },
  { app: "public", method: "PUT", path: "/v1/policies/put-415", token: true, rawBody: "{}", headers: { "content-type": "application/json; charset=latin1" }, status: 415 },
  { app: "broken", method: "PUT", path: "/v1/policies/down", token: true, body: samplePolicy("down"), status: 503 },

  { app: "public", method: "PATCH", path: "/v1/policies/patch-200", token: true, body: { adaptive: { targetTracesPerSecond: 1 } }, headers: mergePatch, seed: ["patch-200"], status: 200 },
  { app: "public", method: "PATCH", path: "/v1/policies/patch-400", token: true, body: { pluginConfig: { sampling: { defaultRate: 7 } } }, headers: mergePatch, seed: ["patch-400"], status: 400 },
  { app: "public", method: "PATCH", path: "/v1/policies/patch-401", body: {}, headers: mergePatch, status: 401 },
  { app: "public", method: "PATCH", path: "/v1/policies/absent", token: true, body: {}, headers: mergePatch, status: 404 },
  { app: "public", method: "PATCH", path: "/v1/policies/patch-412", token: true, body: { adaptive: null }, headers: { ...mergePatch, "if-none-match": "*" }, seed: ["patch-412"], status: 412 },
  { app: "public", method: "PATCH", path: "/v1/policies/patch-413", token: true, rawBody: big, headers: mergePatch, status: 413 },
  { app: "public", method: "PATCH", path: "/v1/policies/patch-415", token: true, rawBody: "{}", headers: { "content-type": "application/json-patch+json" }, status: 415 },
  { app: "broken", method: "PATCH", path: "/v1/policies/chat", token: true, body: { adaptive: { targetTracesPerSecond: 3 } }, headers: mergePatch, status: 503 },
  { app: "broken", method: "PUT", path: "/v1/policies/chat", token: true, body: changed("chat"), status: 200 },

  { app: "public", method: "DELETE", path: "/v1/policies/delete-204", token: true, seed: ["delete-204"], status: 204 },
  { app: "public", method: "DELETE", path: "/v1/policies/delete-400", token: true, headers: { "if-match": "unquoted" }, seed: ["delete-400"], status: 400 },
  { app: "public", method: "DELETE", path: "/v1/policies/chat", status: 401 },
  { app: "public", method: "DELETE", path: "/v1/policies/absent", token: true, status: 404 },
  { app: "public", method: "DELETE", path: "/v1/policies/delete-412", token: true, headers: { "if-match": 'W/"1"' }, seed: ["delete-412"], status: 412 },
  { app: "broken", method: "DELETE", path: "/v1/policies/chat", token: true, status: 503 },

  { app: "public", method: "GET", path: "/v1/policies/history-200/history", seed: ["history-200"], status: 200 },
  { app: "public", method: "GET", path: "/v1/policies/%zz/history", status: 400 },
  { app: "token", method: "GET", path: "/v1/policies/chat/history", status: 401 },
  { app: "public", method: "GET", path: "/v1/policies/never/history", status: 404 },

  { app: "public", method: "POST", path: "/v1/policies/rollback-200/rollback", token: true, body: (seeded: Map<string, string>) => ({ version: seeded.get("rollback-200") }), seed: ["rollback-200"], status: 200 },
  { app: "public", method: "POST", path: "/v1/policies/rollback-400/rollback", token: true, body: { version: 1 }, seed: ["rollback-400"], status: 400 },
  { app: "public", method: "POST", path: "/v1/policies/chat/rollback", body: { version: "1" }, status: 401 },
  { app: "public", method: "POST", path: "/v1/policies/never/rollback", token: true, body: { version: "1" }, status: 404 },
  { app: "public", method: "POST", path: "/v1/policies/rollback-412/rollback", token: true, body: { version: "1" }, headers: { "if-match": '"999"' }, seed: ["rollback-412"], status: 412 },
  { app: "public", method: "POST", path: "/v1/policies/chat/rollback", token: true, rawBody: big, headers: json, status: 413 },
  { app: "public", method: "POST", path: "/v1/policies/chat/rollback", token: true, rawBody: "{}", headers: { "content-type": "application/json", "content-encoding": "br" }, status: 415 },
  { app: "broken", method: "POST", path: "/v1/policies/chat/rollback", token: true, body: { version: "1" }, status: 503 },

  { app: "public", method: "POST", path: "/v1/validate", token: true, body: samplePolicy(), status: 200 },
  { app: "public", method: "POST", path: "/v1/validate", token: true, rawBody: '{"name":"a","name":"b"}', headers: json, status: 400 },
  { app: "public", method: "POST", path: "/v1/validate", body: samplePolicy(), status: 401 },
  { app: "public", method: "POST", path: "/v1/validate", token: true, rawBody: big, headers: json, status: 413 },
  { app: "public", method: "POST", path: "/v1/validate", token: true, rawBody: "{}", headers: { "content-type": "application/x-www-form-urlencoded" }, status: 415 },

  { app: "public", method: "GET", path: "/v1/filters/llm.chat/config", status: 200 },
  { app: "public", method: "GET", path: "/v1/filters/llm.chat/config?version=", status: 200 },
  { app: "public", method: "GET", path: "/v1/filters/llm.chat/config", headers: { "if-none-match": "*" }, status: 304 },
  { app: "public", method: "GET", path: "/v1/filters/chat/config", status: 400 },
  { app: "token", method: "GET", path: "/v1/filters/llm.chat/config", status: 401 },
  { app: "public", method: "GET", path: "/v1/filters/infer.chat/config", status: 404 },

  { app: "public", method: "GET", path: "/v1/dashboard/series", status: 200 },
  { app: "token", method: "GET", path: "/v1/dashboard/series", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/series?route=nope", status: 404 },

  { app: "public", method: "GET", path: "/v1/dashboard/series?range=7", status: 400 },
  { app: "public", method: "GET", path: "/v1/dashboard/models", status: 200 },
  { app: "public", method: "GET", path: "/v1/dashboard/models?range=7", status: 400 },
  { app: "token", method: "GET", path: "/v1/dashboard/models", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/gpus", status: 200 },
  { app: "public", method: "GET", path: "/v1/dashboard/gpus?range=7", status: 400 },
  { app: "token", method: "GET", path: "/v1/dashboard/gpus", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/engine-causes", status: 200 },
  { app: "public", method: "GET", path: "/v1/dashboard/engine-causes?range=7", status: 400 },
  { app: "token", method: "GET", path: "/v1/dashboard/engine-causes", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/keep", status: 200 },
  { app: "public", method: "GET", path: "/v1/dashboard/keep?route=nope", status: 404 },
  { app: "public", method: "GET", path: "/v1/dashboard/keep?range=7", status: 400 },
  { app: "token", method: "GET", path: "/v1/dashboard/keep", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/errors", status: 200 },
  { app: "public", method: "GET", path: "/v1/dashboard/errors?route=nope", status: 404 },
  { app: "public", method: "GET", path: "/v1/dashboard/errors?range=7", status: 400 },
  { app: "token", method: "GET", path: "/v1/dashboard/errors", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/alerts", status: 200 },
  { app: "token", method: "GET", path: "/v1/dashboard/alerts", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/slo", status: 200 },
  { app: "token", method: "GET", path: "/v1/dashboard/slo", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/status", status: 200 },
  { app: "token", method: "GET", path: "/v1/dashboard/status", status: 401 },

  // The span receiver is served by the token app only.
  { app: "token", method: "GET", path: "/v1/dashboard/traces", token: true, status: 200 },
  { app: "token", method: "GET", path: "/v1/dashboard/traces?limit=0", token: true, status: 400 },
  { app: "token", method: "GET", path: "/v1/dashboard/traces", status: 401 },
  { app: "public", method: "GET", path: "/v1/dashboard/traces", status: 404 },

  // Scopes: a read token cannot write, only admin reads the keys' state.
  { app: "public", method: "POST", path: "/v1/policies", as: viewerToken, body: samplePolicy("viewer"), status: 403 },
  { app: "public", method: "PUT", path: "/v1/policies/chat", as: viewerToken, body: changed("chat"), status: 403 },
  { app: "public", method: "PATCH", path: "/v1/policies/chat", as: viewerToken, body: {}, headers: mergePatch, status: 403 },
  { app: "public", method: "DELETE", path: "/v1/policies/chat", as: viewerToken, status: 403 },
  { app: "public", method: "POST", path: "/v1/policies/chat/rollback", as: viewerToken, body: { version: "1" }, status: 403 },
  { app: "public", method: "POST", path: "/v1/validate", as: viewerToken, body: samplePolicy(), status: 403 },
  { app: "public", method: "GET", path: "/v1/content-keys", token: true, status: 200 },
  { app: "public", method: "GET", path: "/v1/content-keys", status: 401 },
  { app: "public", method: "GET", path: "/v1/content-keys", as: ciToken, status: 403 },
  { app: "token", method: "GET", path: "/v1/dashboard/traces", as: viewerToken, status: 200 },

  { app: "public", method: "GET", path: "/openapi.json", status: 200 },
  { app: "public", method: "GET", path: "/healthz", status: 200 },
  { app: "public", method: "GET", path: "/readyz", status: 200 },
  { app: "broken", method: "GET", path: "/readyz", status: 503 },
  { app: "public", method: "GET", path: "/metrics", status: 200 },
];

describe("OpenAPI document against real responses", () => {
  const apps = new Map<AppName, TestApp>();
  let doc: OpenApiPaths;
  before(async () => {
    apps.set("public", await startTestApp({ bodyLimitBytes: 16384 }));
    apps.set("token", await startTestApp({ reads: "token", traces: true }));
    let journal: FailingJournal | undefined;
    const broken = await startTestApp({ journal: (path) => (journal = new FailingJournal(path)) });
    apps.set("broken", broken);
    for (const app of apps.values()) assert.equal((await call(app.url, "POST", "/v1/policies", { body: samplePolicy("chat"), token: adminToken })).status, 201);
    // Version 2, so a rollback to 1 on the broken store is a real change.
    assert.equal((await call(broken.url, "PUT", "/v1/policies/chat", { body: changed("chat"), token: adminToken })).status, 200);
    (journal as FailingJournal).failing = true;
    broken.readiness.store = broken.store.readiness();
    broken.readiness.disk = { ok: false, detail: "injected" };
    doc = (await call(apps.get("public")!.url, "GET", "/openapi.json")).body as typeof doc;
  });
  after(async () => {
    for (const app of apps.values()) await app.close();
  });

  it("lists every status a request gets, and a request gets every status listed, for every operation", async () => {
    const table = pathMethods(doc.paths);
    const documented = documentedStatuses(doc);
    // GET rows again as HEAD; per path, OPTIONS and one method the path does not serve.
    const all: Row[] = [...rows, ...rows.filter((r) => r.method === "GET").map((r) => ({ ...r, method: "HEAD" }))];
    for (const { template, allow } of table) {
      const path = template.replace(/\{[^}]+\}/g, "chat").replace("/chat/config", "/llm.chat/config");
      // Every GET path is served by the token app (the span receiver included).
      if (allow.includes("GET")) {
        for (const method of ["GET", "HEAD"]) all.push({ app: "token", method, path, token: true, headers: { "if-none-match": "*" }, status: 304 });
      }
      all.push({ app: "public", method: "OPTIONS", path, status: 204 });
      all.push({ app: "public", method: ["POST", "PUT", "DELETE", "PATCH"].find((m) => !allow.includes(m)) ?? "TRACE", path, status: 405, token: true });
    }
    const exercised = new Set<string>();
    for (const row of all) {
      const app = apps.get(row.app) as TestApp;
      const seeded = new Map<string, string>();
      for (const name of row.seed ?? []) {
        const res = await call(app.url, "PUT", `/v1/policies/${name}`, { body: samplePolicy(name), token: adminToken });
        assert.ok(res.status === 200 || res.status === 201, `seed ${name}`);
        seeded.set(name, (res.body as { version: string }).version);
      }
      const body = typeof row.body === "function" ? (row.body as (s: Map<string, string>) => unknown)(seeded) : row.body;
      const res = await call(app.url, row.method, row.path, { token: row.as ?? (row.token ? adminToken : undefined), headers: row.headers, body, rawBody: row.rawBody });
      const what = `${row.method} ${row.path} (${row.app})`;
      assert.equal(res.status, row.status, `${what}: ${res.text}`);
      const key = statusKey(doc, row.method, row.path, res.status);
      assert.ok(key !== undefined && documented.has(key), `${what} answered ${res.status}, which /openapi.json does not list`);
      exercised.add(key);
    }
    assert.deepEqual([...documented].filter((k) => !exercised.has(k)), [], "documented statuses no request produced");
  });
});
