// Staleness markers: when a series a source reported last time is missing from its next report (or
// the source fails or goes away), Prometheus expects one sample with the stale NaN so queries stop
// returning the old value at once instead of after five minutes of lookback.
import type { Labels } from "../scrape/sample.js";
import { seriesKey } from "./series.js";

/** Remembers the series each source reported last, and says which ones disappeared. */
export class StalenessTracker {
  private readonly last = new Map<string, Map<string, Labels>>();

  /** Records this report of `source` and returns the label sets that vanished since the last one. */
  update(source: string, current: Labels[]): Labels[] {
    const now = new Map<string, Labels>();
    for (const l of current) now.set(seriesKey(l), l);
    const before = this.last.get(source);
    this.last.set(source, now);
    if (!before) return [];
    const gone: Labels[] = [];
    for (const [k, l] of before) if (!now.has(k)) gone.push(l);
    return gone;
  }

  /** Forgets `source` and returns everything it had reported (all now stale). */
  remove(source: string): Labels[] {
    const before = this.last.get(source);
    this.last.delete(source);
    return before ? [...before.values()] : [];
  }

  /** Number of series currently tracked over all sources. */
  get size(): number {
    let n = 0;
    for (const m of this.last.values()) n += m.size;
    return n;
  }
}
