// The WASI preview1 calls Envoy registers (under wasi_snapshot_preview1 and wasi_unstable), with the
// answers Envoy's host gives: stdout/stderr go to the log, clocks and random are real (or injected),
// environ comes from vmConfig.env, the file system and sockets are absent.
import { randomFillSync } from "node:crypto";
import { Errno, RANDOM_GET_MAX_BYTES } from "./abi.js";
import type { HostClock } from "./clock.js";
import { ProcExit } from "./errors.js";

/** The memory operations WASI needs (bounds-checked: a bad pointer is an ABI violation). */
interface WasiMemory {
  view(): Buffer;
  check(ptr: number, len: number, what: string): void;
  u32(ptr: number, v: number, what: string): void;
  u64(ptr: number, v: bigint, what: string): void;
}

/** What the WASI calls draw on. */
export interface WasiDeps {
  memory: () => WasiMemory;
  clock: HostClock;
  random: (out: Uint8Array) => void;
  env: Record<string, string>;
  log: (level: number, message: string) => void;
}

/** Calls Envoy allows while `_initialize`/`_start` runs (others trap as restricted callbacks). */
export const WASI_INIT_ALLOWED: ReadonlySet<string> = new Set(
  [
    "env.emscripten_notify_memory_growth",
    "env.proxy_log",
    ...[
      "fd_write", "args_sizes_get", "args_get", "environ_sizes_get", "environ_get", "clock_time_get", "clock_res_get", "random_get",
      "poll_oneoff", "fd_fdstat_get", "fd_fdstat_set_flags", "fd_advise", "fd_allocate", "fd_datasync", "fd_fdstat_set_rights",
      "fd_filestat_get", "fd_filestat_set_size", "fd_filestat_set_times", "fd_pread", "fd_prestat_dir_name", "fd_prestat_get",
      "fd_pwrite", "fd_readdir", "fd_renumber", "fd_sync", "fd_tell", "path_create_directory", "path_filestat_get",
      "path_filestat_set_times", "path_link", "path_readlink", "path_remove_directory", "path_rename", "path_symlink",
      "path_unlink_file", "sock_accept", "sock_recv", "sock_send", "sock_shutdown",
    ].flatMap((n) => [`wasi_unstable.${n}`, `wasi_snapshot_preview1.${n}`]),
  ],
);

const isStdio = (fd: number): boolean => fd === 1 || fd === 2;

/** Builds the WASI functions over `deps`. */
export function buildWasi(deps: WasiDeps): Record<string, (...args: never[]) => unknown> {
  const m = deps.memory;
  const u = (x: number): number => x >>> 0;

  // Envoy's writev: fd 1 logs at info, fd 2 at error, one trailing newline dropped.
  const writev = (fd: number, iovs: number, iovsLen: number, what: string): number | { written: number } => {
    let level: number;
    if (fd === 1) level = 2;
    else if (fd === 2) level = 4;
    else return Errno.Badf;
    let text = "";
    for (let i = 0; i < iovsLen; i++) {
      const at = iovs + i * 8;
      m().check(at, 8, `${what} iovec ${i}`);
      const buf = m().view().readUInt32LE(at);
      const len = m().view().readUInt32LE(at + 4);
      if (len === 0) continue;
      m().check(buf, len, `${what} iovec ${i} data`);
      text += m().view().toString("utf8", buf, buf + len);
    }
    const written = Buffer.byteLength(text);
    if (written > 0) deps.log(level, text.endsWith("\n") ? text.slice(0, -1) : text);
    return { written };
  };

  const envEntries = Object.entries(deps.env).map(([k, v]) => Buffer.from(`${k}=${v}\0`, "utf8"));

  return {
    fd_write: (fd: number, iovs: number, iovsLen: number, nwrittenPtr: number): number => {
      const r = writev(u(fd), u(iovs), u(iovsLen), "fd_write");
      if (typeof r === "number") return r;
      m().u32(u(nwrittenPtr), r.written, "fd_write nwritten");
      return Errno.Success;
    },
    fd_pwrite: (fd: number, iovs: number, iovsLen: number, _offset: bigint, nwrittenPtr: number): number => {
      if (!isStdio(u(fd))) return Errno.Badf;
      const r = writev(u(fd), u(iovs), u(iovsLen), "fd_pwrite");
      if (typeof r === "number") return r;
      m().u32(u(nwrittenPtr), r.written, "fd_pwrite nwritten");
      return Errno.Success;
    },
    fd_read: (): number => Errno.Nosys,
    fd_seek: (): number => Errno.Success,
    fd_close: (): number => Errno.Success,
    fd_fdstat_get: (fd: number, statPtr: number): number => {
      if (!isStdio(u(fd))) return Errno.Badf;
      m().check(u(statPtr), 24, "fd_fdstat_get");
      const v = m().view();
      v.writeBigUInt64LE(0n, u(statPtr));
      v.writeBigUInt64LE(64n, u(statPtr) + 8); // fs_rights_base = FD_WRITE
      v.writeBigUInt64LE(0n, u(statPtr) + 16);
      return Errno.Success;
    },
    fd_fdstat_set_flags: (): number => Errno.Nosys,
    fd_fdstat_set_rights: (fd: number): number => (isStdio(u(fd)) ? Errno.Success : Errno.Badf),
    fd_advise: (): number => Errno.Success,
    fd_allocate: (fd: number): number => (isStdio(u(fd)) ? Errno.Success : Errno.Badf),
    fd_datasync: (fd: number): number => (isStdio(u(fd)) ? Errno.Success : Errno.Badf),
    fd_filestat_get: (): number => Errno.Badf,
    fd_filestat_set_size: (fd: number): number => (isStdio(u(fd)) ? Errno.Success : Errno.Badf),
    fd_filestat_set_times: (fd: number): number => (isStdio(u(fd)) ? Errno.Success : Errno.Badf),
    fd_pread: (): number => Errno.Nosys,
    fd_prestat_get: (): number => Errno.Badf,
    fd_prestat_dir_name: (): number => Errno.Nosys,
    fd_readdir: (_fd: number, _buf: number, _len: number, _cookie: bigint, nreadPtr: number): number => {
      m().u32(u(nreadPtr), 0, "fd_readdir");
      return Errno.Notdir;
    },
    fd_renumber: (fd: number, to: number): number => (isStdio(u(fd)) && isStdio(u(to)) ? Errno.Notsup : Errno.Badf),
    fd_sync: (fd: number): number => (isStdio(u(fd)) ? Errno.Success : Errno.Badf),
    fd_tell: (fd: number, ptr: number): number => {
      if (!isStdio(u(fd))) return Errno.Badf;
      m().u64(u(ptr), 0n, "fd_tell");
      return Errno.Success;
    },
    environ_sizes_get: (countPtr: number, sizePtr: number): number => {
      m().u32(u(countPtr), envEntries.length, "environ_sizes_get count");
      m().u32(u(sizePtr), envEntries.reduce((n, e) => n + e.length, 0), "environ_sizes_get size");
      return Errno.Success;
    },
    environ_get: (arrayPtr: number, bufPtr: number): number => {
      let a = u(arrayPtr);
      let b = u(bufPtr);
      for (const e of envEntries) {
        m().u32(a, b, "environ_get pointer array");
        m().check(b, e.length, "environ_get buffer");
        e.copy(m().view(), b);
        a += 4;
        b += e.length;
      }
      return Errno.Success;
    },
    args_sizes_get: (argcPtr: number, sizePtr: number): number => {
      m().u32(u(argcPtr), 0, "args_sizes_get argc");
      m().u32(u(sizePtr), 0, "args_sizes_get size");
      return Errno.Success;
    },
    args_get: (): number => Errno.Success,
    clock_time_get: (id: number, _precision: bigint, ptr: number): number => {
      let t: bigint;
      if (u(id) === 0) t = deps.clock.realtimeNs();
      else if (u(id) === 1) t = deps.clock.monotonicNs();
      else return Errno.Notsup;
      m().u64(u(ptr), t, "clock_time_get");
      return Errno.Success;
    },
    clock_res_get: (id: number, ptr: number): number => {
      if (u(id) > 1) return Errno.Notsup;
      m().u64(u(ptr), 1n, "clock_res_get");
      return Errno.Success;
    },
    random_get: (ptr: number, len: number): number => {
      const n = u(len);
      if (n > RANDOM_GET_MAX_BYTES) return Errno.Inval;
      if (n === 0) return Errno.Success;
      m().check(u(ptr), n, "random_get");
      deps.random(m().view().subarray(u(ptr), u(ptr) + n));
      return Errno.Success;
    },
    sched_yield: (): number => Errno.Success,
    poll_oneoff: (_in: number, _out: number, _n: number, neventsPtr: number): number => {
      m().u32(u(neventsPtr), 0, "poll_oneoff nevents");
      return Errno.Success;
    },
    proc_exit: (code: number): never => {
      throw new ProcExit(u(code));
    },
    path_open: (): number => Errno.Noent,
    path_filestat_get: (): number => Errno.Notsup,
    path_create_directory: (): number => Errno.Notsup,
    path_filestat_set_times: (): number => Errno.Notsup,
    path_link: (): number => Errno.Notsup,
    path_readlink: (_fd: number, _p: number, _pl: number, _b: number, _bl: number, ptr: number): number => {
      m().u32(u(ptr), 0, "path_readlink");
      return Errno.Notsup;
    },
    path_remove_directory: (): number => Errno.Notsup,
    path_rename: (): number => Errno.Notsup,
    path_symlink: (): number => Errno.Notsup,
    path_unlink_file: (): number => Errno.Notsup,
    sock_accept: (_fd: number, _flags: number, ptr: number): number => {
      m().u64(u(ptr), 0n, "sock_accept");
      return Errno.Notsup;
    },
    sock_recv: (_fd: number, _d: number, _dl: number, _f: number, ptr0: number, ptr1: number): number => {
      m().u32(u(ptr0), 0, "sock_recv");
      m().check(u(ptr1), 2, "sock_recv flags");
      m().view().writeUInt16LE(0, u(ptr1));
      return Errno.Notsup;
    },
    sock_send: (_fd: number, _d: number, _dl: number, _f: number, ptr: number): number => {
      m().u32(u(ptr), 0, "sock_send");
      return Errno.Notsup;
    },
    sock_shutdown: (): number => Errno.Notsup,
  };
}

/**
 * A CSPRNG source like Envoy's RAND_bytes: the kernel is asked for 64 KiB at a time, because a
 * crypto call per random_get would cost the filter several microseconds that Envoy never charges.
 */
export function pooledRandom(): (out: Uint8Array) => void {
  const pool = Buffer.alloc(64 * 1024);
  let at = pool.length;
  return (out) => {
    if (out.length > pool.length) {
      randomFillSync(out);
      return;
    }
    if (at + out.length > pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    out.set(pool.subarray(at, at + out.length));
    pool.fill(0, at, at + out.length);
    at += out.length;
  };
}
