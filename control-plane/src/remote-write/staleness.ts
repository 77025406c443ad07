// Staleness markers: when a series a source reported last time is missing from its next report (or
// the source fails or goes away), Prometheus expects one sample with the stale NaN so queries stop
// returning the old value at once instead of after five minutes of lookback.
import type { Labels } from "../scrape/sample.js";

/** Remembers the series each source reported last, and says which ones disappeared. */
export class StalenessTracker {
  private readonly last = new Map<string, Map<string, Labels>>();

  /** Records this report of `source` (series key -> labels) and returns the series that vanished since the last one. */
  update(source: string, current: Map<string, Labels>): { key: string; labels: Labels }[] {
    const before = this.last.get(source);
    this.last.set(source, current);
    if (!before) return [];
    const gone: { key: string; labels: Labels }[] = [];
    for (const [key, labels] of before) if (!current.has(key)) gone.push({ key, labels });
    return gone;
  }

  /** Forgets `source` and returns everything it had reported (all now stale). */
  remove(source: string): { key: string; labels: Labels }[] {
    const before = this.last.get(source);
    this.last.delete(source);
    return before ? [...before].map(([key, labels]) => ({ key, labels })) : [];
  }

  /** Number of series currently tracked over all sources. */
  get size(): number {
    let n = 0;
    for (const m of this.last.values()) n += m.size;
    return n;
  }
}
