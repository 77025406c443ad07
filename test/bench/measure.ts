// What the per-request benchmarks share: the median of rounds, and the built modules.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The path of a module in build/, which must have been built. */
export function wasmPath(name: string): string {
  const p = `${root}/build/${name}`;
  if (!existsSync(p)) throw new Error(`${p} is missing: run \`make build\` first`);
  return p;
}
