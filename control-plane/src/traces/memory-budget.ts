// The receiver's default byte budget: a fraction of what the process may use. The limit is the
// smaller of the container's memory limit (cgroup v2 memory.max, or v1 memory.limit_in_bytes;
// "max" or a page-counter maximum mean none) and V8's heap limit, which bounds every JS string and
// object the store holds whatever the cgroup says.
import { readFileSync } from "node:fs";
import { getHeapStatistics } from "node:v8";

/** Where the cgroup limits are read (v2 first); tests pass their own files. */
export const cgroupLimitFiles = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"];

/** The container's memory limit in bytes, or undefined when there is none or none can be read. */
export function cgroupMemoryLimit(files: readonly string[] = cgroupLimitFiles): number | undefined {
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, "utf8").trim();
    } catch {
      continue;
    }
    if (text === "max") return undefined;
    const bytes = Number(text);
    // cgroup v1 reports "no limit" as the page counter's maximum (about 2^63, page-aligned).
    if (Number.isSafeInteger(bytes) && bytes > 0 && bytes < 2 ** 52) return bytes;
    return undefined;
  }
  return undefined;
}

/** What the process may use: min(cgroup limit, V8 heap limit) (see the file comment). */
export function processMemoryLimit(cgroupLimit: number | undefined = cgroupMemoryLimit(), heapLimit: number = getHeapStatistics().heap_size_limit): number {
  return cgroupLimit === undefined ? heapLimit : Math.min(cgroupLimit, heapLimit);
}

/** The budget for `maxBytes: 0`: `fraction` of min(cgroup limit, V8 heap limit), at least 1 MiB. */
export function defaultBudgetBytes(fraction: number, cgroupLimit: number | undefined = cgroupMemoryLimit(), heapLimit: number = getHeapStatistics().heap_size_limit): number {
  return Math.max(1 << 20, Math.floor(processMemoryLimit(cgroupLimit, heapLimit) * fraction));
}
