// Between join and remote write: labels normalised, the cardinality cap applied (in series and in
// the bytes they cost, so long label sets cannot hold more than the count's share), and staleness
// markers added for series a source stopped reporting. Each series lives once in the writer's
// registry (key, ref); the cap counts registry entries and the staleness tracker
// holds them, so no per-series state is kept twice. The gate remembers each source's last report by
// position (two references per series; label layouts shared), to know a label set it saw last time
// without normalising it again; its array of entries is also what the staleness tracker compares.
import { StalenessTracker } from "../remote-write/staleness.js";
import { NOMINAL_KEY_CHARS, seriesBytes, type SeriesEntry, type SeriesRegistry } from "../remote-write/series-registry.js";
import { normalizeLabels, SERIES_KEY_SEPARATOR, seriesKey, type WriteSeries } from "../remote-write/series.js";
import type { Labels } from "../scrape/sample.js";

/** Counts what the gate refuses, by reason. */
export type DropCounter = (reason: "cardinality_cap" | "invalid_labels") => void;

/** A series the gate admitted, or a staleness marker for one that ended. */
export interface GatedSeries {
  entry: SeriesEntry;
  samples: WriteSeries["samples"];
}

/** A source's last report by position: the entry each label set led to, and the order of its non-empty pairs by name. */
interface Report {
  entries: Array<SeriesEntry | undefined>;
  /** Pair indexes (offset / 2) of the non-empty pairs in name order; label sets laid out alike share one array. */
  orders: Array<readonly number[] | undefined>;
}

const SEPARATOR = SERIES_KEY_SEPARATOR.charCodeAt(0);
/** What `maxSeries` live series may cost together behind `queues` remote-write queues: each budgeted at NOMINAL_KEY_CHARS characters of labels. */
export function seriesGateBytes(maxSeries: number, queues: number): number {
  return maxSeries * seriesBytes(NOMINAL_KEY_CHARS, NOMINAL_KEY_CHARS, queues);
}

/** Distinct label layouts shared (each a few dozen bytes). */
const MAX_LAYOUTS = 1024;

/** The pair indexes of `raw`'s non-empty pairs in name order (normalizeLabels' order). */
function sortedOrder(raw: Labels): number[] {
  const pairs: number[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i + 1] !== "") pairs.push(i >> 1);
  return pairs.sort((a, b) => (raw[2 * a]! < raw[2 * b]! ? -1 : raw[2 * a]! > raw[2 * b]! ? 1 : 0));
}

function sameOrder(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The gate. */
export class SeriesGate {
  readonly staleness = new StalenessTracker();
  /** Per source, its last report by position. */
  private readonly lastReport = new Map<string, Report>();
  /** Label layouts (orders) by their text, shared by the reports. */
  private readonly layouts = new Map<string, readonly number[]>();

  /**
   * What the live series may cost together (the registry's estimate): maxSeries series of
   * NOMINAL_KEY_CHARS characters of labels. Series with shorter label sets meet the count first;
   * longer ones, this.
   */
  readonly maxBytes: number;

  constructor(readonly registry: SeriesRegistry, readonly maxSeries: number, private readonly onDrop: DropCounter = () => undefined) {
    this.maxBytes = seriesGateBytes(maxSeries, registry.queues);
  }

  /** Series admitted under the cap. */
  get activeSeries(): number {
    return this.registry.size;
  }

  /** The series of one report of `source` at `ts` to write: admitted ones plus stale markers. */
  pass(source: string, series: WriteSeries[], ts: number): GatedSeries[] {
    const out: GatedSeries[] = [];
    const before = this.lastReport.get(source);
    const report: Report = { entries: new Array(series.length), orders: new Array(series.length) };
    let lastOrder: readonly number[] = [];
    for (let i = 0; i < series.length; i++) {
      const s = series[i]!;
      // A source reports its series in the same order each time (what Prometheus's scrape cache
      // counts on too): the label set at the same position is checked against the entry it led to
      // last time, with no normalising, no key and no lookup by a new key, which took a sixth of
      // the pipeline's busy CPU.
      let entry = before?.entries[i];
      let order = before?.orders[i];
      if (entry === undefined || order === undefined || !this.spells(s.labels, order, entry)) {
        entry = this.admit(s.labels);
        if (entry === undefined) continue;
        const sorted = sortedOrder(s.labels);
        order = sameOrder(sorted, lastOrder) ? lastOrder : this.sharedOrder(sorted);
        lastOrder = order;
      }
      report.entries[i] = entry;
      report.orders[i] = order;
      out.push({ entry, samples: s.samples });
    }
    this.lastReport.set(source, report);
    for (const gone of this.staleness.update(source, report.entries)) out.push(this.stale(gone, ts));
    return out;
  }

  /**
   * One array per layout, shared by every report: layouts that alternate (a family with one label
   * more every other series) would otherwise hold an array per series. Past MAX_LAYOUTS distinct
   * layouts, arrays are not shared.
   */
  private sharedOrder(order: number[]): readonly number[] {
    const key = order.join(",");
    const known = this.layouts.get(key);
    if (known !== undefined) return known;
    if (this.layouts.size < MAX_LAYOUTS) this.layouts.set(key, order);
    return order;
  }

  /** Normalises `labels` and finds or adds its entry under the cap; undefined when dropped (counted). */
  private admit(raw: Labels): SeriesEntry | undefined {
    const labels = normalizeLabels(raw);
    if (typeof labels === "string") {
      this.onDrop("invalid_labels");
      return undefined;
    }
    const key = seriesKey(labels);
    const entry = this.registry.get(key);
    if (entry) return entry;
    if (this.registry.size >= this.maxSeries || this.registry.bytes + this.registry.costOf(key) > this.maxBytes) {
      this.onDrop("cardinality_cap");
      return undefined;
    }
    return this.registry.add(key, labels);
  }

  /**
   * Whether `raw` normalises to `entry` (its non-empty pairs, in `order`, spell the entry's key; every
   * name non-empty; no other non-empty pair) and `entry` is still the registry's: a released one
   * (another source ended the series) is never written again, even for the same labels.
   */
  private spells(raw: Labels, order: readonly number[], entry: SeriesEntry): boolean {
    const key = entry.key;
    let at = 0;
    for (let j = 0; j < order.length; j++) {
      const name = raw[2 * order[j]!];
      const value = raw[2 * order[j]! + 1];
      if (name === undefined || value === undefined || !key.startsWith(name, at)) return false;
      at += name.length;
      if (key.charCodeAt(at) !== SEPARATOR || !key.startsWith(value, at + 1)) return false;
      at += value.length + 1;
      if (at < key.length && key.charCodeAt(at) !== SEPARATOR) return false;
      at++;
    }
    if (at !== key.length + 1) return false;
    let nonEmpty = 0;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i] === "") return false; // normalizeLabels refuses an empty name, whatever its value
      if (raw[i + 1] !== "") nonEmpty++;
    }
    return nonEmpty === order.length && entry.live;
  }

  /** Stale markers at `ts` for everything `source` reported; forgets it. */
  removeSource(source: string, ts: number): GatedSeries[] {
    this.lastReport.delete(source);
    return this.staleness.remove(source).map((e) => this.stale(e, ts));
  }

  /**
   * Forgets everything `source` reported without ending it: its series go on, written by another
   * replica (a target handed over). Their slots under the cap are free again.
   */
  forgetSource(source: string): void {
    this.lastReport.delete(source);
    for (const entry of this.staleness.remove(source)) this.registry.release(entry);
  }

  /** The series ends here: its slot under the cap is free again (its ref once the marker is written). */
  private stale(entry: SeriesEntry, ts: number): GatedSeries {
    this.registry.release(entry);
    return { entry, samples: [{ value: NaN, timestampMs: ts, stale: true }] };
  }
}
