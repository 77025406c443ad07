// What a structure under test keeps, as V8 counts it: the heap's used bytes (v8's used_heap_size)
// plus the array buffers' bytes, after two full collections. Only meaningful in a child process
// started with --expose-gc (measureInChild), where nothing else allocates between two readings.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Heap and array-buffer bytes in use after two full collections (the process must run with --expose-gc). */
export function heldBytes(): number {
  const gc = (globalThis as unknown as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("heldBytes needs node --expose-gc");
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Runs `child` (a .ts file) under `node --expose-gc --import tsx` with `args` and parses the JSON it prints. */
export function measureInChild<T>(child: URL, args: readonly (string | number)[]): T {
  const out = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", fileURLToPath(child), ...args.map(String)], { encoding: "utf8", maxBuffer: 1 << 20 });
  return JSON.parse(out) as T;
}
