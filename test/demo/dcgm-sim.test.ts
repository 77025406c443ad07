// The simulated dcgm-exporter: exactly the fields of dcgm-exporter's default counters file unless a
// scenario adds some, in its text format, parsed cleanly by the pipeline's parser and read by the
// join; it collects at its interval like the real exporter (scrapes in between get the last
// collection), and every value comes from the engine's GPU time over the interval (utilisation the
// busy share, the profiling fields the activity-weighted shares, power and energy following them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { GpuIndex, readExporterGpus } from "../../control-plane/src/join/gpu-index.js";
import { Joiner } from "../../control-plane/src/join/joiner.js";
import type { ScrapeResult } from "../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import type { GpuActivity } from "./engine.js";
import { gpuValues, startDcgmSim, type DcgmLabelSpelling, type GpuThrottle, type StrayProcess } from "./dcgm-sim.js";

/**
 * The fields NVIDIA/dcgm-exporter d5e5f51 etc/default-counters.csv enables (its uncommented lines,
 * DCGM_FI_DRIVER_VERSION being a label), in its order: the oracle of "exactly the default set".
 */
const UPSTREAM_DEFAULT_FIELDS = [
  "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
  "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED",
  "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
  "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
  "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
  "DCGM_FI_PROF_PCIE_RX_BYTES",
];

const IDLE = { busy: 0, sm: 0, occupancy: 0, tensor: 0, dram: 0 };

test("gpuValues: idle, working and starved simulated H100s; the second GPU a little behind; throttling sets the reasons, the heat and the clock", () => {
  assert.deepEqual(gpuValues(IDLE, 0), { util: 0, grEngineActive: 0, smActive: 0, smOccupancy: 0, tensorActive: 0, dramActive: 0, memCopyUtil: 0, powerWatts: 70, fbUsedMiB: 52000, tempC: 34, memTempC: 39, smClockMHz: 345, clockEventReasons: 1 });
  const working = { busy: 0.95, sm: 0.85, occupancy: 0.36, tensor: 0.3, dram: 0.6 };
  assert.deepEqual(gpuValues(working, 0), { util: 95, grEngineActive: 0.95, smActive: 0.85, smOccupancy: 0.36, tensorActive: 0.3, dramActive: 0.6, memCopyUtil: 60, powerWatts: 617.783, fbUsedMiB: 71000, tempC: 69, memTempC: 74, smClockMHz: 1980, clockEventReasons: 0 });
  assert.deepEqual(gpuValues(working, 1).util, 86, "90% of the first GPU's");
  // Busy nearly all the time with little of the GPU in use: draws far less than the working one.
  const starved = gpuValues({ busy: 0.97, sm: 0.3, occupancy: 0.1, tensor: 0.03, dram: 0.2 }, 0);
  assert.equal(starved.util, 97);
  assert.ok(starved.powerWatts < 400, `starved GPU draws ${starved.powerWatts} W`);
  const hot: GpuThrottle = { reasons: 0x60, slowdown: 1.8 };
  assert.deepEqual([gpuValues(working, 0, hot).clockEventReasons, gpuValues(working, 0, hot).tempC, gpuValues(working, 0, hot).smClockMHz], [0x60, 88, 1100]);
  assert.deepEqual(gpuValues({ busy: 7, sm: 7, occupancy: 7, tensor: 7, dram: 7 }, 0).util, 100, "shares are clamped to [0, 1]");
});

test("simulated dcgm-exporter: exactly the default counters' fields in dcgm-exporter d5e5f51's format, one collection per interval, values from the engine's GPU time", async () => {
  const activity: GpuActivity = { busyMs: 0, smMs: 0, occupancyMs: 0, tensorMs: 0, dramMs: 0 };
  let nowMs = 1_000_000;
  const sim = await startDcgmSim({ namespace: "demo", pod: "llm-sim-0", hostname: "node-a", gpuCount: 2, gpuActivity: () => activity, collectIntervalMs: 2000, nowMs: () => nowMs });
  try {
    const scrape = async () => {
      const res = await fetch(sim.metricsUrl);
      assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
      const text = await res.text();
      const parsed = parseText(text);
      assert.deepEqual(parsed.errors, []);
      const index = new GpuIndex();
      index.setExporter("sim", parsed.samples);
      return { text, parsed, gpus: index.gpusOfPod("demo", "llm-sim-0", undefined) };
    };
    const idle = await scrape();
    assert.deepEqual([...idle.parsed.families.keys()], UPSTREAM_DEFAULT_FIELDS, "the default counters file's fields, nothing more (no SM_ACTIVE, no SM_OCCUPANCY)");
    assert.equal(idle.parsed.families.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")?.type, "counter");
    assert.equal(idle.parsed.families.get("DCGM_FI_DEV_GPU_UTIL")?.type, "gauge");
    // render_metrics.go: identity labels in its order, then DCGM_FI_DRIVER_VERSION, then the pod attributes sorted; doubles with six decimals.
    assert.match(idle.text, /^DCGM_FI_DEV_POWER_USAGE\{gpu="0",UUID="GPU-d3e0aaaa-0000-4000-8000-000000000000",pci_bus_id="00000000:10:00\.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="node-a",DCGM_FI_DRIVER_VERSION="570\.86\.15",container="vllm",namespace="demo",pod="llm-sim-0"\} 70\.000000$/m);
    assert.match(idle.text, /^DCGM_FI_DEV_GPU_UTIL\{gpu="1",[^}]*\} 0$/m);
    assert.equal(idle.gpus.attribution, "pod");
    assert.deepEqual(idle.gpus.gpus.map((g) => [g.gpu, g.modelName, g.hostname, g.utilizationPercent, g.powerWatts, g.energyMj, g.smActiveRatio]), [
      ["0", "NVIDIA H100 80GB HBM3", "node-a", 0, 70, 3_000_000_000, undefined],
      ["1", "NVIDIA H100 80GB HBM3", "node-a", 0, 70, 4_000_000_000, undefined],
    ]);

    // Within the collect interval a scrape gets the last collection, whatever the GPU did since.
    activity.busyMs = 1000;
    nowMs += 1000;
    assert.deepEqual((await scrape()).gpus.gpus.map((g) => g.utilizationPercent), [0, 0]);

    // 2 s after the first collection, 1.5 s of them busy, at the working H100's activity shares.
    Object.assign(activity, { busyMs: 1500, smMs: 1275, occupancyMs: 540, tensorMs: 450, dramMs: 900 });
    nowMs += 1000;
    const busy = await scrape();
    assert.deepEqual(busy.gpus.gpus.map((g) => [g.utilizationPercent, g.grEngineActiveRatio, g.tensorActiveRatio, g.dramActiveRatio, g.smActiveRatio]), [
      [75, 0.75, 0.225, 0.45, undefined],
      [68, 0.675, 0.203, 0.405, undefined],
    ]);
    const p0 = busy.gpus.gpus[0]!.powerWatts!;
    assert.equal(busy.gpus.gpus[0]!.energyMj, 3_000_000_000 + Math.round(p0 * 2000), "energy grows by power x time (W x ms = mJ)");
    assert.equal(sim.scrapes, 3);
    assert.equal((await fetch(`${sim.url}/other`)).status, 404);
  } finally {
    await sim.close();
  }
});

test("simulated dcgm-exporter: a counters file that adds SM_ACTIVE, SM_OCCUPANCY and the clock-event reasons gets exactly those more, and the throttle shows in them", async () => {
  const activity: GpuActivity = { busyMs: 0, smMs: 0, occupancyMs: 0, tensorMs: 0, dramMs: 0 };
  let nowMs = 0;
  let throttle: GpuThrottle = { reasons: 0, slowdown: 1 };
  const sim = await startDcgmSim({ namespace: "demo", pod: "llm-sim-0", gpuActivity: () => activity, extraCounters: ["DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"], throttle: () => throttle, collectIntervalMs: 1000, nowMs: () => nowMs });
  try {
    const scrape = async () => {
      const parsed = parseText(await (await fetch(sim.metricsUrl)).text());
      const index = new GpuIndex();
      index.setExporter("sim", parsed.samples);
      return { parsed, gpu: index.gpusOfPod("demo", "llm-sim-0", undefined).gpus[0]! };
    };
    assert.deepEqual([...(await scrape()).parsed.families.keys()], [...UPSTREAM_DEFAULT_FIELDS, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"]);
    Object.assign(activity, { busyMs: 1000, smMs: 300, occupancyMs: 100, tensorMs: 30, dramMs: 200 });
    throttle = { reasons: 0x20, slowdown: 1.5 };
    nowMs += 1000;
    const { gpu } = await scrape();
    assert.deepEqual([gpu.utilizationPercent, gpu.smActiveRatio, gpu.smOccupancyRatio, gpu.health?.clockEventReasons, gpu.health?.temperatureC], [100, 0.3, 0.1, 0x20, 88]);
  } finally {
    await sim.close();
  }
});

test("gpuValues: a stray process on the card fills its share of the time the pod leaves idle, with matrix-multiply activity, and adds its memory up to the card's size; other cards are untouched", () => {
  const stray: StrayProcess = { gpu: 2, fbUsedMiB: 8192, idleShareUsed: 0.6 };
  const half = { busy: 0.5, sm: 0.425, occupancy: 0.18, tensor: 0.15, dram: 0.3 };
  assert.deepEqual(gpuValues(half, 1, undefined, stray), gpuValues(half, 1), "not its card");
  const shared = gpuValues(half, 2, undefined, stray);
  // The pod's rank at 90% of card 0 (0.45), the stray job in 0.6 of the rest (0.33), at GPU_ACTIVITY.compute.
  assert.deepEqual([shared.util, shared.grEngineActive, shared.smActive, shared.tensorActive, shared.dramActive, shared.fbUsedMiB], [78, 0.78, 0.696, 0.333, 0.369, 62_000 + 8192]);
  assert.equal(gpuValues({ busy: 1, sm: 1, occupancy: 1, tensor: 1, dram: 1 }, 2, undefined, { ...stray, fbUsedMiB: 40_000 }).fbUsedMiB, 81_559 - 537, "no more than the card has");
});

test("simulated dcgm-exporter, tensor-parallel over four cards with a stray process on card 2: one series set per card with its own gpu, UUID, pci_bus_id and device, all mapped to the pod, and the pipeline's join derives a spread past both straggler thresholds", async () => {
  const activity: GpuActivity = { busyMs: 0, smMs: 0, occupancyMs: 0, tensorMs: 0, dramMs: 0 };
  let nowMs = 0;
  const sim = await startDcgmSim({ namespace: "demo", pod: "llm-sim-0", hostname: "node-a", gpuCount: 4, strayProcess: { gpu: 2, fbUsedMiB: 8192, idleShareUsed: 0.6 }, gpuActivity: () => activity, collectIntervalMs: 1000, nowMs: () => nowMs });
  try {
    await fetch(sim.metricsUrl);
    // A second at half the working H100's shares.
    Object.assign(activity, { busyMs: 500, smMs: 425, occupancyMs: 180, tensorMs: 150, dramMs: 300 });
    nowMs += 1000;
    const text = await (await fetch(sim.metricsUrl)).text();
    // render_metrics.go's label order; each card its NVML index, UUID, PCI bus id and /dev/nvidiaN; kubernetes.go's pod labels on every card.
    const card = (i: number): string => `gpu="${i}",UUID="GPU-d3e${i}aaaa-0000-4000-8000-00000000000${i}",pci_bus_id="00000000:1${i}:00.0",device="nvidia${i}",modelName="NVIDIA H100 80GB HBM3",hostname="node-a",DCGM_FI_DRIVER_VERSION="570.86.15",container="vllm",namespace="demo",pod="llm-sim-0"`;
    assert.deepEqual(text.split("\n").filter((l) => l.startsWith("DCGM_FI_DEV_FB_USED{")), [`DCGM_FI_DEV_FB_USED{${card(0)}} 62000`, `DCGM_FI_DEV_FB_USED{${card(1)}} 62000`, `DCGM_FI_DEV_FB_USED{${card(2)}} 70192`, `DCGM_FI_DEV_FB_USED{${card(3)}} 62000`]);
    assert.deepEqual(text.split("\n").filter((l) => l.startsWith("DCGM_FI_DEV_GPU_UTIL{")), [`DCGM_FI_DEV_GPU_UTIL{${card(0)}} 50`, `DCGM_FI_DEV_GPU_UTIL{${card(1)}} 45`, `DCGM_FI_DEV_GPU_UTIL{${card(2)}} 78`, `DCGM_FI_DEV_GPU_UTIL{${card(3)}} 45`]);
    const parsed = parseText(text);
    assert.deepEqual(parsed.errors, []);
    for (const [field] of parsed.families) assert.equal(parsed.samples.filter((s) => s.name === field).length, 4, `${field}: one series per card`);

    // The pipeline's join (dcgm-exporter then the pod's sidecar), as in the demo.
    const target = (kind: "dcgm" | "envoy"): ScrapeTarget => ({ id: `${kind}|sim`, kind, url: `http://sim/${kind}`, intervalMs: 1000, timeoutMs: 1000, node: "node-a", ...(kind === "envoy" ? { namespace: "demo", pod: "llm-sim-0" } : {}) });
    const scrape = (kind: "dcgm" | "envoy", body: string, ts: number): ScrapeResult => {
      const p = parseText(body);
      return { target: target(kind), timestampMs: ts, durationMs: 1, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
    };
    const j = new Joiner();
    j.join(scrape("dcgm", text, 1_800_000_000_000));
    const out = j.join(scrape("envoy", 'tokentrace_requests_total{route="chat",status_class="2xx"} 1\n', 1_800_000_001_000));
    const labelsOf = (l: readonly string[]): Record<string, string> => Object.fromEntries(Array.from({ length: l.length / 2 }, (_, i) => [l[2 * i]!, l[2 * i + 1]!]));
    const named = (name: string): [Record<string, string>, number][] => out.filter((s) => s.labels[1] === name).map((s) => [labelsOf(s.labels), s.samples[0]!.value]);
    assert.deepEqual(named("tokentrace_pod_gpu_info").map(([l]) => [l.gpu, l.gpu_uuid]), [0, 1, 2, 3].map((i) => [String(i), `GPU-d3e${i}aaaa-0000-4000-8000-00000000000${i}`]));
    // Past gpu-health-rules.yaml's straggler thresholds: 33 points over 20, 0.117 over 0.1.
    assert.deepEqual(named("tokentrace_pod_gpu_utilization_spread_percent"), [[{ __name__: "tokentrace_pod_gpu_utilization_spread_percent", namespace: "demo", pod: "llm-sim-0" }, 78 - 45]]);
    assert.deepEqual(named("tokentrace_pod_gpu_memory_used_spread_ratio").map(([, v]) => v), [8192 / 70192]);
    assert.deepEqual(named("tokentrace_pod_gpu_sm_active_spread_ratio").map(([l, v]) => [l.source, v]), [["gr_engine_active", 0.78 - 0.45]]);
  } finally {
    await sim.close();
  }
});

test("simulated dcgm-exporter: a GPU count or a stray process's card out of range, or an unknown label spelling, is refused, naming the option", async () => {
  const base = { namespace: "demo", pod: "llm-sim-0", gpuActivity: (): GpuActivity => ({ busyMs: 0, smMs: 0, occupancyMs: 0, tensorMs: 0, dramMs: 0 }) };
  // A simulator that starts anyway is closed, so the failure does not hold the run open.
  const refused = async (opts: Parameters<typeof startDcgmSim>[0], message: RegExp): Promise<void> => {
    const started = await startDcgmSim(opts).catch((error: unknown) => error as Error);
    if (!(started instanceof Error)) await started.close();
    assert.match(started instanceof Error ? started.message : "started", message);
  };
  await refused({ ...base, gpuCount: 0 }, /gpuCount 0 must be an integer from 1 to 16/);
  await refused({ ...base, gpuCount: 4, strayProcess: { gpu: 4, fbUsedMiB: 1, idleShareUsed: 0 } }, /strayProcess\.gpu 4 is not one of the pod's 4 GPUs \(0 to 3\)/);
  await refused({ ...base, labelSpelling: "new-namespace" as DcgmLabelSpelling }, /labelSpelling "new-namespace" is not one of default, old-namespace, honor-labels-false/);
});

/**
 * The oracle of --use-old-namespace, NVIDIA/dcgm-exporter d5e5f51: `uuid` for `UUID`
 * (collector/gpu_collector.go) and the old pod attributes (transformation/const.go); nothing else changes.
 */
const OLD_NAMESPACE_RENAMES: Record<string, string> = { UUID: "uuid", container: "container_name", namespace: "pod_namespace", pod: "pod_name" };
/**
 * The oracle of a honor_labels-false scrape: the target labels a ServiceMonitor on the Helm chart's
 * Service gives the exporter's own pod (prometheus-operator 4d3991d promcfg.go), overwriting the
 * exporter's container, namespace and pod, which Prometheus keeps as exported_* (scrape.go
 * mutateSampleLabels, prometheus fcdb6c2).
 */
const SCRAPE_TARGET: Record<string, string> = { container: "exporter", endpoint: "metrics", instance: "10.0.3.17:9400", job: "dcgm-exporter", namespace: "gpu-monitoring", pod: "dcgm-exporter-x7k2p", service: "dcgm-exporter" };

test("simulated dcgm-exporter's label spellings: old-namespace renames exactly UUID, container, namespace and pod as --use-old-namespace does; honor-labels-false keeps the pod labels as exported_* beside the scrape's target labels; series, values and every other label are the default's, and the join maps the pod's GPUs with the note for each", async () => {
  const activity: GpuActivity = { busyMs: 0, smMs: 0, occupancyMs: 0, tensorMs: 0, dramMs: 0 };
  const scrape = async (labelSpelling: DcgmLabelSpelling): Promise<string> => {
    const sim = await startDcgmSim({ namespace: "demo", pod: "llm-sim-0", hostname: "node-a", gpuCount: 2, gpuActivity: () => activity, nowMs: () => 0, labelSpelling });
    try {
      return await (await fetch(sim.metricsUrl)).text();
    } finally {
      await sim.close();
    }
  };
  const [plain, old, renamed] = [await scrape("default"), await scrape("old-namespace"), await scrape("honor-labels-false")];
  const series = (text: string) => {
    const parsed = parseText(text);
    assert.deepEqual(parsed.errors, []);
    return parsed.samples.map((s) => ({ name: s.name, value: s.value, labels: Object.fromEntries(Array.from({ length: s.labels.length / 2 }, (_, i) => [s.labels[2 * i]!, s.labels[2 * i + 1]!])) }));
  };
  const defaults = series(plain);
  assert.equal(defaults.length, 2 * 25, "two cards, the default counters");
  assert.deepEqual(
    series(old),
    defaults.map((s) => ({ ...s, labels: Object.fromEntries(Object.entries(s.labels).map(([k, v]) => [OLD_NAMESPACE_RENAMES[k] ?? k, v])) })),
  );
  assert.deepEqual(
    series(renamed),
    defaults.map((s) => ({ ...s, labels: { ...s.labels, exported_container: s.labels.container!, exported_namespace: s.labels.namespace!, exported_pod: s.labels.pod!, ...SCRAPE_TARGET } })),
  );
  // render_metrics.go's order with the renamed attributes sorted; Prometheus's stored set sorted by name.
  assert.match(old, /^DCGM_FI_DEV_GPU_UTIL\{gpu="0",uuid="GPU-d3e0aaaa-0000-4000-8000-000000000000",pci_bus_id="00000000:10:00\.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="node-a",DCGM_FI_DRIVER_VERSION="570\.86\.15",container_name="vllm",pod_name="llm-sim-0",pod_namespace="demo"\} 0$/m);
  assert.match(renamed, /^DCGM_FI_DEV_GPU_UTIL\{DCGM_FI_DRIVER_VERSION="570\.86\.15",UUID="GPU-d3e0aaaa-0000-4000-8000-000000000000",container="exporter",device="nvidia0",endpoint="metrics",exported_container="vllm",exported_namespace="demo",exported_pod="llm-sim-0",gpu="0",hostname="node-a",instance="10\.0\.3\.17:9400",job="dcgm-exporter",modelName="NVIDIA H100 80GB HBM3",namespace="gpu-monitoring",pci_bus_id="00000000:10:00\.0",pod="dcgm-exporter-x7k2p",service="dcgm-exporter"\} 0$/m);

  // The join: each spelling maps both cards to the pod (none to the exporter's own pod) and carries its note.
  for (const [text, notes] of [[plain, []], [old, ["old_namespace"]], [renamed, ["honor_labels_renamed"]]] as const) {
    const samples = parseText(text).samples;
    assert.deepEqual([...readExporterGpus(samples).labelNotes], notes);
    const index = new GpuIndex();
    index.setExporter("sim", samples);
    assert.deepEqual(index.gpusOfPod("demo", "llm-sim-0", undefined).gpus.map((g) => g.uuid), ["GPU-d3e0aaaa-0000-4000-8000-000000000000", "GPU-d3e1aaaa-0000-4000-8000-000000000001"]);
    assert.deepEqual(index.gpusOfPod("gpu-monitoring", "dcgm-exporter-x7k2p", undefined).gpus, []);
  }
});
