// The sender's encoded labels for each ref it has read a definition of, packed into fixed-size
// chunks, each ref's place held in typed arrays indexed by ref (refs are small integers, reused;
// see series-registry.ts). A typed array per ref cost two objects and a backing store of its own,
// about 200 B past the label bytes, for every live series behind every remote-write target. New
// chunks are added, never grown by copying, so what is held past the live bytes is the unused end
// of each chunk and the definitions replaced since the last compaction (at most a quarter).
import { writeSampleV1, type ProtoWriter } from "./protobuf.js";

const CHUNK_BYTES = 256 * 1024;
const INITIAL_REFS = 1024;

/** Encoded labels by ref. */
export class RefLabels {
  private chunks: Uint8Array[] = [];
  /** Bytes used of the last chunk. */
  private tail = 0;
  /** Bytes of all definitions held, and of those replaced since (reclaimed by compacting). */
  private written = 0;
  private dead = 0;
  /** Each ref's chunk (-1: not defined), offset in it and length. */
  private chunkOf = new Int32Array(INITIAL_REFS).fill(-1);
  private offsetOf = new Int32Array(INITIAL_REFS);
  private lengthOf = new Int32Array(INITIAL_REFS);

  /** Defines (or redefines) `ref`'s labels; the same bytes again cost nothing. */
  set(ref: number, labels: Uint8Array): void {
    if (ref >= this.chunkOf.length) this.growRefs(ref);
    const chunk = this.chunkOf[ref]!;
    if (chunk >= 0) {
      if (this.sameAs(ref, labels)) return;
      this.dead += this.lengthOf[ref]!;
      this.chunkOf[ref] = -1;
      if (this.dead * 4 > this.written && this.dead > CHUNK_BYTES) this.compact();
    }
    this.place(ref, labels, 0, labels.length);
  }

  has(ref: number): boolean {
    return ref < this.chunkOf.length && this.chunkOf[ref]! >= 0;
  }

  /** Appends one 1.0 TimeSeries of one sample of `ref` (it must be defined) to `w`. */
  writeSample(w: ProtoWriter, ref: number, timestampMs: number, value: number, stale: boolean): void {
    const at = this.offsetOf[ref]!;
    writeSampleV1(w, this.chunks[this.chunkOf[ref]!]!.subarray(at, at + this.lengthOf[ref]!), timestampMs, value, stale);
  }

  /** Forgets every definition. */
  clear(): void {
    this.chunkOf.fill(-1);
    this.chunks = [];
    this.tail = 0;
    this.written = 0;
    this.dead = 0;
  }

  /** Bytes held: the chunks and the arrays by ref. */
  get bytes(): number {
    let n = 12 * this.chunkOf.length;
    for (const c of this.chunks) n += c.length;
    return n;
  }

  /** Copies bytes [start, end) of `from` as `ref`'s labels, in the last chunk or a new one. */
  private place(ref: number, from: Uint8Array, start: number, end: number): void {
    const n = end - start;
    let last = this.chunks.length - 1;
    if (last < 0 || this.tail + n > this.chunks[last]!.length) {
      // A label set longer than a chunk gets a chunk of its own size.
      this.chunks.push(new Uint8Array(Math.max(CHUNK_BYTES, n)));
      last++;
      this.tail = 0;
    }
    this.chunks[last]!.set(from.subarray(start, end), this.tail);
    this.chunkOf[ref] = last;
    this.offsetOf[ref] = this.tail;
    this.lengthOf[ref] = n;
    this.tail += n;
    this.written += n;
  }

  /** Copies every defined ref's labels into new chunks, leaving the replaced ones behind. */
  private compact(): void {
    const old = this.chunks;
    this.chunks = [];
    this.tail = 0;
    this.written = 0;
    this.dead = 0;
    for (let ref = 0; ref < this.chunkOf.length; ref++) {
      const chunk = this.chunkOf[ref]!;
      if (chunk < 0) continue;
      const at = this.offsetOf[ref]!;
      this.place(ref, old[chunk]!, at, at + this.lengthOf[ref]!);
    }
  }

  private sameAs(ref: number, labels: Uint8Array): boolean {
    const n = this.lengthOf[ref]!;
    if (n !== labels.length) return false;
    const at = this.offsetOf[ref]!;
    return Buffer.compare(this.chunks[this.chunkOf[ref]!]!.subarray(at, at + n), labels) === 0;
  }

  private growRefs(ref: number): void {
    let n = this.chunkOf.length;
    while (n <= ref) n *= 2;
    const grown = (a: Int32Array<ArrayBuffer>, fill: number): Int32Array<ArrayBuffer> => {
      const b = new Int32Array(n).fill(fill);
      b.set(a);
      return b;
    };
    this.chunkOf = grown(this.chunkOf, -1);
    this.offsetOf = grown(this.offsetOf, 0);
    this.lengthOf = grown(this.lengthOf, 0);
  }
}
