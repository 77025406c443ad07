// One histogram's increase over one scrape interval, as the dashboard keeps it for an hour. Every
// histogram of an interval (each model's ttft, decode and duration, and their length classes) is
// packed into one typed array of the narrowest element that holds all its counts exactly: a pod's
// route counts a few calls per bucket in a few seconds, so one or two bytes a count usually do,
// where a Float64Array per histogram took 8 bytes a count plus a header and a backing store of its
// own (test/control-plane/dashboard/series-memory.test.ts measures what an interval costs).

/** Cumulative bucket counts (or their sum over a window) keyed by upper bound; `Infinity` is +Inf. */
export type Buckets = Map<number, number>;

/** An interval's packed counts. */
export type Cells = Uint8Array | Uint16Array | Uint32Array | Float64Array;

/** One histogram's increase over one interval: its count for bounds[i] is cells[at + i]. */
export interface BucketDeltas {
  /** Upper bounds, shared by every interval with the same bounds. */
  bounds: Float64Array;
  /** The interval's packed counts (set when the interval is packed). */
  cells: Cells;
  at: number;
}

/** The cells of an interval without a count. */
export const NO_CELLS: Cells = new Uint8Array(0);

/** The typed array of the narrowest element that holds every value exactly. */
function narrowest(values: readonly number[]): Cells {
  let max = 0;
  for (const v of values) {
    // A fraction, a negative or a huge count (never a counter's increase, but the format allows it) keeps 8 bytes.
    if (!Number.isInteger(v) || v < 0) return Float64Array.from(values);
    if (v > max) max = v;
  }
  if (max <= 0xff) return Uint8Array.from(values);
  if (max <= 0xffff) return Uint16Array.from(values);
  if (max <= 0xffffffff) return Uint32Array.from(values);
  return Float64Array.from(values);
}

/** Collects one interval's histograms, then packs their counts into one typed array. */
export class DeltaPacker {
  private values: number[] = [];
  private made: BucketDeltas[] = [];

  /** Appends one histogram's increase per bound; its cells are set by pack(). */
  add(bounds: Float64Array, counts: readonly number[]): BucketDeltas {
    const d: BucketDeltas = { bounds, cells: NO_CELLS, at: this.values.length };
    for (const c of counts) this.values.push(c);
    this.made.push(d);
    return d;
  }

  /** Packs every histogram added since the last pack and returns their cells. */
  pack(): Cells {
    const cells = this.values.length === 0 ? NO_CELLS : narrowest(this.values);
    for (const d of this.made) d.cells = cells;
    this.values = [];
    this.made = [];
    return cells;
  }
}

/** The counts of `d`, bound by bound. */
export function countsOf(d: BucketDeltas): number[] {
  return Array.from(d.cells.subarray(d.at, d.at + d.bounds.length));
}

/** Adds the increase `d` into `into` (a sum over a window), bound by bound. */
export function addDeltas(into: Buckets, d: BucketDeltas): void {
  const { bounds, cells, at } = d;
  for (let i = 0; i < bounds.length; i++) into.set(bounds[i]!, (into.get(bounds[i]!) ?? 0) + cells[at + i]!);
}
