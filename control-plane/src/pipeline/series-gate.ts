// Between join and remote write: labels normalised, the cardinality cap applied, and staleness
// markers added for series a source stopped reporting. Each series' key string is computed once
// and shared by the cap, the staleness tracker and the writer's time-order map.
import type { Labels } from "../scrape/sample.js";
import { CardinalityLimiter } from "../join/labels.js";
import { StalenessTracker } from "../remote-write/staleness.js";
import { normalizeLabels, seriesKey, type WriteSeries } from "../remote-write/series.js";

/** Counts what the gate refuses, by reason. */
export type DropCounter = (reason: "cardinality_cap" | "invalid_labels") => void;

/** The gate. */
export class SeriesGate {
  readonly limiter: CardinalityLimiter;
  readonly staleness = new StalenessTracker();

  constructor(maxSeries: number, private readonly onDrop: DropCounter = () => undefined) {
    this.limiter = new CardinalityLimiter(maxSeries);
  }

  /** The series of one report of `source` at `ts` to write: admitted ones plus stale markers. */
  pass(source: string, series: WriteSeries[], ts: number): WriteSeries[] {
    const out: WriteSeries[] = [];
    const current = new Map<string, Labels>();
    for (const s of series) {
      const labels = normalizeLabels(s.labels);
      if (typeof labels === "string") {
        this.onDrop("invalid_labels");
        continue;
      }
      const key = seriesKey(labels);
      if (!this.limiter.admit(key)) {
        this.onDrop("cardinality_cap");
        continue;
      }
      current.set(key, labels);
      out.push({ labels, samples: s.samples, key });
    }
    for (const gone of this.staleness.update(source, current)) out.push(this.stale(gone.key, gone.labels, ts));
    return out;
  }

  /** Stale markers at `ts` for everything `source` reported; forgets it. */
  removeSource(source: string, ts: number): WriteSeries[] {
    return this.staleness.remove(source).map((g) => this.stale(g.key, g.labels, ts));
  }

  private stale(key: string, labels: Labels, ts: number): WriteSeries {
    this.limiter.release(key);
    return { labels, samples: [{ value: NaN, timestampMs: ts, stale: true }], key };
  }
}
