// The pseudonym key as the content module fetches it (emulated Envoy host, its proxy_http_call to a
// real HTTP server on 127.0.0.1 that answers as the control plane's content-key endpoint does, and a
// real OTLP receiver): fetched on ticks, never configured; a new version takes effect without a
// restart and spans name it; 304 keeps it; until a key is held, or when a fetch fails, typed
// placeholders, counted by why; the key never reaches a log, a stat name or a span.
import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { ManualClock, type FilterVm } from "../../host/index.js";
import { anyValue } from "../../support/otlp-any-value.js";
import { startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "../../support/otlp-receiver.js";
import { startContentKeyServer, type ContentKeyServer } from "../../support/content-key-server.js";
import { countingRandom, loadContentFilter } from "../support.js";

const KEY_V1 = Buffer.from("a1".repeat(32), "hex");
const KEY_V2 = Buffer.from("b2c3".repeat(20), "hex");
const ADDRESS = "ana.silva@example.org";

const pseudonym = (key: Buffer, normal: string): string =>
  createHmac("sha256", key).update(Buffer.concat([Buffer.from([0]), Buffer.from(normal, "utf8")])).digest("hex").slice(0, 16);

describe("the pseudonym key, fetched from the control plane (content module, real HTTP servers on 127.0.0.1)", () => {
  let receiver: OtlpReceiver;
  let keys: ContentKeyServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    keys = await startContentKeyServer();
  });
  after(async () => Promise.all([receiver.close(), keys.close()]));
  beforeEach(() => {
    keys.keys.clear();
    keys.keys.set("v1", KEY_V1);
    keys.keys.set("v2", KEY_V2);
    keys.current = "v1";
    keys.override = undefined;
    keys.token = undefined;
    keys.allowedNamespaces = undefined;
    keys.requests.length = 0;
    keys.problems.length = 0;
  });

  async function setup(pseudonyms: Record<string, unknown>, extra: { env?: Record<string, string>; policySource?: unknown } = {}): Promise<{ vm: FilterVm; clock: ManualClock }> {
    const clock = new ManualClock(1_700_000_000_000_000_000n);
    // A batch at every tick of the key's (1 s), so each call's span leaves at its tick.
    const config: Record<string, unknown> = { sampling: { defaultRate: 1 }, spans: { cluster: "otel", flushIntervalMs: 1000, content: { enabled: true, pseudonyms } } };
    if (extra.policySource !== undefined) config.policySource = extra.policySource;
    const vm = await loadContentFilter({ clock, random: countingRandom(), config, clusters: { otel: receiver.url, cp: keys.url }, env: extra.env });
    return { vm, clock };
  }

  /** One chat call whose prompt holds the address; its exported span. */
  async function call(vm: FilterVm): Promise<OtlpSpan> {
    receiver.spans.length = 0;
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"]], false);
    s.requestBody(JSON.stringify({ model: "m", messages: [{ role: "user", content: `write to ${ADDRESS}` }] }), true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] }), true);
    s.end();
    vm.tick();
    await vm.settle();
    assert.equal(receiver.spans.length, 1);
    return receiver.spans[0]!;
  }

  const prompt = (span: OtlpSpan): string => {
    const messages = anyValue(span.attributes.find((a) => a.key === "gen_ai.input.messages")!.value) as Array<{ parts: Array<{ content: string }> }>;
    return messages[0]!.parts[0]!.content;
  };
  const keyVersion = (span: OtlpSpan): unknown => span.attributes.find((a) => a.key === "tokentrace.content.key_version")?.value.stringValue;
  const fallbacks = (vm: FilterVm, reason: string): number | undefined => vm.stats.value("tokentrace_filter_errors_total", { error: reason });

  /** Nothing of either key, in hex or raw, in a log line, a stat name or a span. */
  function assertNoKeyMaterial(vm: FilterVm): void {
    const everything = [...vm.logs.map((l) => l.message), ...vm.stats.names(), JSON.stringify(receiver.spans)].join("\n");
    for (const key of [KEY_V1, KEY_V2]) {
      assert.ok(!everything.includes(key.toString("hex")), "the key in hex reached a log, a stat or a span");
      assert.ok(!everything.includes(key.toString("hex").slice(0, 16)), "part of the key reached a log, a stat or a span");
      assert.ok(!Buffer.from(everything, "utf8").includes(key), "the raw key reached a log, a stat or a span");
    }
  }

  it("placeholders until the first fetch, then pseudonyms keyed with the fetched key, stamped with its version", async () => {
    const { vm } = await setup({ keySource: { cluster: "cp", workload: "llm.chat" } });
    // Before any tick: no key yet. The first call's own tick fetches it (after its span was written).
    const first = await call(vm);
    assert.equal(prompt(first), "write to [EMAIL]");
    assert.equal(keyVersion(first), undefined);
    assert.equal(fallbacks(vm, "pseudonym_key_missing"), 1);
    assert.deepEqual(keys.requests.map((r) => [r.path, r.version, r.status]), [["/v1/filters/llm.chat/content-key", undefined, 200]]);
    const second = await call(vm);
    assert.equal(prompt(second), `write to [EMAIL:${pseudonym(KEY_V1, ADDRESS)}]`);
    assert.equal(keyVersion(second), "v1");
    assert.equal(vm.stats.value("tokentrace_content_key_updates_total"), 1);
    assert.equal(fallbacks(vm, "pseudonym_key_missing"), 1, "no fallback once the key is held");
    assert.ok(vm.logs.some((l) => l.message === "tokentrace: pseudonym key version v1 in force"));
    assert.deepEqual(keys.problems, []);
    assertNoKeyMaterial(vm);
  });

  it("rotates without a restart: a conditional fetch keeps the key (304), a new version replaces it within the refresh interval", async () => {
    const { vm, clock } = await setup({ keySource: { cluster: "cp", workload: "llm.chat" }, refreshIntervalMs: 5000 });
    vm.tick();
    await vm.settle();
    clock.advanceMs(5000);
    vm.tick(); // due: asks with ?version=v1, answered 304
    await vm.settle();
    assert.deepEqual(keys.requests.map((r) => [r.version, r.status]), [[undefined, 200], ["v1", 304]]);
    assert.equal(keyVersion(await call(vm)), "v1");
    keys.current = "v2";
    clock.advanceMs(4000);
    vm.tick(); // not due yet
    await vm.settle();
    assert.equal(keys.requests.length, 2, "no fetch before the refresh interval");
    clock.advanceMs(1000);
    vm.tick();
    await vm.settle();
    const span = await call(vm);
    assert.equal(prompt(span), `write to [EMAIL:${pseudonym(KEY_V2, ADDRESS)}]`);
    assert.equal(keyVersion(span), "v2");
    assert.equal(vm.stats.value("tokentrace_content_key_updates_total"), 2);
    assert.deepEqual(keys.problems, []);
    assertNoKeyMaterial(vm);
  });

  const failures: Array<[string, (k: ContentKeyServer) => void, string, string]> = [
    ["the key is removed (404)", (k) => (k.current = ""), "pseudonym_key_missing", "(404)"],
    ["the caller may no longer read it (403)", (k) => (k.allowedNamespaces = new Set(["other"])), "pseudonym_key_refused", "(403)"],
    ["the control plane fails (503)", (k) => (k.override = { status: 503 }), "pseudonym_key_unreachable", "answered 503"],
    ["the answer is no key (a short key)", (k) => (k.override = { body: JSON.stringify({ version: "v3", key: "ab".repeat(16) }) }), "pseudonym_key_unreachable", "32 to 512 bytes"],
    ["the answer has more than a version and a key", (k) => (k.override = { body: JSON.stringify({ version: "v3", key: "ab".repeat(32), salt: "x" }) }), "pseudonym_key_unreachable", "is not {"],
    ["the answer is larger than 4096 bytes", (k) => (k.override = { body: JSON.stringify({ version: "v3", key: "ab".repeat(3000) }) }), "pseudonym_key_unreachable", "larger than 4096"],
  ];
  for (const [name, breakIt, reason, logged] of failures) {
    it(`a failed fetch drops the key: typed placeholders, counted (${reason}), when ${name}; it is tried again within a second`, async () => {
      const { vm, clock } = await setup({ keySource: { cluster: "cp", workload: "llm.chat" }, refreshIntervalMs: 60000 });
      vm.tick();
      await vm.settle();
      assert.equal(keyVersion(await call(vm)), "v1");
      breakIt(keys);
      if (keys.current !== "") keys.current = "v2"; // a version other than the one held, so the answer is not a 304
      clock.advanceMs(60000);
      vm.tick();
      await vm.settle();
      const span = await call(vm);
      assert.equal(prompt(span), "write to [EMAIL]", "never an unkeyed hash, never the old key");
      assert.equal(keyVersion(span), undefined);
      assert.equal(fallbacks(vm, reason), 1);
      assert.ok(vm.logs.some((l) => l.level === 3 && l.message.includes("pseudonym key unavailable") && l.message.includes(logged)), `logged: ${vm.logs.map((l) => l.message).join(" | ")}`);
      // Retried after 1 s (not the 60 s refresh), and recovered.
      keys.override = undefined;
      keys.allowedNamespaces = undefined;
      keys.current = "v2";
      const before = keys.requests.length;
      clock.advanceMs(1000);
      vm.tick();
      await vm.settle();
      assert.equal(keys.requests.length, before + 1);
      assert.equal(keyVersion(await call(vm)), "v2");
      assertNoKeyMaterial(vm);
    });
  }

  it("sends the namespace's bearer token from the VM environment (vmConfig.env) when told its name, and never logs it", async () => {
    const token = "ns-token-0123456789abcdef";
    keys.token = token;
    const { vm } = await setup({ keySource: { cluster: "cp", workload: "llm.chat", tokenEnv: "TOKENTRACE_KEY_TOKEN" } }, { env: { TOKENTRACE_KEY_TOKEN: token, OTHER: "x" } });
    vm.tick();
    await vm.settle();
    assert.deepEqual(keys.requests.map((r) => [r.authorization, r.status]), [[`Bearer ${token}`, 200]]);
    assert.equal(keyVersion(await call(vm)), "v1");
    assert.ok(vm.logs.every((l) => !l.message.includes(token)), "the token is in no log line");
  });

  it("without a key source, fetches through the policy source's cluster and workload (pull mode)", async () => {
    const { vm } = await setup({}, { policySource: { cluster: "cp", workload: "team-a.vllm", intervalMs: 3600000 } });
    // The policy poll goes to the same server and is no key path: drop it from what is checked.
    vm.tick();
    await vm.settle();
    const keyRequests = keys.requests.filter((r) => r.path.endsWith("/content-key"));
    assert.deepEqual(keyRequests.map((r) => [r.path, r.status]), [["/v1/filters/team-a.vllm/content-key", 200]]);
  });

  it("with pseudonyms off, no key is fetched and a key held before is dropped", async () => {
    const { vm } = await setup({ keySource: { cluster: "cp", workload: "llm.chat" } });
    vm.tick();
    await vm.settle();
    assert.equal(keys.requests.length, 1);
    assert.equal(vm.configure(JSON.stringify({ sampling: { defaultRate: 1 }, spans: { cluster: "otel", flushIntervalMs: 1000, content: { enabled: true } } })), true);
    vm.tick();
    await vm.settle();
    assert.equal(keys.requests.length, 1);
    const span = await call(vm);
    assert.equal(prompt(span), "write to [EMAIL]");
    assert.equal(fallbacks(vm, "pseudonym_key_missing"), undefined, "placeholders by choice are no fallback");
  });
});
