// Adaptive sampling with an injected clock and synthetic traffic: convergence within 20% of
// the target in a bounded number of steps, immediate decreases, stability under noise, a floor
// for rare routes, hysteresis, rate-limited publishing, and force rules left alone.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { nextRate, withDefaults } from "../../../control-plane/src/adaptive/algorithm.js";
import type { RouteRate } from "../../../control-plane/src/adaptive/rates.js";
import { AdaptiveSampler } from "../../../control-plane/src/adaptive/sampler.js";
import { effectiveConfig } from "../../../control-plane/src/policy/effective.js";
import type { AdaptiveSettings, Policy, PolicyRecord } from "../../../control-plane/src/policy/model.js";
import { mulberry32 } from "../../support/mulberry32.js";

function record(adaptive: AdaptiveSettings, rates: { defaultRate?: number; completions?: number; health?: number } = {}, version = "1"): PolicyRecord {
  const policy: Policy = {
    name: "chat",
    target: { namespace: "llm", selector: { matchLabels: { app: "chat" } } },
    pluginConfig: {
      sampling: {
        defaultRate: rates.defaultRate ?? 0.01,
        routes: [
          { routeName: "completions", rate: rates.completions ?? 0.001 },
          { pathPrefix: "/healthz", rate: rates.health ?? 0 },
        ],
        force: [{ header: "x-debug", value: "1" }, { header: "x-force-trace" }],
      },
      stats: { maxRoutes: 32 },
    },
    adaptive,
  };
  return { policy, version, updatedAt: "2026-12-02T12:00:00.000Z", updatedBy: "admin" };
}

// A synthetic traffic source whose rates the test sets per step.
class Traffic {
  rates: RouteRate[] = [];
  fail = false;
  async requestRates(): Promise<RouteRate[]> {
    if (this.fail) throw new Error("scrape failed");
    return this.rates;
  }
}

function harness(current: () => PolicyRecord, minPushIntervalMs = 0) {
  const traffic = new Traffic();
  const clock = { ms: 0 };
  const changes: string[] = [];
  const errors: string[] = [];
  const sampler = new AdaptiveSampler({
    source: traffic,
    policies: () => [current()],
    now: () => clock.ms,
    minPushIntervalMs,
    onChange: (name) => changes.push(name),
    onError: (name) => errors.push(name),
  });
  const routeRate = () => sampler.overrides("chat")?.routeRates.get(0);
  return { traffic, clock, changes, errors, sampler, routeRate };
}

describe("adaptive sampling", () => {
  it("raises a low rate by at most 50% per step and converges to the target in 6 steps", async () => {
    const h = harness(() => record({ targetTracesPerSecond: 10 }));
    h.traffic.rates = [{ route: "completions", requestsPerSecond: 1000 }];
    const seen: number[] = [];
    for (let step = 0; step < 8; step++) {
      h.clock.ms += 60_000;
      await h.sampler.step();
      seen.push(h.routeRate() as number);
    }
    const expected = [0.0015, 0.00225, 0.003375, 0.0050625, 0.00759375, 0.01, 0.01, 0.01];
    seen.forEach((rate, i) => assert.ok(Math.abs(rate - (expected[i] as number)) < 1e-12, `step ${i + 1}: ${rate}`));
    const sampledPerSecond = (seen[5] as number) * 1000;
    assert.ok(Math.abs(sampledPerSecond - 10) <= 2, `within 20%: ${sampledPerSecond}`);
    assert.equal(h.changes.length, 6);
  });

  it("decreases at once when traffic jumps", () => {
    const params = withDefaults({ targetTracesPerSecond: 10 });
    assert.equal(nextRate(0.5, 1000, params), 0.01);
    assert.equal(nextRate(0.01, 10_000, params), 0.001);
  });

  it("stays within 20% of the target under ±15% noise without flapping", async () => {
    const h = harness(() => record({ targetTracesPerSecond: 5 }, { completions: 0.002 }));
    const random = mulberry32(42);
    const step = async () => {
      h.traffic.rates = [{ route: "completions", requestsPerSecond: 1000 * (1 + (random() * 0.3 - 0.15)) }];
      h.clock.ms += 60_000;
      await h.sampler.step();
    };
    for (let i = 0; i < 10; i++) await step();
    const changesDuringWarmup = h.changes.length;
    assert.ok(changesDuringWarmup >= 2, `the rate had to move from 0.002 towards 0.005: ${changesDuringWarmup}`);
    for (let i = 0; i < 50; i++) {
      await step();
      const rate = h.routeRate() as number;
      assert.ok(Math.abs(rate * 1000 - 5) <= 1, `expected sampled ${rate * 1000}/s at mean traffic`);
    }
    assert.ok(h.changes.length - changesDuringWarmup <= 2, `changes in 50 noisy steps: ${h.changes.length - changesDuringWarmup}`);
  });

  it("keeps a floor so a rare route still gets minTracesPerMinute, and honours floorRate", () => {
    // 0.1 req/s and a target of 0.001 traces/s would mean one trace in 17 minutes; the floor keeps one a minute.
    const rare = withDefaults({ targetTracesPerSecond: 0.001 });
    const rate = nextRate(0.01, 0.1, rare);
    assert.ok(Math.abs(rate - 1 / 6) < 1e-12, String(rate));
    assert.ok(Math.abs(rate * 0.1 * 60 - 1) < 1e-9);
    // A route with 1 request a minute is sampled fully.
    assert.equal(nextRate(0.01, 1 / 60, rare), 1);
    // floorRate bounds busy routes from below.
    assert.equal(nextRate(0.5, 100_000, withDefaults({ targetTracesPerSecond: 1, floorRate: 0.05 })), 0.05);
    // Never below Jaeger's 1e-5 clamp.
    assert.equal(nextRate(0.5, 1e9, withDefaults({ targetTracesPerSecond: 1, minTracesPerMinute: 0 })), 1e-5);
    // No traffic: no information, no change.
    assert.equal(nextRate(0.2, 0, rare), 0.2);
  });

  it("leaves a rate alone while the expected sampled rate is within the tolerance band", () => {
    const params = withDefaults({ targetTracesPerSecond: 10, tolerance: 0.1 });
    assert.equal(nextRate(0.01, 1080, params), 0.01);
    assert.equal(nextRate(0.01, 920, params), 0.01);
    assert.ok(Math.abs(nextRate(0.01, 1200, params) - 10 / 1200) < 1e-12);
  });

  it("publishes at most once per minPushInterval, and a held-back step changes nothing", async () => {
    const h = harness(() => record({ targetTracesPerSecond: 10 }), 60_000);
    h.traffic.rates = [{ route: "completions", requestsPerSecond: 1000 }];
    const published: [number, number | undefined][] = [];
    for (let step = 0; step < 12; step++) {
      h.clock.ms += 10_000;
      const changed = await h.sampler.step();
      if (changed.length > 0) published.push([h.clock.ms, h.routeRate()]);
    }
    assert.deepEqual(published.map(([ms]) => ms), [10_000, 70_000]);
    assert.ok(Math.abs((published[1]?.[1] as number) - 0.00225) < 1e-12);
  });

  it("changes only sampling rates: force rules, rate-0 rules and other settings stay as configured", async () => {
    const current = record({ targetTracesPerSecond: 10 }, { defaultRate: 0.5 });
    const h = harness(() => current);
    h.traffic.rates = [
      { route: "completions", requestsPerSecond: 1000 },
      { route: "/healthz", requestsPerSecond: 50 },
      { route: "*", requestsPerSecond: 60 },
      // Routes without a rule of their own run at defaultRate: their traffic adds to the unmatched total.
      { route: "embeddings", requestsPerSecond: 30 },
      { route: "default", requestsPerSecond: 10 },
    ];
    h.clock.ms += 60_000;
    await h.sampler.step();
    const config = effectiveConfig(current.policy, h.sampler.overrides("chat"));
    assert.deepEqual(config, {
      sampling: {
        defaultRate: 0.1,
        routes: [
          { routeName: "completions", rate: 0.0015 },
          { pathPrefix: "/healthz", rate: 0 },
        ],
        force: [{ header: "x-debug", value: "1" }, { header: "x-force-trace" }],
      },
      stats: { maxRoutes: 32 },
    });
    // The stored policy itself is untouched.
    assert.equal(current.policy.pluginConfig.sampling?.defaultRate, 0.5);
  });

  it("skips a policy whose rates cannot be read, and starts over when the policy version changes", async () => {
    let current = record({ targetTracesPerSecond: 10 });
    const h = harness(() => current);
    h.traffic.rates = [{ route: "completions", requestsPerSecond: 1000 }];
    h.clock.ms += 60_000;
    await h.sampler.step();
    assert.ok(Math.abs((h.routeRate() as number) - 0.0015) < 1e-12);
    h.traffic.fail = true;
    h.clock.ms += 60_000;
    assert.deepEqual(await h.sampler.step(), []);
    assert.deepEqual(h.errors, ["chat"]);
    assert.ok(Math.abs((h.routeRate() as number) - 0.0015) < 1e-12);
    h.traffic.fail = false;
    current = record({ targetTracesPerSecond: 10 }, { completions: 0.004 }, "2");
    h.clock.ms += 60_000;
    await h.sampler.step();
    assert.ok(Math.abs((h.routeRate() as number) - 0.006) < 1e-12);
  });

  it("a new term starts from the published rates (seed), not from its own earlier state, and pushes no sooner than minPushInterval after the term began", async () => {
    const current = record({ targetTracesPerSecond: 10 });
    const traffic = new Traffic();
    const clock = { ms: 0 };
    const published: { rates?: { defaultRate?: number; routeRates: Map<number, number> } } = {};
    const sampler = new AdaptiveSampler({ source: traffic, policies: () => [current], now: () => clock.ms, minPushIntervalMs: 60_000, seed: () => published.rates });
    const routeRate = () => sampler.overrides("chat")?.routeRates.get(0);
    // First term: 1000 requests/s on completions moves its rate (up from 0.001, by at most the increase factor).
    traffic.rates = [{ route: "completions", requestsPerSecond: 1000 }];
    clock.ms = 60_000;
    sampler.reset();
    clock.ms += 60_000;
    await sampler.step();
    const own = routeRate() as number;
    assert.ok(own > 0.001, `adapted to ${own}`);
    // Another leader held the term meanwhile and published 0.002; this replica leads again.
    published.rates = { defaultRate: 0.01, routeRates: new Map([[0, 0.002]]) };
    clock.ms += 600_000;
    sampler.reset();
    traffic.rates = [{ route: "completions", requestsPerSecond: 100 }];
    clock.ms += 30_000;
    assert.deepEqual(await sampler.step(), [], "within minPushInterval of the term's start: nothing pushed");
    assert.equal(routeRate(), 0.002, "serves the published rates meanwhile");
    clock.ms += 30_000;
    await sampler.step();
    const params = withDefaults({ targetTracesPerSecond: 10 });
    // From the published 0.002 at 100 requests/s, not from its own earlier rate.
    assert.equal(routeRate(), nextRate(0.002, 100, params));
    assert.notEqual(nextRate(own, 100, params), nextRate(0.002, 100, params));
  });
});
