// The join of a pod's series seen through waypoints: each waypoint a source of its own, so a pod
// reached through two waypoint replicas (a waypoint Deployment scaled to two) gets its rates from
// each one's counters, never from one's value minus the other's.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Joiner } from "../../../control-plane/src/join/joiner.js";
import { destinationTarget } from "../../../control-plane/src/join/waypoint-split.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";

const T0 = 1_800_000_000_000;
const DCGM: ScrapeTarget = { id: "dcgm|http://10.0.1.9:9400/metrics|gpu-operator/dcgm-1", kind: "dcgm", url: "http://10.0.1.9:9400/metrics", intervalMs: 15000, timeoutMs: 5000, namespace: "gpu-operator", pod: "dcgm-1", node: "gpu-1" };
const waypoint = (name: string, ip: string): ScrapeTarget => ({ id: `envoy|http://${ip}:15090/stats/prometheus|llm/${name}`, kind: "envoy", url: `http://${ip}:15090/stats/prometheus`, intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: name, node: "cpu-0", waypoint: true });
const CHAT = { namespace: "llm", pod: "chat-a", node: "gpu-1" };

function result(target: ScrapeTarget, text: string, ts: number): ScrapeResult {
  const p = parseText(text);
  return { target, timestampMs: ts, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}
const dcgm = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",modelName="NVIDIA L4",Hostname="gpu-1",namespace="llm",pod="chat-a"} 60\n';
/** A waypoint's part for chat-a: its output tokens so far (already split: the waypoint label in place of pod_ip). */
const part = (via: string, tokens: number): string => `tokentrace_llm_output_tokens_total{route="chat",model="llama",waypoint="llm/${via}"} ${tokens}\n`;
const rate = (out: WriteSeries[], via: string): number[] =>
  out.filter((s) => s.labels[1] === "tokentrace_output_tokens_per_second_per_gpu" && s.labels.includes(`llm/${via}`)).map((s) => s.samples[0]!.value);

describe("a pod seen through two waypoint replicas", () => {
  it("gets one rate per waypoint, each from that waypoint's own counter, labelled with it", () => {
    const j = new Joiner();
    j.join(result(DCGM, dcgm, T0));
    const w1 = destinationTarget(waypoint("waypoint-1", "10.0.9.1"), CHAT);
    const w2 = destinationTarget(waypoint("waypoint-2", "10.0.9.2"), CHAT);
    // waypoint-1 has carried 1000 tokens to chat-a, waypoint-2 5000; 15 s later 1300 and 5600.
    j.join(result(w1, part("waypoint-1", 1000), T0 + 1000));
    j.join(result(w2, part("waypoint-2", 5000), T0 + 2000));
    assert.deepEqual(rate(j.join(result(w1, part("waypoint-1", 1300), T0 + 16_000)), "waypoint-1"), [20]);
    assert.deepEqual(rate(j.join(result(w2, part("waypoint-2", 5600), T0 + 17_000)), "waypoint-2"), [40]);
  });
});
