// istio/observability/recording-rules.yaml against the pipeline's join, case by case: each case's
// scrapes go through the real Joiner, and the same samples, stored as Prometheus would store them
// when it scrapes the sidecars, vLLM and dcgm-exporter itself, become promtool's input series; the
// join's last value of every derived series is the expected result of the rule of that name, and
// the rule must return exactly those series, no more (Debian's promtool 2.42, `test rules`). Each
// join series is looked up under its rule's name (test/support/rule-names.ts).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { checkPoints, inputSeries, promLabels, promtoolRunner, runScrapes, type JoinedPoint, type Scrape } from "../../support/promtool-case.js";
import { ruleFor } from "../../support/rule-names.js";
import { EVAL_SEC, expectedPerAdapter, LLAMA, loraScrapes, type AdapterFigures } from "../../support/lora-scrapes.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");
const DERIVED = [C.OUTPUT_TOKENS_PER_SECOND_PER_GPU, C.GPU_SECONDS_PER_1K_TOKENS, C.TOKENS_PER_JOULE, C.ROUTE_LATENCY, C.ROUTE_GPU_UTILIZATION];

/** A selector for exactly one joined series: its name and every label it has. */
const selector = (p: JoinedPoint): string => `${p.name}${promLabels(p.labels)}`;
/** The same series under the name of the rule that records it. */
const ruleSelector = (p: JoinedPoint): string => `${ruleFor(p.name)}${promLabels(p.labels)}`;

/**
 * Runs the scrapes through the join; returns promtool's test for the same input (every derived
 * point the join emitted, checked at the second it was emitted; at `evalSec`, every rule returns
 * exactly the join's newest series, no more), the number of points and the join's last values.
 */
function promtoolCase(scrapes: Scrape[], evalSec: number): { test: unknown; points: JoinedPoint[]; expected: Map<string, number> } {
  const { input, joined } = runScrapes(scrapes);
  // POD_GPU_INFO is recorded from dcgm-exporter by the rules' own gpu-links group.
  const derived = joined.filter((p) => DERIVED.includes(p.name) && p.atMs <= evalSec * 1000);
  const expected = new Map<string, number>();
  for (const p of derived) expected.set(selector(p), p.value);
  const byName = new Map<string, { labels: string; value: number }[]>();
  for (const [series, value] of expected) {
    const name = series.slice(0, series.indexOf("{"));
    if (!byName.has(name)) byName.set(name, []);
    byName.get(name)!.push({ labels: `${ruleFor(name)}${series.slice(name.length)}`, value });
  }
  const test = {
    interval: "1s",
    input_series: inputSeries(input, evalSec),
    promql_expr_test: [
      ...derived.map((p) => ({ expr: ruleSelector(p), eval_time: `${p.atMs / 1000}s`, exp_samples: [{ labels: ruleSelector(p), value: p.value }] })),
      ...DERIVED.map((name) => ({ expr: ruleFor(name), eval_time: `${evalSec}s`, exp_samples: byName.get(name) ?? [] })),
    ],
  };
  return { test, points: derived, expected };
}

let runner: ReturnType<typeof promtoolRunner>;
const promtool = (test: unknown): Promise<string> => runner.promtool(test);
before(() => {
  runner = promtoolRunner();
});
after(() => runner.close());

const target = (kind: ScrapeTarget["kind"], pod: string, node: string, port: number): ScrapeTarget => ({
  id: `${kind}|http://${pod}:${port}/m|llm/${pod}`, kind, url: `http://${pod}:${port}/m`, intervalMs: 16000, timeoutMs: 5000, namespace: kind === "dcgm" ? "gpu" : "llm", pod, node,
});

/** Sets the value of every line of `name` whose labels contain `contains`. */
function edit(text: string, edits: [string, string, number][]): string {
  return text.split("\n").map((line) => {
    for (const [name, contains, value] of edits) if (line.startsWith(`${name}{`) && line.includes(contains)) return line.replace(/ [^ ]+$/, ` ${value}`);
    return line;
  }).join("\n");
}

describe("recording rules give the pipeline's join values (promtool test rules on the same input series)", () => {
  it("tokens per joule, tokens/s per GPU, GPU-seconds and latency phases on two GPU nodes whose exporters are scraped 14 s apart", async (t) => {
    const scrapes: Scrape[] = [];
    for (const [node, pod, offset] of [["node-a", "a", 0], ["node-b", "b", 14]] as const) {
      const dcgm = target("dcgm", `dcgm-${node}`, node, 9400);
      const envoy = target("envoy", pod, node, 15090);
      for (let k = 0; k < 4; k++) {
        const gpu = `gpu="0",UUID="GPU-${node}",modelName="NVIDIA L40S",Hostname="${node}",namespace="llm",pod="${pod}"`;
        // 200.0000625 W: 3,200,001 mJ per 16 s.
        scrapes.push({ atSec: offset + 16 * k, target: dcgm, text: `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{${gpu}} ${5_000_000_000 + 3_200_001 * k}\nDCGM_FI_DEV_GPU_UTIL{${gpu}} 50\n` });
        // 40 tokens/s; TTFT 100 ms and decode 2 s per request, 8 requests/s.
        scrapes.push({ atSec: 5 + 16 * k, target: envoy, text: [
          `tokentrace_llm_output_tokens_total{route="chat",model="m"} ${640 * k}`,
          `tokentrace_llm_ttft_ms_sum{route="chat",model="m"} ${12_800 * k}`, `tokentrace_llm_ttft_ms_count{route="chat",model="m"} ${128 * k}`,
          `tokentrace_llm_decode_ms_sum{route="chat",model="m"} ${256_000 * k}`, `tokentrace_llm_decode_ms_count{route="chat",model="m"} ${128 * k}`,
        ].join("\n") + "\n" });
      }
    }
    const { test, points, expected } = promtoolCase(scrapes, 62);
    // The join's own figures, so the case cannot pass on two wrong answers that agree.
    // 40 tokens/s over (mJ per s) / 1000: 0.19999993750001953, which a rounding to 1e-9 would change.
    const tokensPerJoule = 40 / (3_200_001 / 16 / 1000);
    assert.equal(expected.get('tokentrace_gpu_tokens_per_joule{gpu="0",gpu_model="NVIDIA L40S",gpu_uuid="GPU-node-a",hostname="node-a"}'), tokensPerJoule);
    assert.equal(expected.get('tokentrace_gpu_tokens_per_joule{gpu="0",gpu_model="NVIDIA L40S",gpu_uuid="GPU-node-b",hostname="node-b"}'), tokensPerJoule);
    assert.notEqual(Math.round(tokensPerJoule * 1e9) / 1e9, tokensPerJoule);
    assert.equal(expected.get('tokentrace_route_latency_seconds{model="m",namespace="llm",phase="decode",pod="b",route="chat"}'), 2);
    // Per pod: tokens/s per GPU, GPU-seconds, ttft, decode, GPU utilisation; per GPU: tokens per joule.
    assert.equal(expected.size, 2 * 5 + 2);
    await checkPoints(t, promtool, test, points);
  });

  it("a two-GPU pod time-sliced with a pod without a sidecar, vLLM's queue and prefill, and a sidecar restart (counters reset)", async (t) => {
    const dcgm = target("dcgm", "dcgm-a", "gpu-node-a", 9400);
    const envoy = target("envoy", "chat-7d9f-abcde", "gpu-node-a", 15090);
    const vllm = target("vllm", "chat-7d9f-abcde", "gpu-node-a", 8000);
    const scrapes: Scrape[] = [];
    for (let k = 0; k < 4; k++) {
      const t = 16 * k;
      const restarted = k === 3; // the sidecar restarted: its counters start again from zero
      scrapes.push({ atSec: t + 1, target: vllm, text: edit(fixture("vllm-chat.prom"), [
        ["vllm:request_queue_time_seconds_sum", "", 12 + 8 * k], ["vllm:request_queue_time_seconds_count", "", 400 + 128 * k],
        ["vllm:request_prefill_time_seconds_sum", "", 16 + 16 * k], ["vllm:request_prefill_time_seconds_count", "", 400 + 128 * k],
      ]) });
      scrapes.push({ atSec: t + 2, target: dcgm, text: edit(fixture("dcgm-node-a.prom"), [
        ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-1111", 9_000_000_000 + 6_400_000 * k],
        // GPU 1 was reset between the last two scrapes: 3,200,000 mJ since.
        ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-2222", k === 3 ? 3_200_000 : 7_000_000_000 + 4_800_000 * k],
      ]) });
      scrapes.push({ atSec: t + 3, target: envoy, text: edit(fixture("envoy-sidecar-chat.prom"), restarted
        ? [["tokentrace_llm_output_tokens_total", "", 320], ["tokentrace_llm_ttft_ms_sum", "", 3200], ["tokentrace_llm_ttft_ms_count", "", 64], ["tokentrace_llm_decode_ms_sum", "", 64_000], ["tokentrace_llm_decode_ms_count", "", 64]]
        : [["tokentrace_llm_output_tokens_total", "", 120_000 + 640 * k], ["tokentrace_llm_ttft_ms_sum", "", 48_000 + 12_800 * k], ["tokentrace_llm_ttft_ms_count", "", 400 + 128 * k], ["tokentrace_llm_decode_ms_sum", "", 1_040_000 + 256_000 * k], ["tokentrace_llm_decode_ms_count", "", 400 + 128 * k]]) });
    }
    // Tokens per joule needs the pods' rate before the energy delta: one more dcgm scrape.
    scrapes.push({ atSec: 66, target: dcgm, text: edit(fixture("dcgm-node-a.prom"), [
      ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-1111", 9_000_000_000 + 6_400_000 * 4], ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-2222", 6_400_000],
    ]) });
    const { test, points, expected } = promtoolCase(scrapes, 66);
    const phases = Object.fromEntries([...expected].filter(([k]) => k.startsWith(C.ROUTE_LATENCY)).map(([k, v]) => [/phase="(\w+)"/.exec(k)![1]!, v]));
    // TTFT 3200/64 ms after the restart; decode 64000/64 ms; queue 8 s / 128; prefill 16 s / 128.
    assert.deepEqual(phases, { ttft: 0.05, decode: 1, queue: 0.0625, prefill: 0.125 });
    // 320 tokens in 16 s after the reset, over 2 GPUs; GPU share 1/2 (time-sliced) + 1.
    assert.equal(expected.get('tokentrace_output_tokens_per_second_per_gpu{model="llama-3-8b",namespace="llm",pod="chat-7d9f-abcde",route="chat"}'), 10);
    assert.equal(expected.get('tokentrace_gpu_seconds_per_1k_output_tokens{model="llama-3-8b",namespace="llm",pod="chat-7d9f-abcde"}'), 75);
    assert.equal(expected.get('tokentrace_route_gpu_utilization_percent{model="llama-3-8b",namespace="llm",pod="chat-7d9f-abcde",route="chat"}'), 75.5);
    // 10 tokens/s per GPU; GPU 0 at 400 W, GPU 1 at 200 W (read through its counter reset).
    assert.deepEqual([...expected].filter(([k]) => k.startsWith(C.TOKENS_PER_JOULE)).map(([, v]) => v).sort(), [0.025, 0.05]);
    await checkPoints(t, promtool, test, points);
  });

  // Every sum here adds at most two series: promtool 2.42 adds plainly, in the order its test loader
  // happens to create series (promql/test.go loadCmd keeps them in a map), and Prometheus 3's
  // compensated sum (d15adb9, which the join follows) gives the same double for two series in any order.
  it("every point to the last bit: 15 s intervals, a GPU time-sliced three ways, two sidecars with two routes each, two vLLM engines, irregular counters", async (t) => {
    const STEP = 15;
    const dcgm = target("dcgm", "dcgm-u", "node-u", 9400);
    const a = target("envoy", "a", "node-u", 15090);
    const b = target("envoy", "b", "node-u", 15090);
    const vllm = target("vllm", "a", "node-u", 8000);
    const gpu = (n: string, pod: string): string => `gpu="${n}",UUID="GPU-u${n}",modelName="NVIDIA L40S",Hostname="node-u",namespace="llm",pod="${pod}"`;
    const scrapes: Scrape[] = [];
    // GPU 0 time-sliced by a, b and c (c has no sidecar): every copy the device's figures. Its
    // utilisation is fractional (as a MIG instance's, GR_ENGINE_ACTIVE * 100): chosen so that the
    // mean with GPU 1's is the same double under 2.42's running mean and 3's compensated one.
    const dcgmText = (k: number): string => {
      const e0 = 5_000_000_000 + 6_397_113 * k + 1009 * k * k;
      const e1 = 4_000_000_000 + 4_801_337 * k + 77 * k * k;
      return [
        ...["a", "b", "c"].flatMap((pod) => [`DCGM_FI_DEV_GPU_UTIL{${gpu("0", pod)}} 37.123456789012`, `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{${gpu("0", pod)}} ${e0}`]),
        `DCGM_FI_DEV_GPU_UTIL{${gpu("1", "a")}} 58`, `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{${gpu("1", "a")}} ${e1}`,
      ].join("\n") + "\n";
    };
    for (let k = 0; k < 6; k++) {
      scrapes.push({ atSec: STEP * k, target: dcgm, text: dcgmText(k) });
      scrapes.push({ atSec: 2 + STEP * k, target: vllm, text: [
        `vllm:request_queue_time_seconds_sum{engine="0",model_name="m1"} ${12.5 + 7.3 * k}`, `vllm:request_queue_time_seconds_count{engine="0",model_name="m1"} ${400 + 97 * k}`,
        `vllm:request_queue_time_seconds_sum{engine="1",model_name="m1"} ${9.25 + 5.9 * k}`, `vllm:request_queue_time_seconds_count{engine="1",model_name="m1"} ${300 + 89 * k}`,
        `vllm:request_prefill_time_seconds_sum{engine="0",model_name="m1"} ${16 + 11.7 * k}`, `vllm:request_prefill_time_seconds_count{engine="0",model_name="m1"} ${400 + 97 * k}`,
        `vllm:request_prefill_time_seconds_sum{engine="1",model_name="m1"} ${14 + 8.1 * k}`, `vllm:request_prefill_time_seconds_count{engine="1",model_name="m1"} ${300 + 89 * k}`,
      ].join("\n") + "\n" });
      const routes = (pod: string, list: [string, string, number][]): string => list.flatMap(([route, model, m]) => [
        `tokentrace_llm_output_tokens_total{route="${route}",model="${model}"} ${1000 * m + 997 * m * k + 13 * k * k}`,
        `tokentrace_llm_ttft_ms_sum{route="${route}",model="${model}"} ${48_000 * m + 12_811 * m * k + 7 * k * k}`, `tokentrace_llm_ttft_ms_count{route="${route}",model="${model}"} ${400 + 131 * m * k}`,
        `tokentrace_llm_decode_ms_sum{route="${route}",model="${model}"} ${1_000_000 + 257_003 * m * k}`, `tokentrace_llm_decode_ms_count{route="${route}",model="${model}"} ${400 + 127 * m * k + k}`,
      ]).join("\n") + `\n# ${pod}\n`;
      scrapes.push({ atSec: 4 + STEP * k, target: a, text: routes("a", [["chat", "m1", 3], ["summarize", "m1", 2]]) });
      scrapes.push({ atSec: 9 + STEP * k, target: b, text: routes("b", [["embed", "m3", 5], ["chat", "m2", 1]]) });
    }
    // Tokens per joule comes at exporter scrapes: one more after the sidecars' last, so the end shows the newest.
    scrapes.push({ atSec: STEP * 6, target: dcgm, text: dcgmText(6) });
    const { test, points, expected } = promtoolCase(scrapes, STEP * 6);
    // What the case covers: both GPUs' tokens per joule, a's two routes and b's two, every phase.
    assert.equal([...expected.keys()].filter((k) => k.startsWith(C.TOKENS_PER_JOULE)).length, 2);
    assert.equal([...expected.keys()].filter((k) => k.startsWith(C.OUTPUT_TOKENS_PER_SECOND_PER_GPU)).length, 4);
    assert.equal([...expected.keys()].filter((k) => k.startsWith(C.ROUTE_LATENCY) && /phase="(queue|prefill)"/.test(k)).length, 4, "a's two m1 routes");
    await checkPoints(t, promtool, test, points);
    // Most values are ones a rounding to 1e-9 would change, so the check above can tell.
    const changedByRounding = [...expected.values()].filter((v) => Math.round(v * 1e9) / 1e9 !== v).length;
    assert.ok(changedByRounding >= expected.size / 2, `${changedByRounding} of ${expected.size} newest values are not multiples of 1e-9`);
  });

  it("fails when a rule and the join disagree (the check can fail)", async () => {
    const dcgm = target("dcgm", "dcgm-a", "node-a", 9400);
    const envoy = target("envoy", "a", "node-a", 15090);
    const gpu = 'gpu="0",UUID="GPU-x",modelName="L4",Hostname="node-a",namespace="llm",pod="a"';
    const scrapes: Scrape[] = [0, 16].flatMap((t, k) => [
      { atSec: t, target: dcgm, text: `DCGM_FI_DEV_GPU_UTIL{${gpu}} 10\n` },
      { atSec: t + 1, target: envoy, text: `tokentrace_llm_output_tokens_total{route="r",model="m"} ${160 * k}\n` },
    ]);
    const { test } = promtoolCase(scrapes, 20);
    const wrong = test as { promql_expr_test: { exp_samples: { value: number }[] }[] };
    wrong.promql_expr_test[0]!.exp_samples[0]!.value += 1;
    await assert.rejects(promtool(wrong), /FAILED/);
  });
});

// Latency by length class (group tokentrace.length-classes): each class's own P99, while the
// per-(route, model) rules sum the classes away. Samples every 64 s and the rule evaluated on the
// last: the 5 min window holds 256 s of samples and extrapolates 44 s to its start, so rate() is
// four steps' increase times 2^-8 exactly ((256 + 44) / 256 / 300), and every P99 below is the one of the
// per-step increases, computed by hand.
describe("length-class recording rules give each class its own P99 (promtool test rules)", () => {
  const BOUNDS = ["100", "250", "500", "1000", "2500", "+Inf"];
  /** One class's bucket series: `perStep` requests a step by bucket, counters starting at ten steps' worth. */
  const classSeries = (name: string, tag: string, cls: string, perStep: number[]): { series: string; values: string }[] =>
    BOUNDS.map((le, i) => ({ series: `${name}_bucket{namespace="llm",pod="a",route="chat",model="m",${tag}="${cls}",le="${le}"}`, values: `${10 * perStep[i]!}+${perStep[i]}x10` }));
  const SHORT = [50, 90, 100, 100, 100, 100];
  const LONG = [0, 0, 10, 60, 100, 100];
  const rule = (name: string, tag: string, cls: string, value: number): { labels: string; value: number } =>
    ({ labels: `${name}{${tag}="${cls}",model="m",namespace="llm",quantile="0.99",route="chat"}`, value });

  it("TTFT by input_length, decode and duration by output_length on two classes each; the route's P99 is the unsplit one", async () => {
    const test = {
      interval: "64s",
      input_series: [
        ...classSeries("tokentrace_llm_ttft_ms", "input_length", "le512", SHORT), ...classSeries("tokentrace_llm_ttft_ms", "input_length", "gt8192", LONG),
        ...classSeries("tokentrace_llm_decode_ms", "output_length", "le64", SHORT), ...classSeries("tokentrace_llm_decode_ms", "output_length", "unknown", LONG),
        ...classSeries("tokentrace_llm_duration_ms", "output_length", "le64", SHORT), ...classSeries("tokentrace_llm_duration_ms", "output_length", "gt1024", LONG),
      ],
      promql_expr_test: [
        // 99 of 100 short requests by 250 + 250 * 9/10 ms; 99 of 100 long ones by 1000 + 1500 * 39/40 ms.
        { expr: "namespace_route_model_input_length:tokentrace_llm_ttft_ms:histogram_quantile_rate5m", eval_time: "640s", exp_samples: [
          rule("namespace_route_model_input_length:tokentrace_llm_ttft_ms:histogram_quantile_rate5m", "input_length", "gt8192", 2462.5),
          rule("namespace_route_model_input_length:tokentrace_llm_ttft_ms:histogram_quantile_rate5m", "input_length", "le512", 475),
        ] },
        { expr: "namespace_route_model_output_length:tokentrace_llm_decode_ms:histogram_quantile_rate5m", eval_time: "640s", exp_samples: [
          rule("namespace_route_model_output_length:tokentrace_llm_decode_ms:histogram_quantile_rate5m", "output_length", "le64", 475),
          rule("namespace_route_model_output_length:tokentrace_llm_decode_ms:histogram_quantile_rate5m", "output_length", "unknown", 2462.5),
        ] },
        { expr: "namespace_route_model_output_length:tokentrace_llm_duration_ms:histogram_quantile_rate5m", eval_time: "640s", exp_samples: [
          rule("namespace_route_model_output_length:tokentrace_llm_duration_ms:histogram_quantile_rate5m", "output_length", "gt1024", 2462.5),
          rule("namespace_route_model_output_length:tokentrace_llm_duration_ms:histogram_quantile_rate5m", "output_length", "le64", 475),
        ] },
        // Both classes together: 198 of 200 by 1000 + 1500 * 38/40 ms, one series per phase as before the classes.
        ...["ttft", "decode"].map((phase) => ({
          expr: `namespace_pod_route_model:tokentrace_route_latency_seconds:histogram_quantile_rate5m{phase="${phase}", quantile="0.99"}`,
          eval_time: "640s",
          exp_samples: [{ labels: `namespace_pod_route_model:tokentrace_route_latency_seconds:histogram_quantile_rate5m{model="m",namespace="llm",phase="${phase}",pod="a",quantile="0.99",route="chat"}`, value: 2.425 }],
        })),
      ],
    };
    await runner.promtool(test);
  });
});

// Per LoRA adapter and its base model (group tokentrace.lora-adapters): the filter's series of an
// adapter's requests carry the adapter as `model`; the join's tokentrace_model_lora_adapter_info
// names its base model per (namespace, pod, model). The input is what the pipeline writes (the
// sidecars' series it forwards, with namespace and pod, and the info series it derives from vLLM's
// /metrics and /v1/models), as a ruler beside the pipeline reads it.
describe("LoRA adapter recording rules relate the filter's per-model series to the base model (promtool test rules)", () => {
  it("two adapters of meta-llama/Llama-3.1-8B-Instruct, one on two pods: requests, tokens and P99 TTFT and duration per (namespace, base_model, model); the base model's own traffic and idle adapters give nothing", async () => {
    const { scrapes, adapterParents } = loraScrapes();
    const { joined } = runScrapes(scrapes, { adapterParents });
    const infos = joined.filter((p) => p.name === C.MODEL_LORA_ADAPTER_INFO && p.atMs === EVAL_SEC * 1000).map((p) => promLabels(p.labels)).sort();
    assert.deepEqual(infos, ["lora-0", "lora-1"].flatMap((pod) => ["chat-de", "idle-lora", "sql-lora", "support-fr"].map((model) => `{base_model="${LLAMA}",model="${model}",namespace="llm",pod="${pod}"}`)).sort(), "the join relates every listed adapter of each pod to its base model");
    const stored = new Map<string, Map<number, string>>();
    for (const p of joined) {
      const key = `${p.name}${promLabels(p.labels)}`;
      if (!stored.has(key)) stored.set(key, new Map());
      stored.get(key)!.set(p.atMs / 1000, String(p.value));
    }
    const expected = expectedPerAdapter();
    // sql-lora: 128 + 64 requests a step over two pods, chat-de 64; P99 TTFT 2320 and 490 ms, duration 2455 and 990 ms (by hand).
    assert.deepEqual([...expected].map(([m, e]) => [m, e.requests, e.inputTokens, e.outputTokens]), [["sql-lora", 3, 768, 96], ["chat-de", 1, 512, 64]]);
    assert.deepEqual([...expected].map(([, e]) => [e.ttftP99, e.durationP99].map((v) => Math.round(v * 1e6) / 1e6)), [[2320, 2455], [490, 990]]);
    const records: [string, keyof AdapterFigures, string][] = [
      ["namespace_base_model_model:tokentrace_llm_requests:rate5m", "requests", ""],
      ["namespace_base_model_model:tokentrace_llm_input_tokens:rate5m", "inputTokens", ""],
      ["namespace_base_model_model:tokentrace_llm_output_tokens:rate5m", "outputTokens", ""],
      ["namespace_base_model_model:tokentrace_llm_ttft_ms:histogram_quantile_rate5m", "ttftP99", ',quantile="0.99"'],
      ["namespace_base_model_model:tokentrace_llm_duration_ms:histogram_quantile_rate5m", "durationP99", ',quantile="0.99"'],
    ];
    const test = {
      interval: "1s",
      input_series: inputSeries(stored, EVAL_SEC),
      promql_expr_test: records.map(([record, key, extra]) => ({
        expr: record,
        eval_time: `${EVAL_SEC}s`,
        exp_samples: [...expected].map(([model, e]) => ({ labels: `${record}{base_model="${LLAMA}",model="${model}",namespace="llm"${extra}}`, value: e[key] })),
      })),
    };
    assert.match(await promtool(test), /SUCCESS/);
  });
});
