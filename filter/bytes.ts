// Byte-level helpers for the request path: header values are checked and written as UTF-8 bytes in
// linear memory, so a request costs no string decoding or encoding. Pure logic: no host calls.

const HEX_DIGITS: usize = memory.data<u8>([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);
/** The two hex digits of every byte value, as little-endian u16s: one load and one store per byte. */
const HEX_PAIRS: usize = memory.data(512);
for (let b = 0; b < 256; b++) {
  store<u16>(HEX_PAIRS + (<usize>b << 1), <u16>load<u8>(HEX_DIGITS + (b >> 4)) | (<u16>load<u8>(HEX_DIGITS + (b & 0x0f)) << 8));
}

/** Writes `length` bytes from `src` as lower-case hex at `dst` (2 * length bytes). */
export function writeHex(dst: usize, src: usize, length: i32): void {
  let i = 0;
  // Whole 16-byte blocks, then an 8-byte one, in wasm SIMD: ids are 16 and 8 bytes long.
  for (; i + 16 <= length; i += 16) {
    const v = v128.load(src + i);
    v128.store(dst + (<usize>i << 1), hexLow8(v));
    v128.store(dst + (<usize>i << 1) + 16, hexHigh8(v));
  }
  if (i + 8 <= length) {
    v128.store(dst + (<usize>i << 1), hexLow8(v128.load64_zero(src + i)));
    i += 8;
  }
  for (; i < length; i++) {
    store<u16>(dst + (<usize>i << 1), load<u16>(HEX_PAIRS + (<usize>load<u8>(src + i) << 1)));
  }
}

// @ts-ignore: decorator
@inline function hexDigits(nibbles: v128): v128 {
  return i8x16.swizzle(i8x16(0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66), nibbles);
}

/** The hex characters of bytes 0..7 of `v`, high nibble first. */
// @ts-ignore: decorator
@inline function hexLow8(v: v128): v128 {
  const high = hexDigits(i8x16.shr_u(v, 4));
  const low = hexDigits(v128.and(v, i8x16.splat(0x0f)));
  return i8x16.shuffle(high, low, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}

/** The hex characters of bytes 8..15 of `v`, high nibble first. */
// @ts-ignore: decorator
@inline function hexHigh8(v: v128): v128 {
  const high = hexDigits(i8x16.shr_u(v, 4));
  const low = hexDigits(v128.and(v, i8x16.splat(0x0f)));
  return i8x16.shuffle(high, low, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}

export function isLowerHexByte(c: u32): bool {
  return c - 0x30 < 10 || c - 0x61 < 6;
}

/**
 * Whether the `n` bytes at `a` and at `b` are the same. Every byte comparison goes through this
 * one function: memory.compare is inlined where it is written, about 190 bytes of module each time.
 */
export function sameBytes(a: usize, b: usize, n: i32): bool {
  return memory.compare(a, b, n) == 0;
}

export function equalBytes(a: usize, aLength: i32, b: usize, bLength: i32): bool {
  return aLength == bLength && sameBytes(a, b, aLength);
}

export function equalBuffers(a: ArrayBuffer, b: ArrayBuffer): bool {
  return equalBytes(changetype<usize>(a), a.byteLength, changetype<usize>(b), b.byteLength);
}

export function startsWith(ptr: usize, length: i32, prefix: ArrayBuffer): bool {
  const n = prefix.byteLength;
  return length >= n && sameBytes(ptr, changetype<usize>(prefix), n);
}

/** Equal after ASCII lower-casing of `a` (`lowerB` is already lower-case). */
export function equalAsciiLowerCase(a: usize, aLength: i32, lowerB: ArrayBuffer): bool {
  if (aLength != lowerB.byteLength) return false;
  const b = changetype<usize>(lowerB);
  for (let i = 0; i < aLength; i++) {
    let c = <u32>load<u8>(a + i);
    if (c - 0x41 < 26) c += 0x20;
    if (c != <u32>load<u8>(b + i)) return false;
  }
  return true;
}

/** True when every one of `length` bytes at `ptr` is zero. */
export function isAllZero(ptr: usize, length: i32): bool {
  for (let i = 0; i < length; i++) if (load<u8>(ptr + i) != 0) return false;
  return true;
}
