// What a structure under test keeps, as V8 counts it: the heap's used bytes (v8's used_heap_size)
// plus the array buffers' bytes, after two full collections. Only meaningful in a child process
// started with --expose-gc (measureInChild), where nothing else allocates between two readings.
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
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

/**
 * Runs `child` (measureInChild) that feeds scrapes whose texts each carry `fillerBytes` of comment and
 * prints `{ perUnit }`, the bytes held per `unit` (pod, source): more than nothing (what is rightly
 * kept, `holds`), and far less than one text, which any view of it kept anywhere would keep whole.
 */
export function assertKeepsNoScrapeText(t: TestContext, child: URL, args: readonly (string | number)[], fillerBytes: number, unit: string, holds: string): void {
  const { perUnit } = measureInChild<{ perUnit: number }>(child, args);
  t.diagnostic(`held per ${unit}: ${Math.round(perUnit)} B`);
  assert.ok(perUnit > 0, holds);
  assert.ok(perUnit < fillerBytes / 8, `${Math.round(perUnit)} B held per ${unit}: a scrape's text is kept`);
}
