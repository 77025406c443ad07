// The pseudonym keys' one home: files in `content.keysDir`, read again on an interval and on every
// change the kernel reports, so a rotated Secret takes effect without a restart (kubelet swaps a
// mounted Secret's files atomically through the `..data` symlink and never restarts the pod).
//
// One file per version (name `[a-z0-9-]{1,32}`, content the key as hex: 64 to 1024 hex digits,
// i.e. 32 to 512 random bytes, surrounding whitespace ignored, e.g. `openssl rand -hex 32`), and
// `current` naming the version in force. Hex because a Secret made with --from-literal or a file
// written by a shell stays text, and a stray newline cannot change the key.
//
// The key bytes leave this module only through `current()` for the content-key endpoint: every
// log line, status and error names versions and files, never content.
import { readdirSync, readFileSync, statSync, watch, type FSWatcher } from "node:fs";
import { join } from "node:path";

/** A key version and its key as lower-case hex. */
export interface ContentKey {
  version: string;
  keyHex: string;
}

/** What the operator may see of the keys: versions, never keys. */
export interface ContentKeyStatus {
  configured: boolean;
  current: string | null;
  versions: string[];
  /** The last problem reading the directory (the last good state stays in force), or null. */
  problem: string | null;
}

/** A version's file name. */
export const versionPattern = /^[a-z0-9-]{1,32}$/;
const keyHexPattern = /^(?:[0-9a-fA-F]{2}){32,512}$/;
/** Larger files are not read at all. */
const maxFileBytes = 4096;

/** Reads the keys directory; holds the last good state. */
export class ContentKeyRing {
  private state: { current: ContentKey; versions: string[] } | undefined;
  private problem: string | null = null;
  private watcher: FSWatcher | undefined;

  constructor(
    private readonly dir: string,
    private readonly log: (record: object) => void = () => undefined,
  ) {}

  /** Whether a directory is configured at all. */
  get configured(): boolean {
    return this.dir !== "";
  }

  /** The key in force, or undefined (none configured, or none readable yet). */
  current(): ContentKey | undefined {
    return this.state?.current;
  }

  status(): ContentKeyStatus {
    return { configured: this.configured, current: this.state?.current.version ?? null, versions: this.state?.versions ?? [], problem: this.problem };
  }

  /** Reads the directory now; a bad state is reported and the last good one kept. */
  reload(): void {
    if (!this.configured) return;
    const read = this.read();
    if (typeof read === "string") {
      if (read !== this.problem) this.log({ level: "warn", msg: "content keys: the directory cannot be used; the last good key stays in force", dir: this.dir, problem: read, current: this.state?.current.version ?? null });
      this.problem = read;
      return;
    }
    const before = this.state?.current.version;
    this.state = { current: read.current, versions: read.versions };
    if (read.problem !== this.problem && read.problem !== null) this.log({ level: "warn", msg: "content keys: a file was skipped", dir: this.dir, problem: read.problem });
    this.problem = read.problem;
    if (before !== read.current.version) this.log({ msg: "content key in force", version: read.current.version, versions: read.versions, previous: before ?? null });
  }

  /** Reads now, then on every change the kernel reports and every `intervalMs` through `every`. */
  start(every: (name: string, ms: number, task: () => unknown) => void, intervalMs: number): void {
    if (!this.configured) return;
    this.reload();
    every("content-keys", intervalMs, () => this.reload());
    try {
      this.watcher = watch(this.dir, { persistent: false }, () => this.reload());
      this.watcher.on("error", () => undefined);
    } catch {
      // No watch (the directory is missing, or the platform has none): the interval still reads.
    }
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private read(): { current: ContentKey; versions: string[]; problem: string | null } | string {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (error) {
      return `cannot list ${this.dir} (${(error as NodeJS.ErrnoException).code ?? "error"})`;
    }
    const keys = new Map<string, string>();
    const problems: string[] = [];
    let currentName: string | undefined;
    for (const name of names.sort()) {
      // A mounted Secret also holds kubelet's `..data` link and timestamped directories.
      if (name.startsWith(".")) continue;
      if (name !== "current" && !versionPattern.test(name)) {
        problems.push(`${name}: not a version name ([a-z0-9-]{1,32}), skipped`);
        continue;
      }
      const text = this.readSmall(join(this.dir, name));
      if (typeof text !== "string") {
        problems.push(`${name}: ${text.error}`);
        continue;
      }
      if (name === "current") {
        currentName = text.trim();
        continue;
      }
      const hex = text.trim();
      if (!keyHexPattern.test(hex)) {
        problems.push(`${name}: not a key (64 to 1024 hex digits), skipped`);
        continue;
      }
      keys.set(name, hex.toLowerCase());
    }
    if (currentName === undefined) return `${join(this.dir, "current")} is missing or unreadable${problems.length > 0 ? `; ${problems.join("; ")}` : ""}`;
    if (!versionPattern.test(currentName)) return `current does not name a version ([a-z0-9-]{1,32})`;
    const keyHex = keys.get(currentName);
    if (keyHex === undefined) return `current names version ${currentName}, which has no valid key file${problems.length > 0 ? `; ${problems.join("; ")}` : ""}`;
    return { current: { version: currentName, keyHex }, versions: [...keys.keys()], problem: problems.length > 0 ? problems.join("; ") : null };
  }

  private readSmall(path: string): string | { error: string } {
    try {
      const stat = statSync(path);
      if (!stat.isFile()) return { error: "not a file" };
      if (stat.size > maxFileBytes) return { error: `larger than ${maxFileBytes} bytes` };
      return readFileSync(path, "utf8");
    } catch (error) {
      return { error: `unreadable (${(error as NodeJS.ErrnoException).code ?? "error"})` };
    }
  }
}
