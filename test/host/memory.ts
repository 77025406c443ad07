// Linear-memory access for host calls, with the bounds checks Envoy's getMemory/setMemory make.
import { AbiViolation } from "./errors.js";
import type { WasmMemory } from "./wasm-api.js";

/** Linear-memory access with the bounds checks Envoy's getMemory/setMemory make. */
export class Memory {
  private buf: Buffer;

  constructor(private readonly memory: WasmMemory) {
    this.buf = Buffer.from(memory.buffer);
  }

  /**
   * A Buffer over the current memory. memory.grow detaches the old ArrayBuffer (its view drops to
   * length 0), which is cheaper to test than reading memory.buffer on every host call.
   */
  view(): Buffer {
    if (this.buf.length === 0) this.buf = Buffer.from(this.memory.buffer);
    return this.buf;
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
    return this.view().subarray(ptr, ptr + len);
  }

  string(ptr: number, len: number, what: string): string {
    this.check(ptr, len, what);
    return (this.buf as unknown as { utf8Slice(start: number, end: number): string }).utf8Slice(ptr, ptr + len);
  }

  u32(ptr: number, v: number, what: string): void {
    this.check(ptr, 4, what);
    this.view().writeUInt32LE(v >>> 0, ptr);
  }

  u64(ptr: number, v: bigint, what: string): void {
    this.check(ptr, 8, what);
    this.view().writeBigUInt64LE(BigInt.asUintN(64, v), ptr);
  }
}
