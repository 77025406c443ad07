// A growable UTF-8 byte buffer for building JSON text from bytes, with the one escape JSON strings
// need. Used where the span's content attributes are written (content.ts, redact.ts). Pure logic.

const HEX: usize = memory.data<u8>([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);
/** U+FFFD, written in place of bytes that are no UTF-8. */
const REPLACEMENT: usize = memory.data<u8>([0xef, 0xbf, 0xbd]);

export class ByteWriter {
  private buffer: ArrayBuffer;
  length: i32 = 0;

  constructor(capacity: i32) {
    this.buffer = new ArrayBuffer(capacity < 64 ? 64 : capacity);
  }

  /** Room for `n` more bytes; returns where they go. */
  private reserve(n: i32): usize {
    const need = this.length + n;
    let capacity = this.buffer.byteLength;
    if (need > capacity) {
      while (capacity < need) capacity <<= 1;
      const grown = new ArrayBuffer(capacity);
      memory.copy(changetype<usize>(grown), changetype<usize>(this.buffer), this.length);
      this.buffer = grown;
    }
    return changetype<usize>(this.buffer) + this.length;
  }

  bytes(p: usize, n: i32): void {
    memory.copy(this.reserve(n), p, n);
    this.length += n;
  }

  byte(b: u8): void {
    store<u8>(this.reserve(1), b);
    this.length++;
  }

  /** An ASCII string (keys, placeholders: never text from a request). */
  ascii(s: string): void {
    const n = s.length;
    const at = this.reserve(n);
    const from = changetype<usize>(s);
    let i = 0;
    // Sixteen UTF-16 units narrowed to sixteen bytes at a time (exact below 0x80): a span is mostly
    // these keys, and a unit at a time they were the largest share of writing one.
    for (; i + 16 <= n; i += 16) {
      const units = from + (<usize>i << 1);
      v128.store(at + i, i8x16.narrow_i16x8_u(v128.load(units), v128.load(units, 16)));
    }
    for (; i < n; i++) store<u8>(at + i, <u8>load<u16>(from + (<usize>i << 1)));
    this.length += n;
  }

  /** `n` bytes of text as the inside of a JSON string: quote, backslash and controls escaped, bytes that are no UTF-8 replaced. */
  jsonText(p: usize, n: i32): void {
    let run = 0;
    let i = 0;
    while (i < n) {
      // Sixteen bytes at a time: plain ASCII (no control, quote, backslash or non-ASCII byte) is
      // skipped to the first byte that is not.
      if (i + 16 <= n) {
        const v = v128.load(p + i);
        const special = v128.or(v128.or(i8x16.lt_u(v, i8x16.splat(0x20)), i8x16.ge_u(v, i8x16.splat(<i8>0x80))), v128.or(i8x16.eq(v, i8x16.splat(0x22)), i8x16.eq(v, i8x16.splat(0x5c))));
        const bits = i8x16.bitmask(special);
        if (bits == 0) {
          i += 16;
          continue;
        }
        i += <i32>ctz(bits);
      }
      const c = <u32>load<u8>(p + i);
      if (c >= 0x20 && c != 0x22 && c != 0x5c && c < 0x80) {
        i++;
        continue;
      }
      const size = c < 0x80 ? 1 : utf8SequenceLength(p + i, n - i);
      if (size > 1) {
        i += size; // a whole, valid sequence passes as it is
        continue;
      }
      this.bytes(p + run, i - run);
      if (c >= 0x80) {
        this.bytes(REPLACEMENT, 3);
      } else if (c == 0x22 || c == 0x5c) {
        this.byte(0x5c);
        this.byte(<u8>c);
      } else {
        this.ascii("\\u00");
        this.byte(load<u8>(HEX + (c >> 4)));
        this.byte(load<u8>(HEX + (c & 0xf)));
      }
      i++;
      run = i;
    }
    this.bytes(p + run, n - run);
  }

  /** Where the bytes are (until the next write). */
  dataStart(): usize {
    return changetype<usize>(this.buffer);
  }

  /** The bytes as a string (they are valid UTF-8). */
  toString(): string {
    return String.UTF8.decodeUnsafe(changetype<usize>(this.buffer), this.length);
  }
}

/** The length of the valid UTF-8 sequence (2 to 4 bytes, RFC 3629: no overlong form, no surrogate) at `p`, else 0. */
export function utf8SequenceLength(p: usize, available: i32): i32 {
  const c = <u32>load<u8>(p);
  let size = 0;
  let low: u32 = 0x80;
  let high: u32 = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) size = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    size = 3;
    if (c == 0xe0) low = 0xa0;
    else if (c == 0xed) high = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    size = 4;
    if (c == 0xf0) low = 0x90;
    else if (c == 0xf4) high = 0x8f;
  } else return 0;
  if (available < size) return 0;
  const second = <u32>load<u8>(p + 1);
  if (second < low || second > high) return 0;
  for (let k = 2; k < size; k++) if ((<u32>load<u8>(p + k) & 0xc0) != 0x80) return 0;
  return size;
}
