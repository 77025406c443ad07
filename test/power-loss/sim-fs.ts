// A simulated disk under the durable stores (control-plane/src/storage/file-system.ts), that keeps
// apart what the page cache holds and what an fsync made durable, and at a chosen operation
// loses the power: every later call throws PowerLoss, and `powerLossImage` is what the disk then
// holds. Only what was fsynced is sure to survive:
// - a file's bytes: fsync(file). Each unsynced 512-byte sector comes back new or old, on its own,
//   so a write can be torn at any sector boundary; "old" past the durable size is zeros, or
//   (rarely) garbage, the stale contents of a block newly given to the file; the size comes back
//   old, new, or in between, so a tail can come back as zeros. A sector is written whole: bytes
//   that were durable in it are never lost to a later write (SQLite's "powersafe overwrite",
//   SQLITE_IOCAP_POWERSAFE_OVERWRITE, the default on modern disks). (SQLite's `crash` VFS,
//   sqlite/sqlite src/test6.c b6503f14, writeListSync: each unsynced write is written or omitted;
//   LazyFS, dsrhaslab/lazyfs README 0138865d, clear-cache: all unsynced data lost.)
// - a name (create, rename, unlink, mkdir): fsync(directory). The directory's unsynced changes
//   survive as a prefix, in order (a journaling file system commits metadata in order); a rename
//   is one change, so it is atomic: the old name or the new, never both or neither.
// - fsync(file) does not make the file's name durable, nor mkdir its parent's entry: POSIX
//   promises neither, so the stores must fsync the directory (the strict reading, as LazyFS).
// The operation the power goes at is applied to the page cache first: a crash "during" a write
// leaves any subset of its sectors, "during" an fsync either state.
import { basename, dirname } from "node:path";
import type { FileSystem, OpenFlags } from "../../control-plane/src/storage/file-system.js";

/** Sector size of the simulated disk: writes are atomic per sector, not across sectors. */
export const SECTOR_BYTES = 512;

/** Thrown by every call once the power is gone. */
export class PowerLoss extends Error {
  readonly code = "EPOWERLOSS";
  constructor() {
    super("simulated power loss");
  }
}

interface FileNode {
  kind: "file";
  id: number;
  /** The page cache: what reads see. */
  data: Uint8Array;
  size: number;
  /** What an fsync made durable. */
  durable: Uint8Array;
  /** Sectors written or truncated since the last fsync. */
  dirty: Set<number>;
}

type Change = [name: string, node: Node | undefined];

interface DirNode {
  kind: "dir";
  id: number;
  entries: Map<string, Node>;
  /** The entries an fsync of the directory made durable. */
  durable: Map<string, Node>;
  /** Changes since, in order; each is applied whole. */
  log: Change[][];
}

type Node = FileNode | DirNode;

interface Handle {
  node: Node;
  append: boolean;
  writable: boolean;
}

function errno(code: string, call: string, path: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: simulated, ${call} '${path}'`) as NodeJS.ErrnoException;
  error.code = code;
  return error;
}

/** A disk in memory with a page cache in front of it. Paths are absolute, "/"-separated. */
export class SimFs implements FileSystem {
  private nextId = 1;
  private readonly root: DirNode;
  private readonly handles = new Map<number, Handle>();
  private nextFd = 3;
  /** Operations that change the page cache or the disk, so far. */
  ops = 0;
  /** The power goes at this operation (1-based), after applying it; Infinity: never. */
  crashAt = Infinity;
  crashed = false;
  /** Counts of calls by name (tests of the stores' I/O pattern). */
  readonly calls = new Map<string, number>();

  constructor(root?: DirNode) {
    this.root = root ?? this.newDir();
    if (root !== undefined) this.nextId = maxId(root) + 1;
  }

  private newDir(): DirNode {
    return { kind: "dir", id: this.nextId++, entries: new Map(), durable: new Map(), log: [] };
  }

  private newFile(): FileNode {
    return { kind: "file", id: this.nextId++, data: new Uint8Array(0), size: 0, durable: new Uint8Array(0), dirty: new Set() };
  }

  private enter(call: string): void {
    if (this.crashed) throw new PowerLoss();
    this.calls.set(call, (this.calls.get(call) ?? 0) + 1);
  }

  /** Counts a change; the one the power goes at is applied, then the caller never hears back. */
  private changed(): void {
    this.ops += 1;
    if (this.ops >= this.crashAt) {
      this.crashed = true;
      throw new PowerLoss();
    }
  }

  private lookup(path: string): Node | undefined {
    let node: Node = this.root;
    for (const part of path.split("/").filter((p) => p.length > 0)) {
      if (node.kind !== "dir") return undefined;
      const next = node.entries.get(part);
      if (next === undefined) return undefined;
      node = next;
    }
    return node;
  }

  private parentOf(path: string, call: string): DirNode {
    const parent = this.lookup(dirname(path));
    if (parent === undefined) throw errno("ENOENT", call, path);
    if (parent.kind !== "dir") throw errno("ENOTDIR", call, path);
    return parent;
  }

  private setEntries(dir: DirNode, changes: Change[]): void {
    for (const [name, node] of changes) {
      if (node === undefined) dir.entries.delete(name);
      else dir.entries.set(name, node);
    }
    dir.log.push(changes);
  }

  private handle(fd: number, call: string): Handle {
    const h = this.handles.get(fd);
    if (h === undefined) throw errno("EBADF", call, String(fd));
    return h;
  }

  private file(fd: number, call: string): FileNode {
    const node = this.handle(fd, call).node;
    if (node.kind !== "file") throw errno("EISDIR", call, String(fd));
    return node;
  }

  openSync(path: string, flags: OpenFlags): number {
    this.enter("open");
    let node = this.lookup(path);
    let created = false;
    if (node === undefined) {
      if (flags === "r" || flags === "r+") throw errno("ENOENT", "open", path);
      const parent = this.parentOf(path, "open");
      node = this.newFile();
      this.setEntries(parent, [[basename(path), node]]);
      created = true;
    }
    if (node.kind === "dir" && flags !== "r") throw errno("EISDIR", "open", path);
    const fd = this.nextFd++;
    this.handles.set(fd, { node, append: flags === "a", writable: flags !== "r" });
    if (node.kind === "file" && flags === "w" && node.size > 0) {
      this.resize(node, 0);
      created = true;
    }
    if (created) this.changed();
    return fd;
  }

  closeSync(fd: number): void {
    this.enter("close");
    this.handle(fd, "close");
    this.handles.delete(fd);
  }

  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number {
    this.enter("read");
    const node = this.file(fd, "read");
    const n = Math.max(0, Math.min(length, node.size - position));
    buffer.set(node.data.subarray(position, position + n), offset);
    return n;
  }

  private capacity(node: FileNode, size: number): void {
    if (size <= node.data.length) return;
    const grown = new Uint8Array(Math.max(size, node.data.length * 2, 4096));
    grown.set(node.data.subarray(0, node.size));
    node.data = grown;
  }

  private markDirty(node: FileNode, from: number, to: number): void {
    if (to <= from) return;
    for (let s = Math.floor(from / SECTOR_BYTES); s <= Math.floor((to - 1) / SECTOR_BYTES); s++) node.dirty.add(s);
  }

  private resize(node: FileNode, size: number): void {
    if (size < node.size) {
      node.data.fill(0, size, node.size);
      this.markDirty(node, size, node.size);
    } else {
      this.capacity(node, size);
      this.markDirty(node, node.size, size);
    }
    node.size = size;
  }

  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number {
    this.enter("write");
    const h = this.handle(fd, "write");
    if (!h.writable) throw errno("EBADF", "write", String(fd));
    const node = this.file(fd, "write");
    // Linux: O_APPEND writes go to the end whatever the position (pwrite(2), BUGS).
    const at = h.append || position === null ? node.size : position;
    if (length === 0) return 0;
    this.capacity(node, at + length);
    if (at > node.size) this.markDirty(node, node.size, at);
    node.data.set(buffer.subarray(offset, offset + length), at);
    node.size = Math.max(node.size, at + length);
    this.markDirty(node, at, at + length);
    this.changed();
    return length;
  }

  fsyncSync(fd: number): void {
    this.enter("fsync");
    const node = this.handle(fd, "fsync").node;
    if (node.kind === "file") {
      node.durable = node.data.slice(0, node.size);
      node.dirty.clear();
    } else {
      node.durable = new Map(node.entries);
      node.log = [];
    }
    this.changed();
  }

  ftruncateSync(fd: number, length: number): void {
    this.enter("ftruncate");
    const h = this.handle(fd, "ftruncate");
    if (!h.writable) throw errno("EBADF", "ftruncate", String(fd));
    const node = this.file(fd, "ftruncate");
    if (length === node.size) return;
    this.resize(node, length);
    this.changed();
  }

  statSync(path: string): { size: number } {
    this.enter("stat");
    const node = this.lookup(path);
    if (node === undefined) throw errno("ENOENT", "stat", path);
    return { size: node.kind === "file" ? node.size : 0 };
  }

  readdirSync(path: string): string[] {
    this.enter("readdir");
    const node = this.lookup(path);
    if (node === undefined) throw errno("ENOENT", "scandir", path);
    if (node.kind !== "dir") throw errno("ENOTDIR", "scandir", path);
    return [...node.entries.keys()].sort();
  }

  readFileSync(path: string): Buffer {
    this.enter("readFile");
    const node = this.lookup(path);
    if (node === undefined) throw errno("ENOENT", "open", path);
    if (node.kind !== "file") throw errno("EISDIR", "read", path);
    return Buffer.from(node.data.slice(0, node.size));
  }

  existsSync(path: string): boolean {
    this.enter("exists");
    return this.lookup(path) !== undefined;
  }

  renameSync(from: string, to: string): void {
    this.enter("rename");
    const parent = this.parentOf(from, "rename");
    if (dirname(from) !== dirname(to)) throw errno("EXDEV", "rename (the simulator renames within one directory)", from);
    const node = this.lookup(from);
    if (node === undefined) throw errno("ENOENT", "rename", from);
    if (from === to) return;
    this.setEntries(parent, [[basename(from), undefined], [basename(to), node]]);
    this.changed();
  }

  unlinkSync(path: string): void {
    this.enter("unlink");
    const parent = this.parentOf(path, "unlink");
    const node = this.lookup(path);
    if (node === undefined) throw errno("ENOENT", "unlink", path);
    if (node.kind === "dir") throw errno("EISDIR", "unlink", path);
    this.setEntries(parent, [[basename(path), undefined]]);
    this.changed();
  }

  mkdirSync(path: string, options: { recursive: true }): string | undefined {
    void options;
    this.enter("mkdir");
    let first: string | undefined;
    let node: Node = this.root;
    let at = "";
    for (const part of path.split("/").filter((p) => p.length > 0)) {
      at = `${at}/${part}`;
      if (node.kind !== "dir") throw errno("ENOTDIR", "mkdir", path);
      let next = node.entries.get(part);
      if (next === undefined) {
        next = this.newDir();
        this.setEntries(node, [[part, next]]);
        first ??= at;
        this.changed();
      }
      node = next;
    }
    if (node.kind !== "dir") throw errno("EEXIST", "mkdir", path);
    return first;
  }

  readonly promises: FileSystem["promises"] = {
    open: (path, flags) => this.later(() => this.openSync(path, flags)),
    close: (fd) => this.later(() => this.closeSync(fd)),
    write: (fd, buffer, offset, length, position) => this.later(() => this.writeSync(fd, buffer, offset, length, position)),
    fsync: (fd) => this.later(() => this.fsyncSync(fd)),
    ftruncate: (fd, length) => this.later(() => this.ftruncateSync(fd, length)),
    rename: (from, to) => this.later(() => this.renameSync(from, to)),
    unlink: (path) => this.later(() => this.unlinkSync(path)),
  };

  /** An asynchronous call: runs on a later turn (as the thread pool answers), in call order. */
  private later<T>(call: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      setImmediate(() => {
        try {
          resolve(call());
        } catch (error) {
          reject(error as Error);
        }
      });
    });
  }

  /** Bytes of the file at `path` as reads see them (tests). */
  contents(path: string): Buffer | undefined {
    const node = this.lookup(path);
    return node?.kind === "file" ? Buffer.from(node.data.slice(0, node.size)) : undefined;
  }

  /**
   * The disk after the power loss, as a new file system with an empty page cache: for each
   * directory its durable entries and a prefix of its later changes; for each file that is still
   * named, its durable bytes and each unsynced sector new, old, zeroed or garbage, at a size
   * between the durable one and the last one. `random` decides (uniform in [0, 1)).
   */
  powerLossImage(random: () => number): SimFs {
    const made = new Map<number, Node>();
    const copy = (node: Node): Node => {
      const seen = made.get(node.id);
      if (seen !== undefined) return seen;
      if (node.kind === "file") {
        const bytes = survivingBytes(node, random);
        const file: FileNode = { kind: "file", id: node.id, data: bytes, size: bytes.length, durable: bytes.slice(), dirty: new Set() };
        made.set(node.id, file);
        return file;
      }
      const dir: DirNode = { kind: "dir", id: node.id, entries: new Map(), durable: new Map(), log: [] };
      made.set(node.id, dir);
      const entries = new Map(node.durable);
      const kept = Math.floor(random() * (node.log.length + 1));
      for (const changes of node.log.slice(0, kept)) {
        for (const [name, child] of changes) {
          if (child === undefined) entries.delete(name);
          else entries.set(name, child);
        }
      }
      for (const [name, child] of [...entries].sort(([a], [b]) => (a < b ? -1 : 1))) dir.entries.set(name, copy(child));
      dir.durable = new Map(dir.entries);
      return dir;
    };
    return new SimFs(copy(this.root) as DirNode);
  }
}

function maxId(node: Node): number {
  if (node.kind === "file") return node.id;
  let max = node.id;
  for (const child of node.entries.values()) max = Math.max(max, maxId(child));
  return max;
}

/** One file's bytes after a power loss (see SimFs.powerLossImage). */
function survivingBytes(node: FileNode, random: () => number): Uint8Array {
  if (node.dirty.size === 0) return node.durable.slice();
  const durableSize = node.durable.length;
  const low = Math.min(durableSize, node.size);
  const high = Math.max(durableSize, node.size);
  // The size is metadata, committed apart from the data: old, new, or a sector boundary between.
  const r = random();
  let size = r < 0.4 ? durableSize : r < 0.8 ? node.size : low + Math.floor(random() * (high - low + 1));
  if (r >= 0.8 && size < high) size = Math.min(high, Math.ceil(size / SECTOR_BYTES) * SECTOR_BYTES);
  const out = new Uint8Array(size);
  for (let sector = 0; sector * SECTOR_BYTES < size; sector++) {
    const from = sector * SECTOR_BYTES;
    const to = Math.min(size, from + SECTOR_BYTES);
    if (node.dirty.has(sector) && random() < 0.5) {
      out.set(node.data.subarray(from, Math.min(to, node.size)), from);
      continue;
    }
    out.set(node.durable.subarray(from, Math.min(to, durableSize)), from);
    // Past the durable size: zeros (already), or the stale bytes of a newly allocated block.
    if (to > durableSize && random() < 0.1) for (let i = Math.max(from, durableSize); i < to; i++) out[i] = Math.floor(random() * 256);
  }
  return out;
}
