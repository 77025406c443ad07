import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner, counterDelta } from "../../../control-plane/src/join/joiner.js";
import { cleanLabels, enrichedLabels, sanitizeLabelName, MAX_LABEL_VALUE_LENGTH } from "../../../control-plane/src/join/labels.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { mulberry32 } from "../../support/mulberry32.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");

const CHAT: ScrapeTarget = { id: "envoy|http://10.0.0.5:15090/stats/prometheus|llm/chat-7d9f-abcde", kind: "envoy", url: "http://10.0.0.5:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "chat-7d9f-abcde", node: "gpu-node-a" };
const DCGM: ScrapeTarget = { id: "dcgm/gpu-operator/dcgm-a", kind: "dcgm", url: "http://10.0.0.9:9400/metrics", intervalMs: 15000, timeoutMs: 5000, namespace: "gpu-operator", pod: "dcgm-a", node: "gpu-node-a" };
const VLLM: ScrapeTarget = { ...CHAT, id: "vllm/llm/chat-7d9f-abcde", kind: "vllm", url: "http://10.0.0.5:8000/metrics" };
const T0 = 1_800_000_000_000;

function result(target: ScrapeTarget, text: string, ts: number): ScrapeResult {
  const p = parseText(text);
  return { target, timestampMs: ts, durationMs: 12, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}

/** Replaces `name{...labels} value` lines' values by name and a label substring. */
function edit(text: string, edits: [string, string, string][]): string {
  return text.split("\n").map((line) => {
    for (const [name, contains, value] of edits) {
      if (line.startsWith(name + "{") && line.includes(contains)) return line.replace(/ [^ ]+$/, ` ${value}`);
    }
    return line;
  }).join("\n");
}

const find = (out: WriteSeries[], name: string, ...pairs: string[]): WriteSeries[] =>
  out.filter((s) => s.labels.includes(name) && pairs.every((p, i) => i % 2 === 1 || s.labels.some((v, j) => j % 2 === 0 && v === p && s.labels[j + 1] === pairs[i + 1])));

const labelsOf = (s: WriteSeries): Record<string, string> => Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!]));

describe("join", () => {
  it("attaches the pod identity from the target and both GPUs of a two-GPU pod to the filter's series", () => {
    const j = new Joiner();
    j.join(result(DCGM, fixture("dcgm-node-a.prom"), T0));
    const out = j.join(result(CHAT, fixture("envoy-sidecar-chat.prom"), T0 + 1000));
    const s = find(out, "tokentrace_requests_total", "status_class", "5xx");
    assert.equal(s.length, 1);
    assert.deepEqual(labelsOf(s[0]!), {
      route: "chat", status_class: "5xx", namespace: "llm", pod: "chat-7d9f-abcde",
      gpu: "0,1", gpu_uuid: "GPU-1111aaaa-0000-4000-8000-000000000000,GPU-2222bbbb-0000-4000-8000-000000000000",
      gpu_model: "NVIDIA H100 80GB HBM3", hostname: "gpu-node-a", gpu_count: "2", gpu_attribution: "pod", __name__: "tokentrace_requests_total",
    });
    assert.deepEqual(s[0]!.samples, [{ value: 12, timestampMs: T0 + 1000 }]);
    // Envoy's own stats are not forwarded by default; up and scrape_duration_seconds are.
    assert.equal(find(out, "envoy_server_live").length, 0);
    assert.deepEqual(find(out, "up").map((x) => [labelsOf(x), x.samples[0]!.value]), [[{ __name__: "up", job: "envoy", instance: "10.0.0.5:15090", metrics_path: "/stats/prometheus", namespace: "llm", pod: "chat-7d9f-abcde" }, 1]]);
    assert.equal(find(out, "scrape_duration_seconds")[0]!.samples[0]!.value, 0.012);
  });

  it("reports scrape_duration_seconds as Prometheus does: whole nanoseconds, then Go's Duration.Seconds (not ms / 1000)", () => {
    const seconds = (durationMs: number): number => {
      const j = new Joiner();
      return find(j.join({ ...result(CHAT, "", T0), durationMs }), "scrape_duration_seconds")[0]!.samples[0]!.value;
    };
    // 2 s + 718281828 ns / 1e9, where 2718.281828 / 1000 gives 2.7182818280000003.
    assert.equal(seconds(2718.281828), 2.718281828);
    assert.equal(seconds(12.345678), 0.012345678);
    assert.equal(seconds(5), 0.005);
  });

  it("reports the state of each (pod, GPU) link, with the number of pods sharing a time-sliced GPU", () => {
    const j = new Joiner();
    j.join(result(DCGM, fixture("dcgm-node-a.prom"), T0));
    const out = j.join(result(CHAT, fixture("envoy-sidecar-chat.prom"), T0 + 1000));
    const util = find(out, "tokentrace_pod_gpu_utilization_percent").map((s) => [labelsOf(s).gpu, labelsOf(s).gpu_pods, s.samples[0]!.value]);
    assert.deepEqual(util, [["0", "2", 87], ["1", "1", 64]]);
    assert.deepEqual(find(out, "tokentrace_pod_gpu_memory_used_bytes").map((s) => s.samples[0]!.value), [61234 * 1048576, 40960 * 1048576]);
    assert.deepEqual(find(out, "tokentrace_pod_gpu_power_watts").map((s) => s.samples[0]!.value), [512.25, 401.5]);
    assert.deepEqual(find(out, "tokentrace_pod_gpu_sm_active_ratio").map((s) => s.samples[0]!.value), [0.812, 0.59]);
    assert.deepEqual(j.gpuIndex.podsOfGpu("GPU-1111aaaa-0000-4000-8000-000000000000"), ["llm/chat-7d9f-abcde", "llm/embed-5c4b-fghij"]);
    const info = find(out, "tokentrace_pod_gpu_info").map((s) => [labelsOf(s).pod, labelsOf(s).gpu, labelsOf(s).gpu_model, labelsOf(s).gpu_pods, s.samples[0]!.value]);
    assert.deepEqual(info, [["chat-7d9f-abcde", "0", "NVIDIA H100 80GB HBM3", "2", 1], ["chat-7d9f-abcde", "1", "NVIDIA H100 80GB HBM3", "1", 1]]);
  });

  it("emits the (pod, GPU) info series even when dcgm-exporter reports none of the state fields", () => {
    const j = new Joiner();
    j.join(result(DCGM, 'DCGM_FI_DEV_SM_CLOCK{gpu="3",UUID="GPU-x",modelName="L4",Hostname="n",namespace="a",pod="p"} 1500\n', T0));
    const out = j.join(result({ ...CHAT, namespace: "a", pod: "p", id: "e/a/p" }, "tokentrace_requests_total{route=\"r\"} 1\n", T0 + 1));
    assert.equal(find(out, "tokentrace_pod_gpu_utilization_percent").length, 0);
    assert.deepEqual(find(out, "tokentrace_pod_gpu_info").map((s) => [labelsOf(s).gpu_uuid, labelsOf(s).gpu_model, s.samples[0]!.value]), [["GPU-x", "L4", 1]]);
  });

  it("falls back to the node's unmapped GPUs for a pod dcgm-exporter did not map, and reads the lower-case hostname label", () => {
    const j = new Joiner();
    const dcgm = fixture("dcgm-node-a.prom").replaceAll("Hostname=", "hostname=");
    j.setTargets([DCGM]);
    j.join(result(DCGM, dcgm, T0));
    const solo: ScrapeTarget = { ...CHAT, id: "envoy/llm/solo", pod: "solo" };
    // dcgm-exporter's last answer predates the pod: held until its next one says the pod is unmapped.
    assert.equal(find(j.join(result(solo, "tokentrace_requests_total{route=\"r\",status_class=\"2xx\"} 1\n", T0 + 1)), "tokentrace_requests_total").length, 0);
    const out = j.join(result(DCGM, dcgm, T0 + 15000));
    const l = labelsOf(find(out, "tokentrace_requests_total")[0]!);
    assert.deepEqual([l.gpu, l.gpu_uuid, l.hostname, l.gpu_attribution, l.pod], ["2", "GPU-3333cccc-0000-4000-8000-000000000000", "gpu-node-a", "node", "solo"]);
    // A pod on a node no dcgm-exporter runs on has no GPU to wait for: shipped at once, with its node.
    const elsewhere: ScrapeTarget = { ...solo, id: "envoy/llm/far", pod: "far", node: "cpu-node-b" };
    const l2 = labelsOf(find(j.join(result(elsewhere, "tokentrace_requests_total{route=\"r\"} 1\n", T0 + 15002)), "tokentrace_requests_total")[0]!);
    assert.deepEqual([l2.gpu, l2.hostname], [undefined, "cpu-node-b"]);
  });

  it("keeps MIG instances of one GPU apart (an instance's utilisation is its graphics engine activity)", () => {
    const j = new Joiner();
    const mig = [
      'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-m",modelName="A100",Hostname="n",GPU_I_PROFILE="1g.10gb",GPU_I_ID="1",namespace="a",pod="p1"} 0.1',
      'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-m",modelName="A100",Hostname="n",GPU_I_PROFILE="1g.10gb",GPU_I_ID="2",namespace="a",pod="p2"} 0.2',
    ].join("\n");
    j.join(result(DCGM, mig, T0));
    const p1 = j.join(result({ ...CHAT, namespace: "a", pod: "p1", id: "e/a/p1" }, "tokentrace_requests_total{route=\"r\"} 1\n", T0 + 1));
    assert.deepEqual(find(p1, "tokentrace_pod_gpu_utilization_percent").map((s) => [labelsOf(s).gpu_uuid, labelsOf(s).gpu_pods, s.samples[0]!.value]), [["GPU-m/mig1", "1", 10]]);
  });

  it("derives tokens/s per GPU, GPU-seconds per 1k tokens and the latency attribution from consecutive scrapes", () => {
    const j = new Joiner();
    j.join(result(DCGM, fixture("dcgm-node-a.prom"), T0));
    j.join(result(VLLM, fixture("vllm-chat.prom"), T0));
    const envoy = fixture("envoy-sidecar-chat.prom");
    assert.equal(find(j.join(result(CHAT, envoy, T0)), "tokentrace_output_tokens_per_second_per_gpu").length, 0, "no rate from one scrape");
    // 15 s later: +1500 output tokens, +100 requests with TTFT sum +12000 ms and duration sum +300000 ms.
    j.join(result(VLLM, edit(fixture("vllm-chat.prom"), [
      ["vllm:request_queue_time_seconds_sum", "", "13.0"], ["vllm:request_queue_time_seconds_count", "", "500.0"],
      ["vllm:request_prefill_time_seconds_sum", "", "21.0"], ["vllm:request_prefill_time_seconds_count", "", "500.0"],
    ]), T0 + 15000));
    const out = j.join(result(CHAT, edit(envoy, [
      ["tokentrace_llm_output_tokens_total", "", "121500"],
      ["tokentrace_llm_ttft_ms_sum", "", "60000"], ["tokentrace_llm_ttft_ms_count", "", "500"],
      ["tokentrace_llm_duration_ms_sum", "", "1100000"], ["tokentrace_llm_duration_ms_count", "", "500"],
      ["tokentrace_llm_decode_ms_sum", "", "1330000"], ["tokentrace_llm_decode_ms_count", "", "500"],
    ]), T0 + 15000));
    // 1500 tokens / 15 s / 2 GPUs
    assert.deepEqual(find(out, "tokentrace_output_tokens_per_second_per_gpu").map((s) => [labelsOf(s).route, labelsOf(s).model, s.samples[0]!.value]), [["chat", "llama-3-8b", 50]]);
    // GPU share 1/2 (GPU 0 time-sliced with the embed pod) + 1 (GPU 1) = 1.5; 1.5 * 15 s / 1.5k tokens
    assert.deepEqual(find(out, "tokentrace_gpu_seconds_per_1k_output_tokens").map((s) => s.samples[0]!.value), [15]);
    const phases = Object.fromEntries(find(out, "tokentrace_route_latency_seconds").map((s) => [labelsOf(s).phase, s.samples[0]!.value]));
    // TTFT 12000 ms / 100; decode from the filter's decode histogram, 290000 ms / 100 (not duration
    // minus TTFT, which would read 2.88 s); queue 5 s / 100; prefill 5 s / 100. Each as the rule
    // computes it, irate(sum) / irate(count) over the 15 s interval (decode 2.8999999999999995, not 2.9).
    const perRequest = (sum: number, count: number): number => sum / 15 / (count / 15);
    assert.deepEqual(phases, { ttft: perRequest(12000, 100) / 1000, decode: perRequest(290000, 100) / 1000, queue: perRequest(5, 100), prefill: perRequest(5, 100) });
    assert.equal(phases.decode, 2.8999999999999995);
    assert.deepEqual(find(out, "tokentrace_route_gpu_utilization_percent").map((s) => s.samples[0]!.value), [75.5]);
    // Once the vLLM target is gone, its queue and prefill figures go with it.
    j.removeTarget(VLLM);
    const later = j.join(result(CHAT, edit(envoy, [
      ["tokentrace_llm_output_tokens_total", "", "121500"], ["tokentrace_llm_ttft_ms_sum", "", "72000"], ["tokentrace_llm_ttft_ms_count", "", "600"],
      ["tokentrace_llm_decode_ms_sum", "", "1330000"], ["tokentrace_llm_decode_ms_count", "", "500"],
    ]), T0 + 30000));
    assert.deepEqual(find(later, "tokentrace_route_latency_seconds").map((s) => labelsOf(s).phase), ["ttft"]);
  });

  it("derives tokens per joule per GPU from the pods' token rate and the energy counter's delta, reading a fallen counter as a reset", () => {
    const j = new Joiner();
    const dcgm = fixture("dcgm-node-a.prom");
    const envoy = fixture("envoy-sidecar-chat.prom");
    j.join(result(DCGM, dcgm, T0));
    j.join(result(CHAT, envoy, T0));
    // chat: 3000 tokens in 10 s = 300 tokens/s over 2 GPUs = 150 per GPU.
    j.join(result(CHAT, edit(envoy, [["tokentrace_llm_output_tokens_total", "", "123000"]]), T0 + 10000));
    // 15 s of dcgm: GPU 1 used 6000 J (400 W), GPU 0 3000 J (200 W).
    const out = j.join(result(DCGM, edit(dcgm, [["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-2222", "7006000000"], ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-1111", "9003000000"]]), T0 + 15000));
    const tpj = Object.fromEntries(find(out, "tokentrace_gpu_tokens_per_joule").map((s) => [labelsOf(s).gpu, s.samples[0]!.value]));
    // GPU 0 also serves the embed pod, which has no sidecar (no rate): only chat's share counts.
    // GPU 2 has no pod: no figure.
    assert.deepEqual(tpj, { "0": 0.75, "1": 0.375 });
    // 3000 tokens in 15 s = 100 per GPU per s; GPU 1 rebooted: its counter restarted and reads 3,000,000 mJ after 15 s (200 W).
    j.join(result(CHAT, edit(envoy, [["tokentrace_llm_output_tokens_total", "", "126000"]]), T0 + 25000));
    const out2 = j.join(result(DCGM, edit(dcgm, [["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-2222", "3000000"]]), T0 + 30000));
    assert.equal(find(out2, "tokentrace_gpu_tokens_per_joule", "gpu", "1")[0]!.samples[0]!.value, 0.5);
    // A failed sidecar scrape makes the pod's rate unknown: no figure rather than a stale one.
    j.join({ target: CHAT, timestampMs: T0 + 40000, durationMs: 1, ok: false, error: "timeout", samples: [], families: new Map(), parseErrors: [] });
    const out3 = j.join(result(DCGM, edit(dcgm, [["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "GPU-2222", "9000000"]]), T0 + 45000));
    assert.equal(find(out3, "tokentrace_gpu_tokens_per_joule").length, 0);
    assert.equal(counterDelta(10, 4), 4);
    assert.equal(counterDelta(4, 10), 6);
  });

  it("passes dcgm-exporter series on with Hostname as hostname and empty labels dropped", () => {
    const j = new Joiner();
    const out = j.join(result(DCGM, fixture("dcgm-node-a.prom"), T0));
    const s = find(out, "DCGM_FI_DEV_GPU_UTIL", "pod", "embed-5c4b-fghij")[0]!;
    const l = labelsOf(s);
    assert.equal(l.hostname, "gpu-node-a");
    assert.equal(l.Hostname, undefined);
    assert.equal(l.pod_uid, undefined);
    assert.equal(s.samples[0]!.value, 87);
  });

  it("sanitises label names and cuts long values", () => {
    assert.equal(sanitizeLabelName("model-name.v1"), "model_name_v1");
    assert.equal(sanitizeLabelName("9lives"), "_lives");
    assert.deepEqual(cleanLabels(["a", "", "b-c", "x", "Hostname", "h", "b_c", "dup"]), ["b_c", "x", "hostname", "h"]);
    assert.equal(cleanLabels(["v", "z".repeat(1000)])[1]!.length, MAX_LABEL_VALUE_LENGTH);
    assert.equal(sanitizeLabelName("gpu_9"), "gpu_9");
    assert.equal(sanitizeLabelName("a.b-c"), "a_b_c");
    assert.equal(sanitizeLabelName(""), "_");
    // Past 32 names the repeat check takes a Set: the same answer.
    const many = Array.from({ length: 40 }, (_, i) => [`l_${i}`, "v"]).flat();
    assert.deepEqual(cleanLabels([...many, "l-3", "again", "l.39", "again"]), many);
    assert.deepEqual(cleanLabels(["l-3", "first", ...many]), ["l_3", "first", ...many.slice(0, 6), ...many.slice(8)]);
  });

  it("enrichedLabels gives what cleaning, then setting each of the pod's labels over the result (in place, else added), then adding __name__ gives, in an array of its size, call after call", () => {
    // The steps one by one, as enrich took them before they were put together in one array.
    const stepByStep = (own: string[], extra: string[], name: string): string[] => {
      const out = cleanLabels(own);
      for (let i = 0; i < extra.length; i += 2) {
        const at = out.findIndex((x, k) => k % 2 === 0 && x === extra[i]);
        if (at >= 0) out[at + 1] = extra[i + 1]!;
        else out.push(extra[i]!, extra[i + 1]!);
      }
      return [...out, "__name__", name];
    };
    const next = mulberry32(11);
    const random = (n: number): number => Math.floor(next() * n);
    const names = ["pod", "gpu", "le", "Hostname", "hostname", "a-b", "a_b", "", "__name__"];
    const values = ["", "p", "0", "x".repeat(300), "q"];
    const draw = (pairs: number): string[] => Array.from({ length: pairs }, () => [names[random(names.length)]!, values[random(values.length)]!]).flat();
    for (let i = 0; i < 3000; i++) {
      const own = draw(random(3) === 0 ? 30 + random(10) : random(6));
      const extra = draw(random(5));
      const got = enrichedLabels(own, extra, "m");
      assert.deepEqual(got, stepByStep(own, extra, "m"), JSON.stringify([own, extra]));
      assert.equal(got.length, Object.keys(got).length, "no holes");
    }
  });

  it("emits up=0 and nothing else for a failed scrape", () => {
    const j = new Joiner();
    const out = j.join({ target: CHAT, timestampMs: T0, durationMs: 5000, ok: false, error: "timeout", samples: [], families: new Map(), parseErrors: [] });
    assert.deepEqual(out.map((s) => [s.labels[1], s.samples[0]!.value]), [["up", 0], ["scrape_duration_seconds", 5]]);
  });
});

/** A dcgm-exporter scrape of one GPU on `node`, mapped to `pod`, with its energy counter at `energyMj`. */
const oneGpu = (node: string, uuid: string, pod: string, energyMj: number): string =>
  `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="${uuid}",modelName="NVIDIA L40S",Hostname="${node}",namespace="llm",pod="${pod}"} ${energyMj}\n`;
const tokens = (n: number): string => `tokentrace_llm_output_tokens_total{route="chat",model="m"} ${n}\n`;

describe("join: tokens per joule with one dcgm-exporter per GPU node", () => {
  const exporter = (node: string): ScrapeTarget => ({ id: `dcgm|http://${node}:9400/metrics|gpu/${node}`, kind: "dcgm", url: `http://${node}:9400/metrics`, intervalMs: 15000, timeoutMs: 5000, namespace: "gpu", pod: `dcgm-${node}`, node });
  const sidecar = (pod: string, node: string): ScrapeTarget => ({ id: `envoy|http://${pod}:15090/stats/prometheus|llm/${pod}`, kind: "envoy", url: `http://${pod}:15090/stats/prometheus`, intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod, node });
  const A = exporter("node-a");
  const B = exporter("node-b");
  const podA = sidecar("llm-a", "node-a");
  const podB = sidecar("llm-b", "node-b");
  const tpj = (out: WriteSeries[]): Record<string, number> => Object.fromEntries(find(out, "tokentrace_gpu_tokens_per_joule").map((s) => [labelsOf(s).hostname!, s.samples[0]!.value]));

  // Each pod makes 40 tokens/s on its one GPU, and each GPU draws 200 W: 0.2 tokens per joule,
  // whatever the offset between the two exporters' scrapes (the bug read 0.1867 at 1 s, 0.0133 at 14 s).
  for (const offsetMs of [1000, 7000, 14000]) {
    it(`is 0.2 on both nodes with the second exporter scraped ${offsetMs / 1000} s after the first`, () => {
      const j = new Joiner();
      j.setTargets([A, B, podA, podB]);
      const out: WriteSeries[] = [];
      for (let k = 0; k < 4; k++) {
        const t = T0 + k * 15000;
        const mj = 1_000_000_000 + k * 15 * 200 * 1000; // 200 W for 15 s = 3,000,000 mJ per interval
        j.join(result(podA, tokens(k * 600), t + 500));
        j.join(result(podB, tokens(k * 600), t + 500));
        out.push(...j.join(result(A, oneGpu("node-a", "GPU-a", "llm-a", mj), t)));
        out.push(...j.join(result(B, oneGpu("node-b", "GPU-b", "llm-b", mj), t + offsetMs)));
      }
      const values = find(out, "tokentrace_gpu_tokens_per_joule").map((s) => s.samples[0]!.value);
      assert.ok(values.length >= 4, `got ${values.length} values`);
      assert.deepEqual([...new Set(values)], [0.2]);
    });
  }

  it("reads one exporter's fallen energy counter as a reset without touching the other node's figure", () => {
    const j = new Joiner();
    j.setTargets([A, B, podA, podB]);
    j.join(result(A, oneGpu("node-a", "GPU-a", "llm-a", 5_000_000_000), T0));
    j.join(result(B, oneGpu("node-b", "GPU-b", "llm-b", 5_000_000_000), T0 + 3000));
    j.join(result(podA, tokens(0), T0 + 4000));
    j.join(result(podB, tokens(0), T0 + 4000));
    j.join(result(podA, tokens(600), T0 + 19000));
    j.join(result(podB, tokens(1200), T0 + 19000));
    // node-a's GPU was reset: its counter restarted and holds 15 s x 100 W = 1,500,000 mJ; node-b drew 400 W.
    const a = tpj(j.join(result(A, oneGpu("node-a", "GPU-a", "llm-a", 1_500_000), T0 + 15000)));
    const b = tpj(j.join(result(B, oneGpu("node-b", "GPU-b", "llm-b", 5_000_000_000 + 15 * 400_000), T0 + 18000)));
    assert.deepEqual({ ...a, ...b }, { "node-a": 0.4, "node-b": 0.2 });
  });
});

describe("join: a pod's GPU identity before its series ship", () => {
  const dcgm = fixture("dcgm-node-a.prom");
  const envoy = fixture("envoy-sidecar-chat.prom");
  const requests = (out: WriteSeries[]): WriteSeries[] => find(out, "tokentrace_requests_total", "status_class", "2xx");

  it("holds the first sidecar scrape after a start until dcgm-exporter answers, then ships it with the GPU labels and its own timestamp", () => {
    const j = new Joiner();
    j.setTargets([DCGM, CHAT]);
    const first = j.joinScrape(result(CHAT, envoy, T0));
    assert.deepEqual(first.report.map((s) => s.labels[1]), ["up", "scrape_duration_seconds"], "up is not held");
    assert.deepEqual(first.batches, [], "nothing of the pod's series ships before its GPUs are known");
    assert.equal(j.pendingPods, 1);
    const released = j.joinScrape(result(DCGM, dcgm, T0 + 2000)).batches.find((b) => b.result.target.id === CHAT.id)!;
    const s = requests(released.series);
    assert.equal(s.length, 1);
    assert.deepEqual([labelsOf(s[0]!).gpu_model, labelsOf(s[0]!).gpu, s[0]!.samples[0]!.timestampMs], ["NVIDIA H100 80GB HBM3", "0,1", T0]);
    assert.equal(j.pendingPods, 0);
  });

  it("keeps only the newest held scrape of a target (counters lose nothing a rate needs)", () => {
    const j = new Joiner();
    j.setTargets([DCGM, CHAT]);
    j.join(result(CHAT, envoy, T0));
    j.join(result(CHAT, edit(envoy, [["tokentrace_requests_total", "2xx", "401"]]), T0 + 15000));
    const out = j.join(result(DCGM, dcgm, T0 + 16000));
    assert.deepEqual(requests(out).map((s) => [s.samples[0]!.value, s.samples[0]!.timestampMs]), [[401, T0 + 15000]]);
  });

  it("labels a pod's series the same before and after a restart whichever answers first, sidecar or dcgm-exporter", () => {
    const before = new Joiner();
    before.setTargets([DCGM, CHAT]);
    before.join(result(DCGM, dcgm, T0));
    const shipped = requests(before.join(result(CHAT, envoy, T0 + 1000)));
    const after = new Joiner(); // the restarted process: the sidecar is scraped first this time
    after.setTargets([DCGM, CHAT]);
    const held = requests(after.join(result(CHAT, envoy, T0 + 60000)));
    const released = requests(after.join(result(DCGM, dcgm, T0 + 61000)));
    assert.deepEqual(held, []);
    assert.equal(shipped.length, 1);
    assert.deepEqual(released.map(labelsOf), shipped.map(labelsOf));
  });

  it("keeps a pod's identity while it lives, even when dcgm-exporter stops mapping it", () => {
    const j = new Joiner();
    j.setTargets([DCGM, CHAT]);
    j.join(result(DCGM, dcgm, T0));
    const a = requests(j.join(result(CHAT, envoy, T0 + 1000)));
    j.join(result(DCGM, dcgm.replaceAll('pod="chat-7d9f-abcde"', 'pod="other"'), T0 + 15000));
    const b = requests(j.join(result(CHAT, envoy, T0 + 16000)));
    assert.deepEqual(b.map(labelsOf), a.map(labelsOf));
  });

  it("ships without GPU labels once the wait runs out while dcgm-exporter keeps failing, and counts it", () => {
    let timeouts = 0;
    const j = new Joiner({ identityWaitMs: 30_000, onIdentityTimeout: () => timeouts++ });
    j.setTargets([DCGM, CHAT]);
    const failed = { target: DCGM, durationMs: 1, ok: false, error: "timeout", samples: [], families: new Map(), parseErrors: [] };
    j.join({ ...failed, timestampMs: T0 });
    assert.deepEqual(requests(j.join(result(CHAT, envoy, T0 + 1000))), []);
    j.join({ ...failed, timestampMs: T0 + 15000 });
    assert.deepEqual(requests(j.join(result(CHAT, envoy, T0 + 16000))), []);
    const out = requests(j.join(result(CHAT, envoy, T0 + 31000)));
    assert.deepEqual(out.map((s) => [labelsOf(s).gpu, labelsOf(s).hostname, s.samples[0]!.timestampMs]), [[undefined, "gpu-node-a", T0 + 31000]]);
    assert.equal(timeouts, 1);
  });

  it("stops waiting for an exporter that goes away", () => {
    const j = new Joiner();
    j.setTargets([DCGM, CHAT]);
    assert.deepEqual(requests(j.join(result(CHAT, envoy, T0))), []);
    const released = j.removeTarget(DCGM);
    assert.deepEqual(released.flatMap((b) => requests(b.series)).map((s) => labelsOf(s).hostname), ["gpu-node-a"]);
  });
});

describe("join: target identity is kind + URL + pod", () => {
  it("gives every target its own up, even two exporters behind one host:port or one URL scraped for two pods", () => {
    const j = new Joiner();
    const base: ScrapeTarget = { id: "", kind: "static", url: "http://10.0.0.7:9100/a/metrics", intervalMs: 15000, timeoutMs: 5000 };
    const targets: ScrapeTarget[] = [
      { ...base, id: "1" },
      { ...base, id: "2", url: "http://10.0.0.7:9100/b/metrics" },
      { ...base, id: "3", namespace: "n", pod: "p1" },
      { ...base, id: "4", namespace: "n", pod: "p2" },
    ];
    const keys = targets.map((t) => find(j.join(result(t, "", T0)), "up")[0]!.labels.join(","));
    assert.equal(new Set(keys).size, 4, keys.join("\n"));
  });
});
