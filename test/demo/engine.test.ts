// The simulated engine against the vLLM V1 scheduler rules it mirrors (vllm 00024d31,
// vllm/v1/core/sched/scheduler.py Scheduler.schedule): a fixed number of running requests, FCFS
// admission from the waiting queue, running requests served first within the step's token budget,
// chunked prefill, the first token from the step that ends the prefill; and the GPU busy only while
// a step computes. Driven by a fake clock: no test waits on real time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Engine, GPU_ACTIVITY, type EngineParams, type RequestTimings } from "./engine.js";
import { FakeClock } from "./fake-clock.js";

const SIMPLE: EngineParams = { maxNumSeqs: 2, maxNumBatchedTokens: 8192, kvCacheTokens: 1_000_000, blockSize: 16, prefixCaching: false, numSpeculativeTokens: 0, draftAcceptance: 1, hostOverheadMs: 0, stepBaseMs: 10, decodeMsPerSeq: 0, prefillMsPerToken: 0, eagerKernelMsPerStep: 0, gpuSlowdown: 1, kvOffloadTokens: 0 };

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

test("emulated vLLM engine: a step on the GPU counts for the part it has run, as NVML's utilisation samples it, not all at its end", () => {
  const clock = new FakeClock();
  const engine = new Engine({ ...SIMPLE, hostOverheadMs: 10, stepBaseMs: 0, prefillMsPerToken: 1, maxNumSeqs: 1 }, clock);
  engine.submit({ promptTokens: 400, outputTokens: 1, onDone: () => undefined });
  // The prefill step: 10 ms on the host, then 400 ms of kernels.
  clock.run(10);
  assert.equal(engine.state().gpuBusyMs, 0, "the host's part is idle");
  clock.run(110);
  assert.equal(engine.state().gpuBusyMs, 100, "a quarter of the step has run");
  const halfway = engine.state().gpu;
  clock.run(210);
  const later = engine.state().gpu;
  assert.equal(later.busyMs, 200);
  assert.ok(later.tensorMs > halfway.tensorMs, "each unit's integral moves with it");
  clock.run(410);
  assert.equal(engine.state().gpuBusyMs, 400, "the whole step once it ends, counted once");
  engine.stop();
  clock.run(1000);
  assert.equal(engine.state().gpuBusyMs, 400, "nothing more once stopped");
});

test("emulated vLLM engine: each part of a step's GPU time adds its units' activity (weights and KV memory-bound, prompt tokens on the tensor pipe, eager kernels little of either)", () => {
  // One request of 100 prompt tokens and 1 output token: one step of 10 ms of weights, 2 ms of KV, 5 ms of compute, 20 ms of eager kernels.
  const { engine, clock } = runBatch({ stepBaseMs: 10, decodeMsPerSeq: 2, prefillMsPerToken: 0.05, eagerKernelMsPerStep: 20 }, [{ promptTokens: 100, outputTokens: 1 }]);
  const g = engine.state().gpu;
  const w = { weights: 10, kv: 2, compute: 5, eager: 20 } as const;
  const sum = (unit: "sm" | "occupancy" | "tensor" | "dram"): number => Object.entries(w).reduce((n, [k, ms]) => n + ms * GPU_ACTIVITY[k as keyof typeof w][unit], 0);
  assert.equal(g.busyMs, 37);
  assert.equal(clock.nowMs, 37, "no host time: the GPU was busy the whole step");
  assert.deepEqual([g.smMs, g.occupancyMs, g.tensorMs, g.dramMs].map((v) => Math.round(v * 1e6) / 1e6), [sum("sm"), sum("occupancy"), sum("tensor"), sum("dram")].map((v) => Math.round(v * 1e6) / 1e6));
  // Eager kernels keep the GPU busy while its SMs mostly wait: SM activity per busy ms well under one half.
  assert.ok(g.smMs / g.busyMs < 0.5, `SM activity per busy ms ${g.smMs / g.busyMs}`);
  assert.equal(engine.state().gpuBusyMs, g.busyMs);
});

test("emulated vLLM engine: a throttled GPU (gpuSlowdown) takes longer for every step's GPU time", () => {
  const full = runBatch({ stepBaseMs: 10 }, [{ promptTokens: 10, outputTokens: 4 }]).timings[0]!;
  const throttled = runBatch({ stepBaseMs: 10, gpuSlowdown: 1.8 }, [{ promptTokens: 10, outputTokens: 4 }]).timings[0]!;
  assert.equal(full.finishedMs, 40);
  assert.equal(throttled.finishedMs, 72);
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

test("emulated vLLM KV cache: a shared system prompt's whole blocks are reused by the next request with it, and counted as prefix-cache hits", () => {
  const clock = new FakeClock();
  const engine = new Engine({ ...SIMPLE, prefixCaching: true, prefillMsPerToken: 0.1 }, clock);
  const times: RequestTimings[] = [];
  engine.onFinished = (t) => times.push(t);
  const prefix = { id: "tenant-a", tokens: 100 };
  engine.submit({ promptTokens: 120, prefix, outputTokens: 1, onDone: () => undefined });
  clock.run();
  engine.submit({ promptTokens: 130, prefix, outputTokens: 1, onDone: () => undefined });
  clock.run();
  // 100 tokens are 6 whole blocks of 16 (96 tokens): the second request computes 130 - 96.
  assert.deepEqual([engine.state().counters.prefixCacheQueries, engine.state().counters.prefixCacheHits], [250, 96]);
  const prefill = times.map((t) => t.firstTokenMs - t.scheduledMs);
  assert.equal(prefill[0], 10 + 120 * 0.1);
  assert.ok(Math.abs(prefill[1]! - (10 + 34 * 0.1)) < 1e-9, `second prefill ${prefill[1]} ms: 34 tokens computed`);
  // The finished requests' own blocks are free; the cached prefix is free too (no running request uses it).
  assert.equal(engine.state().kvCacheUsage, 0);
});

test("emulated vLLM KV cache: cached prefixes nobody uses are evicted least recently used first when blocks run out", () => {
  const clock = new FakeClock();
  // 20 blocks of 16 tokens.
  const engine = new Engine({ ...SIMPLE, prefixCaching: true, kvCacheTokens: 320 }, clock);
  const run = (id: string, promptTokens: number): void => {
    engine.submit({ promptTokens, prefix: { id, tokens: 64 }, outputTokens: 1, onDone: () => undefined });
    clock.run();
  };
  run("a", 80);
  run("b", 80);
  // A request needing 16 blocks of the 20: 12 are free, so one cached prefix (4 blocks) goes: a, used first.
  run("c", 250);
  const hitsOf = (id: string): number => {
    const before = engine.state().counters.prefixCacheHits;
    run(id, 80);
    return engine.state().counters.prefixCacheHits - before;
  };
  assert.equal(hitsOf("b"), 64, "b, used last, still cached");
  assert.equal(hitsOf("a"), 0, "a, used first, evicted");
});

test("emulated vLLM KV connector offloading to CPU: a prefix the GPU cache evicted is found in the CPU tier, loaded while its request waits deferred a step, counted as external hits; another request with it waits deferred, then hits the GPU cache", () => {
  for (const [kvOffloadTokens, story] of [
    [10_000, "loaded"],
    [64, "the CPU tier of 4 blocks kept only the newer prefix"],
    [0, "no connector"],
  ] as const) {
    const clock = new FakeClock();
    // 10 blocks of 16 tokens; prefixes of 4 blocks.
    const engine = new Engine({ ...SIMPLE, maxNumSeqs: 4, prefixCaching: true, kvCacheTokens: 160, kvOffloadTokens }, clock);
    const times: RequestTimings[] = [];
    engine.onFinished = (t) => times.push(t);
    const submit = (id: string, promptTokens: number): void => void engine.submit({ promptTokens, prefix: { id, tokens: 64 }, outputTokens: 1, onDone: () => undefined });
    submit("a", 80);
    clock.run();
    // 8 blocks: 6 are free, so a's cached prefix is evicted from the GPU (not from the CPU tier).
    submit("b", 128);
    clock.run();
    const t0 = clock.nowMs;
    submit("a", 80);
    submit("a", 80);
    clock.run(t0 + 5);
    const during = engine.state();
    clock.run();
    const c = engine.state().counters;
    const [third, fourth] = times.slice(2).map((t) => [t.scheduledMs - t0, t.firstTokenMs - t0]);
    if (story === "loaded") {
      assert.deepEqual([during.waiting, during.waitingByReason], [2, { capacity: 0, deferred: 2 }], "one loads its prefix, the other waits for that load");
      assert.equal(during.kvCacheUsage, 0.5, "the loading request holds blocks for its whole prompt (5), its prefix's 4 loading");
      assert.deepEqual([third, fourth], [[10, 20], [10, 20]], "both run the step after the load");
      // Local: a 80/0, b 128/0, the loaded one 80/0, the one after it 80/64 (the loaded prefix is cached on the GPU again).
      assert.deepEqual([c.prefixCacheQueries, c.prefixCacheHits], [368, 64]);
      // External: what the GPU cache lacked (80, 128, 80, 16) and what the CPU tier gave (64).
      assert.deepEqual([c.externalPrefixCacheQueries, c.externalPrefixCacheHits], [304, 64]);
    } else {
      assert.deepEqual([during.waiting, during.waitingByReason], [0, { capacity: 0, deferred: 0 }], `${story}: both run at once`);
      assert.deepEqual([third, fourth], [[0, 10], [0, 10]], story);
      assert.deepEqual([c.prefixCacheQueries, c.prefixCacheHits], [368, 0], `${story}: computed again, in both`);
      assert.deepEqual([c.externalPrefixCacheQueries, c.externalPrefixCacheHits], kvOffloadTokens > 0 ? [368, 0] : [0, 0], story);
    }
  }
});

test("emulated vLLM scheduler: when a running request cannot get a block, the last admitted is preempted to the head of the queue and recomputes later", () => {
  const clock = new FakeClock();
  // 8 blocks of 16 tokens; two requests of 48 prompt tokens (3 blocks each) decoding 40 tokens each.
  const engine = new Engine({ ...SIMPLE, maxNumSeqs: 4, kvCacheTokens: 128 }, clock);
  const times: RequestTimings[] = [];
  engine.onFinished = (t) => times.push(t);
  const done: string[] = [];
  engine.submit({ promptTokens: 48, outputTokens: 40, onDone: () => done.push("a") });
  engine.submit({ promptTokens: 48, outputTokens: 40, onDone: () => done.push("b") });
  engine.submit({ promptTokens: 10, outputTokens: 2, onDone: () => done.push("c") });
  const preemptions: { atMs: number; running: number; waiting: number }[] = [];
  for (let t = 1; t < 5000 && done.length < 3; t++) {
    clock.run(t);
    const s = engine.state();
    if (s.counters.preemptions > preemptions.length) preemptions.push({ atMs: t, running: s.running, waiting: s.waiting });
  }
  // Step 2: b needs a 4th block and none is free: c, admitted last, is preempted. At 65 tokens a needs
  // a 5th: b, now the last admitted, is preempted and goes to the queue's head, ahead of c.
  assert.deepEqual(preemptions, [{ atMs: 10, running: 2, waiting: 1 }, { atMs: 170, running: 1, waiting: 2 }]);
  assert.deepEqual(done, ["a", "c", "b"], "both resume when a's blocks are free; c is short");
  const b = times.find((t) => t.preemptions > 0 && t.promptTokens === 48)!;
  assert.equal(b.outputTokens, 40, "the preempted request keeps its output and finishes it");
  assert.equal(b.scheduledMs, 0, "queue time ends at the first scheduling, preemptions ignored (vLLM stats.py)");
  assert.ok(b.finishedMs > times.find((t) => t.preemptions === 0 && t.outputTokens === 40)!.finishedMs);
});

test("emulated vLLM speculative decoding: each decode step verifies the drafts, emits the accepted ones plus one, and counts drafted and accepted tokens", () => {
  const steps = (acceptance: number): { timings: RequestTimings[]; engine: Engine } =>
    runBatch({ numSpeculativeTokens: 3, draftAcceptance: acceptance }, [{ promptTokens: 10, outputTokens: 21 }]);
  const all = steps(1);
  // Prefill gives token 1; then 5 steps of 4 tokens (3 drafts accepted + 1).
  assert.equal(all.timings[0]!.finishedMs - all.timings[0]!.firstTokenMs, 5 * 10);
  assert.deepEqual([all.engine.state().counters.specDraftTokens, all.engine.state().counters.specAcceptedTokens], [15, 15]);
  const none = steps(0);
  assert.equal(none.timings[0]!.finishedMs - none.timings[0]!.firstTokenMs, 20 * 10, "every draft rejected: one token a step");
  const c = none.engine.state().counters;
  // 20 decode steps; the last has one token left and drafts none; near the end fewer drafts than tokens left.
  assert.deepEqual([c.specAcceptedTokens, c.specDrafts, c.specDraftTokens], [0, 19, 17 * 3 + 2 + 1]);
});

test("emulated vLLM engine with LoRA requests: the adapters of the running and the waiting requests after each step, a cancelled one gone at once; the scheduler treats them as any request", () => {
  const clock = new FakeClock();
  const engine = new Engine({ ...SIMPLE, maxNumSeqs: 1 }, clock);
  const afterSteps: string[] = [];
  engine.onStepDone = () => {
    const a = engine.loraAdapters();
    afterSteps.push(`${clock.now()} ${a.running.join(",")}|${a.waiting.join(",")}`);
  };
  const done: string[] = [];
  engine.submit({ promptTokens: 10, outputTokens: 2, adapter: "sql-lora", onDone: () => done.push("sql-lora") });
  engine.submit({ promptTokens: 10, outputTokens: 1, onDone: () => done.push("base") });
  const cancelled = engine.submit({ promptTokens: 10, outputTokens: 1, adapter: "chat-de", onDone: () => done.push("chat-de") });
  assert.deepEqual(engine.loraAdapters(), { running: [], waiting: ["sql-lora", "chat-de"] });
  clock.run(10);
  cancelled.cancel();
  assert.deepEqual(engine.loraAdapters(), { running: ["sql-lora"], waiting: [] }, "a cancelled request's adapter is gone before the next step");
  clock.run();
  // One call per step, 10 ms each: sql-lora's two, then the base model's request alone.
  assert.deepEqual(afterSteps, ["10 sql-lora|chat-de", "20 |", "30 |"]);
  assert.deepEqual(done, ["sql-lora", "base"]);
});
