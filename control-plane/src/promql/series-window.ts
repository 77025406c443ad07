// The recent samples of a set of scraped series, kept as a Prometheus TSDB would hold them for the
// functions the join evaluates: points for range selectors (rate, *_over_time), and staleness for
// instant selectors. A series a target reported is stale from the first scrape of that target
// that lacks it (or that failed), as Prometheus's scrape loop writes a staleness marker then
// (scrape/scrape.go, scrapeLoop); an instant selector looks back at most `LOOKBACK_MS` for the
// newest point (promql/engine.go, defaultLookbackDelta) and sees nothing past a staleness marker.
import { stringBytes } from "../scrape/name-pool.js";

/** Prometheus's default lookback delta for instant selectors (5 minutes). */
export const LOOKBACK_MS = 300_000;

/** One series: what the caller knows of it, its points in time order, and when it went stale. */
export interface WindowSeries<I> {
  info: I;
  targetId: string;
  /** Packed [t0, v0, t1, v1, ...]: see PackedPoints. */
  points: number[];
  /** Times of staleness markers, ascending. */
  staleAt: number[];
}

// What V8 (Node 20, x64, pointer compression) takes for a window's series, rounded up from a heap
// measurement (test/control-plane/join/window-memory.test.ts checks the estimate stays above what
// the heap grows by): the series' object, its map slots, its info (its label values copied once, see
// `keep`); its key twice over (the key and the info's identity,
// one byte a character or two past Latin-1); each point (time and value in a growing array of
// doubles, with its spare capacity); each staleness marker.
const WINDOW_SERIES_BYTES = 300;
const POINT_BYTES = 28;
const STALE_BYTES = 16;

/** The estimated heap bytes of a window series whose key V8 stores in `keyBytes`, holding `points` points. */
export function windowSeriesBytes(keyBytes: number, points: number): number {
  return WINDOW_SERIES_BYTES + 2 * keyBytes + POINT_BYTES * points;
}

/** Where several windows add up what they hold (estimated as windowSeriesBytes). */
export interface WindowTally {
  bytes: number;
}

/** The series of several targets over the last `retainMs`. */
export class SeriesWindow<I> {
  private readonly series = new Map<string, WindowSeries<I>>();
  private readonly byTarget = new Map<string, Set<string>>();

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
    let keys = this.byTarget.get(targetId);
    if (!keys) this.byTarget.set(targetId, (keys = new Set()));
    for (const e of entries) {
      seen.add(e.key);
      let s = this.series.get(e.key);
      if (!s) {
        this.series.set(e.key, (s = { info: this.keep(e.info), targetId, points: [], staleAt: [] }));
        keys.add(e.key);
        this.tally.bytes += windowSeriesBytes(stringBytes(e.key), 0);
      }
      if (s.points.length > 0 && s.points[s.points.length - 2]! >= ts) continue;
      s.points.push(ts, e.value);
      this.tally.bytes += POINT_BYTES;
    }
    for (const key of keys) if (!seen.has(key)) this.markStale(key, ts);
    this.prune(ts);
  }

  /** A failed scrape of `targetId` at `ts`: all its series go stale. */
  failed(targetId: string, ts: number): void {
    for (const key of this.byTarget.get(targetId) ?? []) this.markStale(key, ts);
  }

  /** Forgets a target that went away. */
  remove(targetId: string): void {
    for (const key of this.byTarget.get(targetId) ?? []) this.forget(key);
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
    this.tally.bytes -= windowSeriesBytes(stringBytes(key), s.points.length / 2) + STALE_BYTES * s.staleAt.length;
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
  all(): WindowSeries<I>[] {
    return [...this.series.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
  }

  private markStale(key: string, ts: number): void {
    const s = this.series.get(key);
    if (!s) return;
    const lastPoint = s.points[s.points.length - 2] ?? -Infinity;
    const lastStale = s.staleAt[s.staleAt.length - 1] ?? -Infinity;
    if (lastStale < lastPoint) {
      s.staleAt.push(ts);
      this.tally.bytes += STALE_BYTES;
    }
  }

  private prune(nowMs: number): void {
    const horizon = nowMs - this.retainMs;
    for (const [key, s] of this.series) {
      let drop = 0;
      // Keep the newest point before the horizon too: an instant selector may still need it.
      const n = s.points.length / 2;
      while (drop < n - 1 && s.points[2 * (drop + 1)]! <= horizon) drop++;
      if (drop > 0) {
        s.points.splice(0, 2 * drop);
        this.tally.bytes -= POINT_BYTES * drop;
      }
      while (s.staleAt.length > 1 && s.staleAt[1]! <= horizon) {
        s.staleAt.shift();
        this.tally.bytes -= STALE_BYTES;
      }
      const newest = Math.max(s.points[s.points.length - 2] ?? -Infinity, s.staleAt[s.staleAt.length - 1] ?? -Infinity);
      if (newest <= horizon) {
        this.forget(key);
        this.byTarget.get(s.targetId)?.delete(key);
      }
    }
  }
}

/** The instant value of a series at `t`: its newest point within the lookback, unless a staleness marker follows it. */
export function instantValue(s: WindowSeries<unknown>, t: number): number | undefined {
  let i = s.points.length / 2 - 1;
  while (i >= 0 && s.points[2 * i]! > t) i--;
  if (i < 0) return undefined;
  const p = { t: s.points[2 * i]!, v: s.points[2 * i + 1]! };
  if (p.t <= t - LOOKBACK_MS) return undefined;
  if (s.staleAt.some((st) => st > p.t && st <= t)) return undefined;
  return p.v;
}
