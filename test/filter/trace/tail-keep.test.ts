// Tail keep in the sidecar (spans.keep): an LLM request the head decision did not sample still
// exports this proxy's span when it fails (error.type set: a 4xx, a 5xx, a reset), or runs slower
// than the live threshold of its route and model (else its route's, else the default); the span
// says why, a counter per route and reason counts every exported span (head, forced, slow, error),
// and the request's trace context is left as it came. With a budget the kept spans wait for the
// tick, errors and the slowest first, in one bucket shared by every worker's VM.
// Real filter.wasm (emulated Envoy host), real OTLP/HTTP receiver on 127.0.0.1.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { HostProcess } from "../../host/process.js";
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
  model?: string;
  headers?: Array<[string, string]>;
  /** The upstream host's address (a waypoint labels stats with its IP). */
  upstream?: string;
  /** Default /v1/chat/completions. */
  path?: string;
  /** The response body; default one chat completion chunk that stops. */
  body?: string;
}

function call(vm: FilterVm, clock: ManualClock, c: Call): FilterStream {
  const s = vm.newStream({ routeName: c.route ?? "chat", ...(c.upstream === undefined ? {} : { upstream: { address: c.upstream, port: 8000 } }) });
  const tp = c.traceparent === undefined ? UNSAMPLED : c.traceparent;
  s.requestHeaders([[":method", "POST"], [":path", c.path ?? "/v1/chat/completions"], [":authority", "llm.svc"], ...(tp === null ? [] : [["traceparent", tp] as [string, string]]), ...(c.headers ?? [])], false);
  s.requestBody(JSON.stringify({ model: c.model ?? "m", stream: true, messages: [] }), true);
  clock.advanceMs(c.durationMs ?? 10);
  if (c.status !== undefined) {
    s.responseHeaders([[":status", String(c.status)], ["content-type", "text/event-stream"]], false);
    s.responseBody(c.body ?? `data: {"model":"${c.model ?? "m"}","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n`, !c.cut);
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

  const configOf = (keep: unknown): unknown => ({
    sampling: { defaultRate: 0, force: [{ header: "x-debug-trace" }] },
    // A batch at every stats tick (1 s), so `flush` below is one tick.
    spans: { cluster: "otel", flushIntervalMs: 1000, ...(keep === undefined ? {} : { keep }) },
  });
  const setup = async (keep: unknown, more: { clock?: ManualClock; process?: HostProcess; clear?: boolean } = {}): Promise<{ vm: FilterVm; clock: ManualClock }> => {
    if (more.clear !== false) {
      receiver.spans.length = 0;
      receiver.requests.length = 0;
      receiver.problems.length = 0;
    }
    const clock = more.clock ?? new ManualClock(T0);
    const vm = await loadFilter({ clock, random: countingRandom(), config: configOf(keep), clusters: { otel: receiver.url }, ...(more.process === undefined ? {} : { process: more.process }) });
    return { vm, clock };
  };
  const kept = (vm: FilterVm, route: string, reason: string): number | undefined => vm.stats.value("tokentrace_spans_kept_total", { route, keep_reason: reason });
  const dropped = (vm: FilterVm, route: string, reason: string): number | undefined => vm.stats.value("tokentrace_spans_budget_dropped_total", { route, keep_reason: reason });
  const flush = async (vm: FilterVm): Promise<void> => {
    vm.tick();
    await vm.settle();
  };

  const errors: Array<[string, Call, string]> = [
    ["a 503", { status: 503 }, "error"],
    ["a 500", { status: 500 }, "error"],
    ["a 429 (error.type set)", { status: 429 }, "error"],
    ["a reset before any response", {}, "reset"],
    ["a stream cut after its response began", { status: 200, cut: true }, "reset"],
    // openai/openai-openapi@f85dbe2 ResponseFailedEvent: error.type _OTHER under the 200.
    ["a Responses stream that ends in response.failed", { path: "/v1/responses", status: 200, body: `event: response.failed\ndata: ${JSON.stringify({ response: { id: "resp_1", model: "m", object: "response", output: [], status: "failed" }, sequence_number: 0, type: "response.failed" })}\n\n` }, "error"],
  ];
  for (const [name, c, reason] of errors) {
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
      assert.equal(kept(vm, "chat", "error"), 1, "a reset counts as an error");
      assert.deepEqual(receiver.problems, []);
    });
  }

  it("keeps nothing that ended well and fast, nor anything without spans.keep", async () => {
    const { vm, clock } = await setup({ errors: true, slowerThanMs: 1000 });
    call(vm, clock, { status: 200, durationMs: 999 });
    call(vm, clock, { status: 200, durationMs: 1000 });
    await flush(vm);
    assert.equal(receiver.spans.length, 0);
    assert.equal(kept(vm, "chat", "slow"), undefined);
    assert.equal(kept(vm, "chat", "error"), undefined);
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
    assert.equal(kept(vm, "chat", "slow"), 1);
    assert.equal(kept(vm, "batch", "slow"), 1);
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

  it("a sampled request's span carries no keep reason and is counted as head; a forced one as forced", async () => {
    const { vm, clock } = await setup({ errors: true });
    call(vm, clock, { status: 503, traceparent: `00-${TRACE}-${PARENT}-01` });
    call(vm, clock, { status: 200, headers: [["x-debug-trace", "1"]] });
    await flush(vm);
    assert.equal(receiver.spans.length, 2);
    assert.deepEqual(receiver.spans.map((s) => attr(s, "tokentrace.keep_reason")), [undefined, undefined]);
    assert.equal(kept(vm, "chat", "head"), 1);
    assert.equal(kept(vm, "chat", "forced"), 1);
    assert.equal(kept(vm, "chat", "error"), undefined);
  });

  it("keeps requests slower than the live threshold of their route and model, else their route's live one, else the static ones", async () => {
    const live = [
      { route: "chat", model: "m", durationMs: 100 },
      { route: "chat", durationMs: 500 },
      { route: "embed", model: "m", ttftMs: 50 },
    ];
    const { vm, clock } = await setup({ slowerThanMs: 1000, routes: [{ routeName: "batch", slowerThanMs: 200 }], live });
    call(vm, clock, { route: "chat", model: "m", status: 200, durationMs: 150 }); // kept: over (chat, m)'s 100 ms
    call(vm, clock, { route: "chat", model: "big", status: 200, durationMs: 150 }); // not: chat's own 500 ms
    call(vm, clock, { route: "chat", model: "big", status: 200, durationMs: 600 }); // kept
    call(vm, clock, { route: "batch", model: "m", status: 200, durationMs: 300 }); // kept: no live entry, batch's 200 ms
    call(vm, clock, { route: "other", model: "m", status: 200, durationMs: 900 }); // not: the default 1000 ms
    call(vm, clock, { route: "embed", model: "m", status: 200, durationMs: 40 }); // not: TTFT under 50 ms
    call(vm, clock, { route: "embed", model: "m", status: 200, durationMs: 80 }); // kept: TTFT over 50 ms
    await flush(vm);
    assert.deepEqual(receiver.spans.map((s) => [attr(s, "tokentrace.route"), attr(s, "gen_ai.request.model"), attr(s, "tokentrace.keep_reason")]), [
      ["chat", "m", "slow"],
      ["chat", "big", "slow"],
      ["batch", "m", "slow"],
      ["embed", "m", "slow"],
    ]);
    assert.equal(kept(vm, "chat", "slow"), 2);
    // A new push of thresholds applies to the next request of a pair already seen.
    receiver.spans.length = 0;
    assert.equal(vm.configure(JSON.stringify(configOf({ slowerThanMs: 1000, live: [{ route: "chat", model: "m", durationMs: 300 }] }))), true);
    call(vm, clock, { route: "chat", model: "m", status: 200, durationMs: 150 }); // not any more
    call(vm, clock, { route: "chat", model: "m", status: 200, durationMs: 350 }); // kept
    await flush(vm);
    assert.equal(receiver.spans.length, 1);
    assert.equal(kept(vm, "chat", "slow"), 3);
  });

  it("a live threshold pushed while a request runs judges it when it ends (not the one in force at its start)", async () => {
    const { vm, clock } = await setup({ live: [{ route: "chat", model: "m", durationMs: 1000 }] });
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], ["traceparent", UNSAMPLED]], false);
    s.requestBody(JSON.stringify({ model: "m", stream: true, messages: [] }), true);
    clock.advanceMs(300);
    assert.equal(vm.configure(JSON.stringify(configOf({ live: [{ route: "chat", model: "m", durationMs: 200 }] }))), true);
    s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    s.responseBody(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n`, true);
    s.end();
    await flush(vm);
    assert.equal(kept(vm, "chat", "slow"), 1, "300 ms is over the 200 ms in force when it ended");
    // A push that withdraws the pair's entry while a request runs leaves it to the static threshold.
    const t = vm.newStream({ routeName: "chat" });
    t.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "llm.svc"], ["traceparent", UNSAMPLED]], false);
    t.requestBody(JSON.stringify({ model: "m", stream: true, messages: [] }), true);
    clock.advanceMs(300);
    assert.equal(vm.configure(JSON.stringify(configOf({ slowerThanMs: 1000 }))), true);
    t.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
    t.responseBody(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n`, true);
    t.end();
    await flush(vm);
    assert.equal(kept(vm, "chat", "slow"), 1, "300 ms: no live entry any more, and no static threshold at its start");
  });

  // spans.keep.recent: the filter's own P95 of the pair's last 60 s, the request itself included,
  // nearest rank (the ceil(0.95 n)-th smallest): 20 samples are the fewest with one above it.
  const keptDurationsMs = (): number[] => receiver.spans.map((s) => Number((BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1_000_000n));
  it("keeps a request slower than the P95 its pair ended with over the last 60 s on this VM (spans.keep.recent)", async () => {
    const { vm, clock } = await setup({ recent: {} });
    // 100, 110, ... 290 ms: each is the largest so far; the 20th (290) is the first above the P95 (280).
    for (let i = 0; i < 20; i++) call(vm, clock, { status: 200, durationMs: 100 + 10 * i });
    call(vm, clock, { status: 200, durationMs: 285 }); // 21 samples: the P95 is the 20th smallest, 285 itself: not above it
    call(vm, clock, { status: 200, durationMs: 300 }); // 22: the 21st smallest, 290: above it
    call(vm, clock, { route: "rag", status: 200, durationMs: 5000 }); // another pair: its own window, one sample
    await flush(vm);
    assert.deepEqual(keptDurationsMs(), [290, 300]);
    assert.equal(kept(vm, "chat", "slow"), 2);
    // A minute later those samples have left: after 69, 68, ... 50 ms (each the smallest so far), 100 ms is slow again.
    receiver.spans.length = 0;
    clock.advanceMs(61_000);
    for (let i = 0; i < 20; i++) call(vm, clock, { status: 200, durationMs: 69 - i });
    call(vm, clock, { status: 200, durationMs: 100 });
    await flush(vm);
    assert.deepEqual(keptDurationsMs(), [100]);
  });

  it("the recent window outlives a new configuration with the same settings (every live push is one), and restarts with new settings", async () => {
    const { vm, clock } = await setup({ recent: {} });
    for (let i = 0; i < 20; i++) call(vm, clock, { status: 200, durationMs: 100 + 10 * i });
    assert.equal(vm.configure(JSON.stringify(configOf({ recent: {}, live: [{ route: "other", durationMs: 5 }] }))), true);
    call(vm, clock, { status: 200, durationMs: 300 }); // 21 samples: above the 20th smallest (290)
    assert.equal(vm.configure(JSON.stringify(configOf({ recent: { windowSeconds: 30 } }))), true);
    call(vm, clock, { status: 200, durationMs: 400 }); // a new window: one sample, not above itself
    await flush(vm);
    assert.deepEqual(keptDurationsMs(), [290, 300]);
  });

  it("a pair whose durations all fall in one bucket keeps about its top share, not every request", async () => {
    const { vm, clock } = await setup({ recent: {} });
    for (let i = 0; i < 100; i++) call(vm, clock, { status: 200, durationMs: 1000 });
    await flush(vm);
    assert.deepEqual(keptDurationsMs(), []);
  });

  it("with maxSamples, the recent window is the last maxSamples requests", async () => {
    const { vm, clock } = await setup({ recent: { maxSamples: 64 } });
    // Falling durations: each is the smallest so far, never slow.
    for (let i = 0; i < 64; i++) call(vm, clock, { status: 200, durationMs: 563 - i });
    for (let i = 0; i < 64; i++) call(vm, clock, { status: 200, durationMs: 163 - i });
    call(vm, clock, { status: 200, durationMs: 200 }); // the 500 ms ones have left: over the P95 of 101..163 ms and itself
    await flush(vm);
    assert.deepEqual(keptDurationsMs(), [200]);
  });

  it("with a budget, the tick keeps the errors, then the slowest, drops the rest and counts them; head spans are paid first", async () => {
    const keep = { errors: true, slowerThanMs: 10, budget: { tracesPerSecond: 2, burstSeconds: 1 } };
    const { vm, clock } = await setup(keep);
    call(vm, clock, { status: 200, durationMs: 20 });
    call(vm, clock, { status: 200, durationMs: 40 });
    call(vm, clock, { status: 503, durationMs: 5 });
    call(vm, clock, { status: 200, durationMs: 30 });
    assert.equal(receiver.spans.length, 0);
    await flush(vm);
    // The bucket holds 2: the error and the slowest.
    assert.deepEqual(receiver.spans.map((s) => [attr(s, "tokentrace.keep_reason"), s.status === undefined ? Number((BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1_000_000n) : 0]).sort(), [["error", 0], ["slow", 40]]);
    assert.equal(kept(vm, "chat", "error"), 1);
    assert.equal(kept(vm, "chat", "slow"), 1);
    assert.equal(dropped(vm, "chat", "slow"), 2);
    // Two head-sampled spans go at once and spend the refill, so the next tick keeps nothing.
    receiver.spans.length = 0;
    clock.advanceMs(1000);
    call(vm, clock, { status: 200, durationMs: 1, traceparent: `00-${TRACE}-${PARENT}-01` });
    call(vm, clock, { status: 200, durationMs: 1, traceparent: `00-${TRACE}-${PARENT}-01` });
    call(vm, clock, { status: 200, durationMs: 50 });
    await flush(vm);
    assert.equal(receiver.spans.length, 2);
    assert.equal(kept(vm, "chat", "head"), 2);
    assert.equal(dropped(vm, "chat", "slow"), 3);
    // A second later the bucket has refilled.
    receiver.spans.length = 0;
    clock.advanceMs(1000);
    call(vm, clock, { status: 200, durationMs: 50 });
    await flush(vm);
    assert.equal(receiver.spans.length, 1);
    assert.equal(kept(vm, "chat", "slow"), 2);
  });

  it("the budget is one bucket for every worker's VM of the proxy (shared data)", async () => {
    const keep = { errors: true, budget: { tracesPerSecond: 2, burstSeconds: 1 } };
    const process = new HostProcess();
    const clock = new ManualClock(T0);
    const a = await setup(keep, { clock, process });
    const b = await setup(keep, { clock, process, clear: false });
    call(a.vm, clock, { status: 503 });
    call(a.vm, clock, { status: 503 });
    call(b.vm, clock, { status: 502 });
    await flush(a.vm);
    await flush(b.vm);
    assert.equal(receiver.spans.length, 2);
    assert.equal(kept(a.vm, "chat", "error"), 2);
    assert.equal(dropped(b.vm, "chat", "error"), 1, "worker b found the bucket worker a emptied");
    // A VM of another proxy has a bucket of its own.
    const c = await setup(keep, { clock, clear: false });
    call(c.vm, clock, { status: 502 });
    await flush(c.vm);
    assert.equal(kept(c.vm, "chat", "error"), 1);
  });

  it("on a waypoint, kept and dropped spans are counted per destination pod, and the live threshold of the route and model holds for every pod", async () => {
    receiver.spans.length = 0;
    const clock = new ManualClock(T0);
    const keep = { errors: true, live: [{ route: "chat", model: "m", durationMs: 100 }], budget: { tracesPerSecond: 1, burstSeconds: 1 } };
    const config = { stats: { maxDestinationPods: 4 }, ...(configOf(keep) as object) };
    const vm = await loadFilter({ clock, random: countingRandom(), config, clusters: { otel: receiver.url } });
    const podA = "envoy://connect_originate/10.1.0.1:8000";
    const podB = "envoy://connect_originate/10.1.0.2:8000";
    call(vm, clock, { status: 200, durationMs: 150, upstream: podA }); // slow on pod A: over (chat, m)'s 100 ms
    call(vm, clock, { status: 200, durationMs: 80, upstream: podB }); // not: under it on pod B too
    call(vm, clock, { status: 503, durationMs: 5, upstream: podB }); // an error on pod B: outranks the slow one
    await flush(vm);
    const byPod = (name: string, podIp: string, reason: string): number | undefined => vm.stats.value(name, { route: "chat", pod_ip: podIp, keep_reason: reason });
    assert.equal(receiver.spans.length, 1, "a budget of one span");
    assert.equal(attr(receiver.spans[0]!, "tokentrace.keep_reason"), "error");
    assert.equal(byPod("tokentrace_spans_kept_total", "10.1.0.2", "error"), 1);
    assert.equal(byPod("tokentrace_spans_budget_dropped_total", "10.1.0.1", "slow"), 1);
    assert.equal(kept(vm, "chat", "error"), undefined, "no copy without the pod's label");
    assert.equal(dropped(vm, "chat", "slow"), undefined);
    // A head-sampled span is counted under its pod as well.
    clock.advanceMs(1000);
    call(vm, clock, { status: 200, durationMs: 1, upstream: podA, traceparent: `00-${TRACE}-${PARENT}-01` });
    await flush(vm);
    assert.equal(byPod("tokentrace_spans_kept_total", "10.1.0.1", "head"), 1);
  });

  it("decides when a batch is due (spans.flushIntervalMs), choosing among every span since the last one, not at each shorter stats tick", async () => {
    receiver.spans.length = 0;
    const clock = new ManualClock(T0);
    const keep = { slowerThanMs: 100, budget: { tracesPerSecond: 1, burstSeconds: 1 } };
    const config = { sampling: { defaultRate: 0 }, stats: { flushIntervalMs: 1000 }, spans: { cluster: "otel", flushIntervalMs: 3000, keep } };
    const vm = await loadFilter({ clock, random: countingRandom(), config, clusters: { otel: receiver.url } });
    call(vm, clock, { status: 200, durationMs: 150 });
    clock.advanceMs(1000);
    await flush(vm); // a one-second stats tick: no decision yet
    assert.equal(receiver.spans.length, 0);
    call(vm, clock, { status: 200, durationMs: 300 });
    // The third tick decides and sends; the fourth sends the counters.
    for (let tick = 2; tick <= 4; tick++) {
      clock.advanceMs(1000);
      await flush(vm);
    }
    // A bucket of one span: decided per tick, both would have gone (one token a second).
    assert.equal(receiver.spans.length, 1);
    assert.equal(Number((BigInt(receiver.spans[0]!.endTimeUnixNano) - BigInt(receiver.spans[0]!.startTimeUnixNano)) / 1_000_000n), 300);
    assert.equal(dropped(vm, "chat", "slow"), 1);
  });

  it("the reservoir is bounded in bytes: when full it drops the least slow span, so the slowest are the ones kept", async () => {
    const { vm, clock } = await setup({ slowerThanMs: 10, budget: { tracesPerSecond: 1000, reservoirBytes: 16384 } });
    // More records than 16 KiB holds (a record without content retains about 400 bytes).
    const durations = Array.from({ length: 120 }, (_, i) => 20 + ((i * 37) % 120));
    for (const d of durations) call(vm, clock, { status: 200, durationMs: d });
    // One batch (32 spans) leaves per tick.
    for (let sent = -1; sent !== receiver.spans.length; ) {
      sent = receiver.spans.length;
      await flush(vm);
    }
    const n = receiver.spans.length;
    assert.ok(n > 0 && n < durations.length, `${n} spans kept of ${durations.length}`);
    assert.equal(dropped(vm, "chat", "slow"), durations.length - n);
    const keptDurations = receiver.spans.map((s) => Number((BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1_000_000n)).sort((x, y) => y - x);
    assert.deepEqual(keptDurations, [...durations].sort((x, y) => y - x).slice(0, n));
  });
});

describe("spans.keep configuration (emulated Envoy host)", () => {
  const rejected: Array<[unknown, string]> = [
    [{ errors: "yes" }, "spans.keep.errors: must be true or false"],
    [{ slowerThanMs: 0 }, "spans.keep.slowerThanMs: must be an integer between 1 and 3600000"],
    [{ routes: [{ slowerThanMs: 5 }] }, "spans.keep.routes[0].routeName: is required"],
    [{ routes: [{ routeName: "chat" }] }, "spans.keep.routes[0].slowerThanMs: is required"],
    [{ tail: true }, "spans.keep.tail: unknown key"],
    [{ live: [{ durationMs: 5 }] }, "spans.keep.live[0].route: is required"],
    [{ live: [{ route: "chat", model: "m" }] }, "spans.keep.live[0]: needs durationMs or ttftMs"],
    [{ live: [{ route: "chat", durationMs: 0 }] }, "spans.keep.live[0].durationMs: must be an integer between 1 and 3600000"],
    [{ live: Array.from({ length: 129 }, (_, i) => ({ route: `r${i}`, durationMs: 5 })) }, "spans.keep.live: at most 128 entries"],
    [{ budget: {} }, "spans.keep.budget.tracesPerSecond: is required"],
    [{ recent: { quantile: 0.4 } }, "spans.keep.recent.quantile: must be a number between 0.5 and 0.999"],
    [{ recent: { windowSeconds: 0 } }, "spans.keep.recent.windowSeconds: must be an integer between 1 and 3600"],
    [{ recent: { maxSamples: 10 } }, "spans.keep.recent.maxSamples: must be an integer between 64 and 8192"],
    [{ recent: { size: 1 } }, "spans.keep.recent.size: unknown key"],
    [{ budget: { tracesPerSecond: 0 } }, "spans.keep.budget.tracesPerSecond: must be a number between 0.001 and 100000"],
    [{ budget: { tracesPerSecond: 1, reservoirBytes: 100 } }, "spans.keep.budget.reservoirBytes: must be an integer between 16384 and 4194304"],
  ];
  for (const [keep, reason] of rejected) {
    it(`rejects ${JSON.stringify(keep)} naming the key`, async () => {
      const vm = await loadFilter({ random: countingRandom() });
      assert.equal(vm.configure(JSON.stringify({ spans: { cluster: "otel", keep } })), false);
      assert.ok(vm.logs.some((l) => l.message.includes(reason)), reason);
    });
  }
});
