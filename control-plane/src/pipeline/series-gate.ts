// Between join and remote write: labels normalised, the cardinality cap applied (in series and in
// the bytes they cost, so long label sets cannot hold more than the count's share), and staleness
// markers added for series a source stopped reporting. Each series lives once in the writer's
// registry (key, ref); the cap counts registry entries and the staleness tracker
// holds them, so no per-series state is kept twice. The gate remembers each source's last report by
// position (two references per series; label layouts shared), to know a label set it saw last time
// without normalising it again; its array of entries is also what the staleness tracker compares.
// A scrape's forwarded series carry its pod's identity labels (enrich.ts): while those stay as they
// were, only each series' own labels are compared.
import { StalenessTracker } from "../remote-write/staleness.js";
import { NOMINAL_KEY_CHARS, seriesBytes, type SeriesEntry, type SeriesRegistry } from "../remote-write/series-registry.js";
import { normalizeLabels, SERIES_KEY_SEPARATOR, seriesKey, type WriteSeries } from "../remote-write/series.js";
import type { Labels } from "../scrape/sample.js";
import { ownCopy } from "../scrape/name-pool.js";
import type { Enriched } from "../join/enrich.js";

/** Counts what the gate refuses, by reason. */
export type DropCounter = (reason: "cardinality_cap" | "invalid_labels") => void;

/** A series the gate admitted, or a staleness marker for one that ended. */
export interface GatedSeries {
  entry: SeriesEntry;
  samples: WriteSeries["samples"];
}

/** Where a label set's non-empty pairs lie, in name order. */
interface Layout {
  /** Pair indexes (offset / 2) of the non-empty pairs in name order. */
  order: readonly number[];
  /** Their names, in that order. */
  names: readonly string[];
}

/** A report's enriched part as the gate keeps it: a copy of the labels, and their names. */
interface KeptEnriched {
  count: number;
  labels: Labels;
  names: ReadonlySet<string>;
}

/** A source's last report by position: the entry each label set led to, and the layout of its pairs. */
interface Report {
  entries: Array<SeriesEntry | undefined>;
  /** Label sets laid out alike (same order, same names) share one layout. */
  layouts: Array<Layout | undefined>;
  enriched: KeptEnriched | undefined;
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

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameLayout(a: Layout, order: readonly number[], names: readonly string[]): boolean {
  if (a.order.length !== order.length) return false;
  for (let i = 0; i < order.length; i++) if (a.order[i] !== order[i] || a.names[i] !== names[i]) return false;
  return true;
}

/** `enriched` as kept for the next report: `before`'s copy while the labels are the same. */
function keep(enriched: Enriched | undefined, before: KeptEnriched | undefined): KeptEnriched | undefined {
  if (enriched === undefined) return undefined;
  if (before !== undefined && sameStrings(before.labels, enriched.labels)) return { count: enriched.count, labels: before.labels, names: before.names };
  const names = new Set<string>();
  for (let i = 0; i < enriched.labels.length; i += 2) names.add(enriched.labels[i]!);
  return { count: enriched.count, labels: enriched.labels.slice(), names };
}

/** The gate. */
export class SeriesGate {
  readonly staleness = new StalenessTracker();
  /** Per source, its last report by position. */
  private readonly lastReport = new Map<string, Report>();
  /** Label layouts by their text, shared by the reports. */
  private readonly layouts = new Map<string, Layout>();

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

  /**
   * The series of one report of `source` at `ts` to write: admitted ones plus stale markers.
   * `enriched` names the series enrich made and the labels it set on them.
   */
  pass(source: string, series: WriteSeries[], ts: number, enriched?: Enriched): GatedSeries[] {
    const out: GatedSeries[] = [];
    const before = this.lastReport.get(source);
    const kept = keep(enriched, before?.enriched);
    const report: Report = { entries: new Array(series.length), layouts: new Array(series.length), enriched: kept };
    // Up to here both reports' series were enriched with the same labels: those pairs are known
    // alike at a position whose layout is the same, and only the series' own pairs are compared.
    const sameEnriched = kept !== undefined && before?.enriched !== undefined && kept.labels === before.enriched.labels;
    const enrichedUpTo = sameEnriched ? Math.min(kept.count, before.enriched!.count) : 0;
    let lastLayout: Layout | undefined;
    for (let i = 0; i < series.length; i++) {
      const s = series[i]!;
      // A source reports its series in the same order each time (what Prometheus's scrape cache
      // counts on too): the label set at the same position is checked against the entry it led to
      // last time, with no normalising, no key and no lookup by a new key, which took a sixth of
      // the pipeline's busy CPU.
      let entry = before?.entries[i];
      let layout = before?.layouts[i];
      if (entry === undefined || layout === undefined || !this.spells(s.labels, layout, entry, i < enrichedUpTo ? kept!.names : undefined)) {
        entry = this.admit(s.labels);
        if (entry === undefined) continue;
        const order = sortedOrder(s.labels);
        const names = order.map((k) => s.labels[2 * k]!);
        layout = lastLayout !== undefined && sameLayout(lastLayout, order, names) ? lastLayout : this.sharedLayout(order, names);
        lastLayout = layout;
      }
      report.entries[i] = entry;
      report.layouts[i] = layout;
      out.push({ entry, samples: s.samples });
    }
    this.lastReport.set(source, report);
    for (const gone of this.staleness.update(source, report.entries)) out.push(this.stale(gone, ts));
    return out;
  }

  /**
   * One object per layout, shared by every report: layouts that alternate (a family with one label
   * more every other series) would otherwise hold one per series. Past MAX_LAYOUTS distinct
   * layouts, they are not shared.
   */
  private sharedLayout(order: number[], names: string[]): Layout {
    const key = JSON.stringify([order, names]);
    const known = this.layouts.get(key);
    if (known !== undefined) return known;
    // Copies: a scraped name is a view of the whole scraped text (name-pool.ts), and a layout lives on.
    const layout = { order, names: names.map(ownCopy) };
    if (this.layouts.size < MAX_LAYOUTS) this.layouts.set(key, layout);
    return layout;
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
   * Whether `raw` normalises to `entry` (its non-empty pairs, laid out as `layout`, spell the entry's
   * key; every name non-empty; no other non-empty pair) and `entry` is still the registry's: a
   * released one (another source ended the series) is never written again, even for the same labels.
   * `layout` and `entry` came from one label set at this position last time; with `enrichedNames`,
   * that set and `raw` were both enriched with the same labels, so a pair of those names is the same
   * in both and in the key, and only its length is taken.
   */
  private spells(raw: Labels, layout: Layout, entry: SeriesEntry, enrichedNames: ReadonlySet<string> | undefined): boolean {
    const key = entry.key;
    // A key of JSON (a value held the separator) is not the pairs joined: judged afresh each time.
    if (key.charCodeAt(0) === SEPARATOR) return false;
    const { order, names } = layout;
    let at = 0;
    for (let j = 0; j < order.length; j++) {
      const name = raw[2 * order[j]!];
      const value = raw[2 * order[j]! + 1];
      if (name === undefined || value === undefined || name !== names[j]) return false;
      if (enrichedNames !== undefined && enrichedNames.has(name)) {
        at += name.length + value.length + 2;
        continue;
      }
      if (!key.startsWith(name, at)) return false;
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
