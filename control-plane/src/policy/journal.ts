// The file store's bytes on disk: a snapshot (`<path>`, the whole state, replaced atomically) and
// a journal beside it (`<path>.journal`, one line per change, appended and fsynced before a write
// is acknowledged). A write costs one line however many policies there are; compaction folds the
// journal into a new snapshot once the journal outgrows it, so start-up reads stay bounded.
//
// Journal line: 8 hex digits of the CRC-32 of the JSON text, a space, the JSON text, "\n".
//
// The torn tail. A last line without its "\n" was being written when the process died, and a
// line holding a NUL byte (JSON text never does) is a sector a power loss left zero-filled: either
// was never acknowledged (its fsync had not returned; had a later line's fsync returned, the disk
// would hold this line's bytes). So the journal ends there: that line and everything after it are
// cut at open, as etcd treats a record with a zeroed sector as a torn write (etcd
// server/storage/wal/decoder.go 06b0e6a0, isTornEntry). Never applying a line past such a hole
// keeps the state a prefix of what was written.
//
// Nothing it cannot read is lost: bytes cut after a hole that hold a whole line are appended to
// `<path>.rejected` (fsynced) first; a complete line that fails its checksum, or that the store
// cannot apply, is reported and skipped, and copied to `<path>.rejected` before a compaction
// empties the journal. (A line of a type this version does not know stops the store: see
// file-store.ts.)
//
// Compaction order makes every crash point safe: the snapshot (which records the next version
// number) is written to a temporary file, fsynced, renamed over the old one and the directory
// fsynced; only then is the journal emptied. Journal lines older than the snapshot's next version
// are skipped at load, so a crash between the two steps replays nothing twice. A compaction that
// fails at any step (a full disk, an I/O error) removes its temporary file.
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { crc32 } from "node:zlib";
import { fsyncDirectory, fsyncDirectoryAsync, makeDirectoryDurable, nodeFileSystem, type FileSystem } from "../storage/file-system.js";

/** What the snapshot file holds (format 1 is the pre-journal layout, still read). */
export interface Snapshot {
  formatVersion: 1 | 2;
  /** Next version number to hand out; journal lines below it are already in the snapshot. */
  nextVersion: number;
  /** Audit lines were emitted for every change up to this version. */
  auditedThrough?: number;
  /** By policy name: the stored record (or null) and its history, as written (checked by the store). */
  policies: Record<string, unknown>;
}

/** One intact journal line, parsed but not yet checked against the model (the store does that). */
export interface JournalLine {
  line: number;
  entry: unknown;
  /** The line's bytes as stored (a view of the file read at load; `preserve` copies it). */
  raw: Buffer;
}

/** Everything read at start-up. */
export interface JournalContents {
  snapshot: Snapshot | undefined;
  lines: JournalLine[];
  /** Lines that failed their checksum or did not parse, by 1-based line number. */
  corrupt: { line: number; reason: string }[];
  /** Bytes cut off the end: an unacknowledged line torn by a crash, or a power loss's zero-filled tail and what followed it. */
  tornBytes: number;
  /** Of those, bytes that held whole lines, copied to `<path>.rejected` before the cut. */
  preservedBytes: number;
  /** Temporary files of interrupted snapshot writes, removed. */
  removedTemporaries: string[];
}

/** Journal options. */
export interface JournalOptions {
  /** fsync each append and snapshot (default true; false only for benchmarks of the rest). */
  fsync?: boolean;
  /** The file system (tests put a simulated disk here); node:fs by default. */
  fs?: FileSystem;
}

function frame(json: string): Buffer {
  const body = Buffer.from(json, "utf8");
  const crc = crc32(body).toString(16).padStart(8, "0");
  return Buffer.concat([Buffer.from(`${crc} `, "latin1"), body, Buffer.from("\n", "latin1")]);
}

/** The snapshot and journal files of one store. */
export class PolicyJournal {
  readonly snapshotPath: string;
  readonly journalPath: string;
  /** Where lines that cannot be applied are kept, rather than lost. */
  readonly rejectedPath: string;
  private readonly files: FileSystem;
  private fd = -1;
  private size = 0;
  private snapshotSize = 0;
  private brokenReason: string | undefined;
  /** Lines skipped at load, to copy to the rejected file before a compaction drops them. */
  private unsaved: Buffer[] = [];

  constructor(path: string, private readonly options: JournalOptions = {}) {
    this.snapshotPath = path;
    this.journalPath = `${path}.journal`;
    this.rejectedPath = `${path}.rejected`;
    this.files = options.fs ?? nodeFileSystem;
  }

  private get durable(): boolean {
    return this.options.fsync !== false;
  }

  /** Bytes in the journal now. */
  get journalBytes(): number {
    return this.size;
  }

  /** Bytes of the last snapshot read or written. */
  get snapshotBytes(): number {
    return this.snapshotSize;
  }

  /** Set when a failed append could not be undone: the journal accepts nothing more. */
  get broken(): string | undefined {
    return this.brokenReason;
  }

  private temporaryPattern(): RegExp {
    const escaped = basename(this.snapshotPath).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return new RegExp(`^\\.${escaped}\\.\\d+\\.[0-9a-f]+\\.tmp$`);
  }

  /** Reads the snapshot and journal, cuts a torn tail, removes stale temporaries, opens for appends. Throws on an unreadable snapshot. */
  load(): JournalContents {
    const files = this.files;
    const directory = dirname(this.snapshotPath);
    makeDirectoryDurable(files, directory, this.durable);
    const pattern = this.temporaryPattern();
    const removedTemporaries: string[] = [];
    for (const name of files.readdirSync(directory)) {
      if (!pattern.test(name)) continue;
      files.unlinkSync(join(directory, name));
      removedTemporaries.push(name);
    }
    const snapshot = this.readSnapshot();
    const contents: JournalContents = { snapshot, lines: [], corrupt: [], tornBytes: 0, preservedBytes: 0, removedTemporaries };
    let bytes: Buffer;
    try {
      bytes = files.readFileSync(this.journalPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      bytes = Buffer.alloc(0);
    }
    let start = 0;
    let line = 0;
    while (start < bytes.length) {
      const end = bytes.indexOf(0x0a, start);
      const raw = bytes.subarray(start, end < 0 ? bytes.length : end);
      if (end < 0 || raw.includes(0)) break; // the torn tail (see above)
      line += 1;
      const parsed = this.parseLine(raw);
      if ("reason" in parsed) {
        contents.corrupt.push({ line, reason: parsed.reason });
        this.preserve(raw);
      } else contents.lines.push({ line, entry: parsed.entry, raw });
      start = end + 1;
    }
    const cut = bytes.subarray(start);
    if (cut.length > 0 && cut.includes(0x0a)) {
      // Whole lines after a hole were never acknowledged, but they are kept where a person can read them.
      this.appendRejected([cut]);
      contents.preservedBytes = cut.length;
    }
    const created = bytes.length === 0 && !files.existsSync(this.journalPath);
    this.fd = files.openSync(this.journalPath, "a", 0o600);
    // A new file's directory entry must be on disk too, or the first fsynced line could vanish with it.
    if (created && this.durable) fsyncDirectory(files, directory);
    contents.tornBytes = cut.length;
    if (cut.length > 0) {
      files.ftruncateSync(this.fd, start);
      if (this.durable) files.fsyncSync(this.fd);
    }
    this.size = start;
    return contents;
  }

  /** Keeps a copy of a line the store skipped, to save before a compaction drops it. */
  preserve(raw: Buffer): void {
    this.unsaved.push(Buffer.concat([raw, Buffer.from("\n", "latin1")]));
  }

  /** Appends to the rejected file, durably (its name too, the first time). */
  private appendRejected(chunks: Buffer[]): void {
    const files = this.files;
    const created = !files.existsSync(this.rejectedPath);
    const fd = files.openSync(this.rejectedPath, "a", 0o600);
    try {
      for (const chunk of chunks) {
        let written = 0;
        while (written < chunk.length) written += files.writeSync(fd, chunk, written, chunk.length - written, null);
      }
      if (this.durable) files.fsyncSync(fd);
    } finally {
      files.closeSync(fd);
    }
    if (created && this.durable) fsyncDirectory(files, dirname(this.rejectedPath));
  }

  private readSnapshot(): Snapshot | undefined {
    let text: string;
    try {
      text = this.files.readFileSync(this.snapshotPath).toString("utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    this.snapshotSize = Buffer.byteLength(text);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`policy store ${this.snapshotPath}: not valid JSON`);
    }
    const state = parsed as Partial<Snapshot> | null;
    if (
      typeof state !== "object" || state === null ||
      (state.formatVersion !== 1 && state.formatVersion !== 2) ||
      !Number.isSafeInteger(state.nextVersion) || (state.nextVersion as number) < 1 ||
      (state.auditedThrough !== undefined && !Number.isSafeInteger(state.auditedThrough)) ||
      typeof state.policies !== "object" || state.policies === null || Array.isArray(state.policies)
    ) {
      throw new Error(`policy store ${this.snapshotPath}: unrecognised format`);
    }
    return state as Snapshot;
  }

  private parseLine(raw: Buffer): { entry: unknown } | { reason: string } {
    if (raw.length < 10 || raw[8] !== 0x20) return { reason: "not a journal line" };
    const body = raw.subarray(9);
    if (crc32(body).toString(16).padStart(8, "0") !== raw.subarray(0, 8).toString("latin1")) return { reason: "checksum mismatch" };
    try {
      return { entry: JSON.parse(body.toString("utf8")) as unknown };
    } catch {
      return { reason: "not valid JSON" };
    }
  }

  /**
   * Appends entries as one write; when `durable`, returns only after fsync. Synchronous on
   * purpose: a write is one line, and a thread-pool round trip for the write and another for
   * the fsync cost more than the fsync itself on a busy machine. On failure the journal is cut
   * back to where it was, so a failed append leaves nothing behind.
   */
  append(entries: readonly unknown[], durable: boolean): void {
    if (this.brokenReason !== undefined) throw new Error(`policy journal unusable: ${this.brokenReason}`);
    if (this.fd < 0) throw new Error("policy journal not loaded");
    const buffer = Buffer.concat(entries.map((e) => frame(JSON.stringify(e))));
    const before = this.size;
    const files = this.files;
    try {
      let written = 0;
      while (written < buffer.length) written += files.writeSync(this.fd, buffer, written, buffer.length - written, null);
      if (durable && this.durable) files.fsyncSync(this.fd);
      this.size = before + buffer.length;
    } catch (error) {
      try {
        files.ftruncateSync(this.fd, before);
      } catch (undo) {
        this.brokenReason = `append failed (${String(error)}) and could not be undone (${String(undo)})`;
      }
      throw error;
    }
  }

  /** Replaces the snapshot with `snapshot` and empties the journal (see the order above). */
  async compact(snapshot: Snapshot): Promise<void> {
    const files = this.files.promises;
    const directory = dirname(this.snapshotPath);
    const text = Buffer.from(`${JSON.stringify(snapshot)}\n`, "utf8");
    const temporary = join(directory, `.${basename(this.snapshotPath)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    let fd: number | undefined;
    try {
      fd = await files.open(temporary, "w", 0o600);
      let written = 0;
      while (written < text.length) written += await files.write(fd, text, written, text.length - written, written);
      if (this.durable) await files.fsync(fd);
      const closing = fd;
      fd = undefined;
      await files.close(closing);
      await files.rename(temporary, this.snapshotPath);
    } catch (error) {
      // Every failure (open, write, fsync, close, rename) leaves no temporary file behind.
      if (fd !== undefined) await files.close(fd).catch(() => undefined);
      await files.unlink(temporary).catch(() => undefined);
      throw error;
    }
    // The rename is durable only once the directory entry is on disk.
    if (this.durable) await fsyncDirectoryAsync(this.files, directory);
    this.snapshotSize = text.length;
    // The journal is about to lose the lines skipped at load: their copies go first.
    if (this.unsaved.length > 0) {
      this.appendRejected(this.unsaved);
      this.unsaved = [];
    }
    await files.ftruncate(this.fd, 0);
    if (this.durable) await files.fsync(this.fd);
    this.size = 0;
  }

  /** Closes the journal file. */
  close(): void {
    if (this.fd >= 0) this.files.closeSync(this.fd);
    this.fd = -1;
  }
}
