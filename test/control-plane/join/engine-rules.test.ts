// The engine-metric part of istio/observability/recording-rules.yaml against the pipeline's join,
// case by case and point by point: every value the join emits for the model servers' signals, the
// engine and sidecar percentiles and the outside-the-engine difference is checked by Debian's
// promtool 2.42 (`test rules`, Prometheus's own rule engine) at the very second the join computed it,
// on the same samples Prometheus would have scraped, and must be the same double (promtool compares
// exactly). At the end of each case the rules must record no series the join did not emit.
// Points are checked once the data covers the whole 5 min window (scrapes 16 s apart, so no sample
// falls on a window's edge): there Prometheus 2.42 and the current source (d15adb9), whose
// extrapolation the join follows, agree.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { checkPoints, inputSeries, promLabels, promtoolRunner, runScrapes, type JoinedPoint, type Scrape } from "../../support/promtool-case.js";
import { advance, fixture, relabel, sidecarText } from "../../support/engine-scrapes.js";
import { ruleFor } from "../../support/rule-names.js";

const ENGINE_SERIES = [
  C.MODEL_REQUESTS_WAITING, C.MODEL_REQUESTS_RUNNING, C.MODEL_KV_CACHE_USAGE, C.MODEL_PREFIX_CACHE_HIT_RATIO, C.MODEL_PREEMPTIONS_PER_SECOND,
  C.MODEL_SPEC_DECODE_ACCEPTANCE, C.MODEL_GPU_UTILIZATION, C.MODEL_LATENCY_QUANTILE, C.ROUTE_LATENCY_QUANTILE,
  C.MODEL_REQUESTS_WAITING_BY_REASON, C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO, C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE,
  C.MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN, C.MODEL_REQUEST_TPOT_QUANTILE, C.MODEL_REQUEST_PREEMPTIONS_MEAN,
];
const STEP = 16;
const STEPS = 26;
const WINDOW_SEC = 300;
const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";

const target = (kind: ScrapeTarget["kind"], pod: string, port: number, node = "gpu-node-b"): ScrapeTarget => ({
  id: `${kind}|http://${pod}:${port}/m|llm/${pod}`, kind, url: `http://${pod}:${port}/m`, intervalMs: STEP * 1000, timeoutMs: 5000, namespace: kind === "dcgm" ? "gpu-operator" : "llm", pod, node,
});

/** A target scraped every STEP seconds at `offset`, its text a function of the step. */
const every = (t: ScrapeTarget, offset: number, text: (k: number) => string, ok: (k: number) => boolean = () => true): Scrape[] =>
  Array.from({ length: STEPS }, (_, k) => ({ atSec: offset + STEP * k, target: t, text: text(k), ok: ok(k) }));

const selector = (p: JoinedPoint): string => {
  // Every label the join set, and model="" where it set none (TGI): the selector then matches one series.
  const labels = p.labels.includes("model") ? p.labels : [...p.labels, "model", ""];
  const pairs: string[] = [];
  for (let i = 0; i < labels.length; i += 2) pairs.push(`${labels[i]}=${JSON.stringify(labels[i + 1])}`);
  return `${ruleFor(p.name)}{${pairs.sort().join(",")}}`;
};

/** The join's engine points over the scrapes, and promtool's test checking each one once the window is full. */
function engineCase(scrapes: Scrape[]): { test: { promql_expr_test: { expr: string; eval_time: string; exp_samples: { labels: string; value: number }[] }[] } & Record<string, unknown>; points: JoinedPoint[]; checked: JoinedPoint[] } {
  const { input, joined } = runScrapes(scrapes);
  const first = Math.min(...scrapes.map((s) => s.atSec));
  const end = Math.max(...scrapes.map((s) => s.atSec));
  const points = joined.filter((p) => ENGINE_SERIES.includes(p.name));
  const checked = points.filter((p) => p.atMs / 1000 >= first + WINDOW_SEC + STEP);
  const tests = checked.map((p) => ({ expr: selector(p), eval_time: `${p.atMs / 1000}s`, exp_samples: [{ labels: `${ruleFor(p.name)}${promLabels(p.labels)}`, value: p.value }] }));
  // No more: the series the rules recorded within the lookback at the end are the join's.
  const recent = new Map<string, number>();
  for (const p of points) if (p.atMs / 1000 > end - WINDOW_SEC) recent.set(`${ruleFor(p.name)}${promLabels(p.labels)}`, 0);
  const counts = new Map<string, number>();
  for (const k of recent.keys()) counts.set(k.slice(0, k.indexOf("{")), (counts.get(k.slice(0, k.indexOf("{"))) ?? 0) + 1);
  tests.push({
    expr: `count by (__name__) ({__name__=~"${ENGINE_SERIES.map(ruleFor).join("|")}"})`,
    eval_time: `${end}s`,
    exp_samples: [...counts].sort().map(([name, n]) => ({ labels: `{__name__=${JSON.stringify(name)}}`, value: n })),
  });
  return { test: { interval: "1s", input_series: inputSeries(input, end), promql_expr_test: tests }, points, checked };
}

/** The join's newest value of a series, by name and a subset of its labels. */
function latest(points: JoinedPoint[], name: string, labels: Record<string, string>): number | undefined {
  const match = points.filter((p) => p.name === name && Object.entries(labels).every(([k, v]) => p.labels[p.labels.indexOf(k) + 1] === v && p.labels.indexOf(k) % 2 === 0));
  return match.at(-1)?.value;
}

let runner: ReturnType<typeof promtoolRunner>;
before(() => {
  runner = promtoolRunner();
});
after(() => runner.close());

describe("engine recording rules give the pipeline's join values, point by point (promtool test rules)", () => {
  it("vLLM with current names and two data-parallel engines, its sidecar, on a time-sliced GPU (the pod's own utilisation)", async (t) => {
    const pod = "chat-6f8d-aaaaa";
    const scrapes = [
      ...every(target("dcgm", "dcgm-b", 9400), 0, () => fixture("dcgm-time-sliced.prom")),
      ...every(target("vllm", pod, 8000), 1, (k) => advance(fixture("vllm-v1-two-engines.prom"), k, 0.05, (name, _l, v) => (name === "vllm:num_requests_waiting" ? v + (k % 3) : v))),
      ...every(target("envoy", pod, 15090), 3, (k) => sidecarText(k, [
        { route: "chat", model: LLAMA, per: 40, ttft: { 6: 2, 7: 5, 8: 2, 9: 1 }, decode: { 11: 3, 12: 6, 13: 1 } },
        { route: "summarise", model: LLAMA, per: 8, ttft: { 8: 2, 9: 5, 10: 3 }, decode: { 12: 2, 13: 8 } },
      ])),
    ];
    const { test, points, checked } = engineCase(scrapes);
    // The join's own figures first, so the case cannot pass on two wrong answers that agree.
    const model = { model: LLAMA };
    assert.equal(latest(points, C.MODEL_GPU_UTILIZATION, model), 63, "the pod's own share of the time-sliced GPU, not the GPU's 91");
    assert.equal(latest(points, C.MODEL_REQUESTS_RUNNING, model), 44, "both engines");
    assert.equal(latest(points, C.MODEL_KV_CACHE_USAGE, model), 0.625, "mean of the engines");
    assert.equal(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO, model), 0.95);
    // Accepted over drafted tokens, both engines: (2550 + 1658) / (3000 + 1950) per step.
    assert.ok(Math.abs(latest(points, C.MODEL_SPEC_DECODE_ACCEPTANCE, model)! - 4208 / 4950) < 1e-12);
    assert.ok(Math.abs(latest(points, C.MODEL_PREEMPTIONS_PER_SECOND, model)! - (1 + 0) / STEP) < 1e-12, "one preemption a step, engine 1's 4 x 5% rounds to 0");
    const q = (phase: string, quantile: string, route?: string): number | undefined =>
      latest(points, route ? C.ROUTE_LATENCY_QUANTILE : C.MODEL_LATENCY_QUANTILE, { ...model, phase, quantile, ...(route ? { route } : {}) });
    for (const phase of ["queue", "prefill", "decode", "inter_token"]) assert.ok(q(phase, "0.99")! >= q(phase, "0.5")!, phase);
    assert.equal(q("outside_ttft", "0.95", "chat"), q("ttft", "0.95", "chat")! - (q("queue", "0.95")! + q("prefill", "0.95")!));
    assert.equal(q("outside_decode", "0.5", "summarise"), q("decode", "0.5", "summarise")! - q("decode", "0.5")!);
    assert.ok(test.promql_expr_test.length > 150, `${test.promql_expr_test.length} points checked`);
    await checkPoints(t, runner.promtool, test, checked);
  });

  it("vLLM 0.10 exporting renamed and deprecated names (counted once, by the current name) and vLLM 0.8's old names, on MIG instances", async (t) => {
    const old = (text: string): string => text.replace(/^(vllm:gpu_cache_usage_perc\{[^}]*\}) \S+$/gm, "$1 0.99").replace(/^(vllm:gpu_prefix_cache_hits_total\{[^}]*\}) \S+$/gm, "$1 1000");
    const scrapes = [
      ...every(target("dcgm", "dcgm-c", 9400, "gpu-node-c"), 0, () => fixture("dcgm-mig.prom")),
      ...every(target("vllm", "chat-5b7c-ccccc", 8000, "gpu-node-c"), 1, (k) => advance(old(fixture("vllm-0.10-renamed-and-deprecated.prom")), k)),
      ...every(target("vllm", "embed-4a6b-ddddd", 8000, "gpu-node-c"), 2, (k) => advance(fixture("vllm-0.8-old-names.prom"), k)),
      ...every(target("envoy", "chat-5b7c-ccccc", 15090, "gpu-node-c"), 3, (k) => sidecarText(k, [{ route: "chat", model: LLAMA, per: 20, ttft: { 7: 3, 8: 1 }, decode: { 10: 1, 11: 4, 12: 1 } }])),
    ];
    const { test, points, checked } = engineCase(scrapes);
    const chat = { pod: "chat-5b7c-ccccc", model: LLAMA };
    const embed = { pod: "embed-4a6b-ddddd", model: LLAMA };
    assert.equal(latest(points, C.MODEL_KV_CACHE_USAGE, chat), 0.75, "the current name wins over the deprecated one's 0.99");
    assert.equal(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO, chat), 0.95, "deprecated hits (a flat 1000) not added");
    assert.equal(latest(points, C.MODEL_KV_CACHE_USAGE, embed), 0.75, "0.8's gpu_cache_usage_perc");
    assert.equal(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO, embed), 0.95, "0.8's gpu_prefix_cache_* (blocks)");
    assert.ok(latest(points, C.MODEL_LATENCY_QUANTILE, { ...embed, phase: "inter_token", quantile: "0.5" })! > 0, "0.8's time_per_output_token_seconds");
    assert.equal(latest(points, C.MODEL_GPU_UTILIZATION, chat), 87.5, "MIG instance 1: graphics engine active 0.875");
    assert.equal(latest(points, C.MODEL_GPU_UTILIZATION, embed), 25, "MIG instance 2, not the parent GPU the exporter labels with this pod");
    assert.equal(latest(points, C.MODEL_SPEC_DECODE_ACCEPTANCE, chat), undefined, "no speculative decoding configured");
    await checkPoints(t, runner.promtool, test, checked);
  });

  it("SGLang with tensor parallelism (rank 0 only), TGI without a model label, and a pod serving two models on two ports", async (t) => {
    const qwen = "Qwen/Qwen2.5-7B-Instruct";
    const scrapes = [
      ...every(target("vllm", "sgl-0", 30000, "cpu-node"), 1, (k) => advance(fixture("sglang-tp2.prom"), k, 0.05, (name, labels, v) => (name === "sglang:spec_accept_rate" ? (labels.includes('tp_rank="1"') ? 0.99 : 0.625) : v))),
      ...every(target("vllm", "tgi-0", 3000, "cpu-node"), 2, (k) => advance(fixture("tgi-router.prom"), k)),
      ...every(target("vllm", "multi-0", 8000, "cpu-node"), 0, (k) => advance(fixture("vllm-v1-two-engines.prom"), k)),
      ...every(target("vllm", "multi-0", 8001, "cpu-node"), 1, (k) => advance(relabel(fixture("vllm-v1-two-engines.prom"), LLAMA, qwen), k, 0.1)),
      ...every(target("envoy", "multi-0", 15090, "cpu-node"), 3, (k) => sidecarText(k, [
        { route: "chat", model: LLAMA, per: 10, ttft: { 6: 1, 8: 1 }, decode: { 11: 1 } },
        { route: "chat", model: qwen, per: 10, ttft: { 9: 1, 10: 1 }, decode: { 12: 1 } },
      ])),
    ];
    const { test, points, checked } = engineCase(scrapes);
    const sgl = { pod: "sgl-0", model: qwen };
    assert.equal(latest(points, C.MODEL_REQUESTS_WAITING, sgl), 5, "tp_rank 1 repeats rank 0's scheduler state: not added");
    assert.equal(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO, sgl), 0.9, "cached / prompt tokens");
    // Rank 0's gauge (rank 1's 0.99 is not read). It is steady here: promtool 2.42's avg_over_time
    // keeps a running mean where the current source (which the join follows) divides a compensated
    // sum, so a varying gauge could differ in the last bit; test/control-plane/promql/promql-functions.test.ts checks that one.
    assert.equal(latest(points, C.MODEL_SPEC_DECODE_ACCEPTANCE, sgl), 0.625, "mean of rank 0's gauge over the window");
    assert.equal(latest(points, C.MODEL_REQUESTS_WAITING, { pod: "tgi-0" }), 4);
    assert.equal(points.some((p) => p.labels.includes("tgi-0") && p.labels.includes("model")), false, "TGI names no model");
    assert.ok(latest(points, C.MODEL_LATENCY_QUANTILE, { pod: "tgi-0", phase: "queue", quantile: "0.5" })! > 0);
    // Two models in one pod stay apart, engine and route alike.
    assert.equal(latest(points, C.MODEL_REQUESTS_RUNNING, { pod: "multi-0", model: qwen }), 44);
    assert.equal(latest(points, C.MODEL_REQUESTS_RUNNING, { pod: "multi-0", model: LLAMA }), 44);
    assert.notEqual(
      latest(points, C.ROUTE_LATENCY_QUANTILE, { pod: "multi-0", model: qwen, phase: "outside_ttft", quantile: "0.5" }),
      latest(points, C.ROUTE_LATENCY_QUANTILE, { pod: "multi-0", model: LLAMA, phase: "outside_ttft", quantile: "0.5" }),
    );
    await checkPoints(t, runner.promtool, test, checked);
  });

  it("SGLang under priority scheduling (the priority=\"\" total, not the per-priority copies) and under DP attention (each attention group's writer, global tp_rank)", async (t) => {
    const qwen3 = "Qwen/Qwen3-30B-A3B";
    const deepseek = "deepseek-ai/DeepSeek-V2-Lite-Chat";
    const scrapes = [
      ...every(target("vllm", "sgl-prio-0", 30000, "cpu-node"), 1, (k) => advance(fixture("sglang-priority.prom"), k, 0.25)),
      ...every(target("vllm", "sgl-dpa-0", 30000, "cpu-node"), 2, (k) => advance(fixture("sglang-dp-attention.prom"), k, 0.25)),
    ];
    const { test, points, checked } = engineCase(scrapes);
    const prio = { pod: "sgl-prio-0", model: qwen3 };
    assert.equal(latest(points, C.MODEL_REQUESTS_WAITING, prio), 7, "the total only: priorities 0, 1 and 2 (2 + 5 + 0) are its parts");
    assert.equal(latest(points, C.MODEL_REQUESTS_RUNNING, prio), 12);
    assert.equal(latest(points, C.MODEL_KV_CACHE_USAGE, prio), 0.41, "a scheduler gauge under priority=\"\" is read");
    assert.ok(Math.abs(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO, prio)! - (62500 + 22500) / 100000) < 1e-12, "cached tokens of every cache_source over prompt tokens");
    const dpa = { pod: "sgl-dpa-0", model: deepseek };
    assert.equal(latest(points, C.MODEL_REQUESTS_WAITING, dpa), 12, "both attention groups: tp_rank 0 (dp_rank 0) and tp_rank 2 (dp_rank 1)");
    assert.equal(latest(points, C.MODEL_REQUESTS_RUNNING, dpa), 56);
    assert.equal(latest(points, C.MODEL_KV_CACHE_USAGE, dpa), 0.6, "mean of the groups' token usage");
    assert.ok(Math.abs(latest(points, C.MODEL_PREEMPTIONS_PER_SECOND, dpa)! - (1 + 3) / STEP) < 1e-12, "retractions of both groups");
    assert.ok(latest(points, C.MODEL_LATENCY_QUANTILE, { ...dpa, phase: "queue", quantile: "0.99" })! > 1, "group 1's slower queue is in the percentile");
    await checkPoints(t, runner.promtool, test, checked);
  });

  it("vLLM's waiting requests by reason, its external (KV-connector) prefix cache and preemptions per finished request; SGLang's prefix-cache hits per cache_source", async (t) => {
    const scrapes = [
      ...every(target("vllm", "kvc-0", 8000, "cpu-node"), 1, (k) => advance(fixture("vllm-waiting-by-reason-external-cache.prom"), k, 0.05, (name, labels, v) => (name === "vllm:num_requests_waiting_by_reason" && labels.includes("deferred") ? v + (k % 2) : v))),
      ...every(target("vllm", "sgl-prio-0", 30000, "cpu-node"), 2, (k) => advance(fixture("sglang-priority.prom"), k, 0.25)),
    ];
    const { test, points, checked } = engineCase(scrapes);
    const kvc = { pod: "kvc-0", model: LLAMA };
    assert.equal(latest(points, C.MODEL_REQUESTS_WAITING_BY_REASON, { ...kvc, reason: "capacity" }), 6);
    assert.equal(latest(points, C.MODEL_REQUESTS_WAITING_BY_REASON, { ...kvc, reason: "deferred" }), 3 + (STEPS - 1) % 2);
    assert.equal(latest(points, C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO, kvc), 0.25, "4000 of 16000 tokens a step");
    assert.equal(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO, kvc), 0.6, "the local cache, apart");
    assert.ok(Math.abs(latest(points, C.MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN, kvc)! - 14000 / 50) < 1e-9, "computed tokens per request: 5% of the sum over 5% of the count a step");
    assert.ok(Math.abs(latest(points, C.MODEL_REQUEST_PREEMPTIONS_MEAN, kvc)! - 80 / 1000) < 1e-12, "preemptions per finished request: the sum's rate over the count's (4 over 50 a step)");
    const tpot = (q: string): number => latest(points, C.MODEL_REQUEST_TPOT_QUANTILE, { ...kvc, quantile: q })!;
    assert.ok(tpot("0.5") > 0.025 && tpot("0.5") <= 0.05 && tpot("0.99") > tpot("0.5"), `per-request TPOT p50 ${tpot("0.5")}, p99 ${tpot("0.99")}`);
    const sgl = { pod: "sgl-prio-0", model: "Qwen/Qwen3-30B-A3B" };
    assert.ok(Math.abs(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, { ...sgl, cache_source: "device" })! - 62500 / 100000) < 1e-12, "cached tokens on the GPU over all prompt tokens");
    assert.ok(Math.abs(latest(points, C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, { ...sgl, cache_source: "host" })! - 22500 / 100000) < 1e-12, "from host memory (HiCache)");
    await checkPoints(t, runner.promtool, test, checked);
  });

  it("an engine that restarts (its counters reset) and a scrape that fails (gauges stale, ranges keep their points)", async (t) => {
    const pod = "chat-6f8d-aaaaa";
    const vllm = target("vllm", pod, 8000);
    const scrapes = [
      ...every(target("dcgm", "dcgm-b", 9400), 0, () => fixture("dcgm-time-sliced.prom")),
      // Restarted at step 21: every counter starts again near zero.
      ...every(vllm, 1, (k) => (k < 21 ? advance(fixture("vllm-v1-two-engines.prom"), k) : advance(fixture("vllm-v1-two-engines.prom"), k - 21, 0.05).replace(/^(vllm:[a-z_:]+(?:_total|_bucket|_count|_sum)\{[^}]*\}) (\S+)$/gm, (_m, s: string, v: string) => `${s} ${Math.round(Number(v) / 100)}`)), (k) => k !== 24),
    ];
    const { test, points, checked } = engineCase(scrapes);
    const at = (sec: number): JoinedPoint[] => points.filter((p) => p.atMs === sec * 1000);
    assert.deepEqual(at(1 + STEP * 24), [], "a failed scrape emits nothing");
    const after = at(1 + STEP * 25);
    assert.ok(after.some((p) => p.name === C.MODEL_PREFIX_CACHE_HIT_RATIO), "the ratio goes on across the reset");
    await checkPoints(t, runner.promtool, test, checked);
  });

  it("a sidecar whose TTFT and decode carry length classes: the route's percentiles are the unsplit ones, bit for bit, and the rules agree", async (t) => {
    const pod = "chat-6f8d-aaaaa";
    // Short requests fast, long ones slow: two different histograms per route, phase and class.
    type Routes = Parameters<typeof sidecarText>[1];
    const short: Routes = [
      { route: "chat", model: LLAMA, per: 40, ttft: { 6: 2, 7: 5, 8: 2, 9: 1 }, decode: { 11: 3, 12: 6, 13: 1 } },
      { route: "summarise", model: LLAMA, per: 8, ttft: { 8: 2, 9: 5, 10: 3 }, decode: { 12: 2, 13: 8 } },
    ];
    const long: Routes = [
      { route: "chat", model: LLAMA, per: 8, ttft: { 9: 3, 10: 5, 11: 2 }, decode: { 13: 4, 14: 6 } },
      { route: "summarise", model: LLAMA, per: 24, ttft: { 10: 1, 11: 6, 12: 3 }, decode: { 13: 5, 14: 5 } },
    ];
    const SAMPLE = /^(tokentrace_llm_(ttft|decode)_ms_\w+|tokentrace_llm_output_tokens_total)\{([^}]*)\} (\d+)$/;
    /** The two classes' expositions line by line: each classed (`split`) or added into one line. */
    const sidecar = (k: number, split: boolean): string => {
      const b = sidecarText(k, long).split("\n");
      return sidecarText(k, short).split("\n").map((line, i) => {
        const [ma, mb] = [SAMPLE.exec(line), SAMPLE.exec(b[i]!)];
        if (!ma || !mb) return line;
        const [, name, phase, labels] = ma as unknown as [string, string, string | undefined, string];
        if (!split || phase === undefined) return `${name}{${labels}} ${Number(ma[4]) + Number(mb[4])}`;
        const tag = phase === "ttft" ? "input_length" : "output_length";
        return `${name}{${labels},${tag}="le512"} ${ma[4]}\n${name}{${labels},${tag}="gt8192"} ${mb[4]}`;
      }).join("\n");
    };
    // Scrapes at 0 and 256 s, read at 256 s over 5 min: the window extrapolates 44 s, so each rate is
    // the increase times 2^-8 exactly and a sum of the classes' rates is the unsplit rate, not a bit off.
    const scrapes = (split: boolean): Scrape[] => [0, 16].map((k) => ({ atSec: k * STEP, target: target("envoy", pod, 15090), text: sidecar(k, split) }));
    const quantiles = (s: Scrape[]): JoinedPoint[] => runScrapes(s).joined.filter((p) => p.name === C.ROUTE_LATENCY_QUANTILE);
    const unsplit = quantiles(scrapes(false));
    const split = scrapes(true);
    assert.match(split[1]!.text, /^tokentrace_llm_decode_ms_bucket\{route="summarise",[^}]*,output_length="gt8192"\} \d+$/m);
    assert.equal(unsplit.length, 2 * 2 * 3, "two routes, ttft and decode, three quantiles");
    assert.deepEqual(quantiles(split), unsplit);
    const { input } = runScrapes(split);
    const test = {
      interval: "1s",
      input_series: inputSeries(input, 256),
      promql_expr_test: unsplit.map((p) => ({ expr: selector(p), eval_time: "256s", exp_samples: [{ labels: `${ruleFor(p.name)}${promLabels(p.labels)}`, value: p.value }] })),
    };
    await checkPoints(t, runner.promtool, test, unsplit);
  });

  it("fails when a rule and the join disagree by one bit (the check can fail)", async () => {
    const pod = "chat-6f8d-aaaaa";
    const { test } = engineCase([
      ...every(target("dcgm", "dcgm-b", 9400), 0, () => fixture("dcgm-time-sliced.prom")),
      ...every(target("vllm", pod, 8000), 1, (k) => advance(fixture("vllm-v1-two-engines.prom"), k)),
    ]);
    const t = test.promql_expr_test.find((x) => x.expr.startsWith(ruleFor(C.MODEL_LATENCY_QUANTILE)))!;
    const v = t.exp_samples[0]!.value;
    t.exp_samples[0]!.value = v + Math.abs(v) * Number.EPSILON * 2;
    await assert.rejects(runner.promtool(test), /FAILED/);
  });
});
