// A durable, bounded, on-disk FIFO of encoded record payloads, one per remote-write target.
//
// Layout: `<dir>/<20-digit id>.seg` segment files of records, plus `<dir>/committed` holding the
// position (segment id, byte offset) up to which everything has been delivered, and the newest
// sample time delivered so far (so the lag a restart reports during an outage is the true one).
//
// Record (little-endian, 28-byte header):
//   u32 magic "TTQ2" | u32 payload length | u32 sample count | f64 newest sample ms |
//   u32 crc32(payload) | u32 crc32(the 24 header bytes before it) | payload
// Both CRCs start from a seed derived from the segment id, so a record only validates in the
// segment it was written to, and a header of zeros (what a power loss leaves past the last sync)
// fails twice over: its magic and its CRC (a zero-length payload's plain CRC-32 is 0; a seeded one
// is not). The header has its own CRC so a damaged record's successor can be found again (resync)
// without trusting a damaged length. Segments written before this format (`u32 length | u32 crc |
// u32 samples | f64 newest | payload`) are still read, with a zero length refused.
//
// Durability policy. Every append is written with write(2) before `append` returns, so it
// survives `kill -9` (the page cache holds it). A power loss keeps only what was fsynced:
// - fsync "segment" (the default): a segment is fsynced when the next one starts and at close, as
//   Prometheus's WAL does (prometheus tsdb/wlog/wlog.go 062910e0: pages are written as they fill,
//   fsynced when a segment is finished and at close); "always" fsyncs each append (for a machine
//   that may lose power with no time to flush); "never" only for throughput tests.
// - `durablePosition` is how far appends are known durable.
// - A new segment's name is made durable (directory fsync) before anything is written to it.
// - The committed position is written to a temporary file, fsynced, renamed over `committed`,
//   and the directory fsynced (both durable modes), before any delivered segment is deleted: a
//   position once committed is never delivered again, whatever the power does afterwards.
//
// Recovery (at open) trusts nothing it cannot check, after Prometheus's WAL and etcd's:
// - each segment is read up to its first damaged record; the damaged bytes are skipped by
//   looking for the next record that validates, and a damaged tail is cut (etcd
//   server/storage/wal/decoder.go 06b0e6a0: a zero length is the end, a zeroed sector a torn
//   write). Unlike Prometheus's Repair (wlog.go, which deletes every later segment), later
//   segments are kept: a segment defines every series it uses, so it stands alone.
// - the committed position is clamped to the data that is really there (a power loss can leave
//   `committed` pointing past the end of its segment's surviving bytes);
// - writing always continues in a new segment, never after a recovered tail (Prometheus's NewSize
//   does the same: "create one with a higher index than the last segment"), so no append can land
//   behind the read position.
// Delivery is at least once: the only window for a duplicate is a crash between the receiver's
// 2xx and the commit's fsync, and the duplicate then carries identical samples, which
// Prometheus-compatible receivers ignore.
import { crc32 } from "node:zlib";
import { join } from "node:path";
import { fsyncDirectory, makeDirectoryDurable, nodeFileSystem, type FileSystem } from "../storage/file-system.js";

/** Bytes of a record header. */
export const RECORD_HEADER_BYTES = 28;
/**
 * The smallest record the writer appends: a header and a compact record of one sample with no
 * definitions (9 bytes at the least, snappy's framing included). The in-memory index holds one
 * entry per record, so a queue of such records indexes the most.
 */
export const MIN_RECORD_BYTES = RECORD_HEADER_BYTES + 9;
/** What one record's index entry costs V8 (Node 20, x64), rounded up from a heap measurement (disk-queue-memory.test.ts). */
export const RECORD_INDEX_BYTES = 128;
const LEGACY_HEADER_BYTES = 20;
const MAGIC = 0x32515454; // "TTQ2" as stored (little-endian)
const CRC_SEED = crc32(Buffer.from("tokentrace remote-write queue record", "latin1"));

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
  /**
   * Upper bound of the records indexed in memory (one entry of RECORD_INDEX_BYTES each), enforced
   * as maxBytes is: past it the oldest segment is dropped (and counted), and a segment is cut at
   * its share of it, so the bound holds within one segment's share. Default: maxBytes alone.
   */
  maxRecords?: number;
  /** Size at which the writer starts a new segment. */
  segmentBytes: number;
  /** "segment" (default): fsync each finished segment; "always": each append and commit; "never": tests of throughput only. */
  fsync?: "always" | "segment" | "never";
  now?: () => number;
  /** The file system (tests put a simulated disk here); node:fs by default. */
  fs?: FileSystem;
}

interface RecordIndex {
  offset: number;
  /** Offset just past the record. */
  end: number;
  payloadOffset: number;
  samples: number;
  newestTimestampMs: number;
  appendedAtMs: number;
}

interface Segment {
  id: number;
  path: string;
  /** Bytes in the file (the append position of the active segment). */
  bytes: number;
  records: RecordIndex[];
  /** The newest sample time of its records (-Infinity: none), kept as they are added: the lag gauge reads it after every send. */
  newestMs: number;
  /** CRC seed of this segment's records. */
  seed: number;
}

/** What recovery found when the queue was opened. */
export interface RecoveryReport {
  segments: number;
  records: number;
  samples: number;
  /** Bytes that held no valid record (torn, zero-filled or corrupt), skipped or cut. */
  truncatedBytes: number;
  /** Bytes by which the committed position pointed past the data that survived (clamped). */
  clampedBytes: number;
  /** `committed` was there but unreadable: everything on disk is treated as undelivered. */
  committedUnreadable: boolean;
}

const segName = (id: number): string => `${String(id).padStart(20, "0")}.seg`;

function segmentSeed(id: number): number {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(id));
  return crc32(b, CRC_SEED);
}

/** Whether a valid current-format record starts at `off` of `bytes`; returns its index or undefined. */
function recordAt(bytes: Buffer, off: number, seed: number): RecordIndex | undefined {
  if (off + RECORD_HEADER_BYTES > bytes.length || bytes.readUInt32LE(off) !== MAGIC) return undefined;
  if (crc32(bytes.subarray(off, off + 24), seed) !== bytes.readUInt32LE(off + 24)) return undefined;
  const length = bytes.readUInt32LE(off + 4);
  const payloadOffset = off + RECORD_HEADER_BYTES;
  if (payloadOffset + length > bytes.length) return undefined;
  if (crc32(bytes.subarray(payloadOffset, payloadOffset + length), seed) !== bytes.readUInt32LE(off + 20)) return undefined;
  return { offset: off, end: payloadOffset + length, payloadOffset, samples: bytes.readUInt32LE(off + 8), newestTimestampMs: bytes.readDoubleLE(off + 12), appendedAtMs: 0 };
}

/** Records of a segment written before the current format, up to the first that fails. */
function legacyRecords(bytes: Buffer): RecordIndex[] {
  const out: RecordIndex[] = [];
  let off = 0;
  while (off + LEGACY_HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(off);
    const payloadOffset = off + LEGACY_HEADER_BYTES;
    // Every record ever written had a payload; a zero length is a zero-filled tail, not a record.
    if (length === 0 || payloadOffset + length > bytes.length) break;
    if (crc32(bytes.subarray(payloadOffset, payloadOffset + length)) !== bytes.readUInt32LE(off + 4)) break;
    out.push({ offset: off, end: payloadOffset + length, payloadOffset, samples: bytes.readUInt32LE(off + 8), newestTimestampMs: bytes.readDoubleLE(off + 12), appendedAtMs: 0 });
    off = payloadOffset + length;
  }
  return out;
}

/** The durable queue. All operations are synchronous so ordering is obvious and kill -9 safe. */
export class DiskQueue {
  private segments: Segment[] = [];
  private fd = -1; // open fd of the last (active) segment
  /** The active segment failed a write or fsync: the next append starts a new one. */
  private activeBroken = false;
  private committed: CommittedState = { segment: 0, offset: 0 };
  /** Read cursor: the position of the next record not yet handed out. */
  private cursor: QueuePosition = { segment: 0, offset: 0 };
  private durable: QueuePosition = { segment: -1, offset: 0 };
  private readonly now: () => number;
  private readonly files: FileSystem;
  private readonly header = Buffer.alloc(RECORD_HEADER_BYTES);
  /** Samples dropped because the queue was over its byte bound. */
  droppedSamples = 0;
  droppedRecords = 0;
  /** fsyncs of a finished segment that failed, and commits the byte bound could not write (diagnostics). */
  syncFailures = 0;
  commitFailures = 0;
  /** Samples from the committed position on, and from the read cursor on (kept as records come and go). */
  private pending = 0;
  private unread = 0;
  /** Open read descriptors by segment id (closed when the segment goes). */
  private readonly readFds = new Map<number, number>();
  /** Bytes (headers included) and samples appended since open, for the cost report. */
  appendedBytes = 0;
  appendedSamples = 0;
  readonly recovery: RecoveryReport;
  /** opts.maxRecords (Infinity: none), and a segment's share of it (the share of maxBytes segmentBytes is). */
  private readonly maxRecords: number;
  private readonly segmentRecords: number;

  constructor(private readonly opts: DiskQueueOptions) {
    this.maxRecords = opts.maxRecords ?? Infinity;
    this.segmentRecords = Math.max(1, Math.floor((this.maxRecords * opts.segmentBytes) / opts.maxBytes));
    this.now = opts.now ?? Date.now;
    this.files = opts.fs ?? nodeFileSystem;
    makeDirectoryDurable(this.files, opts.dir, opts.fsync !== "never");
    this.recovery = this.recover();
  }

  private readCommitted(report: RecoveryReport): CommittedState | undefined {
    let text: string;
    try {
      text = this.files.readFileSync(join(this.opts.dir, "committed")).toString("utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined; // no delivery yet
      throw error;
    }
    try {
      const c = JSON.parse(text) as Partial<CommittedState>;
      if (Number.isSafeInteger(c.segment) && Number.isSafeInteger(c.offset) && c.segment! >= 0 && c.offset! >= 0) {
        const state: CommittedState = { segment: c.segment!, offset: c.offset! };
        if (Number.isFinite(c.newestDeliveredMs)) state.newestDeliveredMs = c.newestDeliveredMs!;
        return state;
      }
    } catch {
      // fall through: unreadable
    }
    // Re-sending is the only safe reading of a position that cannot be read.
    report.committedUnreadable = true;
    return undefined;
  }

  private recover(): RecoveryReport {
    const report: RecoveryReport = { segments: 0, records: 0, samples: 0, truncatedBytes: 0, clampedBytes: 0, committedUnreadable: false };
    const committed = this.readCommitted(report);
    if (committed !== undefined) this.committed = committed;
    const ids = this.files.readdirSync(this.opts.dir)
      .filter((f) => /^\d{20}\.seg$/.test(f))
      .map((f) => Number(f.slice(0, 20)))
      .sort((a, b) => a - b);
    let lastId = committed === undefined ? -1 : committed.segment;
    for (const id of ids) {
      lastId = Math.max(lastId, id);
      const path = join(this.opts.dir, segName(id));
      if (id < this.committed.segment) {
        this.unlinkQuietly(path); // fully delivered before the crash; its deletion was not reached
        continue;
      }
      const seg = this.scan(id, path, report);
      if (seg.records.length === 0) {
        this.unlinkQuietly(path); // nothing to send in it, and nothing will ever be written to it
        continue;
      }
      this.segments.push(seg);
    }
    const at = this.segments.find((s) => s.id === this.committed.segment);
    const surviving = at === undefined ? 0 : at.records[at.records.length - 1]!.end;
    if (this.committed.offset > surviving) {
      report.clampedBytes = this.committed.offset - surviving;
      this.committed.offset = surviving;
    }
    this.segments.push(this.createSegment(lastId + 1));
    this.cursor = { ...this.committedPosition };
    for (const s of this.segments) {
      for (let i = this.firstAtOrAfter(s, this.cursor); i < s.records.length; i++) {
        report.records++;
        report.samples += s.records[i]!.samples;
      }
    }
    report.segments = this.segments.length;
    this.pending = report.samples;
    this.unread = report.samples;
    return report;
  }

  private isBefore(segment: number, offset: number, pos: QueuePosition): boolean {
    return segment < pos.segment || (segment === pos.segment && offset < pos.offset);
  }

  /**
   * The index of `seg`'s first record at or after `pos` (its length when none is). Records lie in
   * offset order, so `pos`'s segment is searched by halves: a segment holds thousands of records,
   * and the sender asks of its cursor after every append.
   */
  private firstAtOrAfter(seg: Segment, pos: QueuePosition): number {
    if (seg.id !== pos.segment) return seg.id < pos.segment ? seg.records.length : 0;
    const records = seg.records;
    const offset = pos.offset;
    let lo = 0;
    let hi = records.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (records[mid]!.offset < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Indexes the records of a recovered segment; cuts a damaged tail. */
  private scan(id: number, path: string, report: RecoveryReport): Segment {
    const bytes = this.files.readFileSync(path);
    const seed = segmentSeed(id);
    const seg: Segment = { id, path, bytes: bytes.length, records: [], newestMs: -Infinity, seed };
    let off = 0;
    while (off < bytes.length) {
      const r = recordAt(bytes, off, seed);
      if (r !== undefined) {
        seg.records.push(r);
        off = r.end;
        continue;
      }
      // Damaged here: resync on the next offset where a whole record validates.
      let next = off + 1;
      while (next + RECORD_HEADER_BYTES <= bytes.length && recordAt(bytes, next, seed) === undefined) next++;
      off = next + RECORD_HEADER_BYTES <= bytes.length ? next : bytes.length;
    }
    if (seg.records.length === 0 && bytes.length > 0) {
      const legacy = legacyRecords(bytes);
      if (legacy.length > 0) seg.records = legacy;
    }
    let valid = 0;
    for (const r of seg.records) {
      valid += r.end - r.offset;
      seg.newestMs = Math.max(seg.newestMs, r.newestTimestampMs);
    }
    report.truncatedBytes += bytes.length - valid;
    const end = seg.records.length === 0 ? 0 : seg.records[seg.records.length - 1]!.end;
    if (end < bytes.length && seg.records.length > 0) {
      // Tidy: the tail holds no record; nothing is ever appended to a recovered segment.
      const fd = this.files.openSync(path, "r+");
      try {
        this.files.ftruncateSync(fd, end);
        if (this.opts.fsync !== "never") this.files.fsyncSync(fd);
      } finally {
        this.files.closeSync(fd);
      }
      seg.bytes = end;
    }
    return seg;
  }

  private unlinkQuietly(path: string): void {
    try {
      this.files.unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }

  private createSegment(id: number): Segment {
    const path = join(this.opts.dir, segName(id));
    this.fd = this.files.openSync(path, "w");
    this.activeBroken = false;
    // The name must be durable before any record in it can be acknowledged.
    if (this.opts.fsync !== "never") fsyncDirectory(this.files, this.opts.dir);
    return { id, path, bytes: 0, records: [], newestMs: -Infinity, seed: segmentSeed(id) };
  }

  /** Total bytes of all segments (delivered records of the head segment included until it is deleted). */
  get bytes(): number {
    let n = 0;
    for (const s of this.segments) n += s.bytes;
    return n;
  }

  /** Records indexed in memory (delivered ones of the head segment included until it is deleted). */
  get records(): number {
    let n = 0;
    for (const s of this.segments) n += s.records.length;
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

  /** How far appends are known durable (fsynced): every record ending at or before it survives a power loss. */
  get durablePosition(): QueuePosition {
    return { ...this.durable };
  }

  private countFrom(pos: QueuePosition): number {
    let n = 0;
    for (const s of this.segments) for (let i = this.firstAtOrAfter(s, pos); i < s.records.length; i++) n += s.records[i]!.samples;
    return n;
  }

  /** The segment the next append goes to unless prepare starts a new one. */
  get activeSegment(): number {
    return this.segments[this.segments.length - 1]!.id;
  }

  /**
   * Makes sure the next append of at most `bytes` lands in the active segment (starting a new one
   * when it would not fit) and returns that segment's id, so the caller can tell which series
   * definitions the segment already holds.
   */
  prepare(bytes: number): number {
    const active = this.segments[this.segments.length - 1]!;
    if (this.activeBroken || (active.bytes > 0 && (active.bytes + RECORD_HEADER_BYTES + bytes > this.opts.segmentBytes || active.records.length >= this.segmentRecords))) this.roll();
    return this.segments[this.segments.length - 1]!.id;
  }

  private roll(): void {
    const active = this.segments[this.segments.length - 1]!;
    try {
      this.syncActive();
    } catch {
      // Its records stay readable from the page cache and are sent; they are only not claimed
      // durable (durablePosition does not move). Appending goes on in a new segment.
      this.syncFailures++;
    }
    this.files.closeSync(this.fd);
    this.fd = -1;
    const next = this.createSegment(active.id + 1);
    if (active.records.length === 0) {
      // Nothing in it (a failed first append): it goes, so no empty segment stays behind.
      this.segments.pop();
      this.unlinkQuietly(active.path);
    }
    this.segments.push(next);
  }

  /** fsyncs the active segment (not in "never" mode) and moves the durable position to its end. */
  private syncActive(): void {
    if (this.opts.fsync === "never" || this.fd < 0 || this.activeBroken) return;
    const active = this.segments[this.segments.length - 1]!;
    this.files.fsyncSync(this.fd);
    this.durable = { segment: active.id, offset: active.bytes };
  }

  /** The payloads of the records before the read cursor in its segment (they may define series used after it). */
  readSegmentHead(): Uint8Array[] {
    const seg = this.segments.find((s) => s.id === this.cursor.segment);
    if (!seg) return [];
    return seg.records.filter((r) => r.offset < this.cursor.offset).map((r) => this.readPayload(seg, r));
  }

  private readPayload(seg: Segment, r: RecordIndex): Buffer {
    let fd = this.readFds.get(seg.id);
    if (fd === undefined) this.readFds.set(seg.id, (fd = this.files.openSync(seg.path, "r")));
    const buf = Buffer.allocUnsafe(r.end - r.payloadOffset);
    this.files.readSync(fd, buf, 0, buf.length, r.payloadOffset);
    return buf;
  }

  private unlinkSegment(seg: Segment): void {
    const fd = this.readFds.get(seg.id);
    if (fd !== undefined) {
      this.files.closeSync(fd);
      this.readFds.delete(seg.id);
    }
    this.unlinkQuietly(seg.path);
  }

  /**
   * Appends one record (see the durability policy above) and returns the position just after it.
   * A failed write leaves nothing behind that a later append could follow: the segment is cut
   * back where it was and the next append starts a new one.
   */
  append(payload: Uint8Array, samples: number, newestTimestampMs: number): QueuePosition {
    this.prepare(payload.length);
    const active = this.segments[this.segments.length - 1]!;
    const header = this.header;
    header.writeUInt32LE(MAGIC, 0);
    header.writeUInt32LE(payload.length, 4);
    header.writeUInt32LE(samples, 8);
    header.writeDoubleLE(newestTimestampMs, 12);
    header.writeUInt32LE(crc32(payload, active.seed), 20);
    header.writeUInt32LE(crc32(header.subarray(0, 24), active.seed), 24);
    const offset = active.bytes;
    const end = offset + RECORD_HEADER_BYTES + payload.length;
    try {
      this.files.writeSync(this.fd, header, 0, RECORD_HEADER_BYTES, offset);
      this.files.writeSync(this.fd, payload, 0, payload.length, offset + RECORD_HEADER_BYTES);
      if (this.opts.fsync === "always") this.files.fsyncSync(this.fd);
    } catch (error) {
      this.activeBroken = true;
      try {
        this.files.ftruncateSync(this.fd, offset);
      } catch {
        // The next append starts a new segment either way; recovery skips whatever is left here.
      }
      throw error;
    }
    if (this.opts.fsync === "always") this.durable = { segment: active.id, offset: end };
    active.records.push({ offset, end, payloadOffset: offset + RECORD_HEADER_BYTES, samples, newestTimestampMs, appendedAtMs: this.now() });
    active.newestMs = Math.max(active.newestMs, newestTimestampMs);
    this.pending += samples;
    this.unread += samples;
    active.bytes = end;
    this.appendedBytes += end - offset;
    this.appendedSamples += samples;
    this.enforceBound();
    return { segment: active.id, offset: end };
  }

  private enforceBound(): void {
    while (this.segments.length > 1 && (this.bytes > this.opts.maxBytes || this.records > this.maxRecords)) {
      const oldest = this.segments[0]!;
      const head = this.segments[1]!;
      const before = this.committed;
      if (before.segment < head.id) {
        // The position moves before the segment goes, so no power loss can bring back a position
        // inside a segment that is gone. When it cannot be written (a full disk), nothing is
        // dropped now: the bound is enforced again at the next append.
        try {
          this.writeCommitted({ ...before, segment: head.id, offset: 0 });
        } catch {
          this.commitFailures++;
          return;
        }
      }
      this.segments.shift();
      for (const r of oldest.records) {
        if (!this.isBefore(oldest.id, r.offset, this.cursor)) this.unread -= r.samples;
        if (this.isBefore(oldest.id, r.offset, before)) continue;
        this.droppedSamples += r.samples;
        this.droppedRecords++;
        this.pending -= r.samples;
      }
      if (this.cursor.segment < head.id) this.cursor = { segment: head.id, offset: 0 };
      this.unlinkSegment(oldest);
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
      for (let i = this.firstAtOrAfter(seg, this.cursor); i < seg.records.length; i++) {
        const r = seg.records[i]!;
        if (out.length > 0 && total + r.samples > maxSamples) return out;
        const next = { segment: seg.id, offset: r.end };
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
      const i = this.firstAtOrAfter(seg, this.cursor);
      if (i < seg.records.length) return seg.records[i]!.appendedAtMs;
    }
    return undefined;
  }

  /** Newest sample timestamp ever appended that is still on disk, or undefined. */
  newestTimestampMs(): number | undefined {
    // Per segment, not per record: a backlog of thousands of records is read after every send.
    let n = -Infinity;
    for (const s of this.segments) n = Math.max(n, s.newestMs);
    return n === -Infinity ? undefined : n;
  }

  /**
   * Records everything before `pos` as delivered, durably, with the newest sample time delivered
   * (for the lag after a restart), and deletes fully delivered segments. A position that does not
   * move forward writes nothing.
   */
  commit(pos: QueuePosition, newestDeliveredMs?: number): void {
    const head = this.segments[0]!;
    if (!this.isBefore(this.committed.segment, this.committed.offset, pos)) return;
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
    this.cursor = { ...this.committedPosition };
    this.unread = this.countFrom(this.cursor);
  }

  /** Newest sample time delivered, as committed (survives restarts), or undefined before any delivery. */
  get newestDeliveredMs(): number | undefined {
    return this.committed.newestDeliveredMs;
  }

  private writeCommitted(pos: CommittedState): void {
    const tmp = join(this.opts.dir, "committed.tmp");
    const durable = this.opts.fsync !== "never";
    const text = Buffer.from(JSON.stringify(pos), "utf8");
    const fd = this.files.openSync(tmp, "w");
    try {
      this.files.writeSync(fd, text, 0, text.length, 0);
      // Synced before the rename: else the rename could survive a power loss and the bytes not.
      if (durable) this.files.fsyncSync(fd);
    } finally {
      this.files.closeSync(fd);
    }
    this.files.renameSync(tmp, join(this.opts.dir, "committed"));
    if (durable) fsyncDirectory(this.files, this.opts.dir);
    this.committed = { ...pos };
  }

  /** The committed position (for tests and diagnostics). */
  get committedPosition(): QueuePosition {
    return { segment: this.committed.segment, offset: this.committed.offset };
  }

  close(): void {
    if (this.fd >= 0) {
      try {
        this.syncActive();
      } catch {
        this.syncFailures++;
      }
      this.files.closeSync(this.fd);
      this.fd = -1;
    }
    for (const fd of this.readFds.values()) this.files.closeSync(fd);
    this.readFds.clear();
  }
}
