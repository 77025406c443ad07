// The demo's simulated vLLM /metrics held to what the join reads: its families, HELP texts, labels and
// buckets are those of test/fixtures/pipeline/vllm-v1-two-engines.prom (written from the vLLM source,
// commits in its header), every current vLLM name of the join's catalogue is there, and the join's
// own reader turns the scrapes into the engine's own counts (hit ratio, acceptance, preemptions,
// queue, KV cache). Driven by a fake clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { labelValue } from "../../control-plane/src/scrape/sample.js";
import { ENGINE_METRICS } from "../../control-plane/src/engine/catalogue.js";
import * as C from "../../control-plane/src/join/catalogue.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import { runScrapes, type Scrape } from "../support/promtool-case.js";
import { Engine, type EngineCounters, type EngineParams } from "./engine.js";
import { FakeClock } from "./fake-clock.js";
import { floatToGoString, VllmMetrics } from "./vllm-metrics.js";
import { loraStateOf } from "../../control-plane/src/engine/lora-info.js";

const FIXTURE = readFileSync(new URL("../fixtures/pipeline/vllm-v1-two-engines.prom", import.meta.url), "utf8");
const MODEL = "tokentrace-sim-1";

/** An engine under steady load (a request every 100 ms, 8 tenants' system prompts unless told), its metrics rendered at the given seconds. */
function scrapesOf(params: Partial<EngineParams>, atSec: number[], tenants = 8): { texts: string[]; states: ReturnType<Engine["state"]>[] } {
  const clock = new FakeClock();
  let seed = 7;
  // A fixed pseudo-random sequence: the same drafts are accepted on every run.
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const engine = new Engine(params, clock, random);
  const metrics = new VllmMetrics(engine, MODEL, 1_767_225_600_000);
  const texts: string[] = [];
  const states: ReturnType<Engine["state"]>[] = [];
  let n = 0;
  for (let t = 0; t <= atSec.at(-1)! * 1000; t += 100) {
    clock.run(t);
    engine.submit({ promptTokens: 1200 + (n % 5) * 40, prefix: { id: `tenant-${n % tenants}`, tokens: 1000 }, outputTokens: 60, onDone: () => undefined });
    n++;
    if (atSec.includes(t / 1000)) {
      texts.push(metrics.render());
      states.push(engine.state());
    }
  }
  engine.stop();
  return { texts, states };
}

test("emulated vLLM /metrics: every family is one of the source-derived fixture's, with its type, HELP text, labels and buckets; none is hidden or renamed", () => {
  const demo = parseText(scrapesOf({}, [5]).texts[0]!);
  const source = parseText(FIXTURE);
  assert.deepEqual(demo.errors, []);
  assert.ok(demo.families.size >= 15, `${demo.families.size} families`);
  for (const [name, meta] of demo.families) {
    assert.deepEqual(meta, source.families.get(name), `family ${name}: type and HELP as vLLM registers them`);
    const labelNames = (samples: typeof demo.samples): string[] => [...new Set(samples.filter((s) => s.name.startsWith(name)).flatMap((s) => s.labels.filter((_, i) => i % 2 === 0)))].sort();
    assert.deepEqual(labelNames(demo.samples), labelNames(source.samples), `family ${name}: label names`);
    if (meta.type === "histogram") {
      const bounds = (samples: typeof demo.samples): string[] => samples.filter((s) => s.name === `${name}_bucket` && labelValue(s.labels, "engine") === "0").map((s) => labelValue(s.labels, "le")!);
      assert.deepEqual(bounds(demo.samples), bounds(source.samples), `family ${name}: buckets`);
    }
  }
  // Every current vLLM name the join reads is exported (the one that needs speculative decoding too),
  // but those a later vLLM or a KV connector registers: the emulated server is the fixture's vLLM.
  const names = new Set(demo.samples.map((s) => s.name));
  for (const m of ENGINE_METRICS.filter((x) => x.server === "vllm" && x.generation === 0 && x.registeredWhen === undefined)) {
    assert.ok(names.has(m.kind === "histogram" ? `${m.name}_bucket` : m.name), `${m.name} (${m.source}) is exported`);
  }
  for (const m of ENGINE_METRICS.filter((x) => x.server === "vllm" && x.generation === 1)) assert.ok(![...names].some((n) => n.startsWith(m.name)), `${m.name} is hidden on a current server`);
  // Without speculative decoding vLLM registers no spec_decode family (SpecDecodingProm with no config).
  assert.ok(![...parseText(scrapesOf({ numSpeculativeTokens: 0 }, [5]).texts[0]!).families.keys()].some((n) => n.startsWith("vllm:spec_decode")));
});

test("emulated vLLM /metrics: floats as prometheus_client writes them (Python repr, Go's exponent past six integer digits)", () => {
  assert.deepEqual([0, 1, 0.5, 1e-5, 123456, 1234567, 1.767225600e9, Infinity].map(floatToGoString), ["0.0", "1.0", "0.5", "1e-05", "123456.0", "1.234567e+06", "1.7672256e+09", "+Inf"]);
});

test("emulated vLLM /metrics through the join's reader: prefix-cache hit ratio, speculative acceptance, preemptions/s, waiting, running and KV-cache usage are the engine's own", () => {
  // A KV cache too small for the load: prefixes are evicted and requests preempted.
  const at = [65, 75, 85];
  const { texts, states } = scrapesOf({ kvCacheTokens: 12_000, maxNumSeqs: 32, draftAcceptance: 0.6 }, at);
  const target: ScrapeTarget = { id: "vllm|demo/llm-sim-0", kind: "vllm", url: "http://llm-sim-0:8000/metrics", intervalMs: 10_000, timeoutMs: 5000, namespace: "demo", pod: "llm-sim-0", node: "n" };
  const scrapes: Scrape[] = at.map((atSec, i) => ({ atSec, target, text: texts[i]! }));
  const { joined } = runScrapes(scrapes, { rateWindowMs: 30_000 });
  const last = (name: string): number | undefined => joined.filter((p) => p.name === name && p.atMs === 85_000 && p.labels.includes(MODEL)).at(-1)?.value;
  const first = states[0]!.counters;
  const end = states[2]!.counters;
  const delta = (k: keyof EngineCounters): number => end[k] - first[k];
  for (const k of ["preemptions", "prefixCacheQueries", "specDraftTokens"] as const) {
    assert.ok(delta(k) > 0, `${k} grew`);
    // No extrapolation towards zero: each counter's first sample exceeds half its growth in the window.
    assert.ok(first[k] > delta(k) / 2, `${k}: ${first[k]} before, +${delta(k)}`);
  }
  const close = (actual: number | undefined, expected: number, what: string): void => assert.ok(actual !== undefined && Math.abs(actual - expected) <= 1e-12 * Math.abs(expected), `${what}: ${actual}, engine ${expected}`);
  close(last(C.MODEL_PREFIX_CACHE_HIT_RATIO), delta("prefixCacheHits") / delta("prefixCacheQueries"), "prefix-cache hit ratio");
  close(last(C.MODEL_SPEC_DECODE_ACCEPTANCE), delta("specAcceptedTokens") / delta("specDraftTokens"), "speculative acceptance");
  // Three samples 10 s apart in a 30 s window: rate extrapolates the 20 s they span to the window's start.
  close(last(C.MODEL_PREEMPTIONS_PER_SECOND), (delta("preemptions") * (30 / 20)) / 30, "preemptions/s");
  assert.ok(last(C.MODEL_PREFIX_CACHE_HIT_RATIO)! < 0.92 && last(C.MODEL_SPEC_DECODE_ACCEPTANCE)! < 0.8, "the pressure shows in both signals");
  assert.equal(last(C.MODEL_REQUESTS_WAITING), states[2]!.waiting);
  assert.equal(last(C.MODEL_REQUESTS_RUNNING), states[2]!.running);
  assert.equal(last(C.MODEL_KV_CACHE_USAGE), states[2]!.kvCacheUsage);
  assert.ok(joined.some((p) => p.name === C.MODEL_LATENCY_QUANTILE && p.labels.includes("queue")), "queue percentiles from the queue-time histogram");
});

test("emulated vLLM /metrics with a KV connector offloading to CPU, through the join's reader: the external prefix cache's hit ratio and the waiting requests by reason are the engine's own; without one, the external counters stay 0 and every waiting request waits on capacity", () => {
  const at = [65, 75, 85];
  const target: ScrapeTarget = { id: "vllm|demo/llm-sim-0", kind: "vllm", url: "http://llm-sim-0:8000/metrics", intervalMs: 10_000, timeoutMs: 5000, namespace: "demo", pod: "llm-sim-0", node: "n" };
  for (const kvOffloadTokens of [200_000, 0]) {
    // The cache of the test above, with 24 tenants' prompts: they are evicted from the GPU cache, and found in the CPU tier.
    const { texts, states } = scrapesOf({ kvCacheTokens: 12_000, maxNumSeqs: 32, draftAcceptance: 0.6, kvOffloadTokens }, at, 24);
    const { joined } = runScrapes(at.map((atSec, i) => ({ atSec, target, text: texts[i]! })), { rateWindowMs: 30_000 });
    const last = (name: string, reason?: string): number | undefined => joined.filter((p) => p.name === name && p.atMs === 85_000 && p.labels.includes(MODEL) && (reason === undefined || p.labels.includes(reason))).at(-1)?.value;
    const [first, end] = [states[0]!, states[2]!];
    const delta = (k: keyof EngineCounters): number => end.counters[k] - first.counters[k];
    for (const reason of ["capacity", "deferred"] as const) assert.equal(last(C.MODEL_REQUESTS_WAITING_BY_REASON, reason), end.waitingByReason[reason], `${kvOffloadTokens}: waiting on ${reason}`);
    assert.equal(end.waiting, end.waitingByReason.capacity + end.waitingByReason.deferred, "the reasons add up to the waiting requests");
    const reasons = parseText(texts[2]!).samples.filter((x) => x.name === "vllm:num_requests_waiting_by_reason").map((x) => [labelValue(x.labels, "reason"), x.value]);
    assert.deepEqual(reasons, [["capacity", end.waitingByReason.capacity], ["deferred", end.waitingByReason.deferred]], "both reasons written, capacity first");
    if (kvOffloadTokens > 0) {
      assert.ok(delta("externalPrefixCacheHits") > 0 && delta("externalPrefixCacheHits") < delta("externalPrefixCacheQueries"), `external hits ${delta("externalPrefixCacheHits")} of ${delta("externalPrefixCacheQueries")}`);
      const ratio = last(C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO);
      const expected = delta("externalPrefixCacheHits") / delta("externalPrefixCacheQueries");
      assert.ok(ratio !== undefined && Math.abs(ratio - expected) <= 1e-12 * expected, `external hit ratio ${ratio}, engine ${expected}`);
      assert.ok(states.some((x) => x.waitingByReason.deferred > 0), `a request waits for its load at a scrape: ${JSON.stringify(states.map((x) => x.waitingByReason))}`);
    } else {
      assert.deepEqual([end.counters.externalPrefixCacheQueries, end.waitingByReason.deferred], [0, 0]);
      assert.match(texts[2]!, /^vllm:external_prefix_cache_hits_total\{engine="0",model_name="tokentrace-sim-1"\} 0\.0$/m, "written, at 0");
      assert.equal(last(C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO), undefined, "no ratio of nothing");
    }
  }
});

test("emulated vLLM /metrics with LoRA (--enable-lora --max-loras 2): vllm:lora_requests_info as vLLM 005a810 writes it, a state per engine step, past ones kept, the newest the join's reader takes", () => {
  const clock = new FakeClock();
  // One request at a time, so the others wait: sql-lora's runs while chat-de's and the base model's wait.
  const engine = new Engine({ maxNumSeqs: 1, numSpeculativeTokens: 0 }, clock);
  const metrics = new VllmMetrics(engine, MODEL, 1_780_000_000_000, { lora: { maxLoras: 2 }, wallMs: () => 1_780_000_000_000 + clock.nowMs });
  assert.doesNotMatch(metrics.render(), /^vllm:lora_requests_info\{/m, "no state before the first step");
  const steps: { adapters: ReturnType<Engine["loraAdapters"]>; text: string }[] = [];
  const record = engine.onStepDone!;
  engine.onStepDone = () => {
    record();
    steps.push({ adapters: engine.loraAdapters(), text: metrics.render() });
  };
  for (const adapter of ["sql-lora", "chat-de", undefined]) engine.submit({ promptTokens: 64, outputTokens: 2, onDone: () => undefined, ...(adapter ? { adapter } : {}) });
  clock.run();
  engine.stop();
  const seen = steps.map((s) => `${s.adapters.running.join(",")}|${s.adapters.waiting.join(",")}`);
  // The step that finishes sql-lora's request reports chat-de's still waiting: the next step admits it.
  assert.deepEqual([...new Set(seen)], ["sql-lora|chat-de", "|chat-de", "chat-de|", "|"], "sql-lora runs while chat-de waits, then chat-de runs, then the base model's request alone");
  // After every step the reader the join uses finds that step's state the newest.
  for (const s of steps) {
    const state = loraStateOf(parseText(s.text).samples);
    assert.deepEqual([state?.running, state?.waiting, state?.maxLora], [s.adapters.running, s.adapters.waiting, 2]);
  }
  const last = parseText(steps.at(-1)!.text);
  assert.deepEqual(last.errors, []);
  assert.deepEqual(last.families.get("vllm:lora_requests_info"), parseText(readFileSync(new URL("../fixtures/pipeline/vllm-lora.prom", import.meta.url), "utf8")).families.get("vllm:lora_requests_info"), "type and HELP as vLLM registers the gauge");
  // One line per state ever recorded, in the order first recorded, labels sorted, each with the wall-clock time (s) it was last set.
  const lines = steps.at(-1)!.text.split("\n").filter((l) => l.startsWith("vllm:lora_requests_info{"));
  assert.deepEqual(lines.map((l) => l.replace(/ \S+$/, "")), [
    'vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora",waiting_lora_adapters="chat-de"}',
    'vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters="chat-de"}',
    'vllm:lora_requests_info{max_lora="2",running_lora_adapters="chat-de",waiting_lora_adapters=""}',
    'vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""}',
  ]);
  const lastSec = (1_780_000_000_000 + clock.nowMs) / 1000;
  assert.equal(lines[3], `vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""} ${floatToGoString(lastSec)}`);
  assert.match(lines[3]!, /\} 1\.78\d*e\+09$/);
});

test("emulated vLLM /metrics with LoRA: adapters in both lists, in the order the server first saw them, whichever order the batch has", () => {
  const clock = new FakeClock();
  const engine = new Engine({ maxNumSeqs: 2, numSpeculativeTokens: 0 }, clock);
  const metrics = new VllmMetrics(engine, MODEL, 0, { lora: { maxLoras: 2 }, wallMs: () => clock.nowMs });
  // chat-de first, then two of sql-lora: chat-de and the first sql-lora run, the second sql-lora waits.
  for (const adapter of ["chat-de", "sql-lora", "sql-lora"]) engine.submit({ promptTokens: 64, outputTokens: 3, adapter, onDone: () => undefined });
  // The first step (8 ms on the host, 24 ms on the GPU) has ended; the second is on the GPU.
  clock.run(40);
  assert.deepEqual(engine.loraAdapters(), { running: ["chat-de", "sql-lora"], waiting: ["sql-lora"] });
  assert.match(metrics.render(), /^vllm:lora_requests_info\{max_lora="2",running_lora_adapters="chat-de,sql-lora",waiting_lora_adapters="sql-lora"\} /m);
  engine.stop();
});
