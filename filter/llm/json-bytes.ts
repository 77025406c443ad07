// The JSON scanner's byte classes: where a string's plain run ends, which bytes make a number.
// Shared by the scanner (json-scan.ts) and the event template (event-template.ts), which reads a
// changed value without scanning and must accept exactly what the scanner accepts. Pure logic.

/**
 * The first index in [i, n) holding a quote or a backslash (or, in line mode, CR or LF), else n.
 * Sixteen bytes at a time with wasm SIMD (V8, Envoy's default runtime, supports it): most strings
 * of a stream end within one vector.
 */
export function findStringStop(p: usize, i: i32, n: i32, lineMode: bool): i32 {
  const quote = i8x16.splat(0x22);
  const backslash = i8x16.splat(0x5c);
  const lf = i8x16.splat(0x0a);
  const cr = i8x16.splat(0x0d);
  while (i + 16 <= n) {
    const v = v128.load(p + i);
    let hit = v128.or(i8x16.eq(v, quote), i8x16.eq(v, backslash));
    if (lineMode) hit = v128.or(hit, v128.or(i8x16.eq(v, lf), i8x16.eq(v, cr)));
    const bits = i8x16.bitmask(hit);
    if (bits != 0) return i + <i32>ctz(bits);
    i += 16;
  }
  while (i < n) {
    const c = load<u8>(p + i);
    if (c == 0x22 || c == 0x5c || (lineMode && (c == 0x0a || c == 0x0d))) return i;
    i++;
  }
  return n;
}

/** A number's first byte, as the scanner starts one: a digit or '-'. */
// @ts-ignore: decorator
@inline
export function isNumberStart(c: u32): bool {
  return c - 0x30 < 10 || c == 0x2d;
}

/** A byte the scanner reads as part of a number: a digit or - + . e E (validity is checked apart). */
// @ts-ignore: decorator
@inline
export function isNumberByte(c: u32): bool {
  return c - 0x30 < 10 || c == 0x2d || c == 0x2b || c == 0x2e || c == 0x65 || c == 0x45;
}
