// Durable storage of the policy store's state as one JSON file. A write goes to a temporary file
// in the same directory, is fsynced, renamed over the old file, and the directory is fsynced,
// so a crash leaves either the old or the new state on disk, never a torn file.
import { mkdirSync, readFileSync } from "node:fs";
import { open, rename, unlink } from "node:fs/promises";
import { dirname, basename, join } from "node:path";
import { randomBytes } from "node:crypto";
import type { HistoryEntry, PolicyRecord } from "./model.js";

/** What the store persists. */
export interface StoreState {
  formatVersion: 1;
  /** Next version number to hand out (versions are unique across all policies, forever). */
  nextVersion: number;
  policies: Record<string, { current: PolicyRecord | null; history: HistoryEntry[] }>;
}

/** Loads and saves the state; the store owns the in-memory copy. */
export interface Persistence {
  load(): StoreState | undefined;
  save(state: StoreState): Promise<void>;
}

/** An empty state. */
export function emptyState(): StoreState {
  return { formatVersion: 1, nextVersion: 1, policies: {} };
}

/** Keeps the state in memory only (tests, dry runs). */
export class MemoryPersistence implements Persistence {
  saved: StoreState | undefined;
  load(): StoreState | undefined {
    return this.saved === undefined ? undefined : structuredClone(this.saved);
  }
  async save(state: StoreState): Promise<void> {
    this.saved = structuredClone(state);
  }
}

/** File-backed persistence with atomic replace. */
export class FilePersistence implements Persistence {
  constructor(readonly path: string) {}

  /** Reads the file; undefined when it does not exist. Throws (a start-up error) when it is corrupt. */
  load(): StoreState | undefined {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const state = JSON.parse(text) as StoreState;
    if (state.formatVersion !== 1 || typeof state.nextVersion !== "number" || typeof state.policies !== "object") {
      throw new Error(`policy store ${this.path}: unrecognised format`);
    }
    return state;
  }

  async save(state: StoreState): Promise<void> {
    const directory = dirname(this.path);
    mkdirSync(directory, { recursive: true });
    const temporary = join(directory, `.${basename(this.path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    const file = await open(temporary, "w", 0o600);
    try {
      await file.writeFile(`${JSON.stringify(state, null, 1)}\n`, "utf8");
      await file.sync();
    } finally {
      await file.close();
    }
    try {
      await rename(temporary, this.path);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
    // The rename is durable only once the directory entry is on disk.
    const dir = await open(directory, "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
