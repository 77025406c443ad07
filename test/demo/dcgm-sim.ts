// A simulated dcgm-exporter: GET /metrics in dcgm-exporter's text format (its default counters
// file's families, HELP/TYPE lines and labels, with the Kubernetes pod mapping labels it adds when
// pod attribution is on), for one node whose GPUs run one simulated pod. Like the real exporter
// (NVIDIA/dcgm-exporter cmd/dcgm-exporter app.go: --collect-interval, DCGM_EXPORTER_INTERVAL,
// default 30000 ms), it collects at its interval and every scrape in between gets the last
// collection. Utilisation is the share of the last interval the simulated GPU spent computing
// (the engine's busy time), as NVML reports the share of its sample period with a kernel running;
// power follows it, and the energy counter integrates power.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** Options of the simulated exporter. */
export interface DcgmSimOptions {
  /** 0 (default) = ephemeral. */
  port?: number;
  namespace: string;
  pod: string;
  container?: string;
  hostname?: string;
  /** GPUs of the pod, default 1. */
  gpuCount?: number;
  /** The GPU's busy time since start in ms (the engine's), read at each collection. */
  gpuBusyMs: () => number;
  /** dcgm-exporter's collect interval, ms; default 30000 as upstream. */
  collectIntervalMs?: number;
  /** Clock in ms (the engine's, so busy time and wall time agree), default performance.now. */
  nowMs?: () => number;
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
const IDLE_WATTS = 70;
const MAX_WATTS = 700;

interface GpuState {
  energyMj: number;
  lastMs: number;
}

/** One GPU's values when it was busy for `busy` (0..1) of the last interval. */
export function gpuValues(busy: number, gpu: number): { util: number; smActive: number; powerWatts: number; fbUsedMiB: number; tempC: number } {
  const l = Math.min(1, Math.max(0, busy));
  // A second GPU of a tensor-parallel pod runs a little behind the first.
  const util = Math.round(Math.min(100, 100 * l * (gpu === 0 ? 1 : 0.9)));
  return {
    util,
    smActive: Math.round((util / 100) * 0.92 * 1000) / 1000,
    powerWatts: Math.round((IDLE_WATTS + (MAX_WATTS - IDLE_WATTS) * (util / 100) ** 1.2) * 1000) / 1000,
    // Weights and KV cache stay resident; the cache grows with the batch.
    fbUsedMiB: Math.round(52_000 + 20_000 * l),
    tempC: Math.round(34 + 40 * (util / 100)),
  };
}

/** Starts the exporter on 127.0.0.1. */
export async function startDcgmSim(opts: DcgmSimOptions): Promise<DcgmSim> {
  const now = opts.nowMs ?? (() => performance.now());
  const gpus = opts.gpuCount ?? 1;
  const interval = opts.collectIntervalMs ?? 30_000;
  const hostname = opts.hostname ?? "demo-gpu-node";
  const container = opts.container ?? "vllm";
  const state: GpuState[] = Array.from({ length: gpus }, (_, i) => ({ energyMj: 1_000_000_000 * (i + 3), lastMs: now() }));
  const self = { scrapes: 0 };

  let last: { atMs: number; busyMs: number; text: string } | undefined;
  const collect = (t: number, busyMs: number): string => {
    // Busy share of the time since the previous collection (the first one: idle).
    const busy = last && t > last.atMs ? (busyMs - last.busyMs) / (t - last.atMs) : 0;
    const values = state.map((s, i) => {
      const v = gpuValues(busy, i);
      // Energy since boot in mJ: integrate the power over the time since the last collection.
      s.energyMj += Math.round(v.powerWatts * Math.max(0, t - s.lastMs));
      s.lastMs = t;
      return v;
    });
    const labels = (i: number): string =>
      `gpu="${i}",UUID="GPU-${(0xd3e0 + i).toString(16)}aaaa-0000-4000-8000-00000000000${i}",pci_bus_id="00000000:${(0x10 + i).toString(16)}:00.0",device="nvidia${i}",modelName="${MODEL}",Hostname="${hostname}",DCGM_FI_DRIVER_VERSION="${DRIVER}",container="${container}",namespace="${opts.namespace}",pod="${opts.pod}",pod_uid=""`;
    const family = (name: string, type: string, help: string, value: (i: number) => string): string =>
      `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n` + state.map((_, i) => `${name}{${labels(i)}} ${value(i)}\n`).join("");
    return [
      family("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", (i) => String(values[i]!.util > 5 ? 1980 : 345)),
      family("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", () => "2619"),
      family("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", (i) => String(values[i]!.tempC)),
      family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", (i) => values[i]!.powerWatts.toFixed(6)),
      family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", (i) => String(state[i]!.energyMj)),
      family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", (i) => String(values[i]!.util)),
      family("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", (i) => String(Math.round(values[i]!.util * 0.6))),
      family("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", (i) => String(FB_TOTAL_MIB - values[i]!.fbUsedMiB)),
      family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", (i) => String(values[i]!.fbUsedMiB)),
      family("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned (in %).", (i) => values[i]!.smActive.toFixed(6)),
    ].join("");
  };
  const render = (): string => {
    const t = now();
    if (!last || t - last.atMs >= interval) {
      const busyMs = opts.gpuBusyMs();
      last = { atMs: t, busyMs, text: collect(t, busyMs) };
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
