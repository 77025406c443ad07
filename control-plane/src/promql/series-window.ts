// The recent samples of a set of scraped series, kept as a Prometheus TSDB would hold them for the
// functions the join evaluates: points for range selectors (rate, *_over_time), and staleness for
// instant selectors. A series a target reported is stale from the first scrape of that target
// that lacks it (or that failed), as Prometheus's scrape loop writes a staleness marker then
// (scrape/scrape.go, scrapeLoop); an instant selector looks back at most `LOOKBACK_MS` for the
// newest point (promql/engine.go, defaultLookbackDelta) and sees nothing past a staleness marker.
import { stringBytes } from "../scrape/name-pool.js";
import type { Samples } from "./rate.js";

/** Prometheus's default lookback delta for instant selectors (5 minutes). */
export const LOOKBACK_MS = 300_000;

// What V8 (Node 20, x64, pointer compression) takes for a window's series, rounded up from a heap
// measurement (test/control-plane/join/window-memory.test.ts checks the estimate stays above what
// the heap grows by): the series' object, its map slots, its info (its label values copied once, see
// `keep`); its key twice over (the key and the info's identity, one byte a character or two past
// Latin-1); each point's value (a double in a ring sized RING_SLACK past the most the series held:
// its time is its target's scrape time, held once for all the target's series); a point's own time
// where the series holds one (see WindowSeries.ownTimes); each staleness marker.
const WINDOW_SERIES_BYTES = 540;
const POINT_BYTES = 9;
const OWN_TIME_BYTES = 12;
const STALE_BYTES = 16;
/** Values a series' ring is grown by when full. */
const RING_SLACK = 8;

/** The estimated heap bytes of a window series whose key V8 stores in `keyBytes`, holding `points` points. */
export function windowSeriesBytes(keyBytes: number, points: number): number {
  return WINDOW_SERIES_BYTES + 2 * keyBytes + POINT_BYTES * points;
}

/** Where several windows add up what they hold (estimated as windowSeriesBytes). */
export interface WindowTally {
  bytes: number;
}

/** The times of a target's scrapes that its series' points may still be at, numbered from `base`. */
class TargetScrapes {
  /** Ascending; times[i] is the time of scrape base + i. Never empty once scraped: the newest stays. */
  readonly times: number[] = [];
  base = 0;
  readonly keys = new Set<string>();

  get newest(): number {
    return this.times.length > 0 ? this.times[this.times.length - 1]! : -Infinity;
  }

  /** The number of the newest scrape. */
  get newestSeq(): number {
    return this.base + this.times.length - 1;
  }
}

/**
 * One series: what the caller knows of it, its points in time order (read by index, as rate.ts
 * reads Samples), and when it went stale. A series found in every scrape of its target since its
 * first holds values only, the times being its target's; one that missed a scrape and came back, or
 * took a point out of its target's order, holds its own times from then on (ownTimes).
 */
export class WindowSeries<I> implements Samples {
  /**
   * Its values as a ring: the oldest at `head`, `n` of them. The array is sized here, RING_SLACK
   * past the most the series has held, rather than grown by push (V8 adds half again, plus 16).
   */
  private ring: number[] = [];
  private head = 0;
  private n = 0;
  /** Aligned: the number of the target scrape the oldest value is from. */
  private first = 0;
  private ownTimes: number[] | undefined;
  /** Times of staleness markers, ascending (none: undefined). */
  staleAt: number[] | undefined;

  constructor(readonly info: I, readonly targetId: string, private readonly scrapes: TargetScrapes) {}

  get count(): number {
    return this.n;
  }

  time(i: number): number {
    return this.ownTimes !== undefined ? this.ownTimes[i]! : this.scrapes.times[this.first - this.scrapes.base + i]!;
  }

  value(i: number): number {
    const j = this.head + i;
    const cap = this.ring.length;
    return this.ring[j >= cap ? j - cap : j]!;
  }

  /** Time of the newest point, or -Infinity. */
  get newestTime(): number {
    return this.n === 0 ? -Infinity : this.time(this.n - 1);
  }

  /** The target scrape number the oldest point is from, for an aligned series holding any. */
  get firstScrape(): number | undefined {
    return this.ownTimes === undefined && this.n > 0 ? this.first : undefined;
  }

  /** Appends a point at `ts`, scrape number `seq` of its target (-1: not its target's newest scrape); the bytes the series grew by. */
  append(ts: number, seq: number, value: number): number {
    const n = this.n;
    this.push(value);
    if (this.ownTimes === undefined) {
      if (seq >= 0 && (n === 0 || this.first + n === seq)) {
        if (n === 0) this.first = seq;
        return POINT_BYTES;
      }
      const own: number[] = [];
      for (let i = 0; i < n; i++) own.push(this.time(i));
      own.push(ts);
      this.ownTimes = own;
      return (n + 1) * OWN_TIME_BYTES + POINT_BYTES;
    }
    this.ownTimes.push(ts);
    return OWN_TIME_BYTES + POINT_BYTES;
  }

  /** Drops the oldest `k` points; the bytes given back. */
  drop(k: number): number {
    this.head = (this.head + k) % this.ring.length;
    this.n -= k;
    if (this.ownTimes === undefined) {
      this.first += k;
      return k * POINT_BYTES;
    }
    this.ownTimes.splice(0, k);
    return k * (POINT_BYTES + OWN_TIME_BYTES);
  }

  /** The bytes its points and markers are estimated at (the series itself apart). */
  get heldBytes(): number {
    return this.n * (POINT_BYTES + (this.ownTimes === undefined ? 0 : OWN_TIME_BYTES)) + STALE_BYTES * (this.staleAt?.length ?? 0);
  }

  private push(value: number): void {
    const cap = this.ring.length;
    if (this.n === cap) {
      // Full: a new ring, the values in order from its start.
      const next = new Array<number>(cap + RING_SLACK);
      for (let i = 0; i < this.n; i++) next[i] = this.value(i);
      this.ring = next;
      this.head = 0;
    }
    const j = this.head + this.n;
    const size = this.ring.length;
    this.ring[j >= size ? j - size : j] = value;
    this.n++;
  }
}

/** The series of several targets over the last `retainMs`. */
export class SeriesWindow<I> {
  private readonly series = new Map<string, WindowSeries<I>>();
  private readonly byTarget = new Map<string, TargetScrapes>();
  /** The series in key order, until one comes or goes. */
  private sorted: WindowSeries<I>[] | undefined;

  /**
   * `tally`: where what this window holds is added up (with the other windows sharing it). `keep`:
   * what a new series keeps of its first entry's info, applied once per series; label values parsed
   * from a scrape are views of its whole text, which a series held for the window must not keep.
   */
  constructor(private readonly retainMs: number, private readonly tally: WindowTally = { bytes: 0 }, private readonly keep: (info: I) => I = (info) => info) {}

  /**
   * Records one successful scrape of `targetId` at `ts`: a point for every entry (keys must be
   * unique per target and include the target), a staleness marker for the target's series the
   * scrape lacks. Points not newer than a series' last one are ignored.
   */
  observe(targetId: string, ts: number, entries: Iterable<{ key: string; info: I; value: number }>): void {
    const seen = new Set<string>();
    let scrapes = this.byTarget.get(targetId);
    if (!scrapes) this.byTarget.set(targetId, (scrapes = new TargetScrapes()));
    const seq = ts > scrapes.newest ? scrapes.times.push(ts) - 1 + scrapes.base : -1;
    for (const e of entries) {
      seen.add(e.key);
      let s = this.series.get(e.key);
      if (!s) {
        this.series.set(e.key, (s = new WindowSeries(this.keep(e.info), targetId, scrapes)));
        this.sorted = undefined;
        scrapes.keys.add(e.key);
        this.tally.bytes += windowSeriesBytes(stringBytes(e.key), 0);
      }
      if (s.newestTime >= ts) continue;
      this.tally.bytes += s.append(ts, seq, e.value);
    }
    for (const key of scrapes.keys) if (!seen.has(key)) this.markStale(key, ts);
    this.prune(ts);
  }

  /** A failed scrape of `targetId` at `ts`: all its series go stale. */
  failed(targetId: string, ts: number): void {
    for (const key of this.byTarget.get(targetId)?.keys ?? []) this.markStale(key, ts);
  }

  /** Forgets a target that went away. */
  remove(targetId: string): void {
    for (const key of this.byTarget.get(targetId)?.keys ?? []) this.forget(key);
    this.byTarget.delete(targetId);
  }

  /** Forgets every series (the window's share of the tally goes with them). */
  clear(): void {
    for (const key of [...this.series.keys()]) this.forget(key);
    this.byTarget.clear();
  }

  private forget(key: string): void {
    const s = this.series.get(key);
    if (!s) return;
    this.series.delete(key);
    this.sorted = undefined;
    this.tally.bytes -= windowSeriesBytes(stringBytes(key), 0) + s.heldBytes;
  }

  /** Whether any series is held. */
  get empty(): boolean {
    return this.series.size === 0;
  }

  /** Series held. */
  get size(): number {
    return this.series.size;
  }

  /** Every series held, in key order (the order Prometheus's storage returns series in). */
  all(): readonly WindowSeries<I>[] {
    // Sorted again only when the series held change: every scrape of the pod reads them in order.
    this.sorted ??= [...this.series.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
    return this.sorted;
  }

  private markStale(key: string, ts: number): void {
    const s = this.series.get(key);
    if (!s) return;
    const lastStale = s.staleAt?.[s.staleAt.length - 1] ?? -Infinity;
    if (lastStale < s.newestTime) {
      (s.staleAt ??= []).push(ts);
      this.tally.bytes += STALE_BYTES;
    }
  }

  private prune(nowMs: number): void {
    const horizon = nowMs - this.retainMs;
    // Per target, the oldest scrape a series it still holds is at: its times before that can go.
    const oldest = new Map<string, number>();
    for (const [key, s] of this.series) {
      let drop = 0;
      // Keep the newest point before the horizon too: an instant selector may still need it.
      const n = s.count;
      while (drop < n - 1 && s.time(drop + 1) <= horizon) drop++;
      if (drop > 0) this.tally.bytes -= s.drop(drop);
      const stale = s.staleAt;
      if (stale !== undefined) {
        let gone = 0;
        while (stale.length - gone > 1 && stale[gone + 1]! <= horizon) gone++;
        if (gone > 0) {
          stale.splice(0, gone);
          this.tally.bytes -= STALE_BYTES * gone;
        }
      }
      const newest = Math.max(s.newestTime, stale?.[stale.length - 1] ?? -Infinity);
      if (newest <= horizon) {
        this.forget(key);
        this.byTarget.get(s.targetId)?.keys.delete(key);
        continue;
      }
      const first = s.firstScrape;
      if (first !== undefined && first < (oldest.get(s.targetId) ?? Infinity)) oldest.set(s.targetId, first);
    }
    // The newest scrape time always stays.
    for (const [targetId, scrapes] of this.byTarget) {
      const keepFrom = Math.min(oldest.get(targetId) ?? Infinity, scrapes.newestSeq);
      const gone = keepFrom - scrapes.base;
      if (gone > 0) {
        scrapes.times.splice(0, gone);
        scrapes.base += gone;
      }
    }
  }
}

/** The instant value of a series at `t`: its newest point within the lookback, unless a staleness marker follows it. */
export function instantValue(s: WindowSeries<unknown>, t: number): number | undefined {
  let i = s.count - 1;
  while (i >= 0 && s.time(i) > t) i--;
  if (i < 0) return undefined;
  const pt = s.time(i);
  if (pt <= t - LOOKBACK_MS) return undefined;
  if (s.staleAt?.some((st) => st > pt && st <= t)) return undefined;
  return s.value(i);
}
