// The demo's scenarios (TOKENTRACE_DEMO_SCENARIO): each sets the simulated engine and the load so
// that, within a minute, the dashboard shows one of the stories the README tells and the matching
// alert of istio/observability/prometheus-rules.yaml fires in the demo's Prometheus.
import type { EngineParams } from "./engine.js";

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
  /** Prompt tokens added to every request (a system prompt and context). */
  extraPromptTokens: number;
}

export const SCENARIOS: ReadonlyMap<string, Scenario> = new Map([
  [
    "normal",
    {
      name: "normal",
      story: "a healthy server: TTFT about 50 ms, the GPU about half busy, no queue",
      alert: null,
      engine: {},
      loadRps: 5,
      maxInFlight: 64,
      extraPromptTokens: 200,
    },
  ],
  [
    "gpu-saturated",
    {
      name: "gpu-saturated",
      story: "GPU saturated, queueing: long prompts need more prefill than the GPU can compute, so requests wait; TTFT climbs to seconds while the GPU is over 90% busy",
      alert: "TokentraceTTFTHighGPUSaturated",
      engine: {},
      loadRps: 5,
      maxInFlight: 24,
      extraPromptTokens: 6000,
    },
  ],
  [
    "slow-model",
    {
      name: "slow-model",
      story: "slow model, idle GPU: the server's CPU side (scheduling, detokenising) is slow and its batch limit is 4, so requests wait in its queue while the GPU idles under 40%",
      alert: "TokentraceTTFTHighGPUIdle",
      engine: { hostOverheadMs: 150, maxNumSeqs: 4 },
      loadRps: 3,
      maxInFlight: 24,
      extraPromptTokens: 200,
    },
  ],
]);

/** The scenario named `name`, or an error listing the names. */
export function scenarioNamed(name: string): Scenario {
  const s = SCENARIOS.get(name);
  if (!s) throw new Error(`TOKENTRACE_DEMO_SCENARIO=${JSON.stringify(name)} is not a scenario: use one of ${[...SCENARIOS.keys()].join(", ")}`);
  return s;
}
