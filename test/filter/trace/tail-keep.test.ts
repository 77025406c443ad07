// Tail keep in the sidecar (spans.keep): an LLM request the head decision did not sample still
// exports this proxy's span when it ends in a 5xx or a reset, or runs slower than its route's
// threshold; the span says why, a counter counts it, and the request's trace context is left as
// it came. Real filter.wasm (emulated Envoy host), real OTLP/HTTP receiver on 127.0.0.1.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ManualClock, type FilterStream, type FilterVm } from "../../host/index.js";
import { attr, startOtlpReceiver, type OtlpReceiver } from "../../support/otlp-receiver.js";
import { countingRandom, loadFilter } from "../support.js";

const T0 = 1_700_000_000_000_000_000n;
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const UNSAMPLED = `00-${TRACE}-${PARENT}-00`;

interface Call {
  route?: string;
  /** Response status; undefined: the stream is reset before any response. */
  status?: number;
  /** The response body never ends (a reset after the response began). */
  cut?: boolean;
  durationMs?: number;
  traceparent?: string | null;
}

function call(vm: FilterVm, clock: ManualClock, c: Call): FilterStream {
  const s = vm.newStream({ routeName: c.route ?? "chat" });
  const tp = c.traceparent === undefined ? UNSAMPLED : c.traceparent;
  s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], ...(tp === null ? [] : [["traceparent", tp] as [string, string]])], false);
  s.requestBody(JSON.stringify({ model: "m", stream: true, messages: [] }), true);
  clock.advanceMs(c.durationMs ?? 10);
  if (c.status !== undefined) {
    s.responseHeaders([[":status", String(c.status)], ["content-type", "text/event-stream"]], false);
    s.responseBody('data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n', !c.cut);
  }
  s.end();
  return s;
}

describe("tail keep: spans of unsampled requests that failed or were slow (emulated Envoy host, real receiver)", () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => receiver.close());

  const setup = async (keep: unknown): Promise<{ vm: FilterVm; clock: ManualClock }> => {
    receiver.spans.length = 0;
    receiver.requests.length = 0;
    receiver.problems.length = 0;
    const clock = new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: { sampling: { defaultRate: 0 }, spans: { cluster: "otel", ...(keep === undefined ? {} : { keep }) } }, clusters: { otel: receiver.url } });
    return { vm, clock };
  };
  const flush = async (vm: FilterVm): Promise<void> => {
    vm.tick();
    await vm.settle();
  };

  const kept: Array<[string, Call, string]> = [
    ["a 503", { status: 503 }, "error"],
    ["a 500", { status: 500 }, "error"],
    ["a reset before any response", {}, "reset"],
    ["a stream cut after its response began", { status: 200, cut: true }, "reset"],
  ];
  for (const [name, c, reason] of kept) {
    it(`keeps the span of ${name} with keep.errors, says why, counts it, and leaves the trace context as it came`, async () => {
      const { vm, clock } = await setup({ errors: true });
      const s = call(vm, clock, c);
      await flush(vm);
      assert.deepEqual(s.request.getAll("traceparent"), [UNSAMPLED], "the head decision and the parent-id stand");
      assert.equal(receiver.spans.length, 1);
      const span = receiver.spans[0]!;
      assert.equal(span.traceId, TRACE);
      assert.equal(span.parentSpanId, PARENT);
      assert.match(span.spanId, /^[0-9a-f]{16}$/);
      assert.notEqual(span.spanId, PARENT);
      assert.equal(attr(span, "tokentrace.keep_reason"), reason);
      assert.deepEqual(span.status, { code: 2 });
      assert.equal(vm.stats.value("tokentrace_spans_kept_total"), 1);
      assert.deepEqual(receiver.problems, []);
    });
  }

  it("keeps nothing that ended well and fast, nor a 4xx (the caller's error), nor anything without spans.keep", async () => {
    const { vm, clock } = await setup({ errors: true, slowerThanMs: 1000 });
    call(vm, clock, { status: 200, durationMs: 999 });
    call(vm, clock, { status: 429 });
    call(vm, clock, { status: 404 });
    await flush(vm);
    assert.equal(receiver.spans.length, 0);
    assert.equal(vm.stats.value("tokentrace_spans_kept_total"), 0);
    const plain = await setup(undefined);
    call(plain.vm, plain.clock, { status: 503 });
    call(plain.vm, plain.clock, { status: 200, durationMs: 60_000 });
    await flush(plain.vm);
    assert.equal(receiver.spans.length, 0);
  });

  it("keeps requests slower than their route's threshold, else the default one", async () => {
    const { vm, clock } = await setup({ slowerThanMs: 1000, routes: [{ routeName: "chat", slowerThanMs: 100 }] });
    call(vm, clock, { route: "chat", status: 200, durationMs: 150 }); // kept: over chat's 100 ms
    call(vm, clock, { route: "chat", status: 200, durationMs: 100 }); // not: exactly the threshold
    call(vm, clock, { route: "batch", status: 200, durationMs: 150 }); // not: under the default 1000 ms
    call(vm, clock, { route: "batch", status: 200, durationMs: 1500 }); // kept
    call(vm, clock, { route: "chat", status: 503, durationMs: 5 }); // not: errors are not asked for
    await flush(vm);
    assert.deepEqual(receiver.spans.map((s) => [attr(s, "tokentrace.route"), attr(s, "tokentrace.keep_reason"), s.status]), [
      ["chat", "slow", undefined],
      ["batch", "slow", undefined],
    ]);
    assert.equal(vm.stats.value("tokentrace_spans_kept_total"), 2);
  });

  it("a kept span of a trace this proxy started is its root, with the span id sent upstream", async () => {
    const { vm, clock } = await setup({ errors: true });
    const s = call(vm, clock, { status: 502, traceparent: null });
    await flush(vm);
    const sent = s.request.get("traceparent")!;
    assert.match(sent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-02$/, "started unsampled");
    const span = receiver.spans[0]!;
    assert.equal(span.traceId, sent.slice(3, 35));
    assert.equal(span.spanId, sent.slice(36, 52));
    assert.equal(span.parentSpanId, undefined);
  });

  it("a sampled request's span carries no keep reason and is not counted as kept", async () => {
    const { vm, clock } = await setup({ errors: true });
    call(vm, clock, { status: 503, traceparent: `00-${TRACE}-${PARENT}-01` });
    await flush(vm);
    assert.equal(receiver.spans.length, 1);
    assert.equal(attr(receiver.spans[0]!, "tokentrace.keep_reason"), undefined);
    assert.equal(vm.stats.value("tokentrace_spans_kept_total"), 0);
  });
});

describe("spans.keep configuration (emulated Envoy host)", () => {
  const rejected: Array<[unknown, string]> = [
    [{ errors: "yes" }, "spans.keep.errors: must be true or false"],
    [{ slowerThanMs: 0 }, "spans.keep.slowerThanMs: must be an integer between 1 and 3600000"],
    [{ routes: [{ slowerThanMs: 5 }] }, "spans.keep.routes[0].routeName: is required"],
    [{ routes: [{ routeName: "chat" }] }, "spans.keep.routes[0].slowerThanMs: is required"],
    [{ tail: true }, "spans.keep.tail: unknown key"],
  ];
  for (const [keep, reason] of rejected) {
    it(`rejects ${JSON.stringify(keep)} naming the key`, async () => {
      const vm = await loadFilter({ random: countingRandom() });
      assert.equal(vm.configure(JSON.stringify({ spans: { cluster: "otel", keep } })), false);
      assert.ok(vm.logs.some((l) => l.message.includes(reason)), reason);
    });
  }
});
