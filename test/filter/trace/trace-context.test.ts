// W3C Trace Context Level 2 through the real filter.wasm (emulated Envoy host), one rule per test,
// from the spec text (w3c/trace-context spec/20-http_request_header_format.md and
// 30-processing-model.md, commit acab820be9db7b3433668baa5cdd43f57f4c4be0) and the cases of its
// test suite (test/test.py at the same commit), written here in our own words.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { FilterStream } from "../../host/index.js";
import { attr, startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";
import { baseRequest, exchange, loadFilter, scriptedRandom } from "../support.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const VALID = `00-${TRACE}-${PARENT}-01`;
const UNSAMPLED = `00-${TRACE}-${PARENT}-00`;

// Fixed randomness for traces the filter starts: trace-id bytes 0x10.., span-id bytes 0x30..,
// token-trace-id bytes 0x50..; a new parent-id for a continued trace: bytes 0x70...
const traceBytes = Uint8Array.from({ length: 24 }, (_, i) => (i < 16 ? 0x10 + i : 0x30 + i - 16));
const uuidBytes = Uint8Array.from({ length: 16 }, (_, i) => 0x50 + i);
const ownSpanBytes = Uint8Array.from({ length: 8 }, (_, i) => 0x70 + i);
const NEW_TRACE_ID = "101112131415161718191a1b1c1d1e1f";
const NEW_SPAN_ID = "3031323334353637";
const OWN_SPAN_ID = "7071727374757677";

const errors = (vm: Awaited<ReturnType<typeof loadFilter>>, error: string): number => vm.stats.value("tokentrace_filter_errors_total", { error }) ?? 0;
/** What left upstream: every value, so a header sent twice is seen. */
const upstream = (s: FilterStream, name: string): string[] => s.request.getAll(name);

describe("traceparent through filter.wasm (emulated Envoy host)", () => {
  const kept: Array<[string, string, string]> = [
    ["a sampled version-00 header is forwarded unchanged", VALID, VALID],
    ["an unsampled one keeps its flags", UNSAMPLED, UNSAMPLED],
    ["the random-trace-id flag (0x02) goes on unchanged", `00-${TRACE}-${PARENT}-02`, `00-${TRACE}-${PARENT}-02`],
    ["surrounding spaces and tabs are tolerated", ` \t${VALID} `, VALID],
    ["a later version is re-read with the 00 layout and re-emitted as 00", `cc-${TRACE}-${PARENT}-01`, VALID],
    ["a later version may append fields after a dash", `01-${TRACE}-${PARENT}-03-what-the-future-holds`, `00-${TRACE}-${PARENT}-03`],
  ];
  for (const [name, incoming, outgoing] of kept) {
    it(`keeps the trace: ${name}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", incoming]]), route: "chat", status: 200 });
      assert.deepEqual(upstream(s, "traceparent"), [outgoing]);
      assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 0);
      assert.equal(errors(vm, "invalid_traceparent"), 0);
    });
  }

  const unknownFlags: Array<[string, string]> = [
    ["ff", "03"],
    ["04", "00"],
    ["fd", "01"],
  ];
  for (const [incoming, outgoing] of unknownFlags) {
    it(`sets unknown trace-flags to zero: ${incoming} leaves as ${outgoing}, parent-id and tracestate unchanged`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", `00-${TRACE}-${PARENT}-${incoming}`], ["tracestate", "congo=t61rcWkgMzE"]]), status: 200 });
      assert.deepEqual(upstream(s, "traceparent"), [`00-${TRACE}-${PARENT}-${outgoing}`]);
      assert.deepEqual(upstream(s, "tracestate"), ["congo=t61rcWkgMzE"]);
    });
  }

  const invalid: Array<[string, string]> = [
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ["an all-zero trace-id", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["an all-zero parent-id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${TRACE}-${PARENT}-01`],
    ["version 00 with trailing data", `${VALID}-extra`],
    ["a later version with trailing data not after a dash", `01-${TRACE}-${PARENT}-01x`],
    ["a short trace-id", `00-${TRACE.slice(1)}-${PARENT}-01`],
    ["a long parent-id", `00-${TRACE}-${PARENT}0-01`],
    ["a non-hex version", `0g-${TRACE}-${PARENT}-01`],
    ["wrong separators", `00_${TRACE}_${PARENT}_01`],
    ["a one-digit flags field", `00-${TRACE}-${PARENT}-1`],
    ["an empty value", ""],
    ["two values joined by a comma", `${VALID},${VALID}`],
  ];
  for (const [name, incoming] of invalid) {
    it(`starts a new trace on an invalid traceparent: ${name}`, async () => {
      const vm = await loadFilter({ random: scriptedRandom([traceBytes, uuidBytes]), config: { sampling: { defaultRate: 1 } } });
      const s = exchange(vm, { headers: baseRequest([["traceparent", incoming], ["tracestate", "vendor=abc"]]), route: "chat", status: 200 });
      assert.deepEqual(upstream(s, "traceparent"), [`00-${NEW_TRACE_ID}-${NEW_SPAN_ID}-03`]);
      assert.deepEqual(upstream(s, "tracestate"), ["ot=th:0"], "the incoming tracestate belongs to no valid trace and is dropped");
      assert.equal(errors(vm, "invalid_traceparent"), 1);
      assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 1);
    });
  }

  it("two traceparent field lines start a new trace (each valid, even equal), and exactly one leaves", async () => {
    for (const second of [`00-${TRACE.slice(0, 31)}2-${PARENT}-01`, VALID]) {
      const vm = await loadFilter({ random: scriptedRandom([traceBytes, uuidBytes]), config: { sampling: { defaultRate: 0 } } });
      const s = exchange(vm, { headers: baseRequest([["traceparent", VALID], ["traceparent", second], ["tracestate", "congo=1"]]), route: "chat", status: 200 });
      assert.deepEqual(upstream(s, "traceparent"), [`00-${NEW_TRACE_ID}-${NEW_SPAN_ID}-02`]);
      assert.deepEqual(upstream(s, "tracestate"), [], "a tracestate is not parsed when traceparent failed");
      assert.equal(errors(vm, "invalid_traceparent"), 1);
      assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 1);
    }
  });

  it("starts a new trace when there is none, with flag 0x02 and an unsampled bit at rate 0", async () => {
    const vm = await loadFilter({ random: scriptedRandom([traceBytes, uuidBytes]), config: { sampling: { defaultRate: 0 } } });
    const s = exchange(vm, { headers: baseRequest([["tracestate", "foo=1"]]), route: "chat", status: 200 });
    assert.deepEqual(upstream(s, "traceparent"), [`00-${NEW_TRACE_ID}-${NEW_SPAN_ID}-02`]);
    assert.deepEqual(upstream(s, "tracestate"), [], "a tracestate without a traceparent is discarded");
    assert.equal(vm.stats.value("tokentrace_traces_started_total", { route: "chat" }), 1);
    assert.equal(vm.stats.value("tokentrace_traces_sampled_total", { route: "chat" }), 0);
    assert.equal(errors(vm, "invalid_traceparent"), 0);
  });

  it("never emits an all-zero id even when the random source returns zeros", async () => {
    const vm = await loadFilter({ random: scriptedRandom([new Uint8Array(24), uuidBytes]), config: { sampling: { defaultRate: 0 } } });
    const s = exchange(vm, { headers: baseRequest(), status: 200 });
    assert.equal(s.request.get("traceparent"), `00-${"0".repeat(31)}1-${"0".repeat(15)}1-02`);
  });

  const force = { sampling: { defaultRate: 0, force: [{ header: "x-debug-trace" }] } };
  it("a force rule that sets the sampled flag sends a new parent-id, keeping trace-id and the random flag", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes, ownSpanBytes]), config: force });
    const s = exchange(vm, { headers: baseRequest([["traceparent", `00-${TRACE}-${PARENT}-02`], ["x-debug-trace", "1"]]), route: "chat", status: 200 });
    assert.deepEqual(upstream(s, "traceparent"), [`00-${TRACE}-${OWN_SPAN_ID}-03`]);
    assert.equal(vm.stats.value("tokentrace_traces_sampled_total", { route: "chat" }), 1);
  });

  it("a force rule on a trace that is sampled already changes nothing", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes, ownSpanBytes]), config: force });
    const s = exchange(vm, { headers: baseRequest([["traceparent", VALID], ["x-debug-trace", "1"]]), status: 200 });
    assert.deepEqual(upstream(s, "traceparent"), [VALID]);
  });
});

describe("the proxy's own span when it sets the sampled flag (emulated Envoy host, real OTLP receiver)", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());

  it("exports a span whose id is the new parent-id and whose parent is the incoming one", async () => {
    const vm = await loadFilter({
      random: scriptedRandom([uuidBytes, ownSpanBytes]),
      config: { sampling: { defaultRate: 0, force: [{ header: "x-debug-trace" }] }, spans: { cluster: "otel" } },
      clusters: { otel: receiver.url },
    });
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders(baseRequest([["traceparent", UNSAMPLED], ["x-debug-trace", "1"]]), false);
    s.requestBody(JSON.stringify({ model: "m", messages: [] }), true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ model: "m", choices: [{ finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1 } }), true);
    s.end();
    vm.tick();
    await vm.settle();
    assert.deepEqual(upstream(s, "traceparent"), [`00-${TRACE}-${OWN_SPAN_ID}-01`]);
    assert.equal(receiver.spans.length, 1);
    const span = receiver.spans[0]!;
    assert.equal(span.traceId, TRACE);
    assert.equal(span.spanId, OWN_SPAN_ID);
    assert.equal(span.parentSpanId, PARENT);
    assert.equal(attr(span, "gen_ai.operation.name"), "chat");
  });
});

describe("tracestate through filter.wasm (emulated Envoy host)", () => {
  /** One request with a valid unsampled traceparent (left unchanged) and these tracestate field lines. */
  const withLines = async (lines: string[], traceparent = UNSAMPLED): Promise<{ s: FilterStream; invalid: number }> => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
    const s = exchange(vm, { headers: baseRequest([["traceparent", traceparent], ...lines.map((l): [string, string] => ["tracestate", l])]), status: 200 });
    assert.deepEqual(upstream(s, "traceparent"), [traceparent]);
    return { s, invalid: errors(vm, "invalid_tracestate") };
  };

  const validStates = [
    "congo=t61rcWkgMzE",
    "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    "a=1 , b=2",
    "foo=1 \t , \t bar=2, \t baz=3",
    "k=v,,k2=v2",
    "",
    Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(","),
    `k=${"x".repeat(256)}`,
    `k= leading spaces are part of the value`,
  ];
  for (const state of validStates) {
    it(`keeps a valid single line unchanged: ${JSON.stringify(state.slice(0, 40))}`, async () => {
      const { s, invalid } = await withLines([state]);
      assert.deepEqual(upstream(s, "tracestate"), [state]);
      assert.equal(invalid, 0);
    });
  }

  const level2Keys = [
    "foo@=1",
    "foo@@bar=1",
    "foo@bar@baz=1",
    "1special=1",
    `t@${"v".repeat(15)}=1`,
    `${"t".repeat(242)}@v=1`,
    "abcdefghijklmnopqrstuvwxyz0123456789_-*/@a-z0-9_-*/=x",
  ];
  for (const state of level2Keys) {
    it(`accepts the Level 2 key grammar (( lcalpha / DIGIT ) 0*255 keychar, "@" a keychar): ${state.slice(0, 40)}`, async () => {
      const { s, invalid } = await withLines([state, "bar=2"]);
      assert.deepEqual(upstream(s, "tracestate"), [`${state},bar=2`]);
      assert.equal(invalid, 0);
    });
  }

  const invalidStates: Array<[string, string[]]> = [
    ["a key starting with @", ["@foo=1,bar=2"]],
    ["an upper-case key", ["FOO=1"]],
    ["a space inside the key", ["foo =1"]],
    ["a dot in the key", ["foo.bar=1"]],
    ["an empty value", ["foo=,bar=3"]],
    ["an = in the value", ["foo=bar=baz"]],
    ["a member without =", ["k"]],
    ["a control character in the value", ["k=a\u0001b"]],
    ["a non-ASCII value", ["k=caf\u00e9"]],
    ["a value of 257 characters", [`k=${"x".repeat(257)}`]],
    ["a 257-character key on the second line", ["foo=1", `${"z".repeat(257)}=1`]],
    ["a 33rd member on a second line", [Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(","), "k32=v"]],
  ];
  for (const [name, lines] of invalidStates) {
    it(`drops the whole tracestate and counts it, keeping the traceparent: ${name}`, async () => {
      const { s, invalid } = await withLines(lines);
      assert.deepEqual(upstream(s, "tracestate"), []);
      assert.equal(invalid, 1);
    });
  }

  it("combines several lines into one, in order, with the limits on the combination (32 members over 4 lines, a 256-character key)", async () => {
    const lines = [
      Array.from({ length: 10 }, (_, i) => `bar${i + 1}=${i + 1}`).join(","),
      Array.from({ length: 10 }, (_, i) => `bar${i + 11}=${i + 11}`).join(", "),
      Array.from({ length: 11 }, (_, i) => `bar${i + 21}=${i + 21}`).join(","),
      `${"z".repeat(256)}=1`,
    ];
    const { s, invalid } = await withLines(lines);
    const expected = [...Array.from({ length: 31 }, (_, i) => `bar${i + 1}=${i + 1}`), `${"z".repeat(256)}=1`].join(",");
    assert.deepEqual(upstream(s, "tracestate"), [expected]);
    assert.equal(invalid, 0);
  });

  it("empty lines add nothing to the combination", async () => {
    const { s } = await withLines(["", "foo=1", " "]);
    assert.deepEqual(upstream(s, "tracestate"), ["foo=1"]);
  });

  it("a repeated key is passed on as it came while traceparent leaves unchanged (W3C: no tracestate change without one)", async () => {
    assert.deepEqual(upstream((await withLines(["foo=1,foo=2"])).s, "tracestate"), ["foo=1,foo=2"]);
    const { s, invalid } = await withLines(["foo=1", "foo=2"]);
    assert.deepEqual(upstream(s, "tracestate"), ["foo=1,foo=2"]);
    assert.equal(invalid, 0);
  });

  it("a proxy that changes traceparent drops the later entries of a repeated key, keeping the left-most", async () => {
    const vm = await loadFilter({ random: scriptedRandom([uuidBytes, ownSpanBytes]), config: { sampling: { force: [{ header: "x-debug-trace" }] } } });
    const s = exchange(vm, {
      headers: baseRequest([["traceparent", UNSAMPLED], ["x-debug-trace", "1"], ["tracestate", "foo=1,rojo=2"], ["tracestate", "foo=3,congo=4"]]),
      status: 200,
    });
    assert.deepEqual(upstream(s, "traceparent"), [`00-${TRACE}-${OWN_SPAN_ID}-01`]);
    assert.deepEqual(upstream(s, "tracestate"), ["foo=1,rojo=2,congo=4"]);
  });
});

describe("x-token-trace-id sent more than once (emulated Envoy host)", () => {
  it("leaves exactly one value upstream and downstream: a new id, counted as malformed", async () => {
    for (const [first, second] of [["req-1", "req-2"], ["req-1", "req-1"]] as const) {
      const vm = await loadFilter({ random: scriptedRandom([uuidBytes]) });
      const s = exchange(vm, { headers: baseRequest([["traceparent", VALID], ["x-token-trace-id", first!], ["x-token-trace-id", second!]]), status: 200 });
      const ids = upstream(s, "x-token-trace-id");
      assert.equal(ids.length, 1);
      assert.match(ids[0]!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.deepEqual(s.response.getAll("x-token-trace-id"), ids);
      assert.equal(errors(vm, "invalid_token_trace_id"), 1);
    }
  });
});

describe("ids the filter writes (emulated Envoy host)", () => {
  it("writes every byte value of new trace, span and token ids as lower-case hex", async () => {
    // Sixteen requests whose trace-ids together hold all 256 byte values; span and token ids get others.
    const blocks: Uint8Array[] = [];
    for (let k = 0; k < 16; k++) {
      blocks.push(Uint8Array.from({ length: 24 }, (_, i) => (i < 16 ? k * 16 + i : 255 - k * 8 - (i - 16))));
      blocks.push(Uint8Array.from({ length: 16 }, (_, i) => (k * 37 + i * 11) & 0xff));
    }
    const vm = await loadFilter({ random: scriptedRandom(blocks), config: { sampling: { defaultRate: 1 } } });
    for (let k = 0; k < 16; k++) {
      const s = exchange(vm, { headers: baseRequest(), route: "chat", status: 200 });
      const ids = blocks[2 * k]!;
      const token = Buffer.from(blocks[2 * k + 1]!);
      token[6] = (token[6]! & 0x0f) | 0x40;
      token[8] = (token[8]! & 0x3f) | 0x80;
      const hex = token.toString("hex");
      assert.equal(s.request.get("traceparent"), `00-${Buffer.from(ids.subarray(0, 16)).toString("hex")}-${Buffer.from(ids.subarray(16)).toString("hex")}-03`);
      assert.equal(s.request.get("x-token-trace-id"), `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
    }
  });
});
