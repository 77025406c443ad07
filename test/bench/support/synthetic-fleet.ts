// A synthetic GPU fleet behind one HTTP server on 127.0.0.1, for the side-by-side cost benchmark:
// per pod an Envoy sidecar with the filter's series (routes x models, the mesh's 28 histogram
// buckets) and a vLLM server (V1 metric names, labels model_name and engine), per GPU node a
// dcgm-exporter (default fields, the label set of a real scrape with Kubernetes pod mapping).
// Counters grow with time, so every scrape carries new values; the text is rendered once per
// second of fleet time and served to every scraper alike.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One endpoint of the fleet. */
export interface FleetEndpoint {
  kind: "envoy" | "vllm" | "dcgm";
  path: string;
  namespace: string;
  pod: string;
  node: string;
}

/** The fleet's shape. */
export interface FleetShape {
  nodes: number;
  podsPerNode: number;
  routes: number;
  models: number;
  gpusPerNode: number;
}

// The buckets the mesh configures for wasm stats (docs/filter.md, statsHistogramBuckets), ms and µs alike.
const FILTER_BUCKETS = [1, 5, 10, 20, 40, 60, 80, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000, 25000, 50000, 75000, 100000, 150000, 200000, 300000, 400000, 500000, 750000, 1000000, 2500000];
// vLLM's TTFT buckets (seconds).
const VLLM_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const DCGM_FIELDS: [string, "gauge" | "counter"][] = [
  ["DCGM_FI_DEV_SM_CLOCK", "gauge"], ["DCGM_FI_DEV_MEM_CLOCK", "gauge"], ["DCGM_FI_DEV_MEMORY_TEMP", "gauge"], ["DCGM_FI_DEV_GPU_TEMP", "gauge"],
  ["DCGM_FI_DEV_POWER_USAGE", "gauge"], ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"], ["DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"],
  ["DCGM_FI_DEV_GPU_UTIL", "gauge"], ["DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"], ["DCGM_FI_DEV_ENC_UTIL", "gauge"], ["DCGM_FI_DEV_DEC_UTIL", "gauge"],
  ["DCGM_FI_DEV_XID_ERRORS", "gauge"], ["DCGM_FI_DEV_FB_FREE", "gauge"], ["DCGM_FI_DEV_FB_USED", "gauge"], ["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter"],
  ["DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge"], ["DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge"], ["DCGM_FI_PROF_SM_ACTIVE", "gauge"],
  ["DCGM_FI_PROF_SM_OCCUPANCY", "gauge"], ["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"], ["DCGM_FI_PROF_DRAM_ACTIVE", "gauge"],
];

/** The endpoints of a fleet of this shape. */
export function fleetEndpoints(shape: FleetShape): FleetEndpoint[] {
  const out: FleetEndpoint[] = [];
  for (let n = 0; n < shape.nodes; n++) {
    const node = `gpu-node-${n}`;
    out.push({ kind: "dcgm", path: `/dcgm/${node}/metrics`, namespace: "gpu-operator", pod: `nvidia-dcgm-exporter-${n}`, node });
    for (let p = 0; p < shape.podsPerNode; p++) {
      const pod = `vllm-${n}-${p}-7d9f5c6b8-x${p}q${n}`;
      out.push({ kind: "envoy", path: `/envoy/${pod}/stats/prometheus`, namespace: "llm", pod, node });
      out.push({ kind: "vllm", path: `/vllm/${pod}/metrics`, namespace: "llm", pod, node });
    }
  }
  return out;
}

/** A per-series rate multiplier in [1, 11): real counters of different series grow at different rates. */
function spread(seed: number): number {
  return 1 + (Math.imul(seed + 1, 2654435761) >>> 0) % 1000 / 100;
}

function histogram(lines: string[], name: string, labels: string, buckets: number[], count: number, sum: number, fmt: (b: number) => string): void {
  let cum = 0;
  for (let i = 0; i < buckets.length; i++) {
    cum = Math.min(count, cum + Math.floor((count / (buckets.length - i + 1)) * (spread(i + count) / 6)));
    lines.push(`${name}_bucket{${labels},le="${fmt(buckets[i]!)}"} ${cum}`);
  }
  lines.push(`${name}_bucket{${labels},le="+Inf"} ${count}`, `${name}_sum{${labels}} ${sum}`, `${name}_count{${labels}} ${count}`);
}

function envoyText(shape: FleetShape, t: number, seed: number): string {
  const lines: string[] = [];
  const models = Array.from({ length: shape.models }, (_, m) => `llama-3.1-${8 * (m + 1)}b-instruct`);
  const routes = Array.from({ length: shape.routes }, (_, r) => (r === 0 ? "default" : `chat-${r}`));
  let series = 0;
  const n = (k: number): number => Math.floor(t * k * spread(seed * 1000 + series++) + seed);
  lines.push("# TYPE tokentrace_requests_total counter");
  for (const r of routes) for (const sc of ["2xx", "4xx", "5xx"]) lines.push(`tokentrace_requests_total{route="${r}",status_class="${sc}"} ${n(sc === "2xx" ? 40 : 1)}`);
  lines.push("# TYPE tokentrace_traces_sampled_total counter");
  for (const r of routes) lines.push(`tokentrace_traces_sampled_total{route="${r}"} ${n(2)}`);
  lines.push("# TYPE tokentrace_llm_requests_total counter");
  for (const r of routes) for (const m of models) for (const fr of ["stop", "length"]) lines.push(`tokentrace_llm_requests_total{route="${r}",model="${m}",stream="true",finish_reason="${fr}"} ${n(10)}`);
  for (const fam of ["tokentrace_llm_input_tokens_total", "tokentrace_llm_output_tokens_total", "tokentrace_llm_stream_chunks_total"]) {
    lines.push(`# TYPE ${fam} counter`);
    for (const r of routes) for (const m of models) lines.push(`${fam}{route="${r}",model="${m}"} ${n(400)}`);
  }
  lines.push("# TYPE tokentrace_request_duration_ms histogram");
  for (const r of routes) histogram(lines, "tokentrace_request_duration_ms", `route="${r}"`, FILTER_BUCKETS, n(40), n(40) * 812, String);
  for (const fam of ["tokentrace_llm_ttft_ms", "tokentrace_llm_decode_ms", "tokentrace_llm_duration_ms", "tokentrace_llm_tpot_us"]) {
    lines.push(`# TYPE ${fam} histogram`);
    for (const r of routes) for (const m of models) histogram(lines, fam, `route="${r}",model="${m}"`, FILTER_BUCKETS, n(20), n(20) * 317, String);
  }
  return lines.join("\n") + "\n";
}

function vllmText(shape: FleetShape, t: number, seed: number): string {
  const lines: string[] = [];
  let series = 0;
  const n = (k: number): number => Math.floor(t * k * spread(seed * 1000 + series++) + seed);
  for (let m = 0; m < shape.models; m++) {
    const l = `engine="0",model_name="meta-llama/Llama-3.1-${8 * (m + 1)}B-Instruct"`;
    lines.push(`vllm:num_requests_running{${l}} ${n(1) % 17}`, `vllm:num_requests_waiting{${l}} ${n(1) % 5}`, `vllm:kv_cache_usage_perc{${l}} 0.${n(1) % 97}`);
    lines.push(`vllm:prompt_tokens_total{${l}} ${n(900)}`, `vllm:generation_tokens_total{${l}} ${n(400)}`);
    for (const fr of ["stop", "length", "abort"]) lines.push(`vllm:request_success_total{${l},finished_reason="${fr}"} ${n(5)}`);
    for (const fam of ["vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds"]) {
      histogram(lines, fam, l, VLLM_BUCKETS, n(20), n(20) * 0.125, String);
    }
  }
  return lines.join("\n") + "\n";
}

function dcgmText(shape: FleetShape, node: number, t: number, pods: string[]): string {
  const lines: string[] = [];
  for (const [field, type] of DCGM_FIELDS) {
    lines.push(`# HELP ${field} ${field}.`, `# TYPE ${field} ${type}`);
    for (let g = 0; g < shape.gpusPerNode; g++) {
      const uuid = `GPU-${node.toString(16).padStart(4, "0")}${g.toString(16).padStart(4, "0")}-1b7d-4c3e-9a61-0d2e8f4b7c10`;
      const pod = pods[g];
      const mapping = pod ? `,container="vllm",namespace="llm",pod="${pod}",pod_uid=""` : "";
      const value = field === "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" ? Math.floor(5e9 + t * 350_000) : Math.floor(t * 7 + g) % 100;
      lines.push(`${field}{gpu="${g}",UUID="${uuid}",pci_bus_id="00000000:${(16 + g).toString(16)}:00.0",device="nvidia${g}",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-${node}",DCGM_FI_DRIVER_VERSION="570.86.15"${mapping}} ${value}`);
    }
  }
  return lines.join("\n") + "\n";
}

/** What endpoint `i` of `endpoints` (fleetEndpoints(shape)) answers at second `t` of fleet time. */
export function endpointText(shape: FleetShape, endpoints: readonly FleetEndpoint[], i: number, t: number): string {
  const e = endpoints[i]!;
  if (e.kind === "envoy") return envoyText(shape, t, i);
  if (e.kind === "vllm") return vllmText(shape, t, i);
  const node = e.node;
  const pods = endpoints.filter((x) => x.kind === "envoy" && x.node === node).map((x) => x.pod);
  return dcgmText(shape, Number(node.slice("gpu-node-".length)), t, pods);
}

/** The fleet server: `url(path)` for each endpoint; bodies change once per second of real time. */
export interface Fleet {
  endpoints: FleetEndpoint[];
  base: string;
  /** Series one scrape of every endpoint returns. */
  series: number;
  close(): Promise<void>;
}

/** Starts the fleet server on 127.0.0.1 (port 0). */
export async function startFleet(shape: FleetShape): Promise<Fleet> {
  const endpoints = fleetEndpoints(shape);
  const byPath = new Map(endpoints.map((e, i) => [e.path, { e, i }]));
  const render = (i: number, t: number): string => endpointText(shape, endpoints, i, t);
  const cache = new Map<string, { second: number; body: string }>();
  const t0 = Date.now();
  const server: Server = createServer((req, res) => {
    const hit = byPath.get(req.url ?? "");
    if (!hit) return void res.writeHead(404).end();
    const second = Math.floor((Date.now() - t0) / 1000);
    let c = cache.get(hit.e.path);
    if (!c || c.second !== second) cache.set(hit.e.path, (c = { second, body: render(hit.i, second + 1) }));
    res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" }).end(c.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let series = 0;
  for (let i = 0; i < endpoints.length; i++) {
    for (const line of render(i, 1).split("\n")) if (line !== "" && !line.startsWith("#")) series++;
  }
  return {
    endpoints,
    base,
    series,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
