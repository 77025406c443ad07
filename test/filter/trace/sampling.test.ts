// Sampling policy through the real filter.wasm (emulated Envoy host): rates per route, path and
// host, force rules, and the consistent-probability decision of REFERENCE section 4.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { baseRequest, exchange, loadFilter, scriptedRandom } from "../support.js";

/** Spec formula, computed independently of the filter: keep when R >= (1 - p) * 2^56. */
function expectSampled(traceIdHex: string, rate: number): boolean {
  const threshold = rate >= 1 ? 0n : rate <= 0 ? 1n << 56n : BigInt(Math.round((1 - rate) * 2 ** 56));
  return BigInt(`0x${traceIdHex.slice(18)}`) >= threshold;
}

/** 24 random bytes whose trace-id randomness (low 7 bytes of the id) is `r`. */
function traceBytesWithRandomness(r: bigint): Uint8Array {
  const bytes = new Uint8Array(24).fill(0xab);
  for (let i = 0; i < 7; i++) bytes[15 - i] = Number((r >> BigInt(8 * i)) & 0xffn);
  return bytes;
}
const uuid = new Uint8Array(16).fill(7);
const hexId = (bytes: Uint8Array): string => Buffer.from(bytes.subarray(0, 16)).toString("hex");
const sampledBit = (traceparent: string | undefined): boolean => (parseInt(traceparent!.slice(53, 55), 16) & 1) === 1;

describe("sampling decision (emulated Envoy host)", () => {
  // Randomness values on both sides of the 0.25 threshold (0.75 * 2^56).
  const threshold25 = (3n << 54n);
  const cases: Array<[string, bigint, number, boolean, string | undefined]> = [
    ["randomness just below the threshold is not sampled", threshold25 - 1n, 0.25, false, undefined],
    ["randomness at the threshold is sampled", threshold25, 0.25, true, "ot=th:c"],
    ["maximum randomness is sampled at a tiny rate", (1n << 56n) - 1n, 1e-6, true, "ot=th:ffffef39085f48"],
    ["zero randomness is sampled only at rate 1", 0n, 1, true, "ot=th:0"],
    ["zero randomness is not sampled at rate 0.999", 0n, 0.999, false, undefined],
    ["nothing is sampled at rate 0", (1n << 56n) - 1n, 0, false, undefined],
  ];
  for (const [name, r, rate, want, tracestate] of cases) {
    it(name, async () => {
      const bytes = traceBytesWithRandomness(r);
      assert.equal(expectSampled(hexId(bytes), rate), want, "test vector agrees with the spec formula");
      const vm = await loadFilter({ random: scriptedRandom([bytes, uuid]), config: { sampling: { defaultRate: rate } } });
      const s = exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
      assert.equal(sampledBit(s.request.get("traceparent")), want);
      assert.equal(s.request.get("tracestate"), tracestate);
      assert.equal(vm.stats.value("tokentrace_traces_sampled_total", { route: "chat" }), want ? 1 : 0);
    });
  }

  it("two proxies given the same trace-id and rate agree on every one of 2000 random ids", async () => {
    const ids: Uint8Array[] = Array.from({ length: 2000 }, () => {
      const b = new Uint8Array(24);
      crypto.getRandomValues(b);
      return b;
    });
    const rate = 0.3;
    let sampled = 0;
    const vm = await loadFilter({ random: scriptedRandom(ids.flatMap((b) => [b, uuid])), config: { sampling: { defaultRate: rate } } });
    for (const b of ids) {
      const s = exchange(vm, { headers: baseRequest(), status: 200 });
      const got = sampledBit(s.request.get("traceparent"));
      assert.equal(got, expectSampled(hexId(b), rate));
      if (got) sampled++;
    }
    assert.ok(sampled > 480 && sampled < 720, `about 30% sampled, got ${sampled}/2000`);
  });

  it("defaults to a 1% rate when no rate is configured", async () => {
    // Randomness at 0.99 * 2^56 is sampled at 1%, just below it is not.
    const at = BigInt(Math.round(0.99 * 2 ** 56));
    const vm = await loadFilter({ random: scriptedRandom([traceBytesWithRandomness(at), uuid, traceBytesWithRandomness(at - 1n), uuid]) });
    assert.equal(sampledBit(exchange(vm, { headers: baseRequest(), status: 200 }).request.get("traceparent")), true);
    assert.equal(sampledBit(exchange(vm, { headers: baseRequest(), status: 200 }).request.get("traceparent")), false);
  });
});

describe("sampling policy rules (emulated Envoy host)", () => {
  // Randomness 0.5 * 2^56: sampled at any rate >= 0.5, not below.
  const half = 1n << 55n;
  const policy = {
    sampling: {
      defaultRate: 0,
      routes: [
        { routeName: "chat", pathPrefix: "/v1/chat", rate: 1 },
        { routeName: "chat", rate: 0.4 },
        { pathPrefix: "/v1/embeddings", rate: 0.6 },
        { host: "Batch.LLM.example", rate: 1 },
      ],
      force: [{ header: "x-debug-trace" }, { header: "x-tenant", value: "gold" }],
    },
  };
  const cases: Array<[string, string | undefined, string, string, Array<[string, string]>, boolean]> = [
    ["the first matching rule wins (route and path)", "chat", "/v1/chat/completions", "a.svc", [], true],
    ["a rule needs all its matchers: route only", "chat", "/v1/completions", "a.svc", [], false],
    ["path prefix rule on any route", "embed", "/v1/embeddings", "a.svc", [], true],
    ["host rule matches case-insensitively without the port", "x", "/", "batch.llm.EXAMPLE:8443", [], true],
    ["no rule matches: the default rate", "x", "/", "a.svc", [], false],
    ["force rule on header presence", "x", "/", "a.svc", [["x-debug-trace", "anything"]], true],
    ["force rule with a value matches that value", "x", "/", "a.svc", [["x-tenant", "gold"]], true],
    ["force rule with a value ignores other values", "x", "/", "a.svc", [["x-tenant", "silver"]], false],
  ];
  for (const [name, route, path, authority, extra, want] of cases) {
    it(name, async () => {
      const vm = await loadFilter({ random: scriptedRandom([traceBytesWithRandomness(half), uuid]), config: policy });
      const s = exchange(vm, { headers: baseRequest(extra, path, authority), route, status: 200 });
      assert.equal(sampledBit(s.request.get("traceparent")), want);
    });
  }

  it("a force rule marks an unsampled incoming trace sampled, keeping its trace-id, with a new parent-id (W3C)", async () => {
    const newParent = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const vm = await loadFilter({ random: scriptedRandom([uuid, newParent]), config: policy });
    const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02";
    const s = exchange(vm, { headers: baseRequest([["traceparent", incoming], ["x-debug-trace", "1"]]), status: 200 });
    assert.equal(s.request.get("traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-03");
  });

  it("the policy does not override the sampled flag of an incoming trace", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuid, uuid]), config: { sampling: { defaultRate: 1 } } });
    const unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    assert.equal(exchange(vm, { headers: baseRequest([["traceparent", unsampled]]), status: 200 }).request.get("traceparent"), unsampled);
    const vm0 = await loadFilter({ random: scriptedRandom([uuid]), config: { sampling: { defaultRate: 0 } } });
    const sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const s = exchange(vm0, { headers: baseRequest([["traceparent", sampled]]), route: "r", status: 200 });
    assert.equal(s.request.get("traceparent"), sampled);
    assert.equal(vm0.stats.value("tokentrace_traces_sampled_total", { route: "r" }), 1);
  });
});
