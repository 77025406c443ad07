// Frozen copy of control-plane/src/policy/journal.ts as it was on main at 5df058b6e459, before issue #27, so
// test/bench/durable-stores.bench.ts can time it beside today's in the same run (the bar: unchanged
// within 10%). Not used by the control plane; delete with that bar.
// The file store's bytes on disk: a snapshot (`<path>`, the whole state, replaced atomically) and
// a journal beside it (`<path>.journal`, one line per change, appended and fsynced before a write
// is acknowledged). A write costs one line however many policies there are; compaction folds the
// journal into a new snapshot once the journal outgrows it, so start-up reads stay bounded.
//
// Journal line: 8 hex digits of the CRC-32 of the JSON text, a space, the JSON text, "\n".
// A last line without its "\n" was being written when the process died: it was never
// acknowledged (the fsync after it had not returned), so it is cut off at open. Any other line
// that fails its checksum is reported as corrupt and skipped; the lines around it still count.
//
// Compaction order makes every crash point safe: the snapshot (which records the next version
// number) is written to a temporary file, fsynced, renamed over the old one and the directory
// fsynced; only then is the journal emptied. Journal lines older than the snapshot's next version
// are skipped at load, so a crash between the two steps replays nothing twice.
import { closeSync, existsSync, fsync, fsyncSync, ftruncate, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { open, rename, unlink } from "node:fs/promises";
import { promisify } from "node:util";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { crc32 } from "node:zlib";

const fsyncAsync = promisify(fsync);
const ftruncateAsync = promisify(ftruncate);

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
}

/** Everything read at start-up. */
export interface JournalContents {
  snapshot: Snapshot | undefined;
  lines: JournalLine[];
  /** Lines that failed their checksum or did not parse, by 1-based line number. */
  corrupt: { line: number; reason: string }[];
  /** Bytes cut off the end: an unacknowledged line torn by a crash. */
  tornBytes: number;
  /** Temporary files of interrupted snapshot writes, removed. */
  removedTemporaries: string[];
}

/** Journal options. */
export interface JournalOptions {
  /** fsync each append and snapshot (default true; false only for benchmarks of the rest). */
  fsync?: boolean;
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
  private fd = -1;
  private size = 0;
  private snapshotSize = 0;
  private brokenReason: string | undefined;

  constructor(path: string, private readonly options: JournalOptions = {}) {
    this.snapshotPath = path;
    this.journalPath = `${path}.journal`;
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
    const directory = dirname(this.snapshotPath);
    mkdirSync(directory, { recursive: true });
    const pattern = this.temporaryPattern();
    const removedTemporaries: string[] = [];
    for (const name of readdirSync(directory)) {
      if (!pattern.test(name)) continue;
      unlinkSync(join(directory, name));
      removedTemporaries.push(name);
    }
    const snapshot = this.readSnapshot();
    const contents: JournalContents = { snapshot, lines: [], corrupt: [], tornBytes: 0, removedTemporaries };
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.journalPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      bytes = Buffer.alloc(0);
    }
    let start = 0;
    let line = 0;
    while (start < bytes.length) {
      const end = bytes.indexOf(0x0a, start);
      if (end < 0) {
        contents.tornBytes = bytes.length - start;
        break;
      }
      line += 1;
      const parsed = this.parseLine(bytes.subarray(start, end));
      if ("reason" in parsed) contents.corrupt.push({ line, reason: parsed.reason });
      else contents.lines.push({ line, entry: parsed.entry });
      start = end + 1;
    }
    const created = bytes.length === 0 && !existsSync(this.journalPath);
    this.fd = openSync(this.journalPath, "a", 0o600);
    if (created && this.options.fsync !== false) {
      // A new file's directory entry must be on disk too, or the first fsynced line could vanish with it.
      const dir = openSync(directory, "r");
      try {
        fsyncSync(dir);
      } finally {
        closeSync(dir);
      }
    }
    if (contents.tornBytes > 0) {
      ftruncateSync(this.fd, bytes.length - contents.tornBytes);
      if (this.options.fsync !== false) fsyncSync(this.fd);
    }
    this.size = bytes.length - contents.tornBytes;
    return contents;
  }

  private readSnapshot(): Snapshot | undefined {
    let text: string;
    try {
      text = readFileSync(this.snapshotPath, "utf8");
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
    try {
      let written = 0;
      while (written < buffer.length) written += writeSync(this.fd, buffer, written, buffer.length - written);
      if (durable && this.options.fsync !== false) fsyncSync(this.fd);
      this.size = before + buffer.length;
    } catch (error) {
      try {
        ftruncateSync(this.fd, before);
      } catch (undo) {
        this.brokenReason = `append failed (${String(error)}) and could not be undone (${String(undo)})`;
      }
      throw error;
    }
  }

  /** Replaces the snapshot with `snapshot` and empties the journal (see the order above). */
  async compact(snapshot: Snapshot): Promise<void> {
    const directory = dirname(this.snapshotPath);
    const text = `${JSON.stringify(snapshot)}\n`;
    const temporary = join(directory, `.${basename(this.snapshotPath)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    const file = await open(temporary, "w", 0o600);
    try {
      await file.writeFile(text, "utf8");
      if (this.options.fsync !== false) await file.sync();
    } finally {
      await file.close();
    }
    try {
      await rename(temporary, this.snapshotPath);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
    if (this.options.fsync !== false) {
      // The rename is durable only once the directory entry is on disk.
      const dir = await open(directory, "r");
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    }
    this.snapshotSize = Buffer.byteLength(text);
    await ftruncateAsync(this.fd, 0);
    if (this.options.fsync !== false) await fsyncAsync(this.fd);
    this.size = 0;
  }

  /** Closes the journal file. */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
