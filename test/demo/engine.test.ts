// The simulated engine against the vLLM V1 scheduler rules it mirrors (vllm 00024d31,
// vllm/v1/core/sched/scheduler.py Scheduler.schedule): a fixed number of running requests, FCFS
// admission from the waiting queue, running requests served first within the step's token budget,
// chunked prefill, the first token from the step that ends the prefill; and the GPU busy only while
// a step computes. Driven by a fake clock: no test waits on real time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Engine, type EngineClock, type EngineParams, type RequestTimings } from "./engine.js";

/** A clock whose timers fire only when the test runs them. */
class FakeClock implements EngineClock {
  nowMs = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private seq = 0;
  now(): number {
    return this.nowMs;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.push({ at: this.nowMs + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** Runs timers in time order until none is due before `untilMs` (or none is left). */
  run(untilMs = Infinity): void {
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > untilMs) break;
      this.timers.shift();
      this.nowMs = next.at;
      next.fn();
    }
    if (untilMs !== Infinity) this.nowMs = untilMs;
  }
}

const SIMPLE: EngineParams = { maxNumSeqs: 2, maxNumBatchedTokens: 8192, kvCacheTokens: 1_000_000, hostOverheadMs: 0, stepBaseMs: 10, decodeMsPerSeq: 0, prefillMsPerToken: 0 };

function runBatch(params: Partial<EngineParams>, requests: { promptTokens: number; outputTokens: number }[]): { timings: RequestTimings[]; engine: Engine; clock: FakeClock; order: number[] } {
  const clock = new FakeClock();
  const engine = new Engine({ ...SIMPLE, ...params }, clock);
  const timings: RequestTimings[] = [];
  const order: number[] = [];
  engine.onFinished = (t) => timings.push(t);
  requests.forEach((r, i) => engine.submit({ ...r, onDone: () => order.push(i) }));
  clock.run();
  return { timings, engine, clock, order };
}

test("emulated vLLM scheduler: at most max_num_seqs run, the rest wait in arrival order, so TTFT grows with concurrency", () => {
  const { timings, order } = runBatch({}, Array.from({ length: 6 }, () => ({ promptTokens: 10, outputTokens: 3 })));
  // Two at a time, 3 steps of 10 ms each (the prefill step gives the first token).
  assert.deepEqual(
    timings.map((t) => [t.scheduledMs, t.firstTokenMs, t.finishedMs]),
    [
      [0, 10, 30],
      [0, 10, 30],
      [30, 40, 60],
      [30, 40, 60],
      [60, 70, 90],
      [60, 70, 90],
    ],
  );
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5], "first come, first served");
});

test("emulated vLLM scheduler: running requests are served before waiting ones within the token budget (chunked prefill)", () => {
  // Budget 100 tokens per step: request 0's 250-token prompt takes three steps; request 1 is admitted
  // only in the third, with the 50 tokens request 0 leaves.
  const { timings } = runBatch({ maxNumBatchedTokens: 100 }, [
    { promptTokens: 250, outputTokens: 1 },
    { promptTokens: 40, outputTokens: 1 },
  ]);
  assert.deepEqual(
    timings.map((t) => [t.promptTokens, t.scheduledMs, t.firstTokenMs]),
    [
      [250, 0, 30],
      [40, 20, 30],
    ],
  );
});

test("emulated vLLM engine: the GPU is busy while steps compute, idle during host overhead and with no work", () => {
  const compute = runBatch({ hostOverheadMs: 2, stepBaseMs: 18 }, Array.from({ length: 8 }, () => ({ promptTokens: 10, outputTokens: 10 })));
  const busy = compute.engine.state().gpuBusyMs / compute.clock.nowMs;
  assert.ok(busy >= 0.9, `GPU busy ${busy} of the time with a queue and a light host`);
  const slowHost = runBatch({ hostOverheadMs: 150, stepBaseMs: 18 }, Array.from({ length: 8 }, () => ({ promptTokens: 10, outputTokens: 10 })));
  const idle = slowHost.engine.state().gpuBusyMs / slowHost.clock.nowMs;
  assert.ok(idle < 0.15, `GPU busy ${idle} of the time when the host takes 150 ms a step`);
  assert.ok(slowHost.timings.at(-1)!.firstTokenMs > compute.timings.at(-1)!.firstTokenMs * 5, "the slow host's queue makes TTFT far longer");
});

test("emulated vLLM engine: decode slows as the batch grows (memory-bound steps)", () => {
  const alone = runBatch({ maxNumSeqs: 16, decodeMsPerSeq: 1 }, [{ promptTokens: 10, outputTokens: 11 }]).timings[0]!;
  const batched = runBatch({ maxNumSeqs: 16, decodeMsPerSeq: 1 }, Array.from({ length: 16 }, () => ({ promptTokens: 10, outputTokens: 11 }))).timings[0]!;
  assert.equal(alone.finishedMs - alone.firstTokenMs, 10 * 11);
  assert.equal(batched.finishedMs - batched.firstTokenMs, 10 * 26);
});

test("emulated vLLM engine: a request waits while the KV cache cannot hold it, and a cancelled request leaves the queue", () => {
  const clock = new FakeClock();
  const engine = new Engine({ ...SIMPLE, maxNumSeqs: 8, kvCacheTokens: 100 }, clock);
  const done: string[] = [];
  engine.submit({ promptTokens: 60, outputTokens: 2, onDone: () => done.push("a") });
  engine.submit({ promptTokens: 60, outputTokens: 2, onDone: () => done.push("b") });
  const c = engine.submit({ promptTokens: 10, outputTokens: 2, onDone: () => done.push("c") });
  clock.run(5);
  assert.deepEqual([engine.state().running, engine.state().waiting], [1, 2], "b does not fit beside a; c waits behind b (FCFS)");
  c.cancel();
  clock.run();
  assert.deepEqual(done, ["a", "b"]);
  assert.equal(engine.state().waiting, 0);
});
