// Between join and remote write: labels normalised, the cardinality cap applied, and staleness
// markers added for series a source stopped reporting. Each series lives once in the writer's
// registry (key, ref, encoded labels); the cap counts registry entries and the staleness tracker
// holds them, so no per-series state is kept twice.
import { StalenessTracker } from "../remote-write/staleness.js";
import type { SeriesEntry, SeriesRegistry } from "../remote-write/series-registry.js";
import { normalizeLabels, seriesKey, type WriteSeries } from "../remote-write/series.js";

/** Counts what the gate refuses, by reason. */
export type DropCounter = (reason: "cardinality_cap" | "invalid_labels") => void;

/** A series the gate admitted, or a staleness marker for one that ended. */
export interface GatedSeries {
  entry: SeriesEntry;
  samples: WriteSeries["samples"];
}

/** The gate. */
export class SeriesGate {
  readonly staleness = new StalenessTracker();

  constructor(readonly registry: SeriesRegistry, readonly maxSeries: number, private readonly onDrop: DropCounter = () => undefined) {}

  /** Series admitted under the cap. */
  get activeSeries(): number {
    return this.registry.size;
  }

  /** The series of one report of `source` at `ts` to write: admitted ones plus stale markers. */
  pass(source: string, series: WriteSeries[], ts: number): GatedSeries[] {
    const out: GatedSeries[] = [];
    const current = new Set<SeriesEntry>();
    for (const s of series) {
      const labels = normalizeLabels(s.labels);
      if (typeof labels === "string") {
        this.onDrop("invalid_labels");
        continue;
      }
      const key = seriesKey(labels);
      let entry = this.registry.get(key);
      if (!entry) {
        if (this.registry.size >= this.maxSeries) {
          this.onDrop("cardinality_cap");
          continue;
        }
        entry = this.registry.add(key, labels);
      }
      current.add(entry);
      out.push({ entry, samples: s.samples });
    }
    for (const gone of this.staleness.update(source, current)) out.push(this.stale(gone, ts));
    return out;
  }

  /** Stale markers at `ts` for everything `source` reported; forgets it. */
  removeSource(source: string, ts: number): GatedSeries[] {
    return this.staleness.remove(source).map((e) => this.stale(e, ts));
  }

  /**
   * Forgets everything `source` reported without ending it: its series go on, written by another
   * replica (a target handed over). Their slots under the cap are free again.
   */
  forgetSource(source: string): void {
    for (const entry of this.staleness.remove(source)) this.registry.release(entry);
  }

  /** The series ends here: its slot under the cap is free again (its ref once the marker is written). */
  private stale(entry: SeriesEntry, ts: number): GatedSeries {
    this.registry.release(entry);
    return { entry, samples: [{ value: NaN, timestampMs: ts, stale: true }] };
  }
}
