// Frozen copy of control-plane/src/remote-write/disk-queue.ts as it was on main at 5df058b6e459, before issue #27, so
// test/bench/durable-stores.bench.ts can time it beside today's in the same run (the bar: unchanged
// within 10%). Not used by the control plane; delete with that bar.
// A durable, bounded, on-disk FIFO of encoded record payloads, one per remote-write target.
//
// Layout: `<dir>/<20-digit id>.seg` segment files of records, plus `<dir>/committed` holding the
// position (segment id, byte offset) up to which everything has been delivered, and the newest
// sample time delivered so far (so the lag a restart reports during an outage is the true one).
// Record: u32 payload length | u32 crc32(payload) | u32 sample count | f64 newest sample ms | payload.
//
// Durability policy, as Prometheus's WAL (tsdb/wlog: each record is written to the file at once,
// fsync happens when a segment is finished and at close): every append is written with write(2)
// before `append` returns, so it survives `kill -9` of the process (the page cache holds it); a
// segment is fsync'd when the next one starts and at close ("segment", the default), or after
// every append ("always", for a machine that may lose power with no time to flush). The committed
// position is written to a temp file and renamed over `committed` (atomic in the page cache; fsync'd
// only in "always" mode: losing it to a power cut re-sends delivered samples, never loses any).
// After `kill -9` a torn tail record fails its length or CRC check and is cut off at open;
// everything appended before it is still there. Delivery is at least once: the only window for a
// duplicate is a crash between the receiver's 2xx and the commit's rename, and the duplicate then
// carries identical samples, which Prometheus-compatible receivers ignore.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync, ftruncateSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";

const HEADER_BYTES = 20;

/** A place in the queue: a segment id and a byte offset in it. */
export interface QueuePosition {
  segment: number;
  offset: number;
}

/** What `committed` holds. */
interface CommittedState extends QueuePosition {
  /** Newest sample time (ms) of everything delivered up to the position; absent before the first delivery. */
  newestDeliveredMs?: number;
}

/** A record read back from the queue. */
export interface QueueRecord {
  payload: Uint8Array;
  samples: number;
  newestTimestampMs: number;
  /** When it was appended in this process (ms), or 0 for records recovered from disk. */
  appendedAtMs: number;
  /** The position just after this record: commit it once the record is delivered. */
  next: QueuePosition;
}

/** Options of one queue. */
export interface DiskQueueOptions {
  dir: string;
  /** Upper bound of all segment bytes; past it the oldest segment is dropped (and counted). */
  maxBytes: number;
  /** Size at which the writer starts a new segment. */
  segmentBytes: number;
  /** "segment" (default): fsync each finished segment; "always": each append and commit; "never": tests of throughput only. */
  fsync?: "always" | "segment" | "never";
  now?: () => number;
}

interface RecordIndex {
  offset: number;
  length: number; // header + payload
  samples: number;
  newestTimestampMs: number;
  appendedAtMs: number;
}

interface Segment {
  id: number;
  path: string;
  bytes: number;
  records: RecordIndex[];
}

/** What recovery found when the queue was opened. */
export interface RecoveryReport {
  segments: number;
  records: number;
  samples: number;
  /** Bytes cut from the end of segments because a record was torn or corrupt. */
  truncatedBytes: number;
}

const segName = (id: number): string => `${String(id).padStart(20, "0")}.seg`;

/** The durable queue. All operations are synchronous so ordering is obvious and kill -9 safe. */
export class DiskQueue {
  private segments: Segment[] = [];
  private fd = -1; // open fd of the last (active) segment
  private committed: CommittedState = { segment: 0, offset: 0 };
  /** Read cursor: index into segments and records of the next record not yet handed out. */
  private cursor: QueuePosition = { segment: 0, offset: 0 };
  private readonly now: () => number;
  /** Samples dropped because the queue was over its byte bound. */
  droppedSamples = 0;
  droppedRecords = 0;
  /** Samples from the committed position on, and from the read cursor on (kept as records come and go). */
  private pending = 0;
  private unread = 0;
  /** Open read descriptors by segment id (closed when the segment goes). */
  private readonly readFds = new Map<number, number>();
  /** Bytes (headers included) and samples appended since open, for the cost report. */
  appendedBytes = 0;
  appendedSamples = 0;
  readonly recovery: RecoveryReport;

  constructor(private readonly opts: DiskQueueOptions) {
    this.now = opts.now ?? Date.now;
    mkdirSync(opts.dir, { recursive: true });
    this.recovery = this.recover();
  }

  private recover(): RecoveryReport {
    const report: RecoveryReport = { segments: 0, records: 0, samples: 0, truncatedBytes: 0 };
    try {
      const c = JSON.parse(readFileSync(join(this.opts.dir, "committed"), "utf8")) as CommittedState;
      if (Number.isSafeInteger(c.segment) && Number.isSafeInteger(c.offset)) {
        this.committed = { segment: c.segment, offset: c.offset };
        if (Number.isFinite(c.newestDeliveredMs)) this.committed.newestDeliveredMs = c.newestDeliveredMs!;
      }
    } catch {
      // No commit yet: everything on disk is undelivered.
    }
    const ids = readdirSync(this.opts.dir)
      .filter((f) => /^\d{20}\.seg$/.test(f))
      .map((f) => Number(f.slice(0, 20)))
      .sort((a, b) => a - b);
    for (const id of ids) {
      const path = join(this.opts.dir, segName(id));
      if (id < this.committed.segment) {
        unlinkSync(path); // fully delivered before the crash; its deletion was not reached
        continue;
      }
      const seg = this.scan(id, path, report);
      this.segments.push(seg);
    }
    if (this.segments.length === 0) this.segments.push(this.createSegment(Math.max(this.committed.segment, 0)));
    const last = this.segments[this.segments.length - 1]!;
    this.fd = openSync(last.path, "r+");
    this.cursor = { segment: this.committed.segment, offset: this.committed.offset };
    if (this.cursor.segment < this.segments[0]!.id) this.cursor = { segment: this.segments[0]!.id, offset: 0 };
    report.segments = this.segments.length;
    for (const s of this.segments) {
      for (const r of s.records) {
        if (this.isBefore(s.id, r.offset, this.cursor)) continue;
        report.records++;
        report.samples += r.samples;
      }
    }
    this.pending = report.samples;
    this.unread = report.samples;
    return report;
  }

  private isBefore(segment: number, offset: number, pos: QueuePosition): boolean {
    return segment < pos.segment || (segment === pos.segment && offset < pos.offset);
  }

  private scan(id: number, path: string, report: RecoveryReport): Segment {
    const size = statSync(path).size;
    const fd = openSync(path, "r+");
    const seg: Segment = { id, path, bytes: 0, records: [] };
    const header = Buffer.alloc(HEADER_BYTES);
    let off = 0;
    try {
      while (off + HEADER_BYTES <= size) {
        readSync(fd, header, 0, HEADER_BYTES, off);
        const len = header.readUInt32LE(0);
        if (off + HEADER_BYTES + len > size) break;
        const payload = Buffer.alloc(len);
        readSync(fd, payload, 0, len, off + HEADER_BYTES);
        if (crc32(payload) !== header.readUInt32LE(4)) break;
        seg.records.push({
          offset: off,
          length: HEADER_BYTES + len,
          samples: header.readUInt32LE(8),
          newestTimestampMs: header.readDoubleLE(12),
          appendedAtMs: 0,
        });
        off += HEADER_BYTES + len;
      }
      if (off < size) {
        report.truncatedBytes += size - off;
        ftruncateSync(fd, off);
        fsyncSync(fd);
      }
    } finally {
      closeSync(fd);
    }
    seg.bytes = off;
    return seg;
  }

  private createSegment(id: number): Segment {
    const path = join(this.opts.dir, segName(id));
    closeSync(openSync(path, "a"));
    this.fsyncDir();
    return { id, path, bytes: 0, records: [] };
  }

  private fsyncDir(): void {
    if (this.opts.fsync === "never") return;
    const dfd = openSync(this.opts.dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }

  /** Total bytes of all segments (delivered records of the head segment included until it is deleted). */
  get bytes(): number {
    let n = 0;
    for (const s of this.segments) n += s.bytes;
    return n;
  }

  /** Undelivered samples (from the committed position on). */
  get pendingSamples(): number {
    return this.pending;
  }

  /** Samples not yet handed out by `read`. */
  get unreadSamples(): number {
    return this.unread;
  }

  private countFrom(pos: QueuePosition): number {
    let n = 0;
    for (const s of this.segments) for (const r of s.records) if (!this.isBefore(s.id, r.offset, pos)) n += r.samples;
    return n;
  }

  /**
   * Makes sure the next append of at most `bytes` lands in the active segment (starting a new one
   * when it would not fit) and returns that segment's id, so the caller can tell which series
   * definitions the segment already holds.
   */
  prepare(bytes: number): number {
    const active = this.segments[this.segments.length - 1]!;
    if (active.bytes > 0 && active.bytes + HEADER_BYTES + bytes > this.opts.segmentBytes) this.roll();
    return this.segments[this.segments.length - 1]!.id;
  }

  private roll(): void {
    const active = this.segments[this.segments.length - 1]!;
    if (this.opts.fsync !== "never") fsyncSync(this.fd);
    closeSync(this.fd);
    const next = this.createSegment(active.id + 1);
    this.segments.push(next);
    this.fd = openSync(next.path, "r+");
  }

  /** The payloads of the records before the read cursor in its segment (they may define series used after it). */
  readSegmentHead(): Uint8Array[] {
    const seg = this.segments.find((s) => s.id === this.cursor.segment);
    if (!seg) return [];
    return seg.records.filter((r) => r.offset < this.cursor.offset).map((r) => this.readPayload(seg, r));
  }

  private readPayload(seg: Segment, r: RecordIndex): Buffer {
    let fd = this.readFds.get(seg.id);
    if (fd === undefined) this.readFds.set(seg.id, (fd = openSync(seg.path, "r")));
    const buf = Buffer.allocUnsafe(r.length - HEADER_BYTES);
    readSync(fd, buf, 0, buf.length, r.offset + HEADER_BYTES);
    return buf;
  }

  private unlinkSegment(seg: Segment): void {
    const fd = this.readFds.get(seg.id);
    if (fd !== undefined) {
      closeSync(fd);
      this.readFds.delete(seg.id);
    }
    unlinkSync(seg.path);
  }

  /** Appends one record (see the durability policy above). */
  append(payload: Uint8Array, samples: number, newestTimestampMs: number): void {
    const length = HEADER_BYTES + payload.length;
    this.prepare(payload.length);
    const active = this.segments[this.segments.length - 1]!;
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32LE(payload.length, 0);
    header.writeUInt32LE(crc32(payload), 4);
    header.writeUInt32LE(samples, 8);
    header.writeDoubleLE(newestTimestampMs, 12);
    writeSync(this.fd, header, 0, HEADER_BYTES, active.bytes);
    writeSync(this.fd, payload, 0, payload.length, active.bytes + HEADER_BYTES);
    if (this.opts.fsync === "always") fsyncSync(this.fd);
    active.records.push({ offset: active.bytes, length, samples, newestTimestampMs, appendedAtMs: this.now() });
    this.pending += samples;
    this.unread += samples;
    active.bytes += length;
    this.appendedBytes += length;
    this.appendedSamples += samples;
    this.enforceBound();
  }

  private enforceBound(): void {
    while (this.segments.length > 1 && this.bytes > this.opts.maxBytes) {
      const oldest = this.segments.shift()!;
      for (const r of oldest.records) {
        if (!this.isBefore(oldest.id, r.offset, this.cursor)) this.unread -= r.samples;
        if (this.isBefore(oldest.id, r.offset, this.committed)) continue;
        this.droppedSamples += r.samples;
        this.droppedRecords++;
        this.pending -= r.samples;
      }
      this.unlinkSegment(oldest);
      const head = this.segments[0]!;
      if (this.cursor.segment < head.id) this.cursor = { segment: head.id, offset: 0 };
      if (this.committed.segment < head.id) this.writeCommitted({ ...this.committed, segment: head.id, offset: 0 });
    }
  }

  /**
   * Hands out the next records after the read cursor, up to `maxSamples` (at least one record if
   * any), and moves the cursor past them. They stay on disk until `commit`.
   */
  read(maxSamples: number): QueueRecord[] {
    const out: QueueRecord[] = [];
    let total = 0;
    for (const seg of this.segments) {
      if (seg.id < this.cursor.segment) continue;
      for (const r of seg.records) {
        if (this.isBefore(seg.id, r.offset, this.cursor)) continue;
        if (out.length > 0 && total + r.samples > maxSamples) return out;
        const next = { segment: seg.id, offset: r.offset + r.length };
        out.push({ payload: this.readPayload(seg, r), samples: r.samples, newestTimestampMs: r.newestTimestampMs, appendedAtMs: r.appendedAtMs, next });
        this.cursor = next;
        this.unread -= r.samples;
        total += r.samples;
        if (total >= maxSamples) return out;
      }
    }
    return out;
  }

  /** Oldest unread record's append time in this process (0 when recovered from disk), or undefined. */
  oldestUnreadAppendedAtMs(): number | undefined {
    for (const seg of this.segments) {
      if (seg.id < this.cursor.segment) continue;
      for (const r of seg.records) if (!this.isBefore(seg.id, r.offset, this.cursor)) return r.appendedAtMs;
    }
    return undefined;
  }

  /** Newest sample timestamp ever appended that is still on disk, or undefined. */
  newestTimestampMs(): number | undefined {
    let n: number | undefined;
    for (const s of this.segments) for (const r of s.records) n = n === undefined ? r.newestTimestampMs : Math.max(n, r.newestTimestampMs);
    return n;
  }

  /**
   * Records everything before `pos` as delivered, durably, with the newest sample time delivered
   * (for the lag after a restart), and deletes fully delivered segments.
   */
  commit(pos: QueuePosition, newestDeliveredMs?: number): void {
    const head = this.segments[0]!;
    if (this.isBefore(pos.segment, pos.offset, this.committed)) return;
    if (pos.segment < head.id) return; // its segment was already dropped for space
    // The end of a full segment is the start of the next: commit it that way so the segment goes.
    const idx = this.segments.findIndex((s) => s.id === pos.segment);
    const seg = this.segments[idx];
    const after = this.segments[idx + 1];
    if (seg && after && pos.offset >= seg.bytes) pos = { segment: after.id, offset: 0 };
    const newest = Math.max(newestDeliveredMs ?? -Infinity, this.committed.newestDeliveredMs ?? -Infinity);
    this.writeCommitted(Number.isFinite(newest) ? { ...pos, newestDeliveredMs: newest } : { ...pos });
    this.pending = this.countFrom(this.committed);
    while (this.segments.length > 1) {
      const s = this.segments[0]!;
      if (s.id >= pos.segment) break;
      this.unlinkSegment(s);
      this.segments.shift();
    }
  }

  /** Rewinds the read cursor to the committed position (after a send that must be retried later). */
  rewind(): void {
    this.cursor = { segment: this.committed.segment, offset: this.committed.offset };
    const head = this.segments[0]!;
    if (this.cursor.segment < head.id) this.cursor = { segment: head.id, offset: 0 };
    this.unread = this.countFrom(this.cursor);
  }

  /** Newest sample time delivered, as committed (survives restarts), or undefined before any delivery. */
  get newestDeliveredMs(): number | undefined {
    return this.committed.newestDeliveredMs;
  }

  private writeCommitted(pos: CommittedState): void {
    const tmp = join(this.opts.dir, "committed.tmp");
    const fd = openSync(tmp, "w");
    try {
      writeFileSync(fd, JSON.stringify(pos));
      if (this.opts.fsync === "always") fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.opts.dir, "committed"));
    if (this.opts.fsync === "always") this.fsyncDir();
    this.committed = { ...pos };
  }

  /** The committed position (for tests and diagnostics). */
  get committedPosition(): QueuePosition {
    return { segment: this.committed.segment, offset: this.committed.offset };
  }

  close(): void {
    if (this.fd >= 0) {
      if (this.opts.fsync !== "never") fsyncSync(this.fd);
      closeSync(this.fd);
      this.fd = -1;
    }
    for (const fd of this.readFds.values()) closeSync(fd);
    this.readFds.clear();
  }
}
