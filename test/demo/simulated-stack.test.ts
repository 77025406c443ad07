// The demo's stack on one simulated clock (what the soak bench runs for two hours): the load, the
// engine, the proxy's ticks and the pipeline all move with the clock, and only with it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { FakeClock } from "../support/fake-clock.js";
import { startSink } from "../bench/support/remote-write-sink.js";
import { startDemoStack } from "./stack.js";

const wasm = fileURLToPath(new URL("../../build/filter.wasm", import.meta.url));

test("the demo stack on a simulated clock: a minute of load, scrapes and spans without waiting a minute", async () => {
  const sink = await startSink();
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000, { recordSleeps: false });
  const stack = await startDemoStack({ wasm, prometheus: "off", sinkUrl: sink.url, loadRps: 40, errorRate: 0.01, clock });
  try {
    const realStart = Date.now();
    await clock.advance(1000);
    // Nothing moves while the clock stands still: no further requests leave in real time.
    const sentAfterOneSecond = stack.load!.progress().sent;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(stack.load!.progress().sent, sentAfterOneSecond, "the load waits for the simulated clock");

    await clock.advance(59_000);
    const load = stack.load!.progress();
    // 40 rps for 60 s is 2,400 Poisson arrivals (a standard deviation of about 49).
    assert.ok(load.sent > 2200 && load.sent < 2600, `requests sent in 60 simulated s: ${load.sent}`);
    assert.equal(load.skipped, 0, "the engine kept up: nothing skipped for too many in flight");
    assert.ok(load.errors < load.sent * 0.03, `errors ${load.errors} of ${load.sent} (1% injected)`);
    assert.ok(Date.now() - realStart < 60_000, "a simulated minute took less than a real one");

    const metrics = await (await fetch(`${stack.controlPlaneUrl}/metrics`)).text();
    assert.doesNotMatch(metrics, /^tokentrace_scrape_failures_total\{[^}]*\} [1-9]/m, "every scrape answered within its timeout on the simulated clock");
    // The pipeline's scrapes follow the clock: 2 s apart for 60 s is 30 rounds of three targets.
    const received = [...sink.received.values()].reduce((a, b) => a + b, 0);
    assert.ok(received > 25 * stack.pipeline.writer.registry.size, `samples received ${received} for ${stack.pipeline.writer.registry.size} series`);
    assert.ok(stack.traces.size > 0, "the filter's and the engine's spans reached the receiver");
  } finally {
    await stack.close();
    await sink.close();
  }
});
