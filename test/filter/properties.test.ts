// Property-based tests of the real filter.wasm (emulated Envoy host): whatever arrives, the VM
// never traps, every callback continues, headers the filter does not own pass untouched, and the
// error counters move exactly when the input is malformed.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { countingRandom, exchange, loadFilter } from "./support.js";

/** Reference reading of W3C Trace Context level 2, written from the spec independently of the filter. */
function traceparentIsValid(raw: string): boolean {
  const v = raw.replace(/^[ \t]+|[ \t]+$/g, "");
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(.*)$/.exec(v);
  if (!m) return false;
  const [, version, traceId, parentId, , rest] = m;
  if (version === "ff" || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return false;
  if (version === "00") return rest === "";
  return rest === "" || rest!.startsWith("-");
}

const hex = (n: number): fc.Arbitrary<string> => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const validTraceparent = fc.tuple(fc.constantFrom("00", "01", "7f", "fe"), hex(32), hex(16), hex(2), fc.constantFrom("", "-x", "-"))
  .map(([v, t, p, f, tail]) => `${v}-${t}-${p}-${f}${v === "00" ? "" : tail}`);
/** Valid headers with one character changed, removed or duplicated, plus arbitrary text. */
const mutatedTraceparent = fc.oneof(
  fc.tuple(validTraceparent, fc.nat(60), fc.constantFrom("", "0", "F", "-", " ", "zz", "\u00e9")).map(([s, i, c]) => s.slice(0, i % (s.length + 1)) + c + s.slice((i % (s.length + 1)) + 1)),
  fc.string({ maxLength: 70 }),
  fc.constantFrom("00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
);
const headerValue = fc.string({ unit: "grapheme", maxLength: 40 }).map((s) => s.replace(/[\0\r\n]/g, ""));
const otherHeader = fc.tuple(fc.stringMatching(/^x-[a-z0-9-]{1,12}$/), headerValue);

describe("filter properties (emulated Envoy host)", () => {
  it("never traps, always continues, leaves other headers untouched, and counts invalid traceparents exactly", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    let expectedInvalid = 0;
    fc.assert(
      fc.property(
        fc.option(fc.oneof(validTraceparent, mutatedTraceparent), { nil: undefined }),
        fc.option(fc.string({ maxLength: 60 }), { nil: undefined }),
        fc.option(headerValue, { nil: undefined }),
        fc.array(otherHeader, { maxLength: 12 }),
        fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 999 }), { nil: undefined }),
        (traceparent, tracestate, tokenId, others, route, status) => {
          const headers: Array<[string, string]> = [[":method", "GET"], [":path", "/v1/models"], [":authority", "a.svc"], ...others];
          if (traceparent !== undefined) headers.push(["traceparent", traceparent]);
          if (tracestate !== undefined) headers.push(["tracestate", tracestate]);
          if (tokenId !== undefined) headers.push(["x-token-trace-id", tokenId]);
          const s = exchange(vm, { headers, route, status });
          if (traceparent !== undefined && !traceparentIsValid(traceparent)) expectedInvalid++;
          assert.equal(vm.failed, false);
          for (const [name, value] of others) assert.ok(s.request.getAll(name).includes(value), `${name} passes untouched`);
          const out = s.request.get("traceparent");
          assert.ok(out !== undefined && traceparentIsValid(out) && out.startsWith("00-") && out.length === 55, `a valid version-00 traceparent always goes upstream: ${out}`);
          assert.equal(vm.stats.value("tokentrace_filter_errors_total", { error: "invalid_traceparent" }), expectedInvalid);
          assert.ok(s.response.get("x-token-trace-id") !== undefined || status === undefined);
        },
      ),
      { numRuns: 1500, seed: 7 },
    );
  });

  it("never traps on arbitrary configuration text and keeps serving traffic", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), fc.json({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ sampling: v }))), (text) => {
        vm.configure(text);
        assert.equal(vm.failed, false);
        const s = exchange(vm, { headers: [[":method", "GET"], [":path", "/"], [":authority", "a"]], status: 200 });
        assert.ok(s.request.get("traceparent"));
      }),
      { numRuns: 800, seed: 11 },
    );
  });

  it("survives deeply nested configuration JSON without exhausting its stack", async () => {
    const vm = await loadFilter({ random: countingRandom() });
    assert.equal(vm.configure("[".repeat(100_000)), false);
    assert.equal(vm.configure(`{"sampling":${"[".repeat(5000)}${"]".repeat(5000)}}`), false);
    assert.equal(vm.failed, false);
  });
});
