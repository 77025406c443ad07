// One process owns a store file: `<store>.lock`, created atomically (link(2) of a complete
// temporary file, so the lock file is never seen half-written) and held for the process's
// lifetime. It names its holder: pid, the PID namespace, the host name, the kernel's boot id and
// the process's start time in clock ticks (/proc/<pid>/stat field 22), so a second process can
// say who holds it, and a lock whose holder is gone is taken over at once:
// - same host, boot id and PID namespace: the holder is alive exactly when /proc/<pid>/stat exists
//   with the same start time (a reused pid has another one);
// - same host, another boot id: the machine rebooted since, the holder is gone;
// - same host and boot id, another PID namespace: a restarted container (a new namespace each
//   start; two live containers sharing a host name and the store's volume are not supported);
// - another host (a shared filesystem): nothing can be checked, so the lock holds; the message
//   says which file to delete once that host's process is known to be gone.
// A holder checks before every acknowledged write that the file is still its own (same inode and
// content), so a lock lost to an operator or a takeover stops writes instead of splitting them.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { linkSync, mkdirSync, readFileSync, readlinkSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Who holds a lock. */
export interface LockHolder {
  pid: number;
  pidNamespace: string;
  hostname: string;
  bootId: string;
  /** Start time of the process in clock ticks since boot; "" where /proc is missing. */
  startTicks: string;
  startedAt: string;
}

/** A second process on the same store: the message names the file and the holder. */
export class StoreLockedError extends Error {
  constructor(
    readonly lockPath: string,
    readonly holder: LockHolder,
  ) {
    const remote = holder.hostname !== hostname();
    super(
      `policy store lock ${lockPath} is held by pid ${holder.pid} on ${holder.hostname} (running since ${holder.startedAt}): ` +
        (remote ? `another host; once that process is gone, delete ${lockPath}` : "stop that process, or point store.path (TOKENTRACE_STORE_PATH) at another file"),
    );
  }
}

const readOr = (path: string, fallback: string): string => {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return fallback;
  }
};

/** Field 22 of /proc/<pid>/stat (after the parenthesised command, which may hold spaces), or undefined when the process does not exist. */
function startTicksOf(pid: number | "self"): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19] ?? "";
}

/** This process as a lock holder. */
export function currentHolder(): LockHolder {
  let pidNamespace = "";
  try {
    pidNamespace = readlinkSync("/proc/self/ns/pid");
  } catch {
    // Not Linux: liveness falls back to signal 0.
  }
  return {
    pid: process.pid,
    pidNamespace,
    hostname: hostname(),
    bootId: readOr("/proc/sys/kernel/random/boot_id", ""),
    startTicks: startTicksOf("self") ?? "",
    startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString(),
  };
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const h = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(h.pid) || typeof h.hostname !== "string" || typeof h.bootId !== "string" || typeof h.pidNamespace !== "string" || typeof h.startTicks !== "string") return undefined;
    return { pid: h.pid as number, pidNamespace: h.pidNamespace, hostname: h.hostname, bootId: h.bootId, startTicks: h.startTicks, startedAt: typeof h.startedAt === "string" ? h.startedAt : "?" };
  } catch {
    return undefined;
  }
}

/** Whether `holder` may still be running, seen from `me`. */
export function holderAlive(holder: LockHolder, me: LockHolder): boolean {
  if (holder.hostname !== me.hostname) return true;
  if (holder.bootId !== "" && me.bootId !== "" && holder.bootId !== me.bootId) return false;
  if (holder.pidNamespace !== me.pidNamespace) return false;
  if (me.startTicks === "") {
    try {
      process.kill(holder.pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  }
  return startTicksOf(holder.pid) === holder.startTicks;
}

/** Locks held by this process, by lock path: a process may open its own store twice (tests do), never two processes. */
const held = new Map<string, { lock: StoreLock; count: number }>();

/** The lock on one store file, held by this process. */
export class StoreLock {
  private released = false;

  private constructor(
    readonly path: string,
    private readonly ino: number,
    private readonly text: string,
  ) {}

  /** Takes `<store>.lock` or throws StoreLockedError naming the holder; a dead holder's lock is taken over. */
  static acquire(storePath: string, me: LockHolder = currentHolder()): StoreLock {
    const path = `${storePath}.lock`;
    const mine = held.get(path);
    if (mine !== undefined) {
      mine.count += 1;
      return mine.lock;
    }
    const text = `${JSON.stringify(me)}\n`;
    mkdirSync(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(temporary, text, { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 8; attempt++) {
        try {
          linkSync(temporary, path);
          const lock = new StoreLock(path, statSync(path).ino, text);
          held.set(path, { lock, count: 1 });
          return lock;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        }
        let ino: number;
        let holder: LockHolder | undefined;
        try {
          ino = statSync(path).ino;
          holder = parseHolder(readFileSync(path, "utf8"));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
          throw error;
        }
        // A lock file that does not parse was torn by a power loss: its holder rebooted with the machine.
        if (holder !== undefined && holderAlive(holder, me)) throw new StoreLockedError(path, holder);
        // Move the dead holder's file aside; if another process replaced it meanwhile, put that one back.
        const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString("hex")}`;
        try {
          renameSync(path, aside);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
          throw error;
        }
        if (statSync(aside).ino !== ino) {
          try {
            linkSync(aside, path);
          } catch {
            // A third process holds it now; ours to report below if it is alive.
          }
        }
        unlinkSync(aside);
      }
      throw new Error(`policy store lock ${path}: could not be taken after 8 attempts (several processes starting at once?)`);
    } finally {
      unlinkSync(temporary);
    }
  }

  /** Undefined while the lock file is still this process's; otherwise why not. */
  lost(): string | undefined {
    if (this.released) return `${this.path} was released`;
    try {
      if (statSync(this.path).ino === this.ino && readFileSync(this.path, "utf8") === this.text) return undefined;
      return `${this.path} now names another holder: the store lock was lost`;
    } catch (error) {
      return `${this.path} is gone (${(error as NodeJS.ErrnoException).code ?? "error"}): the store lock was lost`;
    }
  }

  /** Gives the lock up (the last holder in this process removes the file if it is still its own). */
  release(): void {
    const mine = held.get(this.path);
    if (mine !== undefined && --mine.count > 0) return;
    held.delete(this.path);
    if (this.lost() === undefined) unlinkSync(this.path);
    this.released = true;
  }
}
