// Every series the pipeline ships, once: its key (sorted labels joined), a small integer ref for the
// disk queue's records, and the newest timestamp queued (for the time-order check); its labels are
// encoded as 1.0 `Label` fields from the key when a queue's segment defines the series. The
// cardinality cap counts these entries, the staleness tracker holds them, and the disk queue
// defines each ref once per segment (see record.ts), as Prometheus's head keeps one memSeries per
// series and its WAL one series record per ref.
import type { Labels } from "../scrape/sample.js";
import { encodeLabelsV1, ProtoWriter } from "./protobuf.js";
import { keySplitsBack, labelsOfKey } from "./series.js";

/** One live series. */
export interface SeriesEntry {
  id: number;
  key: string;
  /**
   * Its encoded 1.0 `Label` fields, held only when the key cannot be split back into its labels (a
   * value holds seriesKey's separator); otherwise encodedLabels makes them from the key.
   */
  encoded?: Uint8Array;
  /** Newest timestamp queued, or -Infinity. */
  lastTs: number;
}

/**
 * The series' encoded 1.0 `Label` fields. A queue needs them only where its current segment first
 * names the series (about once per segment), so the entry keeps its key alone: held for every live
 * series, the encoded copy in its own typed array took about 200 of the pipeline's 1,790 bytes per
 * series (pipeline-agent bench).
 */
export function encodedLabels(entry: SeriesEntry): Uint8Array {
  return entry.encoded ?? encodeLabelsV1(labelsOfKey(entry.key));
}

/** The registry of live series. */
export class SeriesRegistry {
  private readonly byKey = new Map<string, SeriesEntry>();
  private readonly free: number[] = [];
  private readonly released: number[] = [];
  private nextId = 0;
  private readonly scratch = new ProtoWriter(1024);
  /** Called with each ref that becomes free for reuse, so queues forget they defined it. */
  onRecycle: (id: number) => void = () => undefined;

  get(key: string): SeriesEntry | undefined {
    return this.byKey.get(key);
  }

  /** Adds a series with sorted, valid labels (see normalizeLabels). */
  add(key: string, labels: Labels): SeriesEntry {
    const id = this.free.pop() ?? this.nextId++;
    const entry: SeriesEntry = { id, key, lastTs: -Infinity };
    if (!keySplitsBack(labels)) entry.encoded = encodeLabelsV1(labels, this.scratch);
    this.byKey.set(key, entry);
    return entry;
  }

  /** Ends a series (after its staleness marker); its ref is reused only after `recycle`. */
  release(entry: SeriesEntry): void {
    if (this.byKey.get(entry.key) !== entry) return;
    this.byKey.delete(entry.key);
    this.released.push(entry.id);
  }

  /** Makes released refs reusable: call once the records naming them are written. */
  recycle(): void {
    for (const id of this.released) {
      this.onRecycle(id);
      this.free.push(id);
    }
    this.released.length = 0;
  }

  get size(): number {
    return this.byKey.size;
  }
}
