// Staleness markers: when a series a source reported last time is missing from its next report (or
// the source fails or goes away), Prometheus expects one sample with the stale NaN so queries stop
// returning the old value at once instead of after five minutes of lookback (scrape/scrape.go,
// scrapeLoop.updateStaleMarkers and endOfRunStaleness).
import type { SeriesEntry } from "./series-registry.js";

/** A source's report: the entry of each series in the order reported (undefined where one was not admitted; an entry may repeat). */
export type ReportedEntries = ReadonlyArray<SeriesEntry | undefined>;

/**
 * Remembers the series each source reported last, and says which ones disappeared. Each report is
 * kept as the gate's array of entries, not a Set: a comparison marks every entry of the new report
 * with a number of its own (SeriesEntry.mark) and takes the old report's unmarked entries, so no
 * Set is built, grown and hashed for every scrape of every target.
 */
export class StalenessTracker {
  private readonly last = new Map<string, ReportedEntries>();
  /** The last mark handed out; each comparison takes the next, so a mark never matches an earlier one. */
  private marks = 0;

  /** Records this report of `source` and returns the series that vanished since the last one, each once. */
  update(source: string, current: ReportedEntries): SeriesEntry[] {
    const before = this.last.get(source);
    this.last.set(source, current);
    if (!before) return [];
    const mark = ++this.marks;
    for (const e of current) if (e !== undefined) e.mark = mark;
    return this.unmarked(before, mark);
  }

  /** Forgets `source` and returns everything it had reported (all now stale), each once. */
  remove(source: string): SeriesEntry[] {
    const before = this.last.get(source);
    this.last.delete(source);
    return before ? this.unmarked(before, ++this.marks) : [];
  }

  /** The entries of `report` not marked `mark`, each once (marking them as it goes). */
  private unmarked(report: ReportedEntries, mark: number): SeriesEntry[] {
    const out: SeriesEntry[] = [];
    for (const e of report) {
      if (e === undefined || e.mark === mark) continue;
      e.mark = mark;
      out.push(e);
    }
    return out;
  }

  /** Number of distinct series currently tracked per source, summed over the sources. */
  get size(): number {
    let n = 0;
    for (const report of this.last.values()) n += this.unmarked(report, ++this.marks).length;
    return n;
  }
}
