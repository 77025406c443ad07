// The proxy-wasm header-map pairs format, little-endian, both directions (Envoy's PairsUtil):
//   u32 count; count x (u32 key length, u32 value length); then each key and each value, each followed by NUL.
import { PAIRS_MAX_BYTES, PAIRS_MAX_COUNT } from "./abi.js";
import { Memory, writeUtf8 } from "./memory.js";

export type Pairs = Array<[string, string]>;

/** Why a pairs buffer from the module was refused; the message names the byte offset. */
export class PairsFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PairsFormatError";
  }
}

/** Size in bytes of the pairs encoding of `pairs`. */
export function pairsByteLength(pairs: ReadonlyArray<readonly [string, string]>): number {
  let size = 4;
  for (const [k, v] of pairs) size += 8 + Memory.byteLength(k) + 1 + Memory.byteLength(v) + 1;
  return size;
}

/** At least the size of the pairs encoding of `pairs` (a UTF-16 unit is at most 3 UTF-8 bytes), without reading a character. */
export function pairsMaxByteLength(pairs: ReadonlyArray<readonly [string, string]>): number {
  let size = 4;
  for (let p = 0; p < pairs.length; p++) size += 10 + 3 * (pairs[p]![0].length + pairs[p]![1].length);
  return size;
}

/**
 * Writes the pairs encoding of `pairs` into `out` at `offset` and returns its size (pairsByteLength);
 * `out` has room for pairsMaxByteLength bytes there.
 */
export function writePairs(pairs: ReadonlyArray<readonly [string, string]>, out: Buffer, offset: number): number {
  writeU32(out, offset, pairs.length);
  let sizes = offset + 4;
  let data = offset + 4 + 8 * pairs.length;
  for (let p = 0; p < pairs.length; p++) {
    const pair = pairs[p]!;
    const kl = writeUtf8(out, data, pair[0]);
    out[data + kl] = 0;
    data += kl + 1;
    const vl = writeUtf8(out, data, pair[1]);
    out[data + vl] = 0;
    data += vl + 1;
    writeU32(out, sizes, kl);
    writeU32(out, sizes + 4, vl);
    sizes += 8;
  }
  return data - offset;
}

// Header maps are read on every request of the benches: no codec call for a short ASCII string,
// no bounds-checked writer for a size (the caller made room).
function writeU32(out: Buffer, at: number, v: number): void {
  out[at] = v;
  out[at + 1] = v >>> 8;
  out[at + 2] = v >>> 16;
  out[at + 3] = v >>> 24;
}

/** Encodes pairs into a new buffer. */
export function encodePairs(pairs: ReadonlyArray<readonly [string, string]>): Buffer {
  const out = Buffer.alloc(pairsByteLength(pairs));
  writePairs(pairs, out, 0);
  return out;
}

/**
 * Decodes a pairs buffer written by the module. An empty buffer is an empty map (Envoy reads it so).
 * Anything Envoy would silently turn into an empty map (truncated, missing NUL, trailing bytes, over
 * 1 MiB or 1024 pairs) throws, because a filter relying on it would lose every header in Envoy.
 */
export function decodePairs(bytes: Uint8Array): Pairs {
  if (bytes.byteLength === 0) return [];
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length > PAIRS_MAX_BYTES) throw new PairsFormatError(`pairs buffer of ${buf.length} bytes exceeds Envoy's limit of ${PAIRS_MAX_BYTES}`);
  if (buf.length < 4) throw new PairsFormatError(`pairs buffer of ${buf.length} bytes is shorter than its u32 count`);
  const count = buf.readUInt32LE(0);
  if (count > PAIRS_MAX_COUNT) throw new PairsFormatError(`pairs count ${count} exceeds Envoy's limit of ${PAIRS_MAX_COUNT}`);
  if (4 + count * 8 > buf.length) throw new PairsFormatError(`pairs count ${count} needs ${4 + count * 8} bytes of sizes, buffer has ${buf.length}`);
  const out: Pairs = [];
  let pos = 4 + count * 8;
  for (let i = 0; i < count; i++) {
    const kl = buf.readUInt32LE(4 + i * 8);
    const vl = buf.readUInt32LE(8 + i * 8);
    if (pos + kl + 1 > buf.length) throw new PairsFormatError(`pair ${i}: key of ${kl} bytes at offset ${pos} overruns the buffer`);
    if (buf[pos + kl] !== 0) throw new PairsFormatError(`pair ${i}: key at offset ${pos} is not followed by NUL`);
    const key = buf.toString("utf8", pos, pos + kl);
    pos += kl + 1;
    if (pos + vl + 1 > buf.length) throw new PairsFormatError(`pair ${i}: value of ${vl} bytes at offset ${pos} overruns the buffer`);
    if (buf[pos + vl] !== 0) throw new PairsFormatError(`pair ${i}: value at offset ${pos} is not followed by NUL`);
    out.push([key, buf.toString("utf8", pos, pos + vl)]);
    pos += vl + 1;
  }
  if (pos !== buf.length) throw new PairsFormatError(`pairs buffer has ${buf.length - pos} trailing bytes after ${count} pairs`);
  return out;
}
