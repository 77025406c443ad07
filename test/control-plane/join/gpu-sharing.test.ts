// GPUs shared by pods, as dcgm-exporter reports them (fixtures written from NVIDIA/dcgm-exporter
// d5e5f51): a time-sliced GPU's utilisation is each pod's own where the exporter reports
// per-process values, the GPU's where it only copies it; a MIG instance is its pod's GPU, with
// its graphics engine activity as utilisation, and the parent GPU the exporter labels with one of
// the instance pods belongs to no pod.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { fixture } from "../../support/engine-scrapes.js";

const T0 = 1_800_000_000_000;
const DCGM = (node: string): ScrapeTarget => ({ id: `dcgm|${node}`, kind: "dcgm", url: `http://${node}:9400/metrics`, intervalMs: 15000, timeoutMs: 5000, namespace: "gpu-operator", pod: `dcgm-${node}`, node });
const envoy = (pod: string, node: string): ScrapeTarget => ({ id: `envoy|${pod}`, kind: "envoy", url: `http://${pod}:15090/stats/prometheus`, intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod, node });

function scrape(target: ScrapeTarget, text: string, ts: number): ScrapeResult {
  const p = parseText(text);
  return { target, timestampMs: ts, durationMs: 3, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}

const labelsOf = (s: WriteSeries): Record<string, string> => Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!]));
const podGpu = (out: WriteSeries[]): [string, string, number][] =>
  out.filter((s) => labelsOf(s).__name__ === "tokentrace_pod_gpu_utilization_percent").map((s) => [labelsOf(s).gpu_uuid!, labelsOf(s).gpu_pods!, s.samples[0]!.value]);
const identity = (out: WriteSeries[]): Record<string, string> => {
  const l = labelsOf(out.find((s) => labelsOf(s).__name__ === "tokentrace_requests_total")!);
  return { gpu_uuid: l.gpu_uuid!, gpu_count: l.gpu_count!, gpu_attribution: l.gpu_attribution! };
};
const REQUESTS = 'tokentrace_requests_total{route="chat",status_class="2xx"} 1\n';

describe("GPUs shared by pods (dcgm-exporter fixtures)", () => {
  it("time slicing with per-process values: each pod gets its own utilisation of the shared GPU", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-b"), fixture("dcgm-time-sliced.prom"), T0));
    const chat = j.join(scrape(envoy("chat-6f8d-aaaaa", "gpu-node-b"), REQUESTS, T0 + 1000));
    const embed = j.join(scrape(envoy("embed-7c9e-bbbbb", "gpu-node-b"), REQUESTS, T0 + 1000));
    assert.deepEqual(podGpu(chat), [["GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60", "2", 63]]);
    assert.deepEqual(podGpu(embed), [["GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60", "2", 28]]);
  });

  it("time slicing where the exporter only copies the GPU's value to every pod: each pod gets the GPU's", () => {
    const copies = fixture("dcgm-time-sliced.prom").split("\n").filter((l) => !(l.startsWith("DCGM_FI_DEV_GPU_UTIL{") && l.includes('gpu="0"') && !l.includes("pod="))).map((l) => (l.startsWith("DCGM_FI_DEV_GPU_UTIL{") && l.includes("pod=") ? l.replace(/ \S+$/, " 91") : l)).join("\n");
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-b"), copies, T0));
    assert.deepEqual(podGpu(j.join(scrape(envoy("embed-7c9e-bbbbb", "gpu-node-b"), REQUESTS, T0 + 1000))), [["GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60", "2", 91]]);
  });

  it("MIG: each pod has its instance (graphics engine activity x 100, not the 0 some exporters give as GPU_UTIL), never the parent", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-c"), fixture("dcgm-mig.prom"), T0));
    const uuid = "GPU-3c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b";
    const chat = j.join(scrape(envoy("chat-5b7c-ccccc", "gpu-node-c"), REQUESTS, T0 + 1000));
    const embed = j.join(scrape(envoy("embed-4a6b-ddddd", "gpu-node-c"), REQUESTS, T0 + 1000));
    assert.deepEqual(podGpu(chat), [[`${uuid}/mig1`, "1", 87.5]]);
    assert.deepEqual(identity(embed), { gpu_uuid: `${uuid}/mig2`, gpu_count: "1", gpu_attribution: "pod" }, "the parent GPU labelled with embed is not embed's");
    assert.deepEqual(podGpu(embed), [[`${uuid}/mig2`, "1", 25]]);
    // A pod on the node the exporter did not map (held until the exporter answers again) falls back to
    // the node's unmapped instance, not to the parent.
    assert.deepEqual(j.join(scrape(envoy("batch-0", "gpu-node-c"), REQUESTS, T0 + 2000)).filter((s) => labelsOf(s).__name__ === "tokentrace_requests_total"), []);
    assert.deepEqual(identity(j.join(scrape(DCGM("gpu-node-c"), fixture("dcgm-mig.prom"), T0 + 3000))), { gpu_uuid: `${uuid}/mig3`, gpu_count: "1", gpu_attribution: "node" });
  });
});
