// A waypoint's scrape split by destination pod (join/waypoint-split.ts): each pod's series become a
// scrape of that pod, labelled with the waypoint; the rest stay with the waypoint, bounded.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MAX_DESTINATIONS_PER_WAYPOINT, splitWaypointScrape } from "../../../control-plane/src/join/waypoint-split.js";
import type { PodAtIp } from "../../../control-plane/src/scrape/pod-ips.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";

const WAYPOINT: ScrapeTarget = { id: "envoy|http://10.0.9.1:15090/stats/prometheus|llm/waypoint-7c9f-x", kind: "envoy", url: "http://10.0.9.1:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "waypoint-7c9f-x", node: "cpu-0", waypoint: true };
const PODS = new Map<string, PodAtIp>([["10.0.1.1", { namespace: "llm", pod: "chat-a", node: "gpu-1" }], ["10.0.2.1", { namespace: "llm", pod: "chat-b", node: "gpu-2" }]]);

function scrape(text: string): ScrapeResult {
  const p = parseText(text);
  return { target: WAYPOINT, timestampMs: 1_000, durationMs: 3, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}
const lines = (r: ScrapeResult): string[] => r.samples.map((s) => `${s.name}{${s.labels.join(",")}} ${s.value}`);

describe("a waypoint's scrape split by destination pod", () => {
  it("gives each resolved pod a scrape whose target is the pod (its node too), its series labelled with the waypoint instead of the IP", () => {
    const split = splitWaypointScrape(scrape([
      'tokentrace_requests_total{route="chat",status_class="2xx",pod_ip="10.0.2.1"} 4',
      'tokentrace_requests_total{route="chat",status_class="2xx",pod_ip="10.0.1.1"} 7',
      'tokentrace_config_errors_total{reason="bad"} 1',
    ].join("\n") + "\n"), (ip) => PODS.get(ip));
    assert.deepEqual(split.parts.map((p) => [p.resolved, p.result.target.id, p.result.target.namespace, p.result.target.pod, p.result.target.node, p.result.target.viaWaypoint, p.result.target.waypoint]), [
      [false, WAYPOINT.id, "llm", "waypoint-7c9f-x", "cpu-0", undefined, true],
      [true, `${WAYPOINT.id}>llm/chat-a`, "llm", "chat-a", "gpu-1", "llm/waypoint-7c9f-x", undefined],
      [true, `${WAYPOINT.id}>llm/chat-b`, "llm", "chat-b", "gpu-2", "llm/waypoint-7c9f-x", undefined],
    ]);
    assert.deepEqual(split.parts.map((p) => lines(p.result)), [
      ['tokentrace_config_errors_total{reason,bad} 1'],
      ['tokentrace_requests_total{route,chat,status_class,2xx,waypoint,llm/waypoint-7c9f-x} 7'],
      ['tokentrace_requests_total{route,chat,status_class,2xx,waypoint,llm/waypoint-7c9f-x} 4'],
    ]);
    assert.equal(split.unresolvedSeries, 0);
    assert.equal(split.droppedSeries, 0);
  });

  it("keeps pod_ip=\"other\" and IPs of no known pod with the waypoint's own target, counted as unresolved", () => {
    const split = splitWaypointScrape(scrape('tokentrace_requests_total{route="chat",status_class="2xx",pod_ip="other"} 2\ntokentrace_requests_total{route="chat",status_class="2xx",pod_ip="10.0.3.3"} 1\n'), (ip) => PODS.get(ip));
    assert.equal(split.parts.length, 1);
    assert.deepEqual(lines(split.parts[0]!.result), ['tokentrace_requests_total{route,chat,status_class,2xx,pod_ip,other} 2', 'tokentrace_requests_total{route,chat,status_class,2xx,pod_ip,10.0.3.3} 1']);
    assert.equal(split.unresolvedSeries, 2);
  });

  it(`keeps at most ${MAX_DESTINATIONS_PER_WAYPOINT} distinct pod_ip values per scrape and counts the series past them as dropped`, () => {
    const n = MAX_DESTINATIONS_PER_WAYPOINT + 5;
    const text = Array.from({ length: n }, (_, i) => `tokentrace_requests_total{route="chat",status_class="2xx",pod_ip="10.9.${i >> 8}.${i & 255}"} 1\n`).join("") + 'tokentrace_requests_total{route="chat",status_class="5xx",pod_ip="10.9.0.0"} 1\n';
    const split = splitWaypointScrape(scrape(text), () => undefined);
    assert.equal(split.droppedSeries, 5);
    assert.equal(split.unresolvedSeries, MAX_DESTINATIONS_PER_WAYPOINT + 1, "a known IP's further series are still kept");
    assert.equal(split.parts[0]!.result.samples.length, MAX_DESTINATIONS_PER_WAYPOINT + 1);
  });
});
