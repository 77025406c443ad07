// Staleness markers: when a series a source reported last time is missing from its next report (or
// the source fails or goes away), Prometheus expects one sample with the stale NaN so queries stop
// returning the old value at once instead of after five minutes of lookback (scrape/scrape.go,
// scrapeLoop.updateStaleMarkers and endOfRunStaleness).
import type { SeriesEntry } from "./series-registry.js";

/** Remembers the series each source reported last, and says which ones disappeared. */
export class StalenessTracker {
  private readonly last = new Map<string, Set<SeriesEntry>>();

  /** Records this report of `source` and returns the series that vanished since the last one. */
  update(source: string, current: Set<SeriesEntry>): SeriesEntry[] {
    const before = this.last.get(source);
    this.last.set(source, current);
    if (!before) return [];
    const gone: SeriesEntry[] = [];
    for (const e of before) if (!current.has(e)) gone.push(e);
    return gone;
  }

  /** Forgets `source` and returns everything it had reported (all now stale). */
  remove(source: string): SeriesEntry[] {
    const before = this.last.get(source);
    this.last.delete(source);
    return before ? [...before] : [];
  }

  /** Number of series currently tracked over all sources. */
  get size(): number {
    let n = 0;
    for (const m of this.last.values()) n += m.size;
    return n;
  }
}
