// The GPU join on dcgm-exporter as shipped (fixtures written from NVIDIA/dcgm-exporter d5e5f51, each
// naming the upstream code it follows): the default counters leave SM_ACTIVE out, so SM activity
// comes from GR_ENGINE_ACTIVE; per-pod copies of FB_USED on time-sliced GPUs (fb5e3dc) never replace
// the device's value; --use-old-namespace's labels and a honor_labels-false scrape's exported_ ones
// are read, and the operator is told which setting produced them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { Joiner, type ExporterLabelNote } from "../../../control-plane/src/join/joiner.js";
import { labelNoteMessage } from "../../../control-plane/src/join/gpu-index.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { fixture } from "../../support/engine-scrapes.js";

const T0 = 1_800_000_000_000;
const DCGM = (node: string): ScrapeTarget => ({ id: `dcgm|${node}`, kind: "dcgm", url: `http://${node}:9400/metrics`, intervalMs: 15000, timeoutMs: 5000, namespace: "gpu-operator", pod: `dcgm-${node}`, node });
const envoy = (pod: string, node: string, namespace = "llm"): ScrapeTarget => ({ id: `envoy|${pod}`, kind: "envoy", url: `http://${pod}:15090/stats/prometheus`, intervalMs: 15000, timeoutMs: 5000, namespace, pod, node });

function scrape(target: ScrapeTarget, text: string, ts: number): ScrapeResult {
  const p = parseText(text);
  assert.deepEqual(p.errors, [], "the fixture parses cleanly");
  return { target, timestampMs: ts, durationMs: 3, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}

const labelsOf = (s: WriteSeries): Record<string, string> => Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!]));
const named = (out: WriteSeries[], name: string): WriteSeries[] => out.filter((s) => labelsOf(s).__name__ === name);
/** [gpu, extra label values..., value] of each series named `name`. */
const rows = (out: WriteSeries[], name: string, ...extra: string[]): (string | number)[][] => named(out, name).map((s) => [labelsOf(s).gpu!, ...extra.map((l) => labelsOf(s)[l]!), s.samples[0]!.value]);
const identity = (out: WriteSeries[]): Record<string, string | undefined> => {
  const l = labelsOf(named(out, "tokentrace_requests_total")[0]!);
  return { gpu_uuid: l.gpu_uuid, gpu_attribution: l.gpu_attribution };
};
const REQUESTS = 'tokentrace_requests_total{route="chat",status_class="2xx"} 1\n';

describe("the GPU join on a stock dcgm-exporter (default counters)", () => {
  it("SM activity comes from DCGM_FI_PROF_GR_ENGINE_ACTIVE, labelled so, since the default counters leave DCGM_FI_PROF_SM_ACTIVE out", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-d"), fixture("dcgm-default-counters.prom"), T0));
    const out = j.join(scrape(envoy("chat-5d6f-eeeee", "gpu-node-d"), REQUESTS, T0 + 1000));
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_sm_active_ratio", "source"), [["0", "gr_engine_active", 0.962]]);
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_tensor_active_ratio"), [["0", 0.041]]);
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_dram_active_ratio"), [["0", 0.118]]);
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_sm_occupancy_ratio"), [], "not in the default counters, so not made up");
  });

  it("where the counters file enables DCGM_FI_PROF_SM_ACTIVE it is the SM activity, and SM occupancy comes beside it", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-t"), fixture("dcgm-profiling-tp4.prom"), T0));
    const out = j.join(scrape(envoy("llama70b-tp4-0", "gpu-node-t"), REQUESTS, T0 + 1000));
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_sm_active_ratio", "source"), [["0", "sm_active", 0.552], ["1", "sm_active", 0.561], ["2", "sm_active", 0.948], ["3", "sm_active", 0.541]]);
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_sm_occupancy_ratio"), [["0", 0.231], ["1", 0.235], ["2", 0.377], ["3", 0.229]]);
  });
});

describe("time slicing: per-pod copies of DCGM_FI_DEV_FB_USED (dcgm-exporter since fb5e3dc)", () => {
  it("the GPU's memory is the device-level series, 70,120 MiB, not the last pod copy (18,000); each pod's own copy is its own", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-b"), fixture("dcgm-time-sliced.prom"), T0));
    const uuid = "GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60";
    assert.equal(j.gpuIndex.gpus.get(uuid)?.memoryUsedMiB, 70_120);
    const chat = j.join(scrape(envoy("chat-6f8d-aaaaa", "gpu-node-b"), REQUESTS, T0 + 1000));
    const embed = j.join(scrape(envoy("embed-7c9e-bbbbb", "gpu-node-b"), REQUESTS, T0 + 1000));
    assert.deepEqual(rows(chat, "tokentrace_pod_gpu_memory_used_bytes"), [["0", 52_000 * 1024 * 1024]]);
    assert.deepEqual(rows(embed, "tokentrace_pod_gpu_memory_used_bytes"), [["0", 18_000 * 1024 * 1024]]);
  });

  it("a MIG instance shared by time slicing: the instance's own series is its memory, and each pod's copy is that pod's", () => {
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-m"), fixture("dcgm-mig-time-sliced.prom"), T0));
    const uuid = "GPU-0a1b2c3d-0007-4e6f-8a7b-8c9d0e1f2a30";
    assert.equal(j.gpuIndex.gpus.get(`${uuid}/mig1`)?.memoryUsedMiB, 30_112);
    assert.equal(j.gpuIndex.gpus.get(`${uuid}/mig2`)?.memoryUsedMiB, 6_120);
    assert.equal(j.gpuIndex.memoryOf("llm/qa-7e8f-lllll", `${uuid}/mig1`), 18_000);
    assert.equal(j.gpuIndex.memoryOf("llm/summ-6d7e-mmmmm", `${uuid}/mig1`), 12_000);
    assert.deepEqual(j.gpuIndex.podsOfGpu(`${uuid}/mig1`), ["llm/qa-7e8f-lllll", "llm/summ-6d7e-mmmmm"]);
  });

  it("an exporter that copies the device value to every pod (before fb5e3dc) gives the GPU that value", () => {
    const copies = fixture("dcgm-time-sliced.prom")
      .split("\n")
      .filter((l) => !(l.startsWith("DCGM_FI_DEV_FB_USED{") && l.includes('gpu="0"') && !l.includes("pod=")))
      .map((l) => (l.startsWith("DCGM_FI_DEV_FB_USED{") && l.includes("pod=") ? l.replace(/ \S+$/, " 70120") : l))
      .join("\n");
    const j = new Joiner();
    j.join(scrape(DCGM("gpu-node-b"), copies, T0));
    assert.equal(j.gpuIndex.gpus.get("GPU-7a1c4e2b-5d3f-4c8a-9e1b-0f2d3c4b5a60")?.memoryUsedMiB, 70_120);
    assert.deepEqual(rows(j.join(scrape(envoy("embed-7c9e-bbbbb", "gpu-node-b"), REQUESTS, T0 + 1000)), "tokentrace_pod_gpu_memory_used_bytes"), [["0", 70_120 * 1024 * 1024]]);
  });
});

describe("label spellings other than dcgm-exporter's default", () => {
  it("--use-old-namespace (uuid, pod_name, pod_namespace): the pod gets its GPU, and the operator is told the flag", () => {
    const notes: [string, ExporterLabelNote[]][] = [];
    const j = new Joiner({ onExporterLabels: (t, n) => notes.push([t.id, [...n]]) });
    j.join(scrape(DCGM("gpu-node-e"), fixture("dcgm-old-namespace.prom"), T0));
    const out = j.join(scrape(envoy("chat-2a3b-ggggg", "gpu-node-e"), REQUESTS, T0 + 1000));
    assert.deepEqual(identity(out), { gpu_uuid: "GPU-a1b2c3d4-0001-4e5f-8a9b-0c1d2e3f4a51", gpu_attribution: "pod" });
    assert.deepEqual(rows(out, "tokentrace_pod_gpu_utilization_percent"), [["0", 76]]);
    assert.deepEqual(notes, [["dcgm|gpu-node-e", ["old_namespace"]]]);
    assert.deepEqual(j.exporterLabelNoteCounts(), new Map([["old_namespace", 1]]));
    assert.match(labelNoteMessage("old_namespace", "http://gpu-node-e:9400/metrics"), /^dcgm-exporter at http:\/\/gpu-node-e:9400\/metrics runs with --use-old-namespace \(DCGM_EXPORTER_USE_OLD_NAMESPACE\)/);
    // Told once: the same spelling on the next scrape says nothing new.
    j.join(scrape(DCGM("gpu-node-e"), fixture("dcgm-old-namespace.prom"), T0 + 15_000));
    assert.equal(notes.length, 1);
  });

  it("exported_pod/exported_namespace (a Prometheus scrape with honor_labels false): the pod gets its GPU; the exporter's own pod gets none, and the unmapped GPU stays unmapped", () => {
    const notes: ExporterLabelNote[][] = [];
    const j = new Joiner({ onExporterLabels: (_t, n) => notes.push([...n]) });
    const federate: ScrapeTarget = { ...DCGM("gpu-node-f"), url: "http://prometheus:9090/federate?match%5B%5D=%7B__name__%3D~%22DCGM_.%2A%22%7D" };
    j.join(scrape(federate, fixture("dcgm-honor-labels-false.prom"), T0));
    const out = j.join(scrape(envoy("chat-9c8d-hhhhh", "gpu-node-f"), REQUESTS, T0 + 1000));
    assert.deepEqual(identity(out), { gpu_uuid: "GPU-b7c8d9e0-0002-4f1a-9b2c-3d4e5f6a7b80", gpu_attribution: "pod" });
    assert.deepEqual(j.gpuIndex.podsOfGpu("GPU-b7c8d9e0-0002-4f1a-9b2c-3d4e5f6a7b81"), [], "GPU 1's only pod label is the exporter's");
    assert.equal(j.gpuIndex.podGpus.get("gpu-operator/nvidia-dcgm-exporter-x7k2p"), undefined);
    assert.deepEqual([...j.gpuIndex.unmappedByHost.get("gpu-node-f") ?? []], ["GPU-b7c8d9e0-0002-4f1a-9b2c-3d4e5f6a7b81"]);
    assert.deepEqual(notes, [["honor_labels_renamed"]]);
    assert.match(labelNoteMessage("honor_labels_renamed", federate.url), /serviceMonitor\.honorLabels: true/);
  });

  it("the default spelling says nothing", () => {
    const notes: unknown[] = [];
    const j = new Joiner({ onExporterLabels: (_t, n) => notes.push(n) });
    j.join(scrape(DCGM("gpu-node-d"), fixture("dcgm-default-counters.prom"), T0));
    assert.deepEqual(notes, []);
    assert.deepEqual(j.exporterLabelNoteCounts(), new Map());
  });
});
