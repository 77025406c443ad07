// Live tail-keep thresholds on a schedule (control-plane/src/adaptive/live-scheduler.ts) and the
// windows they read from the pipeline (pipeline-histograms.ts): thresholds go to the policies that
// ask for tail keep without thresholds of their own, a publish per policy at most every
// minPushIntervalMs (a WasmPlugin update reconfigures every sidecar), and the served config
// carries them in spans.keep.live (policy/effective.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LiveThresholdScheduler } from "../../../control-plane/src/adaptive/live-scheduler.js";
import type { PairWindow } from "../../../control-plane/src/adaptive/live-thresholds.js";
import { PipelineHistogramSource } from "../../../control-plane/src/adaptive/pipeline-histograms.js";
import { effectiveConfig } from "../../../control-plane/src/policy/effective.js";
import type { Policy, PolicyRecord } from "../../../control-plane/src/policy/model.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { samplePolicy } from "../helpers.js";

const T0 = 1_700_000_000_000;

/** A cumulative histogram of `n` requests spread evenly over (0, maxMs], buckets every 100 ms. */
function even(n: number, maxMs: number): Map<number, number> {
  const h = new Map<number, number>();
  for (let le = 100; le <= maxMs; le += 100) h.set(le, Math.round((n * le) / maxMs));
  h.set(Infinity, n);
  return h;
}

const record = (policy: Policy): PolicyRecord => ({ policy, version: "1", updatedAt: "", updatedBy: "" });
const withKeep = (name: string, keep: object): PolicyRecord => record(samplePolicy(name, { pluginConfig: { sampling: { defaultRate: 0.01 }, spans: { cluster: "otel", keep } } }));

function scheduler(windows: Map<string, PairWindow[]>, records: PolicyRecord[], clock: { ms: number }, minPushIntervalMs: number): { s: LiveThresholdScheduler; changes: string[] } {
  const changes: string[] = [];
  const s = new LiveThresholdScheduler({
    source: { windows: (name) => windows.get(name) ?? [] },
    policies: () => records,
    now: () => clock.ms,
    minPushIntervalMs,
    onChange: (name) => changes.push(name),
  });
  return { s, changes };
}

describe("live thresholds on a schedule", () => {
  it("publishes each pair's P95 for the policies with spans.keep and no live of their own; the rest get none", () => {
    const clock = { ms: T0 };
    const windows = new Map([
      ["keeps", [{ route: "chat", model: "m", duration: even(1000, 1000), ttft: even(1000, 200) }]],
      ["plain", [{ route: "chat", model: "m", duration: even(1000, 1000) }]],
      ["manual", [{ route: "chat", model: "m", duration: even(1000, 1000) }]],
    ]);
    const records = [
      withKeep("keeps", { errors: true }),
      record(samplePolicy("plain")),
      withKeep("manual", { live: [{ route: "chat", durationMs: 5 }] }),
    ];
    const { s, changes } = scheduler(windows, records, clock, 0);
    assert.deepEqual(s.step(), ["keeps"]);
    assert.deepEqual(changes, ["keeps"]);
    assert.deepEqual(s.live("keeps"), [{ route: "chat", model: "m", durationMs: 950, ttftMs: 190 }]);
    assert.equal(s.live("plain"), undefined);
    assert.equal(s.live("manual"), undefined);
    assert.deepEqual(s.step(), [], "the same windows change nothing");
  });

  it("publishes a policy's change at most once per minPushIntervalMs, and computes the next from what the filters run with", () => {
    const clock = { ms: T0 };
    const windows = new Map([["keeps", [{ route: "chat", model: "m", duration: even(1000, 1000) }]]]);
    const { s } = scheduler(windows, [withKeep("keeps", { errors: true })], clock, 60_000);
    assert.deepEqual(s.step(), ["keeps"]);
    assert.equal(s.live("keeps")?.[0]?.durationMs, 950);
    // Slower 10 s later: a rise, held by the push limit.
    clock.ms += 10_000;
    windows.set("keeps", [{ route: "chat", model: "m", duration: even(1000, 1200) }]);
    assert.deepEqual(s.step(), []);
    assert.equal(s.live("keeps")?.[0]?.durationMs, 950);
    clock.ms += 50_000;
    assert.deepEqual(s.step(), ["keeps"]);
    assert.equal(s.live("keeps")?.[0]?.durationMs, 1140);
  });

  it("withdraws the thresholds of a policy that is gone or no longer keeps", () => {
    const clock = { ms: T0 };
    const windows = new Map([["keeps", [{ route: "chat", model: "m", duration: even(1000, 1000) }]]]);
    const records = [withKeep("keeps", { errors: true })];
    const { s } = scheduler(windows, records, clock, 0);
    s.step();
    records[0] = record(samplePolicy("keeps"));
    assert.deepEqual(s.step(), ["keeps"]);
    assert.equal(s.live("keeps"), undefined);
  });
});

describe("the served config carries live thresholds", () => {
  const live = [{ route: "chat", model: "m", durationMs: 950 }];
  it("in spans.keep.live of a policy with spans.keep, leaving sampling as the policy has it when no rates moved", () => {
    const policy = withKeep("keeps", { errors: true }).policy;
    const config = effectiveConfig(policy, { routeRates: new Map(), keepLive: live });
    assert.deepEqual(config.spans, { cluster: "otel", keep: { errors: true, live } });
    assert.deepEqual(config.sampling, { defaultRate: 0.01 });
    assert.deepEqual(policy.pluginConfig.spans, { cluster: "otel", keep: { errors: true } }, "the record is not changed");
  });
  it("never in a policy without spans.keep, nor over a hand-written live", () => {
    assert.equal(effectiveConfig(samplePolicy("plain"), { routeRates: new Map(), keepLive: live }).spans, undefined);
    const manual = withKeep("manual", { live: [{ route: "chat", durationMs: 5 }] }).policy;
    assert.deepEqual(effectiveConfig(manual, { routeRates: new Map(), keepLive: live }).spans, { cluster: "otel", keep: { live: [{ route: "chat", durationMs: 5 }] } });
  });
});

/** A joined duration bucket series of a sidecar, as the pipeline ships it. */
function bucket(name: string, route: string, model: string, le: string, value: number, extra: string[] = []): WriteSeries {
  return { labels: ["__name__", name, "le", le, "model", model, "namespace", "llm", ...extra, "route", route], samples: [{ value, timestampMs: T0 }] };
}

function buckets(h: Map<number, number>, route = "chat", model = "m", extra: string[] = [], name = "tokentrace_llm_duration_ms_bucket"): WriteSeries[] {
  return [...h].map(([le, v]) => bucket(name, route, model, le === Infinity ? "+Inf" : String(le), v, extra));
}

const add = (a: Map<number, number>, b: Map<number, number>): Map<number, number> => new Map([...a].map(([le, v]) => [le, v + (b.get(le) ?? 0)]));

describe("windows from the pipeline's histograms", () => {
  const source = (now: { ms: number }): PipelineHistogramSource =>
    new PipelineHistogramSource({ namespaceOf: (p) => ({ keeps: "llm", other: "offline" })[p], now: () => now.ms, windowMs: 60_000, maxAgeMs: 30_000 });
  const batch = (id: string, timestampMs: number, namespace = "llm"): { target: { id: string; kind: string; namespace: string }; timestampMs: number } => ({ target: { id, kind: "envoy", namespace }, timestampMs });

  it("takes each pod's latest scrape minus the one a window earlier, summed over the pods and pod_ip of the policy's namespace", () => {
    const now = { ms: T0 };
    const h = source(now);
    const early = even(100, 1000);
    const late = add(early, even(1000, 1000));
    h.observe(buckets(early), batch("a", T0));
    assert.deepEqual(h.windows("keeps"), [], "one scrape is no window");
    h.observe(buckets(late), batch("a", T0 + 30_000));
    // Pod b: a waypoint's two destination pods, summed.
    h.observe([...buckets(early, "chat", "m", ["pod_ip", "10.0.0.1"]), ...buckets(early, "chat", "m", ["pod_ip", "10.0.0.2"])], batch("b", T0));
    h.observe([...buckets(late, "chat", "m", ["pod_ip", "10.0.0.1"]), ...buckets(early, "chat", "m", ["pod_ip", "10.0.0.2"])], batch("b", T0 + 30_000));
    h.observe(buckets(late), batch("c", T0 + 30_000, "offline"));
    now.ms = T0 + 30_000;
    const w = h.windows("keeps");
    assert.equal(w.length, 1);
    assert.deepEqual(w[0]!.duration, new Map([...even(1000, 1000)].map(([le, v]) => [le, 2 * v])));
    assert.equal(w[0]!.ttft, undefined);
  });

  it("sums a pair's output_length classes: the window of three classes is the unsplit one", () => {
    const now = { ms: T0 };
    const h = source(now);
    const early = even(100, 1000);
    const late = add(early, even(1000, 1000));
    // Class i holds floor((v + i) / 3) of each bucket: cumulative, and the three add up to v.
    const classed = (hist: Map<number, number>): WriteSeries[] => ["le64", "le256", "unknown"].flatMap((cls, i) =>
      buckets(new Map([...hist].map(([le, v]) => [le, Math.floor((v + i) / 3)])), "chat", "m", ["output_length", cls]));
    h.observe(classed(early), batch("a", T0));
    h.observe(classed(late), batch("a", T0 + 30_000));
    now.ms = T0 + 30_000;
    assert.deepEqual(h.windows("keeps").map((w) => [w.route, w.model, w.duration]), [["chat", "m", even(1000, 1000)]]);
  });

  it("a window spans about windowMs: older scrapes stop counting", () => {
    const now = { ms: T0 };
    const h = source(now);
    let total = new Map<number, number>([[100, 0], [Infinity, 0]]);
    for (let i = 0; i <= 12; i++) {
      // 10 requests under 100 ms every 10 s.
      total = add(total, new Map([[100, 10], [Infinity, 10]]));
      h.observe(buckets(total), batch("a", T0 + i * 10_000));
    }
    now.ms = T0 + 120_000;
    assert.equal(h.windows("keeps")[0]!.duration.get(Infinity), 60, "the last 60 s: six scrapes' worth");
  });

  it("a sidecar that restarted counts from zero; one not scraped for maxAgeMs no longer counts", () => {
    const now = { ms: T0 };
    const h = source(now);
    h.observe(buckets(even(1000, 1000)), batch("a", T0));
    h.observe(buckets(even(40, 1000)), batch("a", T0 + 10_000));
    now.ms = T0 + 10_000;
    assert.equal(h.windows("keeps")[0]!.duration.get(Infinity), 40);
    now.ms = T0 + 50_000;
    assert.deepEqual(h.windows("keeps"), []);
  });

  it("forgets the pods gone (a rollout's old ones) even when no window is asked for (live thresholds off): it holds the pods scraped within maxAgeMs", () => {
    const now = { ms: T0 };
    const h = source(now);
    // A rollout every minute for an hour: each pod scraped for a minute, then gone.
    for (let minute = 0; minute < 60; minute++) for (let s = 0; s < 60; s += 15) h.observe(buckets(even(s, 1000)), batch(`pod-${minute}`, T0 + minute * 60_000 + s * 1000));
    assert.ok(h.targetCount <= 2, `${h.targetCount} pods held`);
  });
});
