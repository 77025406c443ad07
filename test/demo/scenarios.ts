// The demo's scenarios (TOKENTRACE_DEMO_SCENARIO): each sets the simulated engine and the load so
// that, within a minute, the dashboard shows one of the stories docs/demo.md tells and the matching
// alert of istio/observability/prometheus-rules.yaml fires in the demo's Prometheus.
import type { EngineParams } from "./engine.js";
import type { OptionalCounter, StrayProcess } from "./dcgm-sim.js";

/** One scenario. */
export interface Scenario {
  name: string;
  /** What the dashboard shows, in a line. */
  story: string;
  /** The alert (prometheus-rules.yaml) whose expression this scenario makes true; null: none should. */
  alert: string | null;
  engine: Partial<EngineParams>;
  /** Requests per second of the load generator (TOKENTRACE_DEMO_LOAD_RPS overrides it). */
  loadRps: number;
  /** Most requests the load generator keeps in flight (clients' connection pools bound the queue). */
  maxInFlight: number;
  /** A system prompt on every request, one per tenant: the same leading tokens the prefix cache can reuse. */
  systemPromptTokens: number;
  tenants: number;
  /** Prompt tokens of each request's own (retrieved documents, conversation history). */
  contextTokens: number;
  /** Completion tokens of every request; undefined: the load's max_tokens (up to 12). */
  outputTokens?: number;
  /** Fields the story needs added to the simulated dcgm-exporter's default counters (none: a stock exporter). */
  dcgmCounters?: OptionalCounter[];
  /** The GPU starts throttling this long after start: its clock-event reason bits and how much slower its steps get. */
  throttle?: { afterMs: number; reasons: number; slowdown: number };
  /** Cards the pod runs tensor-parallel over (the simulated dcgm-exporter maps each to it); default 1. */
  gpus?: number;
  /** A process outside the pod on one of its cards. */
  strayProcess?: StrayProcess;
}

export const SCENARIOS: ReadonlyMap<string, Scenario> = new Map([
  [
    "normal",
    {
      name: "normal",
      story: "a healthy server: TTFT about 50 ms, the GPU about a third busy, no queue; the tenants' system prompts stay in the prefix cache (hits near 97%) and the draft model's tokens are mostly accepted (near 90%)",
      alert: null,
      engine: {},
      loadRps: 5,
      maxInFlight: 64,
      systemPromptTokens: 1000,
      tenants: 4,
      contextTokens: 0,
    },
  ],
  [
    "gpu-saturated",
    {
      name: "gpu-saturated",
      story: "GPU saturated, queueing: long prompts (retrieved documents, prefix caching off) need more prefill than the GPU can compute, so requests wait; TTFT climbs to seconds while the GPU is over 90% busy",
      alert: "TokentraceTTFTHighGPUSaturated",
      engine: { prefixCaching: false },
      loadRps: 5,
      maxInFlight: 24,
      systemPromptTokens: 200,
      tenants: 1,
      contextTokens: 6000,
    },
  ],
  [
    "slow-model",
    {
      name: "slow-model",
      story: "slow model, idle GPU: the server's CPU side (scheduling, detokenising) is slow and its batch limit is 4 (no speculative decoding), so requests wait in its queue while the GPU idles under 40%",
      alert: "TokentraceTTFTHighGPUIdle",
      engine: { hostOverheadMs: 150, maxNumSeqs: 4, numSpeculativeTokens: 0 },
      loadRps: 3,
      maxInFlight: 24,
      systemPromptTokens: 1000,
      tenants: 4,
      contextTokens: 0,
    },
  ],
  [
    "kv-cache-pressure",
    {
      name: "kv-cache-pressure",
      story: "KV-cache pressure on a bigger model: 32 tenants' system prompts and long answers do not fit its KV cache beside the batch, so cached prompts are evicted (prefix-cache hits under 50%) and requests are preempted and wait for KV blocks (waiting on capacity), while the draft model's tokens on these long answers are mostly rejected (acceptance near 50%) and the GPU runs over 85%; a KV connector offloads the prompts to CPU memory, so most evicted ones are loaded back, not computed again (external prefix-cache hits)",
      alert: "TokentraceGPUBusyKVCacheMissSpecRejected",
      // A CPU tier (vLLM's offloading connector, LMCache) with room for every tenant's prompt twice
      // over. Its loads save prefill, so requests finish sooner: a KV cache of 32,000 tokens keeps the
      // pressure 36,000 had without it (fake-clock runs of this load, 30 to 60 s in: 0.94 used, median
      // of 12 runs, against 0.96; with the connector and 36,000, 0.89, some runs under 0.7).
      engine: { kvCacheTokens: 32_000, maxNumSeqs: 64, hostOverheadMs: 4, stepBaseMs: 40, decodeMsPerSeq: 1.5, draftAcceptance: 0.7, kvOffloadTokens: 100_000 },
      loadRps: 3,
      maxInFlight: 64,
      systemPromptTokens: 1500,
      tenants: 32,
      contextTokens: 200,
      outputTokens: 240,
    },
  ],
  [
    "gpu-starved",
    {
      name: "gpu-starved",
      story: "busy but starved: the engine runs without CUDA graphs (vLLM --enforce-eager) and with a batch of 4, so every step is a train of small kernels launched one by one: the GPU shows over 90% utilisation while its tensor pipe and memory interface do about a quarter of what they could (dcgm-exporter's default counters, no SM_ACTIVE needed); more GPUs would not help, CUDA graphs and a bigger batch would",
      alert: "TokentraceGPUBusyButStarved",
      engine: { eagerKernelMsPerStep: 60, maxNumSeqs: 4, numSpeculativeTokens: 0, hostOverheadMs: 2 },
      loadRps: 3,
      maxInFlight: 24,
      systemPromptTokens: 1000,
      tenants: 4,
      contextTokens: 0,
    },
  ],
  [
    "gpu-thermal",
    {
      name: "gpu-thermal",
      story: "an afternoon of thermal throttling: the normal server until, 45 s in (once its first, cold-cache requests no longer set its TTFT P95), its GPU reaches its slowdown temperature and DCGM's clock-event reasons say sw_thermal and hw_thermal (the exporter's counters file adds DCGM_FI_DEV_CLOCKS_EVENT_REASONS); clocks drop to a third and TTFT P95 nearly doubles with no change in load",
      alert: "TokentraceGPUThrottledTTFTRise",
      engine: {},
      loadRps: 5,
      maxInFlight: 64,
      systemPromptTokens: 1000,
      tenants: 4,
      contextTokens: 0,
      dcgmCounters: ["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"],
      throttle: { afterMs: 45_000, reasons: 0x20 | 0x40, slowdown: 3 },
    },
  ],
  [
    "gpu-straggler",
    {
      name: "gpu-straggler",
      story: "a tensor-parallel straggler: the normal server's engine runs tensor-parallel over four H100s, and a job someone started on the node by hand, outside Kubernetes, shares card 2: it holds 8 GiB there and fills most of the time the pod leaves that card idle, so card 2 shows 35 to 40 points more utilisation and 8 GiB more memory than its peers (spreads past the straggler thresholds: 20 points, and 10% of the fullest card), while every step waits at the all-reduce for its rank's kernels, slowed by the sharing (dcgm-exporter's default counters)",
      alert: "TokentraceGPUStraggler",
      // The stray job's kernels time-slice with rank 2's, so each step (which waits at every all-reduce for the slowest rank) takes 30% longer.
      engine: { gpuSlowdown: 1.3 },
      loadRps: 5,
      maxInFlight: 64,
      systemPromptTokens: 1000,
      tenants: 4,
      contextTokens: 0,
      gpus: 4,
      strayProcess: { gpu: 2, fbUsedMiB: 8192, idleShareUsed: 0.6 },
    },
  ],
]);

/** The scenario named `name`, or an error listing the names. */
export function scenarioNamed(name: string): Scenario {
  const s = SCENARIOS.get(name);
  if (!s) throw new Error(`TOKENTRACE_DEMO_SCENARIO=${JSON.stringify(name)} is not a scenario: use one of ${[...SCENARIOS.keys()].join(", ")}`);
  return s;
}
