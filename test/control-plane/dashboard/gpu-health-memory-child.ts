// Run by gpu-health-memory.test.ts as `node --expose-gc`: feeds one GpuHealthPanels `scrapes` rounds
// of `pods` sidecars' batches (each pod on `gpus` GPUs, its GPU list changing every scrape when
// `churn` is 1) and of one dcgm-exporter's batch for every GPU (with `xids` XIDs each), label values
// parsed afresh each scrape as the pipeline's are, and prints, as JSON, what the heap and the array
// buffers grew by per point beside the panels' estimate (their `bytes`) per point.
import { GpuHealthPanels } from "../../../control-plane/src/dashboard/gpu-health.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import { heldBytes } from "../heap.js";

const [scrapes, pods, gpus, xids, churn] = process.argv.slice(2).map(Number) as [number, number, number, number, number];
const uuid = (p: number, g: number, k: number): string => `GPU-${String(p).padStart(8, "0")}-0000-4000-8000-${String(churn === 1 ? (g + k) % (gpus + 1) : g).padStart(12, "0")}`;

function sidecar(p: number, k: number): string {
  const labels = `namespace="llm-serving",pod="chat-7d9f8b6c5-${p}"`;
  const lines: string[] = [];
  for (let g = 0; g < gpus; g++) lines.push(`${C.POD_GPU_INFO}{${labels},gpu="${g}",gpu_uuid="${uuid(p, g, k)}",hostname="gpu-node-${p}"} 1`);
  for (const name of [C.POD_GPU_UTILIZATION, C.POD_GPU_TENSOR_ACTIVE, C.POD_GPU_DRAM_ACTIVE, C.POD_GPU_UTILIZATION_SPREAD, C.POD_GPU_MEMORY_USED_SPREAD]) lines.push(`${name}{${labels}} ${(k % 89) / 89}`);
  lines.push(`${C.POD_GPU_SM_ACTIVE}{${labels},source="gr_engine_active"} ${(k % 83) / 83}`);
  lines.push(`${C.POD_GPU_ACTIVITY_WHILE_BUSY}{${labels},basis="tensor_dram"} ${(k % 79) / 79}`);
  return `${lines.join("\n")}\n`;
}

function exporter(k: number): string {
  const lines: string[] = [];
  for (let p = 0; p < pods; p++) {
    for (let g = 0; g < gpus; g++) {
      const labels = `gpu="${g}",gpu_uuid="${uuid(p, g, 0)}",hostname="gpu-node-${p}"`;
      lines.push(`${C.GPU_TEMPERATURE}{${labels},sensor="gpu"} ${60 + (k % 20)}`);
      for (const reason of ["sw_thermal", "hw_power_brake"]) lines.push(`${C.GPU_CLOCK_EVENT_ACTIVE}{${labels},reason="${reason}"} ${k % 2}`);
      for (let x = 0; x < xids; x++) lines.push(`${C.GPU_XID_ERRORS}{${labels},xid="${48 + x}",xid_class="hardware_${x}"} 1`);
    }
  }
  return `${lines.join("\n")}\n`;
}

const batch = (text: string): WriteSeries[] => parseText(text).samples.map((s) => ({ labels: ["__name__", s.name, ...s.labels], samples: [{ value: s.value, timestampMs: 0 }] }));
const panels = new GpuHealthPanels({ retentionMs: Number.MAX_SAFE_INTEGER, maxPointsPerKey: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER, maxPods: 1024, maxGpus: 8192 });
function round(k: number): void {
  const tMs = 1_800_000_000_000 + k * 2000;
  for (let p = 0; p < pods; p++) panels.observe(batch(sidecar(p, k)), { target: { kind: "envoy", namespace: "llm-serving", pod: `chat-7d9f8b6c5-${p}`, id: `envoy|${p}` }, timestampMs: tMs });
  panels.observe(batch(exporter(k)), { target: { kind: "dcgm", id: "dcgm|node" }, timestampMs: tMs });
}

// The first round creates every pod and GPU; the growth after it is their points.
round(0);
const estimatedBefore = panels.bytes;
const before = heldBytes();
for (let k = 1; k <= scrapes; k++) round(k);
const after = heldBytes();
const points = scrapes * (pods + pods * gpus);
process.stdout.write(JSON.stringify({ points, measuredPerPoint: (after - before) / points, estimatedPerPoint: (panels.bytes - estimatedBefore) / points }));
