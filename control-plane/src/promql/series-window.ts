// The recent samples of a set of scraped series, kept as a Prometheus TSDB would hold them for the
// functions the join evaluates: points for range selectors (rate, *_over_time), and staleness for
// instant selectors. A series a target reported is stale from the first scrape of that target
// that lacks it (or that failed), as Prometheus's scrape loop writes a staleness marker then
// (scrape/scrape.go, scrapeLoop); an instant selector looks back at most `LOOKBACK_MS` for the
// newest point (promql/engine.go, defaultLookbackDelta) and sees nothing past a staleness marker.

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

/** The series of several targets over the last `retainMs`. */
export class SeriesWindow<I> {
  private readonly series = new Map<string, WindowSeries<I>>();
  private readonly byTarget = new Map<string, Set<string>>();

  constructor(private readonly retainMs: number) {}

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
        this.series.set(e.key, (s = { info: e.info, targetId, points: [], staleAt: [] }));
        keys.add(e.key);
      }
      if (s.points.length > 0 && s.points[s.points.length - 2]! >= ts) continue;
      s.points.push(ts, e.value);
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
    for (const key of this.byTarget.get(targetId) ?? []) this.series.delete(key);
    this.byTarget.delete(targetId);
  }

  /** Whether any series is held. */
  get empty(): boolean {
    return this.series.size === 0;
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
    if (lastStale < lastPoint) s.staleAt.push(ts);
  }

  private prune(nowMs: number): void {
    const horizon = nowMs - this.retainMs;
    for (const [key, s] of this.series) {
      let drop = 0;
      // Keep the newest point before the horizon too: an instant selector may still need it.
      const n = s.points.length / 2;
      while (drop < n - 1 && s.points[2 * (drop + 1)]! <= horizon) drop++;
      if (drop > 0) s.points.splice(0, 2 * drop);
      while (s.staleAt.length > 1 && s.staleAt[1]! <= horizon) s.staleAt.shift();
      const newest = Math.max(s.points[s.points.length - 2] ?? -Infinity, s.staleAt[s.staleAt.length - 1] ?? -Infinity);
      if (newest <= horizon) {
        this.series.delete(key);
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
