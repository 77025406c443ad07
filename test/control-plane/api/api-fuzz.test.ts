// Property-based fuzzing of the whole API on a real server on 127.0.0.1 (fast-check): generated
// and mutated bodies (valid policies with keys dropped, values replaced, __proto__ and
// constructor keys injected, duplicate keys, deep nesting, truncation, random bytes), paths
// (documented and not, garbage percent-encoding), headers (tokens, content types, encodings,
// conditional headers) and methods. After every request: no 5xx, the status is one
// /openapi.json lists for the operation, and a filter pull still answers; every 25 requests
// and at the end: the store, reopened from disk, loads with nothing quarantined and serves
// exactly what the live one serves. FUZZ_SEED reproduces a failing run, FUZZ_RUNS sets its size.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import fc from "fast-check";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { adminToken, call, samplePolicy, startTestApp, type TestApp } from "../helpers.js";
import { documentedStatuses, statusKey, type OpenApiPaths } from "./openapi-statuses.js";

const runs = Number(process.env.FUZZ_RUNS ?? "400");
const seed = process.env.FUZZ_SEED === undefined ? Date.now() ^ (Math.random() * 0x7fffffff) : Number(process.env.FUZZ_SEED);

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/** Sends exactly these bytes (fetch would refuse some methods and headers). */
function send(url: string, r: FuzzRequest): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const headers = { ...r.headers, ...(r.body === undefined ? {} : { "content-length": String(r.body.length) }) };
    const req = request({ host: target.hostname, port: target.port, method: r.method, path: r.path, headers }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(r.body);
  });
}

// ---- generators ----------------------------------------------------------------------------

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
const names = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("chat", "embed", "constructor", "tostring", "hasownproperty", "prototype", "valueof") },
  { weight: 1, arbitrary: fc.constantFrom("__proto__", "Chat", "-x", "") },
  { weight: 3, arbitrary: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/) },
);
const labelValue = fc.constantFrom("chat", "embed", "gpu", "");
const labelKey = fc.oneof({ weight: 8, arbitrary: fc.constantFrom("app", "tier", "constructor", "toString") }, { weight: 1, arbitrary: fc.constantFrom("__proto__", "bad key") });
const matchLabels = fc.dictionary(labelKey, labelValue, { maxKeys: 3 });
const rate = fc.oneof({ weight: 9, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) }, { weight: 1, arbitrary: fc.constantFrom(0, 1, -1, 2, 1e308) });

const validPolicy = fc.record(
  {
    name: names,
    target: fc.oneof(
      fc.record({ namespace: fc.constantFrom("llm", "batch"), selector: fc.record({ matchLabels }) }),
      fc.record({ namespace: fc.constantFrom("llm"), targetRefs: fc.constant([{ kind: "Service", name: "chat" }]) }),
    ),
    pluginConfig: fc.record(
      {
        sampling: fc.record(
          {
            defaultRate: rate,
            routes: fc.array(fc.record({ routeName: fc.constantFrom("chat", "completions"), rate }), { maxLength: 3 }),
            force: fc.array(fc.record({ header: fc.constantFrom("x-debug", "x-trace") }), { maxLength: 2 }),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    ),
    adaptive: fc.record({ targetTracesPerSecond: fc.oneof({ weight: 9, arbitrary: fc.double({ min: 0.01, max: 10, noNaN: true }) }, { weight: 1, arbitrary: fc.constantFrom(0, -1) }) }),
  },
  { requiredKeys: ["name", "target", "pluginConfig"] },
);

type Json = unknown;

/** Every object inside `value` (including itself), depth first. */
function objectsIn(value: Json): Record<string, Json>[] {
  const out: Record<string, Json>[] = [];
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null) continue;
    if (!Array.isArray(item)) out.push(item as Record<string, Json>);
    stack.push(...Object.values(item));
  }
  return out;
}

/** One edit of a document: at the n-th object, drop a key, replace a value, or add a dangerous key. */
const edit = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom("drop", "replace", "proto", "constructor", "null"),
  value: fc.jsonValue({ maxDepth: 3 }),
  key: fc.nat(),
});

function applyEdits(document: Json, edits: readonly { at: number; kind: string; value: Json; key: number }[]): Json {
  const copy = JSON.parse(JSON.stringify(document)) as Json;
  for (const e of edits) {
    const objects = objectsIn(copy);
    const target = objects[e.at % objects.length];
    if (target === undefined) continue;
    const keys = Object.keys(target);
    const key = keys[e.key % Math.max(keys.length, 1)];
    if (e.kind === "drop" && key !== undefined) delete target[key];
    else if (e.kind === "replace" && key !== undefined) target[key] = e.value;
    else if (e.kind === "null" && key !== undefined) target[key] = null;
    // An own property named __proto__ or constructor, as JSON.parse makes them.
    else if (e.kind === "proto") Object.defineProperty(target, "__proto__", { value: e.value ?? { target: { namespace: "llm", selector: { matchLabels: {} } } }, enumerable: true, writable: true, configurable: true });
    else if (e.kind === "constructor") Object.defineProperty(target, "constructor", { value: e.value, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/** Text-level damage JSON.stringify cannot produce. */
const textDamage = fc.oneof(
  fc.record({ kind: fc.constant("duplicate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), text: fc.constantFrom("{", "}", ",", '"', "\\", "\u0000", "\ud800", "]", "1e999", "-") }),
  fc.record({ kind: fc.constant("deep" as const), depth: fc.integer({ min: 60, max: 3000 }) }),
);

function damage(text: string, d: { kind: "duplicate" | "truncate" | "insert" | "deep"; at?: number; text?: string; depth?: number }): string {
  const at = (d.at ?? 0) % Math.max(text.length, 1);
  if (d.kind === "truncate") return text.slice(0, at);
  if (d.kind === "insert") return text.slice(0, at) + (d.text ?? "") + text.slice(at);
  if (d.kind === "deep") return `{"name":${"[".repeat(d.depth ?? 0)}${"]".repeat(d.depth ?? 0)}}`;
  // Repeat the first key of the document right after the opening brace.
  const match = /^\{("(?:[^"\\]|\\.)*")\s*:/.exec(text);
  return match === null ? text : `{${match[1]}:0,${text.slice(1)}`;
}

const utf8 = (text: string) => Buffer.from(text, "utf8");

/** A write body built from a policy: as is, as the record GET returns, edited, damaged as text, or unrelated. */
function documentOf(policy: fc.Arbitrary<Json>): fc.Arbitrary<Buffer | undefined> {
  return fc.oneof(
    { weight: 5, arbitrary: policy.map((p) => utf8(JSON.stringify(p))) },
    { weight: 2, arbitrary: fc.tuple(policy, fc.option(fc.oneof(printable, fc.nat({ max: 80 }).map(String)))).map(([p, v]) => utf8(JSON.stringify({ version: v ?? undefined, updatedBy: "x", policy: p }))) },
    { weight: 4, arbitrary: fc.tuple(policy, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([p, e]) => utf8(JSON.stringify(applyEdits(p, e)))) },
    { weight: 2, arbitrary: fc.tuple(policy, textDamage).map(([p, d]) => utf8(damage(JSON.stringify(p), d))) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => utf8(JSON.stringify(v) ?? "null")) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** A merge patch: part of a policy (edited), a null that removes a member, or anything. */
const patchDocument: fc.Arbitrary<Buffer | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(validPolicy, fc.subarray(["pluginConfig", "adaptive", "target", "name"]), fc.array(edit, { maxLength: 2 })).map(([p, keys, e]) => utf8(JSON.stringify(applyEdits(Object.fromEntries(keys.map((k) => [k, (p as Record<string, Json>)[k] ?? null])), e)))) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(
        '{"adaptive":null}',
        "{}",
        '{"target":null,"__proto__":{"target":{"namespace":"llm","selector":{"matchLabels":{}}}}}',
        '{"name":null,"__proto__":{"name":"chat"}}',
        '{"target":{"selector":null,"__proto__":{"selector":{"matchLabels":{}}}}}',
        '{"adaptive":{"__proto__":{"targetTracesPerSecond":1}}}',
        '{"constructor":{"prototype":{"target":null}}}',
        '{"name":null}',
        "[]",
        "null",
      )
      .map(utf8),
  },
  { weight: 1, arbitrary: documentOf(validPolicy) },
);

const segment = fc.oneof(
  { weight: 5, arbitrary: names },
  { weight: 1, arbitrary: fc.constantFrom("%zz", "%", "%E0%A4%A", "..", ".", "%2F", "a%00b", "%C0%80") },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => encodeURIComponent(s) || "x") },
);
const workload = fc.oneof(fc.constantFrom("llm.chat", "llm.embed", "batch.chat", "LLM.chat", "chat", "llm."), segment);
const query = fc.oneof(
  fc.constant(""),
  fc.tuple(fc.option(fc.constantFrom("0000000000000000", "", "x")), fc.option(fc.constantFrom("app=chat", "app=chat,tier=gpu", "app", "app=a,app=b", "constructor=x", "__proto__=chat", "tier=gpu"))).map(
    ([v, l]) => `?${[v === null ? "" : `version=${v}`, l === null ? "" : `labels=${encodeURIComponent(l)}`].filter(Boolean).join("&")}`,
  ),
  fc.constantFrom("?verison=1", "?version=a&version=b", "?labels[x]=1", "?route=chat"),
);
const anyPath = fc.oneof(
  fc.constant("/v1/policies"),
  segment.map((n) => `/v1/policies/${n}`),
  segment.map((n) => `/v1/policies/${n}/history`),
  segment.map((n) => `/v1/policies/${n}/rollback`),
  fc.constant("/v1/validate"),
  fc.tuple(workload, query).map(([w, q]) => `/v1/filters/${w}/config${q}`),
  query.map((q) => `/v1/dashboard/series${q}`),
  query.map((q) => `/v1/dashboard/keep${q}`),
  query.map((q) => `/v1/dashboard/errors${q}`),
  fc.constantFrom("", "?limit=0", "?limit=5&errors=true", "?id=abc", "?minDurationMs=-1", "?route=chat").map((q) => `/v1/dashboard/traces${q}`),
  fc.constantFrom("/v1/dashboard/status", "/v1/traces", "/openapi.json", "/healthz", "/readyz", "/metrics", "/V1/POLICIES", "/v1/policies/", "/v2/x", "/", "/v1/policies/chat/history/x"),
);
const etags = fc.oneof(
  fc.constant("*"),
  fc.array(fc.tuple(fc.boolean(), fc.nat({ max: 80 })), { minLength: 1, maxLength: 3 }).map((tags) => tags.map(([weak, n]) => `${weak ? "W/" : ""}"${n}"`).join(", ")),
  printable,
);
/** Mostly absent: a header present on every request would hide every other path. */
const rarely = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

function headersFor(contentType: string): fc.Arbitrary<Record<string, string>> {
  return fc
    .record({
      authorization: fc.oneof(
        { weight: 16, arbitrary: fc.constantFrom(`Bearer ${adminToken}`, `bearer ${adminToken}`, `BEARER  ${adminToken}`) },
        { weight: 1, arbitrary: fc.constantFrom("Bearer wrong-token-0000000000", "Basic YTpi", "Bearer", `Bearer ${adminToken} x`) },
        { weight: 1, arbitrary: printable },
      ),
      "content-type": fc.oneof(
        { weight: 16, arbitrary: fc.constant(contentType) },
        { weight: 1, arbitrary: fc.constantFrom("application/json; charset=utf-8", "application/json;charset=UTF-8", "text/plain", "application/json; charset=latin1", "application/json-patch+json", "*/*") },
        { weight: 1, arbitrary: printable },
      ),
      "content-encoding": rarely(fc.constantFrom("gzip", "identity", "br", "deflate, gzip", "x")),
      "if-match": rarely(etags),
      "if-none-match": rarely(etags),
      "if-unmodified-since": rarely(fc.constantFrom("Thu, 01 Jan 1970 00:00:00 GMT", "garbage")),
    })
    .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);
}

/** A span as the filter exports it, with any of its fields replaced. */
const otlpSpan: fc.Arbitrary<Json> = fc.tuple(
  fc.record({
    traceId: fc.constantFrom("0af7651916cd43dd8448eb211c80319c", "", "zz"),
    spanId: fc.constantFrom("b7ad6b7169203331", "x"),
    name: fc.constantFrom("chat llama", ""),
    startTimeUnixNano: fc.constantFrom("1700000000000000000", "-1", "x"),
    endTimeUnixNano: fc.constantFrom("1700000001000000000", "1"),
    attributes: fc.constant([{ key: "http.route", value: { stringValue: "chat" } }]),
  }),
  fc.array(edit, { maxLength: 3 }),
).map(([span, e]) => applyEdits(span, e));

const pooled = fc.constantFrom("chat", "embed", "constructor", "tostring", "p1", "p2");
const pooledPolicy = fc.tuple(validPolicy, pooled).map(([p, name]) => ({ ...p, name }));
const json = "application/json";
const write = <T>(method: string, path: (x: T) => string, from: fc.Arbitrary<T>, bodyOf: (x: T) => fc.Arbitrary<Buffer | undefined>, contentType = json): fc.Arbitrary<FuzzRequest> =>
  from.chain((x) => fc.record({ method: fc.constant(method), path: fc.constant(path(x)), headers: headersFor(contentType), body: bodyOf(x) }));

// Mostly requests an operation would really get (so writes succeed, conflict and fail for real),
// plus any method on any path with any body.
const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  { weight: 3, arbitrary: write("POST", () => "/v1/policies", pooledPolicy, (p) => documentOf(fc.constant(p))) },
  { weight: 4, arbitrary: write("PUT", (p) => `/v1/policies/${p.name}`, pooledPolicy, (p) => documentOf(fc.constant(p))) },
  { weight: 3, arbitrary: write("PATCH", (n) => `/v1/policies/${n}`, pooled, () => patchDocument, "application/merge-patch+json") },
  { weight: 1, arbitrary: write("DELETE", (n) => `/v1/policies/${n}`, pooled, () => fc.constant(undefined)) },
  { weight: 1, arbitrary: write("POST", (n) => `/v1/policies/${n}/rollback`, pooled, () => fc.oneof(fc.nat({ max: 80 }).map((v) => utf8(JSON.stringify({ version: String(v) }))), documentOf(validPolicy))) },
  { weight: 1, arbitrary: write("POST", () => "/v1/validate", validPolicy, (p) => documentOf(fc.constant(p))) },
  { weight: 3, arbitrary: fc.record({ method: fc.constantFrom("GET", "HEAD"), path: anyPath, headers: headersFor(json), body: fc.constant(undefined) }) },
  { weight: 1, arbitrary: write("POST", () => "/v1/traces", otlpSpan, (span) => fc.oneof(fc.constant(utf8(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }))), documentOf(fc.constant(span)))) },
  {
    weight: 2,
    arbitrary: fc.record({
      method: fc.oneof({ weight: 8, arbitrary: fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE") }, { weight: 1, arbitrary: fc.constantFrom("OPTIONS", "TRACE", "PROPFIND", "SEARCH") }),
      path: anyPath,
      headers: headersFor(json),
      body: documentOf(validPolicy),
    }),
  },
);

// ---- the property --------------------------------------------------------------------------

describe("API fuzzing (fast-check, real server on 127.0.0.1)", () => {
  let app: TestApp;
  let doc: OpenApiPaths;
  let documented: Set<string>;
  before(async () => {
    app = await startTestApp({ bodyLimitBytes: 65536, traces: true });
    for (const name of ["chat", "embed", "constructor", "tostring", "p1", "p2"]) {
      const policy = samplePolicy(name, { target: { namespace: "llm", selector: { matchLabels: { app: name } } } });
      assert.equal((await call(app.url, "POST", "/v1/policies", { body: policy, token: adminToken })).status, 201);
    }
    doc = (await call(app.url, "GET", "/openapi.json")).body as OpenApiPaths;
    documented = documentedStatuses(doc);
  });
  after(() => app.close());

  /** The store on disk loads, validates every record and holds what the live store serves. */
  async function storeReloads(): Promise<void> {
    await app.store.whenIdle();
    const reopened = new FilePolicyStore({ path: app.storePath });
    try {
      assert.deepEqual(reopened.quarantined(), []);
      assert.deepEqual(reopened.list(), app.store.list());
    } finally {
      await reopened.close();
    }
  }

  it(`answers ${runs} generated requests without a 5xx or an undocumented status; pulls keep answering; the store always reloads (seed ${seed})`, async () => {
    let count = 0;
    await fc.assert(
      fc.asyncProperty(fuzzRequest, async (r) => {
        const res = await send(app.url, r);
        const what = `${r.method} ${r.path} ${JSON.stringify(r.headers)} -> ${res.status} ${res.body.slice(0, 300)}`;
        assert.ok(res.status < 500, what);
        const key = statusKey(doc, r.method, r.path, res.status);
        if (key === undefined) assert.equal(res.status, 404, what);
        else assert.ok(documented.has(key), `undocumented: ${what}`);
        const pull = await call(app.url, "GET", "/v1/filters/llm.chat/config");
        assert.ok([200, 404].includes(pull.status), `pull after ${what}: ${pull.status} ${pull.text}`);
        if (++count % 25 === 0) await storeReloads();
      }),
      { numRuns: runs, seed, endOnFailure: true },
    );
    await storeReloads();
    assert.ok(app.store.size >= 0);
  });
});
