// Waypoint scrapes through the join, sharded by series. A waypoint serves pods on many nodes, and
// the join is node-local (a node's dcgm-exporter maps its pods' GPUs on the replica that owns the
// node). So every replica scrapes every waypoint, at the same slot instants, and keeps only the
// parts (join/waypoint-split.ts) whose destination pod's node it owns at that instant, by the
// hand-over's windows (Handover.ownsAt); the part of series with no resolvable pod, and the scrape's
// `up`, are kept by the owner of the waypoint's own node. As Prometheus users shard a target's
// series with metric_relabel_configs hashmod + keep: each series written once, by one replica.
import type { JoinedBatch, Joiner } from "../join/joiner.js";
import { splitWaypointScrape, type WaypointSplit } from "../join/waypoint-split.js";
import type { PodAtIp } from "../scrape/pod-ips.js";
import type { ScrapeResult } from "../scrape/scraper.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import type { WriteSeries } from "../remote-write/series.js";

/** What a waypoint's series became on this replica (each counted by the one replica that keeps it). */
export type WaypointOutcome = "joined" | "unresolved" | "dropped";

/** What the waypoint stage needs from the pipeline. */
export interface WaypointDeps {
  joiner: Joiner;
  /** The pod holding an IP now (discovery's PodIpIndex). */
  resolve: (ip: string) => PodAtIp | undefined;
  /** The slot instant of a scrape of `t` started at `atMs` (the same on every replica). */
  slotOf: (t: ScrapeTarget, atMs: number) => number;
  /** Whether this replica writes the series of `t`'s shard at slot instant `atMs`. */
  owns: (t: ScrapeTarget, atMs: number) => boolean;
  /** Ships the waypoint scrape's own report (up, scrape_duration_seconds). */
  shipReport: (r: ScrapeResult, report: WriteSeries[]) => void;
  shipBatches: (batches: JoinedBatch[]) => void;
  /** A part's series end: stale markers at `ts`, or (undefined) forgotten, written on by another replica. */
  endSource: (t: ScrapeTarget, ts: number | undefined) => void;
  count: (outcome: WaypointOutcome, series: number) => void;
}

/** The waypoint scrapes' path through the join, with the destination parts each waypoint last shipped here. */
export class WaypointScrapes {
  /** Waypoint target id -> its destination parts' targets shipped at its last scrape. */
  private readonly shipped = new Map<string, Map<string, ScrapeTarget>>();

  constructor(private readonly deps: WaypointDeps) {}

  /** Destination parts this replica ships now, over all waypoints. */
  get destinations(): number {
    let n = 0;
    for (const parts of this.shipped.values()) n += parts.size;
    return n;
  }

  /** One scrape of a waypoint, split, each part this replica owns joined and shipped. */
  onResult(r: ScrapeResult): void {
    const { deps } = this;
    const at = deps.slotOf(r.target, r.timestampMs);
    const before = this.shipped.get(r.target.id) ?? new Map<string, ScrapeTarget>();
    const split: WaypointSplit = r.ok
      ? splitWaypointScrape(r, deps.resolve)
      : // A failed scrape fails every part shipped here before: the join forgets their rates and
        // ends their series, as it does a sidecar's on a failed scrape; the parts stay known.
        { parts: [{ result: r, resolved: false }, ...[...before.values()].map((target) => ({ result: { ...r, target }, resolved: true }))], unresolvedSeries: 0, droppedSeries: 0 };
    const now = new Map<string, ScrapeTarget>();
    for (const part of split.parts) {
      const t = part.result.target;
      if (!deps.owns(t, at)) continue;
      const out = deps.joiner.joinScrape(part.result);
      if (part.resolved) {
        now.set(t.id, t);
        if (r.ok) deps.count("joined", part.result.samples.length);
      } else {
        // The waypoint's own part carries the scrape's report; a destination part's report would repeat it.
        deps.shipReport(r, out.report);
        if (split.unresolvedSeries > 0) deps.count("unresolved", split.unresolvedSeries);
        if (split.droppedSeries > 0) deps.count("dropped", split.droppedSeries);
      }
      deps.shipBatches(out.batches);
    }
    // A part shipped last time and not now: its pod no longer resolves (deleted, or its IP taken),
    // and its series end here, as Prometheus ends a target's missing series; or its node's slot
    // moved to another replica, which writes them on.
    for (const [id, t] of before) {
      if (now.has(id)) continue;
      deps.endSource(t, deps.owns(t, at) ? r.timestampMs : undefined);
      deps.shipBatches(deps.joiner.removeTarget(t));
    }
    if (now.size > 0) this.shipped.set(r.target.id, now);
    else this.shipped.delete(r.target.id);
  }

  /** The waypoint is no longer scraped here: its parts end at `ts` (it went away), or are forgotten (undefined: another replica goes on). */
  removed(waypoint: ScrapeTarget, ts: number | undefined): void {
    for (const t of this.shipped.get(waypoint.id)?.values() ?? []) {
      this.deps.endSource(t, ts !== undefined && this.deps.owns(t, ts) ? ts : undefined);
      this.deps.shipBatches(this.deps.joiner.removeTarget(t));
    }
    this.shipped.delete(waypoint.id);
  }
}
