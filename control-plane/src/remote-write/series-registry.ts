// Every series the pipeline ships, once: its key (sorted labels joined), a small integer ref for the
// disk queue's records, and the newest timestamp queued (for the time-order check); its labels are
// encoded as 1.0 `Label` fields from the key when a queue's segment defines the series. The
// cardinality cap counts these entries, the staleness tracker holds them, and the disk queue
// defines each ref once per segment (see record.ts), as Prometheus's head keeps one memSeries per
// series and its WAL one series record per ref.
import { stringBytes } from "../scrape/name-pool.js";
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
  /** Scratch for the staleness tracker's comparisons of a source's reports (see staleness.ts). */
  mark: number;
  /** Whether the series still lives here (false once released): known without a lookup by its key. */
  live: boolean;
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

// What one live series costs V8 (Node 20, x64, pointer compression), rounded up from a heap
// measurement (test/control-plane/pipeline/series-memory.test.ts checks the estimate stays above
// what the heap and array buffers grow by): its entry and map slot, its place in the gate's record
// of its source's last report (the staleness tracker keeps the same array), the key's header; then
// its key, one byte a character (two when a character is past Latin-1). Each remote-write queue keeps
// its own record of the series (the ref's segment, and the sender's copy of its encoded labels in
// RefLabels' chunks: about the key's UTF-8 bytes, a quarter more for replaced copies not yet
// compacted away and the labels' field headers).
const SERIES_BYTES = 240;
const QUEUE_SERIES_BYTES = 96;
// An encoded copy, held only for a key that cannot be split back: a typed array's header and backing store.
const ENCODED_BYTES = 200;

/** Characters of labels a series is budgeted for: the synthetic fleet's label sets take 120 to 250. */
export const NOMINAL_KEY_CHARS = 400;

/** The estimated heap bytes of one live series whose key V8 stores in `keyBytes` and UTF-8 in `utf8Bytes`, behind `queues` remote-write queues. */
export function seriesBytes(keyBytes: number, utf8Bytes: number, queues: number): number {
  return SERIES_BYTES + keyBytes + queues * (QUEUE_SERIES_BYTES + Math.ceil(1.25 * utf8Bytes));
}

function entryBytes(entry: SeriesEntry, queues: number): number {
  return keyCost(entry.key, queues) + (entry.encoded === undefined ? 0 : ENCODED_BYTES + entry.encoded.length);
}

function keyCost(key: string, queues: number): number {
  return seriesBytes(stringBytes(key), queues === 0 ? 0 : Buffer.byteLength(key, "utf8"), queues);
}

/** The registry of live series. */
export class SeriesRegistry {
  private readonly byKey = new Map<string, SeriesEntry>();
  /** seriesBytes of every live series (and of its encoded copy when held). */
  private heldBytes = 0;
  private readonly free: number[] = [];
  private readonly released: number[] = [];
  private nextId = 0;
  private readonly scratch = new ProtoWriter(1024);
  /** Called with each ref that becomes free for reuse, so queues forget they defined it. */
  onRecycle: (id: number) => void = () => undefined;

  /** `queues`: the remote-write queues that each keep their own record of every series (their cost is counted per series). */
  constructor(readonly queues = 0) {}

  /** The estimated bytes a live series with this key costs (entryBytes once added, less an encoded copy). */
  costOf(key: string): number {
    return keyCost(key, this.queues);
  }

  /** The estimated bytes of every live series, as the cardinality cap counts them. */
  get bytes(): number {
    return this.heldBytes;
  }

  get(key: string): SeriesEntry | undefined {
    return this.byKey.get(key);
  }

  /** Adds a series with sorted, valid labels (see normalizeLabels). */
  add(key: string, labels: Labels): SeriesEntry {
    const id = this.free.pop() ?? this.nextId++;
    const entry: SeriesEntry = { id, key, lastTs: -Infinity, mark: 0, live: true };
    if (!keySplitsBack(labels)) entry.encoded = encodeLabelsV1(labels, this.scratch);
    this.byKey.set(key, entry);
    this.heldBytes += entryBytes(entry, this.queues);
    return entry;
  }

  /** Ends a series (after its staleness marker); its ref is reused only after `recycle`. */
  release(entry: SeriesEntry): void {
    if (!entry.live) return;
    entry.live = false;
    this.byKey.delete(entry.key);
    this.heldBytes -= entryBytes(entry, this.queues);
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
