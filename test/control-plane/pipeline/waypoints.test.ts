// The waypoint stage (pipeline/waypoints.ts) with the real joiner: which parts of a waypoint's
// scrape this replica ships, and how they end (failed scrape, pod gone, slot moved away).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Joiner, type JoinedBatch } from "../../../control-plane/src/join/joiner.js";
import { WaypointScrapes, type WaypointOutcome } from "../../../control-plane/src/pipeline/waypoints.js";
import type { PodAtIp } from "../../../control-plane/src/scrape/pod-ips.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";

const T0 = 1_800_000_000_000;
const WAYPOINT: ScrapeTarget = { id: "envoy|http://10.0.9.1:15090/stats/prometheus|llm/waypoint-x", kind: "envoy", url: "http://10.0.9.1:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "waypoint-x", node: "cpu-0", waypoint: true };
const TEXT = 'tokentrace_requests_total{route="chat",status_class="2xx",pod_ip="10.0.1.1"} 5\ntokentrace_requests_total{route="chat",status_class="2xx",pod_ip="10.0.2.1"} 7\n';

function scrape(ts: number, ok = true): ScrapeResult {
  const p = parseText(ok ? TEXT : "");
  return { target: WAYPOINT, timestampMs: ts, durationMs: 4, ok, samples: p.samples, families: p.families, parseErrors: p.errors, ...(ok ? {} : { error: "timeout" }) };
}

function stage(owned: Set<string>, pods: Map<string, PodAtIp>) {
  const log = { shipped: [] as string[], ended: [] as string[], reports: [] as number[], counts: new Map<WaypointOutcome, number>() };
  const joiner = new Joiner({ identityWaitMs: 0 });
  const w = new WaypointScrapes({
    joiner,
    resolve: (ip) => pods.get(ip),
    slotOf: (_t, atMs) => atMs,
    owns: (t) => owned.has(t.node ?? ""),
    shipReport: (_r, report) => log.reports.push(...report.filter((s) => s.labels.includes("up")).map((s) => s.samples[0]!.value)),
    shipBatches: (batches: JoinedBatch[]) => {
      for (const b of batches) log.shipped.push(`${b.result.target.pod}:${b.series.filter((s) => s.labels.includes("tokentrace_requests_total")).map((s) => s.samples[0]!.value).join(",")}`);
    },
    endSource: (t, ts) => log.ended.push(`${t.pod}@${ts === undefined ? "moved" : ts - T0}`),
    count: (o, n) => log.counts.set(o, (log.counts.get(o) ?? 0) + n),
  });
  return { w, log };
}

describe("waypoint stage", () => {
  it("ships only the parts whose node this replica owns, and the report only with the waypoint's own node", () => {
    const pods = new Map<string, PodAtIp>([["10.0.1.1", { namespace: "llm", pod: "chat-a", node: "gpu-1" }], ["10.0.2.1", { namespace: "llm", pod: "chat-b", node: "gpu-2" }]]);
    const mine = stage(new Set(["gpu-1"]), pods);
    mine.w.onResult(scrape(T0));
    assert.deepEqual(mine.log.shipped, ["chat-a:5"]);
    assert.deepEqual(mine.log.reports, [], "the waypoint's up is cpu-0's owner's");
    const theirs = stage(new Set(["gpu-2", "cpu-0"]), pods);
    theirs.w.onResult(scrape(T0));
    assert.deepEqual(theirs.log.shipped, ["waypoint-x:", "chat-b:7"]);
    assert.deepEqual(theirs.log.reports, [1]);
    assert.deepEqual(Object.fromEntries(theirs.log.counts), { joined: 1 });
  });

  it("a failed scrape fails every part shipped before (their series end through the join), and they go on after", () => {
    const pods = new Map<string, PodAtIp>([["10.0.1.1", { namespace: "llm", pod: "chat-a", node: "gpu-1" }]]);
    const { w, log } = stage(new Set(["gpu-1", "cpu-0"]), pods);
    w.onResult(scrape(T0));
    w.onResult(scrape(T0 + 15_000, false));
    w.onResult(scrape(T0 + 30_000));
    assert.deepEqual(log.shipped, ["waypoint-x:7", "chat-a:5", "waypoint-x:", "chat-a:", "waypoint-x:7", "chat-a:5"]);
    assert.deepEqual(log.reports, [1, 0, 1]);
    assert.deepEqual(log.ended, [], "a failed scrape ends series as the join does, not by forgetting the part");
  });

  it("a part whose pod no longer resolves ends at that scrape; one whose node moved away is forgotten, not ended", () => {
    const pods = new Map<string, PodAtIp>([["10.0.1.1", { namespace: "llm", pod: "chat-a", node: "gpu-1" }], ["10.0.2.1", { namespace: "llm", pod: "chat-b", node: "gpu-2" }]]);
    const owned = new Set(["gpu-1", "gpu-2", "cpu-0"]);
    const { w, log } = stage(owned, pods);
    w.onResult(scrape(T0));
    pods.delete("10.0.1.1");
    owned.delete("gpu-2");
    w.onResult(scrape(T0 + 15_000));
    assert.deepEqual(log.ended, ["chat-a@15000", "chat-b@moved"]);
    assert.deepEqual(Object.fromEntries(log.counts), { joined: 2, unresolved: 1 });
  });
});
