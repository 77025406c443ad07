// One GPU pod of the mesh, round by round, as its three targets answer a scrape: the real
// filter.wasm under the test host serving a streaming and a non-streaming chat call, an oversized
// body and a malformed traceparent on two routes (its /stats/prometheus text with the mesh's
// extraStatTags), vLLM's /metrics (test/fixtures/istio/vllm-0.prom, counters advanced each round)
// and dcgm-exporter's (dcgm-gpu-node-1.prom, which maps the pod to its GPUs; energy growing).
// Shared by the produced-series catalogue and the one-Prometheus test.
import { readFileSync } from "node:fs";
import { ManualClock, type FilterVm } from "../host/index.js";
import { countingRandom, loadFilter } from "../filter/support.js";
import { advance } from "./engine-scrapes.js";

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/istio/${name}`, import.meta.url), "utf8");

/** The pod the fixtures describe, and its node. */
export const MESH_POD = { namespace: "llm", pod: "vllm-0", node: "gpu-node-1" } as const;

/** Replaces the value of every sample line of `name`. */
export function setValue(text: string, name: string, value: number): string {
  return text.replace(new RegExp(`^(${name.replace(/[:]/g, "\\$&")}\\{[^}]*\\}) \\S+$`, "gm"), `$1 ${value}`);
}

/** A streaming and a non-streaming chat completion, an oversized request body and a request with a malformed traceparent. */
export function traffic(vm: FilterVm, clock: ManualClock, route: string): void {
  const model = "llama-3.1-8b";
  const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
  for (const stream of [true, false]) {
    const s = vm.newStream({ routeName: route });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "vllm.llm.svc"], ["content-type", "application/json"]], false);
    s.requestBody(JSON.stringify({ model, stream, messages: [{ role: "user", content: "x" }] }), true);
    clock.advanceMs(180);
    if (stream) {
      s.responseHeaders([[":status", "200"], ["content-type", "text/event-stream"]], false);
      s.responseBody(sse([{ model, choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }] }]).replace("data: [DONE]\n\n", ""), false);
      clock.advanceMs(40);
      s.responseBody(sse([{ model, choices: [{ index: 0, delta: { content: "b" }, finish_reason: "stop" }] }, { model, choices: [], usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 } }]), true);
    } else {
      s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
      s.responseBody(JSON.stringify({ model, choices: [{ index: 0, message: { role: "assistant", content: "ab" }, finish_reason: "length" }], usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 } }), true);
    }
    s.end();
  }
  // A request body past llm.maxRequestBodyBytes (counted, passed through unread).
  const big = vm.newStream({ routeName: route });
  big.requestHeaders([[":method", "POST"], [":path", "/v1/completions"], [":authority", "vllm.llm.svc"], ["content-type", "application/json"]], false);
  big.requestBody(JSON.stringify({ model, prompt: "x".repeat(70_000) }), true);
  big.responseHeaders([[":status", "200"], ["content-type", "application/json"]], true);
  big.end();
  const bad = vm.newStream({ routeName: route });
  bad.requestHeaders([[":method", "GET"], [":path", "/health"], [":authority", "vllm.llm.svc"], ["traceparent", "00-XYZ-bad"]], true);
  bad.responseHeaders([[":status", "503"]], true);
  bad.end();
}

/** What the three targets answer at each round. */
export interface MeshRound { envoy: string; vllm: string; dcgm: string }

/**
 * A filter VM with the given pluginConfig and stat tags; `round(k)` (k = 0, 1, ... in order) runs
 * one round of traffic on routes chat and default and returns the three scrape bodies.
 */
export async function meshScrapes(pluginConfig: unknown, statTags: string[]): Promise<{ round: (k: number) => MeshRound }> {
  const clock = new ManualClock(1_800_000_000_000_000_000n);
  const vm = await loadFilter({ clock, random: countingRandom(), config: pluginConfig, statTags });
  if (!vm.configureAccepted) throw new Error("the filter rejected the pluginConfig");
  const dcgm = fixture("dcgm-gpu-node-1.prom");
  const vllm = fixture("vllm-0.prom");
  return {
    round: (k) => {
      traffic(vm, clock, "chat");
      traffic(vm, clock, "default");
      // 2,000 J per round on each GPU.
      return { envoy: vm.stats.prometheus(), vllm: advance(vllm, k, 0.25), dcgm: setValue(dcgm, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 5_100_000_000 + k * 2_000_000) };
    },
  };
}
