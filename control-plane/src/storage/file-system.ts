// The file-system calls the durable stores make (the remote-write queue, the policy journal),
// behind one small interface so the power-loss tests can put a simulated disk under them
// (test/power-loss/). The real one is node:fs itself: each method is the node:fs function of the
// same name, so production pays no wrapper. Only the calls the stores use are here, with the
// narrow signatures they use them with.
import * as fs from "node:fs";
import { promisify } from "node:util";
import { dirname } from "node:path";

/** Flags the stores open files with: read, read-write, create-or-truncate, append (create). */
export type OpenFlags = "r" | "r+" | "w" | "a";

/** The synchronous and asynchronous file calls of the durable stores. */
export interface FileSystem {
  openSync(path: string, flags: OpenFlags, mode?: number): number;
  closeSync(fd: number): void;
  /** Positional read; returns the bytes read. */
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  /** Positional write, or at the end for a file opened "a" (position null). Returns the bytes written. */
  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number;
  fsyncSync(fd: number): void;
  ftruncateSync(fd: number, length: number): void;
  statSync(path: string): { size: number };
  readdirSync(path: string): string[];
  readFileSync(path: string): Buffer;
  existsSync(path: string): boolean;
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  mkdirSync(path: string, options: { recursive: true }): string | undefined;
  /** The same calls on the thread pool, for writes that may be large (a policy snapshot). */
  promises: {
    open(path: string, flags: OpenFlags, mode?: number): Promise<number>;
    close(fd: number): Promise<void>;
    write(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<number>;
    fsync(fd: number): Promise<void>;
    ftruncate(fd: number, length: number): Promise<void>;
    rename(from: string, to: string): Promise<void>;
    unlink(path: string): Promise<void>;
  };
}

const writeAsync = promisify(fs.write);

/** node:fs. */
export const nodeFileSystem: FileSystem = {
  openSync: fs.openSync,
  closeSync: fs.closeSync,
  readSync: (fd, buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
  writeSync: (fd, buffer, offset, length, position) => fs.writeSync(fd, buffer, offset, length, position),
  fsyncSync: fs.fsyncSync,
  ftruncateSync: fs.ftruncateSync,
  statSync: (path) => fs.statSync(path),
  readdirSync: (path) => fs.readdirSync(path),
  readFileSync: (path) => fs.readFileSync(path),
  existsSync: fs.existsSync,
  renameSync: fs.renameSync,
  unlinkSync: fs.unlinkSync,
  mkdirSync: (path, options) => fs.mkdirSync(path, options),
  promises: {
    open: promisify(fs.open) as (path: string, flags: OpenFlags, mode?: number) => Promise<number>,
    close: promisify(fs.close),
    write: async (fd, buffer, offset, length, position) => (await writeAsync(fd, buffer, offset, length, position)).bytesWritten,
    fsync: promisify(fs.fsync),
    ftruncate: promisify(fs.ftruncate),
    rename: promisify(fs.rename),
    unlink: promisify(fs.unlink),
  },
};

/** fsyncs a directory, so the names created, renamed or removed in it survive a power loss. */
export function fsyncDirectory(files: FileSystem, path: string): void {
  const fd = files.openSync(path, "r");
  try {
    files.fsyncSync(fd);
  } finally {
    files.closeSync(fd);
  }
}

/** The same on the thread pool. */
export async function fsyncDirectoryAsync(files: FileSystem, path: string): Promise<void> {
  const fd = await files.promises.open(path, "r");
  try {
    await files.promises.fsync(fd);
  } finally {
    await files.promises.close(fd);
  }
}

/**
 * Creates `path` and any missing parents; when one was created, fsyncs the directory that
 * received it, so the new folder itself survives a power loss (its files' names are fsynced in it
 * by the stores). Returns whether anything was created.
 */
export function makeDirectoryDurable(files: FileSystem, path: string, durable: boolean): boolean {
  if (files.existsSync(path)) return false;
  const first = files.mkdirSync(path, { recursive: true });
  if (first === undefined || !durable) return first !== undefined;
  // mkdir -p made `first` and everything below it: each new name lives in its parent.
  let dir = path;
  for (;;) {
    fsyncDirectory(files, dirname(dir));
    if (dir === first || dirname(dir) === dir) break;
    dir = dirname(dir);
  }
  return true;
}
