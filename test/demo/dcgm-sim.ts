// A simulated dcgm-exporter: GET /metrics in dcgm-exporter's text format for one node whose GPUs run
// one simulated pod, with exactly the fields the counters file it is given enables: by default those
// of NVIDIA/dcgm-exporter d5e5f51 etc/default-counters.csv (the file the binary, the Helm chart and
// the GPU Operator load), which leaves DCGM_FI_PROF_SM_ACTIVE and SM_OCCUPANCY out; a scenario adds
// fields the way an operator uncomments them. Rendered as internal/pkg/rendermetrics/render_metrics.go
// gpuMetricsFormat does (gpu, UUID, pci_bus_id, device, modelName, hostname, then the label fields and
// the pod attributes, each sorted; int64 fields as integers, doubles with six decimals,
// collector/gpu_collector.go toString), with the Kubernetes pod mapping it adds
// (transformation/kubernetes.go: container, namespace, pod). Like the real exporter (pkg/cmd/app.go
// --collect-interval, default 30000 ms) it collects at its interval and a scrape in between gets the
// last collection. Every value comes from the engine: utilisation is the share of the last interval
// a kernel ran (NVML's sample of time with a kernel running); SM, occupancy, tensor and DRAM activity
// the engine's activity-weighted GPU time over the interval (what DCGM's profiling fields average);
// power follows the work done, the energy counter integrates power, temperature follows power.
// A pod may hold several cards (tensor parallelism: one series set per card, each mapped to the pod,
// as kubernetes.go maps every device the kubelet's pod-resources API lists for it), and a process
// outside the pod may share one of them.
// Its pod labels may be spelled as with --use-old-namespace, or as a Prometheus that scraped it with
// honor_labels false stores them (labelSpelling), for the control plane's note that names the setting.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { GPU_ACTIVITY, type GpuActivity } from "./engine.js";

/** One counters-file line: a DCGM field, its Prometheus type and help, and whether DCGM gives it as a double. */
interface Counter {
  field: string;
  type: "gauge" | "counter";
  help: string;
  double: boolean;
}

const c = (field: string, type: "gauge" | "counter", help: string, double = false): Counter => ({ field, type, help, double });

/**
 * The fields NVIDIA/dcgm-exporter d5e5f51 etc/default-counters.csv enables, in its order
 * (DCGM_FI_DRIVER_VERSION is a label there, not a series).
 */
export const DEFAULT_COUNTERS: readonly Counter[] = [
  c("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
  c("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
  c("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
  c("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
  c("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", true),
  c("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
  c("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
  c("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
  c("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
  c("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
  c("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
  c("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
  c("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
  c("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
  c("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
  c("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
  c("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
  c("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
  c("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
  c("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
  c("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", true),
  c("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", true),
  c("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data.", true),
  c("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
  c("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
];

/**
 * Fields an operator adds to the counters file: the two profiling fields the default file comments
 * out (with its help texts), and the clock-event reasons bitmask (DCGM field 112, named
 * DCGM_FI_DEV_CLOCKS_EVENT_REASONS since dcgm-exporter 4.0.0).
 */
export const OPTIONAL_COUNTERS = {
  DCGM_FI_PROF_SM_ACTIVE: c("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.", true),
  DCGM_FI_PROF_SM_OCCUPANCY: c("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.", true),
  DCGM_FI_DEV_CLOCKS_EVENT_REASONS: c("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask)."),
} as const;
export type OptionalCounter = keyof typeof OPTIONAL_COUNTERS;

/** What throttles the simulated GPU now: the DCGM_CLOCKS_EVENT_REASON_* bits and how much slower its clocks are (1 = full clocks). */
export interface GpuThrottle {
  reasons: number;
  slowdown: number;
}

/**
 * A process on one of the pod's cards that is not the pod's (started on the node outside the device
 * plugin's accounting): dcgm-exporter's fields are the device's, so its memory and its kernels show
 * on that card and the pod mapping still names the pod.
 */
export interface StrayProcess {
  /** The card it runs on (dcgm-exporter's gpu index). */
  gpu: number;
  /** Framebuffer it holds, MiB. */
  fbUsedMiB: number;
  /** Share of the time the pod's kernels leave the card idle that its own kernels fill. */
  idleShareUsed: number;
}

/** Options of the simulated exporter. */
export interface DcgmSimOptions {
  /** 0 (default) = ephemeral. */
  port?: number;
  namespace: string;
  pod: string;
  container?: string;
  hostname?: string;
  /** GPUs of the pod, default 1 (at most 16, as on the largest nodes). */
  gpuCount?: number;
  /** Another process on one of the pod's cards; default none. */
  strayProcess?: StrayProcess;
  /** The engine's GPU time since start, read at each collection. */
  gpuActivity: () => GpuActivity;
  /** Fields added to the default counters (an operator's counters file). */
  extraCounters?: readonly OptionalCounter[];
  /** The GPU's throttling now; default none. */
  throttle?: () => GpuThrottle;
  /** dcgm-exporter's collect interval, ms; default 30000 as upstream. */
  collectIntervalMs?: number;
  /** Clock in ms (the engine's, so busy time and wall time agree), default performance.now. */
  nowMs?: () => number;
  /** How its pod labels are spelled; default "default". */
  labelSpelling?: DcgmLabelSpelling;
}

/**
 * The pod labels as dcgm-exporter writes them ("default"), as it writes them with --use-old-namespace
 * ("old-namespace"), or as a Prometheus that scraped it with honor_labels false (the Helm chart's
 * serviceMonitor default) stores them ("honor-labels-false").
 */
export type DcgmLabelSpelling = "default" | "old-namespace" | "honor-labels-false";
export const DCGM_LABEL_SPELLINGS: readonly DcgmLabelSpelling[] = ["default", "old-namespace", "honor-labels-false"];

/**
 * --use-old-namespace's names (NVIDIA/dcgm-exporter d5e5f51): `uuid` for `UUID` (collector/gpu_collector.go
 * toMetric), and the pod attributes of transformation/const.go (kubernetes.go PodMapper.Process).
 */
const OLD_NAMESPACE_NAMES: ReadonlyMap<string, string> = new Map([
  ["UUID", "uuid"],
  ["container", "container_name"],
  ["namespace", "pod_namespace"],
  ["pod", "pod_name"],
]);

/**
 * The target labels a Prometheus Operator ServiceMonitor gives the exporter's own pod
 * (prometheus-operator/prometheus-operator 4d3991d pkg/prometheus/promcfg.go generateServiceMonitorConfig,
 * instance being __address__), with the Helm chart's names (NVIDIA/dcgm-exporter d5e5f51 deployment/:
 * container exporter, port metrics on 9400).
 */
export const SCRAPING_TARGET_LABELS: ReadonlyMap<string, string> = new Map([
  ["container", "exporter"],
  ["endpoint", "metrics"],
  ["instance", "10.0.3.17:9400"],
  ["job", "dcgm-exporter"],
  ["namespace", "gpu-monitoring"],
  ["pod", "dcgm-exporter-x7k2p"],
  ["service", "dcgm-exporter"],
]);

type LabelPairs = [string, string][];
const byName = (a: [string, string], b: [string, string]): number => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * One series' labels in `spelling`, from the identity labels, the label fields and the pod attributes
 * of render_metrics.go's gpuMetricsFormat (attributes in name order, as its template ranges a map).
 */
function spelled(identity: LabelPairs, fields: LabelPairs, attributes: LabelPairs, spelling: DcgmLabelSpelling): LabelPairs {
  if (spelling === "old-namespace") {
    const old = (pairs: LabelPairs): LabelPairs => pairs.map(([k, v]) => [OLD_NAMESPACE_NAMES.get(k) ?? k, v]);
    return [...old(identity), ...fields, ...old(attributes).sort(byName)];
  }
  const exposed = [...identity, ...fields, ...[...attributes].sort(byName)];
  if (spelling === "default") return exposed;
  // scrape/scrape.go mutateSampleLabels (prometheus/prometheus fcdb6c2): an exposed label a target label
  // overwrites is kept as exported_<name>; the stored set is sorted by name.
  const stored = new Map(exposed);
  for (const [k, v] of SCRAPING_TARGET_LABELS) {
    const exposedValue = stored.get(k);
    if (exposedValue) stored.set(`exported_${k}`, exposedValue);
    stored.set(k, v);
  }
  return [...stored].sort(byName);
}

/** A running simulated exporter. */
export interface DcgmSim {
  url: string;
  /** The /metrics URL (what the pipeline scrapes). */
  metricsUrl: string;
  scrapes: number;
  close(): Promise<void>;
}

const MODEL = "NVIDIA H100 80GB HBM3";
const DRIVER = "570.86.15";
const FB_TOTAL_MIB = 81_559;
const FB_RESERVED_MIB = 537;
const IDLE_WATTS = 70;
const MAX_WATTS = 700;
const SM_CLOCK_MHZ = 1980;

/** Shares of the last interval: busy (a kernel ran), and each unit's activity averaged over the interval. */
export interface IntervalShares {
  busy: number;
  sm: number;
  occupancy: number;
  tensor: number;
  dram: number;
}

/** One GPU's values for an interval, before formatting. */
export interface GpuValues {
  util: number;
  grEngineActive: number;
  smActive: number;
  smOccupancy: number;
  tensorActive: number;
  dramActive: number;
  memCopyUtil: number;
  powerWatts: number;
  fbUsedMiB: number;
  tempC: number;
  memTempC: number;
  smClockMHz: number;
  clockEventReasons: number;
}

const clamp01 = (v: number): number => Math.min(1, Math.max(0, v));
const r3 = (v: number): number => Math.round(v * 1000) / 1000;

/** What a stray process's kernels keep busy per busy second: matrix multiplications, as the engine's prefill (a benchmark, a training step). */
const STRAY_ACTIVITY = GPU_ACTIVITY.compute;

/**
 * One GPU's values for an interval with `shares`; a second GPU of a tensor-parallel pod runs a little
 * behind the first. A stray process on the card adds its kernels in the time the pod's leave idle
 * (NVML's utilisation counts any context's kernel) and its memory.
 */
export function gpuValues(shares: IntervalShares, gpu: number, throttle: GpuThrottle = { reasons: 0, slowdown: 1 }, stray?: StrayProcess): GpuValues {
  const f = gpu === 0 ? 1 : 0.9;
  const own = clamp01(shares.busy) * f;
  const strayBusy = stray?.gpu === gpu ? (1 - own) * clamp01(stray.idleShareUsed) : 0;
  const busy = own + strayBusy;
  const sm = clamp01(shares.sm) * f + strayBusy * STRAY_ACTIVITY.sm;
  const dram = clamp01(shares.dram) * f + strayBusy * STRAY_ACTIVITY.dram;
  // Power follows the work the SMs do more than the time a kernel runs (a starved GPU draws less).
  const load = clamp01(0.4 * busy + 0.6 * sm);
  const powerWatts = r3(IDLE_WATTS + (MAX_WATTS - IDLE_WATTS) * load ** 1.2);
  const heat = (powerWatts - IDLE_WATTS) / (MAX_WATTS - IDLE_WATTS);
  // A throttled GPU is one at its slowdown temperature (H100's is about 87 °C).
  const tempC = throttle.reasons !== 0 ? 88 : Math.round(34 + 40 * heat);
  return {
    util: Math.round(100 * busy),
    grEngineActive: r3(busy),
    smActive: r3(sm),
    smOccupancy: r3(clamp01(shares.occupancy) * f + strayBusy * STRAY_ACTIVITY.occupancy),
    tensorActive: r3(clamp01(shares.tensor) * f + strayBusy * STRAY_ACTIVITY.tensor),
    dramActive: r3(dram),
    memCopyUtil: Math.round(100 * dram),
    powerWatts,
    // Weights and KV cache stay resident; the cache grows with the batch. A stray process's memory
    // comes on top, up to what the card has.
    fbUsedMiB: Math.min(FB_TOTAL_MIB - FB_RESERVED_MIB, Math.round(52_000 + 20_000 * clamp01(shares.busy)) + (stray?.gpu === gpu ? stray.fbUsedMiB : 0)),
    tempC,
    memTempC: tempC + 5,
    smClockMHz: busy > 0.05 ? Math.round(SM_CLOCK_MHZ / Math.max(1, throttle.slowdown)) : 345,
    clockEventReasons: throttle.reasons !== 0 ? throttle.reasons : busy > 0.05 ? 0 : 1,
  };
}

/** A field's value for one GPU, as dcgm-exporter formats it. */
function valueOf(field: string, v: GpuValues, energyMj: number): number {
  switch (field) {
    case "DCGM_FI_DEV_SM_CLOCK": return v.smClockMHz;
    case "DCGM_FI_DEV_MEM_CLOCK": return 2619;
    case "DCGM_FI_DEV_MEMORY_TEMP": return v.memTempC;
    case "DCGM_FI_DEV_GPU_TEMP": return v.tempC;
    case "DCGM_FI_DEV_POWER_USAGE": return v.powerWatts;
    case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": return energyMj;
    case "DCGM_FI_DEV_GPU_UTIL": return v.util;
    case "DCGM_FI_DEV_MEM_COPY_UTIL": return v.memCopyUtil;
    case "DCGM_FI_DEV_FB_FREE": return FB_TOTAL_MIB - FB_RESERVED_MIB - v.fbUsedMiB;
    case "DCGM_FI_DEV_FB_USED": return v.fbUsedMiB;
    case "DCGM_FI_DEV_FB_RESERVED": return FB_RESERVED_MIB;
    case "DCGM_FI_PROF_GR_ENGINE_ACTIVE": return v.grEngineActive;
    case "DCGM_FI_PROF_SM_ACTIVE": return v.smActive;
    case "DCGM_FI_PROF_SM_OCCUPANCY": return v.smOccupancy;
    case "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": return v.tensorActive;
    case "DCGM_FI_PROF_DRAM_ACTIVE": return v.dramActive;
    // Prompts in and tokens out over PCIe: a few MB/s per unit of work.
    case "DCGM_FI_PROF_PCIE_TX_BYTES": return Math.round(2_000_000 + 40_000_000 * v.grEngineActive);
    case "DCGM_FI_PROF_PCIE_RX_BYTES": return Math.round(3_000_000 + 60_000_000 * v.grEngineActive);
    case "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": return v.clockEventReasons;
    // No errors, no encoder or decoder, no vGPU, a pod on one card's own NVLink budget.
    default: return 0;
  }
}

/** Starts the exporter on 127.0.0.1. */
export async function startDcgmSim(opts: DcgmSimOptions): Promise<DcgmSim> {
  const now = opts.nowMs ?? (() => performance.now());
  const gpus = opts.gpuCount ?? 1;
  if (!Number.isInteger(gpus) || gpus < 1 || gpus > 16) throw new Error(`dcgm-sim: gpuCount ${gpus} must be an integer from 1 to 16`);
  const stray = opts.strayProcess;
  if (stray && (!Number.isInteger(stray.gpu) || stray.gpu < 0 || stray.gpu >= gpus)) throw new Error(`dcgm-sim: strayProcess.gpu ${stray.gpu} is not one of the pod's ${gpus} GPUs (0 to ${gpus - 1})`);
  const interval = opts.collectIntervalMs ?? 30_000;
  const hostname = opts.hostname ?? "demo-gpu-node";
  const container = opts.container ?? "vllm";
  const counters = [...DEFAULT_COUNTERS, ...(opts.extraCounters ?? []).map((f) => OPTIONAL_COUNTERS[f])];
  const spelling = opts.labelSpelling ?? "default";
  if (!DCGM_LABEL_SPELLINGS.includes(spelling)) throw new Error(`dcgm-sim: labelSpelling ${JSON.stringify(spelling)} is not one of ${DCGM_LABEL_SPELLINGS.join(", ")}`);
  // One identity per card (NVML's index, UUID, PCI bus id, device node); every card is the pod's.
  const cardLabels = Array.from({ length: gpus }, (_, i) =>
    spelled(
      [["gpu", String(i)], ["UUID", `GPU-${(0xd3e0 + i).toString(16)}aaaa-0000-4000-8000-${String(i).padStart(12, "0")}`], ["pci_bus_id", `00000000:${(0x10 + i).toString(16).toUpperCase()}:00.0`], ["device", `nvidia${i}`], ["modelName", MODEL], ["hostname", hostname]],
      [["DCGM_FI_DRIVER_VERSION", DRIVER]],
      [["container", container], ["namespace", opts.namespace], ["pod", opts.pod]],
      spelling,
    )
      .map(([k, v]) => `${k}="${v}"`)
      .join(","),
  );
  const energy: { mj: number; lastMs: number }[] = Array.from({ length: gpus }, (_, i) => ({ mj: 1_000_000_000 * (i + 3), lastMs: now() }));
  const self = { scrapes: 0 };

  let last: { atMs: number; activity: GpuActivity; text: string } | undefined;
  const collect = (t: number, activity: GpuActivity): string => {
    // Shares of the time since the previous collection (the first one: idle).
    const dt = last && t > last.atMs ? t - last.atMs : 0;
    const share = (k: keyof GpuActivity): number => (dt > 0 ? (activity[k] - last!.activity[k]) / dt : 0);
    const shares: IntervalShares = { busy: share("busyMs"), sm: share("smMs"), occupancy: share("occupancyMs"), tensor: share("tensorMs"), dram: share("dramMs") };
    const throttle = opts.throttle?.() ?? { reasons: 0, slowdown: 1 };
    const values = energy.map((e, i) => {
      const v = gpuValues(shares, i, throttle, stray);
      // Energy since boot in mJ: integrate the power over the time since the last collection (W x ms = mJ).
      e.mj += Math.round(v.powerWatts * Math.max(0, t - e.lastMs));
      e.lastMs = t;
      return v;
    });
    return counters
      .map((k) => `# HELP ${k.field} ${k.help}\n# TYPE ${k.field} ${k.type}\n` + values.map((v, i) => {
        const x = valueOf(k.field, v, energy[i]!.mj);
        return `${k.field}{${cardLabels[i]}} ${k.double ? x.toFixed(6) : String(Math.round(x))}\n`;
      }).join(""))
      .join("");
  };
  const render = (): string => {
    const t = now();
    if (!last || t - last.atMs >= interval) {
      const activity = { ...opts.gpuActivity() };
      last = { atMs: t, activity, text: collect(t, activity) };
    }
    return last.text;
  };

  const server = createServer((req, res) => {
    if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/metrics") {
      self.scrapes++;
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
      res.end(render());
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("404 page not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(self, {
    url,
    metricsUrl: `${url}/metrics`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  });
}
