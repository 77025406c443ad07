// pluginConfig handling of the real filter.wasm (emulated Envoy host): strict parsing, every
// default, rejected updates keeping the last good configuration, and agreement with the shared
// JSON Schema (filter/config.schema.json) that the control plane validates with.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Ajv2020 } from "ajv/dist/2020.js";
import { baseRequest, exchange, loadFilter, scriptedRandom } from "../support.js";

const schema = JSON.parse(readFileSync(new URL("../../../filter/config.schema.json", import.meta.url), "utf8")) as object;
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

const allOnes = new Uint8Array(24).fill(0xff); // maximum randomness: sampled at any rate > 0
const uuid = new Uint8Array(16).fill(1);
const sampledBit = (tp: string | undefined): number => parseInt(tp!.slice(53, 55), 16) & 1;

describe("plugin configuration (emulated Envoy host)", () => {
  const rejected: Array<[string, string, string]> = [
    ["an unknown top-level key", JSON.stringify({ sampling: {}, tracing: {} }), "tracing: unknown key"],
    ["an unknown nested key", JSON.stringify({ sampling: { rate: 0.5 } }), "sampling.rate: unknown key"],
    ["a rate above 1", JSON.stringify({ sampling: { defaultRate: 1.5 } }), "sampling.defaultRate: must be a number between 0 and 1"],
    ["a rate given as a string", JSON.stringify({ sampling: { defaultRate: "0.5" } }), "sampling.defaultRate: must be a number"],
    ["a route rule without a rate", JSON.stringify({ sampling: { routes: [{ routeName: "chat" }] } }), "sampling.routes[0].rate: is required"],
    ["a route rule without a matcher", JSON.stringify({ sampling: { routes: [{ rate: 1 }] } }), "sampling.routes[0]: needs at least one of routeName, pathPrefix, host"],
    ["a path prefix not starting with /", JSON.stringify({ sampling: { routes: [{ pathPrefix: "v1", rate: 1 }] } }), "sampling.routes[0].pathPrefix: must start with /"],
    ["a force header with upper case", JSON.stringify({ sampling: { force: [{ header: "X-Debug" }] } }), "sampling.force[0].header: must be a lower-case HTTP header name"],
    ["a non-integer maxRoutes", JSON.stringify({ stats: { maxRoutes: 2.5 } }), "stats.maxRoutes: must be an integer between 1 and 1024"],
    ["maxRoutes 0", JSON.stringify({ stats: { maxRoutes: 0 } }), "stats.maxRoutes: must be an integer between 1 and 1024"],
    ["an empty token trace id header", JSON.stringify({ headers: { tokenTraceId: "" } }), "headers.tokenTraceId: length must be between 1 and 128"],
    ["a JSON array", "[]", "(root): must be an object"],
    ["broken JSON", "{\"sampling\": {", "invalid JSON at offset"],
    ["a repeated key whose last value is bad (the last one counts)", "{\"sampling\":{\"defaultRate\":0.5,\"defaultRate\":2}}", "sampling.defaultRate: must be a number between 0 and 1"],
    ["trailing garbage", "{} x", "unexpected text after the JSON value"],
    ["an unknown protocol", JSON.stringify({ llm: { protocols: { vllm: { pathSuffixes: ["/x"] } } } }), "llm.protocols.vllm: unknown key"],
    ["a protocol path without its slash", JSON.stringify({ llm: { protocols: { tgi: { pathSuffixes: ["generate"] } } } }), "llm.protocols.tgi.pathSuffixes[0]: must start with /"],
    ["an empty prefix list", JSON.stringify({ llm: { protocols: { kserve: { pathPrefixes: [] } } } }), "llm.protocols.kserve.pathPrefixes: must have between 1 and 16 items"],
    ["content capture without spans.cluster", JSON.stringify({ spans: { content: { enabled: true } } }), "spans.cluster: is required"],
    ["a content size under 256 bytes", JSON.stringify({ spans: { cluster: "otel", content: { maxBytes: 100 } } }), "spans.content.maxBytes: must be an integer between 256 and 65536"],
    ["a content route without enabled", JSON.stringify({ spans: { cluster: "otel", content: { routes: [{ routeName: "chat" }] } } }), "spans.content.routes[0].enabled: is required"],
    [
      "a look-ahead over Envoy's buffer limit with requestUsageInStream (Envoy would answer 413)",
      JSON.stringify({ llm: { maxRequestBodyBytes: 1048577, requestUsageInStream: true } }),
      "llm.maxRequestBodyBytes: must be at most 1048576 with llm.requestUsageInStream (Envoy's buffer limit)",
    ],
  ];
  for (const [name, text, reason] of rejected) {
    it(`rejects ${name}, names the reason, and keeps the last good configuration`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([allOnes, uuid]), config: { sampling: { defaultRate: 0.5 } } });
      assert.equal(vm.configureAccepted, true);
      assert.equal(vm.configure(text), false);
      const message = vm.logs.map((l) => l.message).find((m) => m.includes("configuration rejected"));
      assert.ok(message?.includes(reason), `log names the reason: ${message}`);
      assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "config_rejected" }), 1);
      // 0.5 is still in force: maximum randomness is sampled, and the rejected text changed nothing.
      assert.equal(sampledBit(exchange(vm, { headers: baseRequest(), status: 200 }).request.get("traceparent")), 1);
    });
  }

  const reserved = [
    "host", "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-type", "content-length", "content-encoding",
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "traceparent", "tracestate", "baggage", "b3",
    "x-b3-traceid", "x-request-id", "x-envoy-retry-on",
  ];
  for (const name of reserved) {
    it(`refuses ${name} as the token trace id header, naming the key, as the schema does`, async () => {
      const config = { headers: { tokenTraceId: name } };
      const vm = await loadFilter({ random: scriptedRandom([]) });
      assert.equal(vm.configure(JSON.stringify(config)), false);
      const message = vm.logs.map((l) => l.message).find((m) => m.includes("configuration rejected"));
      assert.ok(message?.includes(`headers.tokenTraceId: "${name}" is reserved`), `log names the key: ${message}`);
      assert.equal(validate(config), false, `the schema refuses ${name} too`);
    });
  }

  it("refuses a pseudonym salt, naming the field and where the key lives now, never showing it, as the schema does", async () => {
    const salt = "s3cr3t-salt-never-logged-0123456789abcdef";
    const config = { spans: { cluster: "otel", content: { enabled: true, pseudonyms: { salt } } } };
    const vm = await loadFilter({ random: scriptedRandom([]) });
    assert.equal(vm.configure(JSON.stringify(config)), false);
    assert.equal(validate(config), false);
    const message = vm.logs.map((l) => l.message).find((m) => m.includes("configuration rejected"));
    assert.ok(message?.includes("spans.content.pseudonyms.salt: is no longer accepted (the key comes from the control plane)"), `log names the key and its home: ${message}`);
    assert.ok(vm.logs.every((l) => !l.message.includes(salt)), "no log line holds the salt");
    assert.ok(!JSON.stringify(validate.errors).includes(salt), "no schema error holds the salt");
    // Pseudonyms name where the key comes from, never a key.
    const good = { spans: { cluster: "otel", content: { enabled: true, pseudonyms: { keySource: { cluster: "control-plane", workload: "llm.chat", tokenEnv: "KEY_TOKEN" }, refreshIntervalMs: 5000 } } } };
    assert.equal(vm.configure(JSON.stringify(good)), true);
    assert.equal(validate(good), true);
  });

  it("refuses a key source without a workload, or a token variable that is no environment name, naming the field as the schema does", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]) });
    const cases: Array<[unknown, string]> = [
      [{ cluster: "cp" }, "spans.content.pseudonyms.keySource.workload: is required"],
      [{ cluster: "cp", workload: "llm.chat", tokenEnv: "A-TOKEN" }, "spans.content.pseudonyms.keySource.tokenEnv: must be an environment variable name"],
      [{ cluster: "cp", workload: "chat" }, "spans.content.pseudonyms.keySource.workload: must be <namespace>.<name>"],
    ];
    for (const [keySource, expected] of cases) {
      const config = { spans: { cluster: "otel", content: { pseudonyms: { keySource } } } };
      assert.equal(vm.configure(JSON.stringify(config)), false);
      assert.ok(vm.logs.at(-1)?.message.includes(expected), `${expected}: ${vm.logs.at(-1)?.message}`);
      assert.equal(validate(config), false);
    }
  });

  it("a pseudo-header is refused as the token trace id header by filter and schema", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]) });
    assert.equal(vm.configure(JSON.stringify({ headers: { tokenTraceId: ":path" } })), false);
    assert.equal(validate({ headers: { tokenTraceId: ":path" } }), false);
  });

  it("a repeated key counts once with its last value, in the filter as in the schema's JSON.parse", async () => {
    const text = "{\"sampling\":{\"defaultRate\":2,\"defaultRate\":1},\"headers\":{\"tokenTraceId\":\"host\",\"tokenTraceId\":\"x-lineage\"}}";
    assert.equal(validate(JSON.parse(text)), true);
    const vm = await loadFilter({ random: scriptedRandom([allOnes, uuid]), config: { sampling: { defaultRate: 0 } } });
    assert.equal(vm.configure(text), true);
    const s = exchange(vm, { headers: baseRequest(), status: 200 });
    assert.equal(sampledBit(s.request.get("traceparent")), 1, "defaultRate is the last value, 1");
    assert.equal(s.request.get("x-lineage"), "01010101-0101-4101-8101-010101010101");
  });

  it("a valid update replaces the configuration without a restart", async () => {
    const vm = await loadFilter({ random: scriptedRandom([allOnes, uuid, allOnes, uuid]), config: { sampling: { defaultRate: 1 } } });
    assert.equal(sampledBit(exchange(vm, { headers: baseRequest(), status: 200 }).request.get("traceparent")), 1);
    assert.equal(vm.configure(JSON.stringify({ sampling: { defaultRate: 0 } })), true);
    assert.equal(sampledBit(exchange(vm, { headers: baseRequest(), status: 200 }).request.get("traceparent")), 0);
  });

  it("an empty configuration means every default and is accepted", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]), pluginConfig: "" });
    assert.equal(vm.configureAccepted, true);
    assert.equal(vm.configure("  \n"), true);
    assert.equal(vm.configure("{}"), true);
  });

  it("a rejected first configuration leaves the defaults in force", async () => {
    const at = BigInt(Math.round(0.99 * 2 ** 56)); // sampled at the default 1%, not below
    const bytes = new Uint8Array(24).fill(0);
    for (let i = 0; i < 7; i++) bytes[15 - i] = Number((at >> BigInt(8 * i)) & 0xffn);
    const vm = await loadFilter({ random: scriptedRandom([bytes, uuid]), pluginConfig: "{\"bogus\":1}" });
    assert.equal(vm.configureAccepted, false);
    const s = exchange(vm, { headers: baseRequest(), status: 200 });
    assert.equal(sampledBit(s.request.get("traceparent")), 1);
    assert.equal(s.request.get("x-token-trace-id"), "01010101-0101-4101-8101-010101010101");
  });
});

// Arbitrary configuration-shaped JSON: mostly valid, sometimes slightly wrong (weights 6:1).
const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>): fc.Arbitrary<T | U> =>
  fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: bad, weight: 1 });
const headerName = mostly(
  fc.stringMatching(/^[a-z0-9-]{1,12}$/),
  fc.constantFrom("X-Up", "", "a b", "x_a", "x".repeat(129), ":path", "authorization", "content-type", "x-b3-sampled", "x-envoy-x", "traceparent"),
);
const rate = mostly(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(-0.1, 1.01, "0.5", null));
const text = (max: number): fc.Arbitrary<string> => fc.string({ minLength: 1, maxLength: max });
const routeRule = fc.record(
  {
    routeName: mostly(text(8), fc.constantFrom("", "x".repeat(257))),
    pathPrefix: mostly(fc.constantFrom("/", "/v1", "/v1/chat"), fc.constantFrom("v1", "")),
    host: mostly(fc.constantFrom("Api.Example", "a", "llm.svc"), fc.constant("")),
    rate,
    extra: fc.integer(),
  },
  { requiredKeys: [] },
).map((r) => {
  // Mostly well-formed rules: a rate and a matcher, no unknown key.
  const { extra, ...rest } = r as Record<string, unknown>;
  return extra !== undefined && (extra as number) % 7 === 0 ? r : rest;
});
const configArb = fc.record(
  {
    sampling: mostly(
      fc.record(
        {
          defaultRate: rate,
          routes: fc.array(routeRule, { maxLength: 3 }),
          force: fc.array(fc.record({ header: headerName, value: fc.string({ maxLength: 5 }) }, { requiredKeys: ["header"] }), { maxLength: 3 }),
        },
        { requiredKeys: [] },
      ),
      fc.constantFrom(null, [], 3),
    ),
    headers: fc.record({ tokenTraceId: headerName }, { requiredKeys: [] }),
    stats: fc.record(
      {
        maxRoutes: mostly(fc.integer({ min: 1, max: 1024 }), fc.constantFrom(0, 1025, 1.5, "8")),
        maxModels: mostly(fc.integer({ min: 1, max: 1024 }), fc.constant(0)),
        flushIntervalMs: mostly(fc.integer({ min: 0, max: 60000 }), fc.constantFrom(-1, 60001)),
      },
      { requiredKeys: [] },
    ),
    llm: fc.record(
      {
        enabled: mostly(fc.boolean(), fc.constant("yes")),
        pathSuffixes: mostly(fc.array(fc.constantFrom("/v1/chat/completions", "/generate"), { minLength: 1, maxLength: 3 }), fc.constantFrom([], ["v1"])),
        contentTypes: mostly(fc.array(fc.constantFrom("application/json", "Text/Event-Stream"), { minLength: 1, maxLength: 2 }), fc.constant([""])),
        // Around Envoy's 1 MiB buffer limit too: the bound with requestUsageInStream.
        maxRequestBodyBytes: mostly(fc.oneof({ arbitrary: fc.integer({ min: 0, max: 1048576 }), weight: 4 }, fc.constantFrom(1048576, 1048577), fc.integer({ min: 0, max: 16777216 })), fc.constantFrom(-1, 16777217, 1.5)),
        requestUsageInStream: fc.boolean(),
        protocols: mostly(
          fc.dictionary(
            mostly(fc.constantFrom("kserve", "openai", "responses", "anthropic", "tgi"), fc.constantFrom("vllm", "OpenAI")),
            fc.record(
              {
                pathSuffixes: mostly(fc.array(fc.constantFrom("/generate", "/v1/messages", "/x"), { maxLength: 3 }), fc.constantFrom(["generate"], [""], "/x")),
                pathPrefixes: mostly(fc.array(fc.constantFrom("/v2/models/", "/triton/"), { minLength: 1, maxLength: 2 }), fc.constant([])),
                extra: fc.constantFrom(undefined, undefined, undefined, 1),
              },
              { requiredKeys: [] },
            ),
            { maxKeys: 3 },
          ),
          fc.constantFrom(null, [], "openai"),
        ),
      },
      { requiredKeys: [] },
    ),
    spans: fc.record(
      {
        cluster: mostly(fc.constantFrom("otel", "outbound|4318||otel.svc"), fc.constant("")),
        path: mostly(fc.constantFrom("/v1/traces"), fc.constant("v1/traces")),
        batchSize: mostly(fc.integer({ min: 1, max: 1000 }), fc.constantFrom(0, 1001)),
        flushIntervalMs: mostly(fc.integer({ min: 100, max: 60000 }), fc.constant(99)),
        keep: fc.record(
          {
            errors: mostly(fc.boolean(), fc.constant("yes")),
            slowerThanMs: mostly(fc.integer({ min: 1, max: 3600000 }), fc.constantFrom(0, 3600001, 2.5)),
            routes: fc.array(fc.record({ routeName: mostly(text(8), fc.constant("")), slowerThanMs: mostly(fc.integer({ min: 1, max: 3600000 }), fc.constant(-1)) }, { requiredKeys: [] }), { maxLength: 2 }),
          },
          { requiredKeys: [] },
        ),
        content: mostly(
          fc.record(
            {
              enabled: mostly(fc.boolean(), fc.constant(1)),
              routes: fc.array(fc.record({ routeName: mostly(text(8), fc.constant("")), enabled: mostly(fc.boolean(), fc.constant("no")) }, { requiredKeys: [] }), { maxLength: 2 }),
              maxBytes: mostly(fc.integer({ min: 256, max: 65536 }), fc.constantFrom(255, 65537, 1024.5)),
              // Mostly valid as a whole (one wrong field at a time, 1 in 13), so valid configurations stay common.
              pseudonyms: fc.oneof(
                { weight: 12, arbitrary: fc.record(
                  {
                    refreshIntervalMs: fc.integer({ min: 1000, max: 3600000 }),
                    keySource: fc.record(
                      { cluster: fc.constantFrom("control-plane"), workload: fc.constantFrom("llm.chat", "ns-1.vllm.v2"), tokenEnv: fc.constantFrom("KEY_TOKEN", "_t1"), timeoutMs: fc.integer({ min: 100, max: 60000 }) },
                      { requiredKeys: ["cluster", "workload"] },
                    ),
                  },
                  { requiredKeys: [] },
                ) },
                { weight: 1, arbitrary: fc.oneof(
                  fc.record({ refreshIntervalMs: fc.constantFrom(999, 3600001) }),
                  fc.record({ keySource: fc.oneof(fc.constant({ cluster: "", workload: "llm.chat" }), fc.constant({ cluster: "cp", workload: "LLM.chat" }), fc.constant({ cluster: "cp", workload: "llm.chat", tokenEnv: "1X" }), fc.constant({ cluster: "cp" })) }),
                  fc.constant({ salt: "a-salt-of-at-least-thirty-two-characters" }),
                ) },
              ),
            },
            { requiredKeys: [] },
          ),
          fc.constantFrom(null, true),
        ),
      },
      { requiredKeys: ["cluster"] },
    ),
    policySource: fc.record(
      {
        cluster: fc.constantFrom("control-plane"),
        workload: mostly(fc.constantFrom("llm.chat", "ns-1.vllm.v2"), fc.constantFrom("chat", ".x", "LLM.chat")),
        labels: mostly(fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9.-]{0,8}$/), fc.stringMatching(/^[a-z0-9]{0,6}$/), { maxKeys: 3 }), fc.constant({ "a b": "c" })),
        intervalMs: mostly(fc.integer({ min: 1000, max: 3600000 }), fc.constant(999)),
      },
      { requiredKeys: ["cluster", "workload"] },
    ),
    unknown: fc.constantFrom(undefined, undefined, undefined, undefined, undefined, true),
  },
  { requiredKeys: [] },
).map((c) => JSON.parse(JSON.stringify(c)) as unknown);

describe("filter and control-plane schema agree (emulated Envoy host)", () => {
  it("agree on documents with repeated keys, which JSON.parse reads as the last value", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]) });
    fc.assert(
      fc.property(configArb, configArb, (a, b) => {
        // Both documents' members in one object: every key present in both is repeated.
        const inner = (c: unknown): string => { const t = JSON.stringify(c); return t.length > 2 ? t.slice(1, -1) : ""; };
        const text = `{${[inner(a), inner(b)].filter((x) => x.length > 0).join(",")}}`;
        const schemaOk = validate(JSON.parse(text));
        assert.equal(vm.configure(text), schemaOk, `${text}: schema says ${schemaOk}`);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it("filter.wasm accepts a configuration exactly when filter/config.schema.json does", async () => {
    const vm = await loadFilter({ random: scriptedRandom([]) });
    let accepted = 0;
    fc.assert(
      fc.property(configArb, (config) => {
        const schemaOk = validate(config);
        const filterOk = vm.configure(JSON.stringify(config));
        if (filterOk) accepted++;
        assert.equal(filterOk, schemaOk, `config ${JSON.stringify(config)}: schema says ${schemaOk} (${JSON.stringify(validate.errors)})`);
      }),
      { numRuns: 2500, seed: 4242 },
    );
    assert.ok(accepted > 60, `the generator produces valid configurations too (${accepted})`);
  });
});
