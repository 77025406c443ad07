// Linear-memory access for host calls, with the bounds checks Envoy's getMemory/setMemory make.
// Host calls are the hot path of every request, so the views are cached and short ASCII strings
// (header names and values, property values) are copied byte by byte instead of through a codec.
import { AbiViolation } from "./errors.js";
import type { WasmMemory } from "./wasm-api.js";

interface NodeUtf8 {
  utf8Slice(start: number, end: number): string;
  utf8Write(s: string, offset: number, length: number): number;
}

/** Below this length a string is checked and copied by hand; above it Node's UTF-8 codec is faster. */
const SHORT_STRING = 64;
/** Strings up to this length (names and property paths; not ids or traceparents) are remembered by address, at most DECODED_ENTRIES. */
const CACHED_STRING = 24;
const DECODED_ENTRIES = 4096;

/** Linear-memory access with the bounds checks Envoy's getMemory/setMemory make. */
export class Memory {
  private buf: Buffer;
  private dv: DataView;
  /** Strings decoded at an address, with the bytes they came from (see string()). */
  private readonly decoded = new Map<number, { bytes: Uint8Array; text: string }>();

  constructor(private readonly memory: WasmMemory) {
    this.buf = Buffer.from(memory.buffer);
    this.dv = new DataView(memory.buffer);
  }

  /**
   * A Buffer over the current memory. memory.grow detaches the old ArrayBuffer (its view drops to
   * length 0), which is cheaper to test than reading memory.buffer on every host call.
   */
  view(): Buffer {
    if (this.buf.length === 0) this.refresh();
    return this.buf;
  }

  private refresh(): void {
    this.buf = Buffer.from(this.memory.buffer);
    this.dv = new DataView(this.memory.buffer);
  }

  get byteLength(): number {
    return this.view().length;
  }

  check(ptr: number, len: number, what: string): void {
    const size = this.view().length;
    if (ptr + len > size) throw new AbiViolation(`${what}: pointer ${ptr} + length ${len} is outside linear memory (${size} bytes)`);
  }

  bytes(ptr: number, len: number, what: string): Buffer {
    this.check(ptr, len, what);
    return this.buf.subarray(ptr, ptr + len);
  }

  string(ptr: number, len: number, what: string): string {
    this.check(ptr, len, what);
    if (len > CACHED_STRING) return (this.buf as unknown as NodeUtf8).utf8Slice(ptr, ptr + len);
    // Names and paths a module passes live at fixed addresses (its static data): decode them once
    // and, on later calls, only compare the bytes. Envoy's C++ host reads them in place.
    const buf = this.buf;
    const hit = this.decoded.get(ptr);
    if (hit !== undefined && hit.bytes.length === len) {
      const bytes = hit.bytes;
      let same = true;
      for (let i = 0; i < len; i++) {
        if (bytes[i] !== buf[ptr + i]) {
          same = false;
          break;
        }
      }
      if (same) return hit.text;
    }
    const text = (buf as unknown as NodeUtf8).utf8Slice(ptr, ptr + len);
    if (this.decoded.size >= DECODED_ENTRIES) this.decoded.clear();
    this.decoded.set(ptr, { bytes: Uint8Array.prototype.slice.call(buf, ptr, ptr + len), text });
    return text;
  }

  /** UTF-8 byte length of `s`. */
  static byteLength(s: string): number {
    if (s.length <= SHORT_STRING) {
      let ascii = true;
      for (let i = 0; i < s.length; i++) {
        if (s.charCodeAt(i) > 0x7f) {
          ascii = false;
          break;
        }
      }
      if (ascii) return s.length;
    }
    return Buffer.byteLength(s, "utf8");
  }

  /** Writes `s` as UTF-8 at `ptr`; `size` is its byte length (from byteLength). */
  writeString(ptr: number, s: string, size: number, what: string): void {
    this.check(ptr, size, what);
    writeUtf8(this.buf, ptr, s, size);
  }

  u32(ptr: number, v: number, what: string): void {
    this.check(ptr, 4, what);
    this.dv.setUint32(ptr, v >>> 0, true);
  }

  u64(ptr: number, v: bigint, what: string): void {
    this.check(ptr, 8, what);
    this.dv.setBigUint64(ptr, BigInt.asUintN(64, v), true);
  }
}

/**
 * Writes `s` as UTF-8 into `out` at `at`, at most `max` bytes (the caller made room), and returns the
 * bytes written: a short ASCII string byte by byte, anything else through Node's codec.
 */
export function writeUtf8(out: Buffer, at: number, s: string, max = out.length - at): number {
  const n = s.length;
  if (n <= SHORT_STRING && n <= max) {
    let i = 0;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) break;
      out[at + i++] = c;
    }
    if (i === n) return n;
  }
  return (out as unknown as NodeUtf8).utf8Write(s, at, max);
}
