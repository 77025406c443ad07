// Every series the pipeline ships, once: its key (sorted labels joined), a small integer ref for the
// disk queue's records, its labels encoded once as 1.0 `Label` fields, and the newest timestamp
// queued (for the time-order check). The cardinality cap counts these entries, the staleness
// tracker holds them, and the disk queue defines each ref once per segment (see record.ts), as
// Prometheus's head keeps one memSeries per series and its WAL one series record per ref.
import type { Labels } from "../scrape/sample.js";
import { encodeLabelsV1, ProtoWriter } from "./protobuf.js";

/** One live series. */
export interface SeriesEntry {
  id: number;
  key: string;
  /** Encoded 1.0 `Label` fields. */
  labels: Uint8Array;
  /** Newest timestamp queued, or -Infinity. */
  lastTs: number;
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
    const entry: SeriesEntry = { id, key, labels: encodeLabelsV1(labels, this.scratch), lastTs: -Infinity };
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
