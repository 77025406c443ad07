// Byte classes and small readers the detectors share (pii.ts and the files it dispatches to), and
// where the last value found begins and ends. Text is UTF-8 in linear memory. Pure logic.

/** Where the value the last successful detector found begins and ends (byte offsets). */
export let foundStart: i32 = 0;
export let foundEnd: i32 = 0;

/** Sets the value found; returns true. */
export function span(start: i32, end: i32): bool {
  foundStart = start;
  foundEnd = end;
  return true;
}

// Character classes, one byte of flags per byte value.
export const DIGIT: u8 = 1;
export const ALPHA: u8 = 2;
export const HEX: u8 = 4;
/** RFC 5322 atext and "." (an e-mail local part). */
export const LOCAL: u8 = 8;
/** Letters, digits, "-" (a domain label). */
export const LABEL: u8 = 16;
/** Letters, digits, "_", "-" (API key bodies, base64url). */
export const KEY_BODY: u8 = 32;
/** Letters, digits and "-._~+/=" (RFC 6750 b64token, base64). */
export const TOKEN68: u8 = 64;
/** Letters, digits, "_", "-", "." (an identifier a secret is assigned to: AWS_SECRET_KEY, db.password, api-key). */
export const IDENT: u8 = 128;
export const WORD: u8 = DIGIT | ALPHA;

const CLASS: usize = memory.data(256);
for (let c = 0; c < 256; c++) {
  let f: u8 = 0;
  const digit = c >= 0x30 && c <= 0x39;
  const alpha = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
  if (digit) f |= DIGIT;
  if (alpha) f |= ALPHA;
  if (digit || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)) f |= HEX;
  if (digit || alpha) f |= LOCAL | LABEL | KEY_BODY | TOKEN68 | IDENT;
  if (c == 0x2d) f |= LOCAL | LABEL | KEY_BODY | TOKEN68 | IDENT; // -
  if (c == 0x5f) f |= LOCAL | KEY_BODY | TOKEN68 | IDENT; // _
  if (c == 0x2e) f |= LOCAL | TOKEN68 | IDENT; // .
  if (c == 0x7e || c == 0x2b || c == 0x2f || c == 0x3d) f |= LOCAL | TOKEN68; // ~ + / =
  // the rest of atext: ! # $ % & ' * ? ^ ` { | }
  if (c == 0x21 || (c >= 0x23 && c <= 0x27) || c == 0x2a || c == 0x3f || c == 0x5e || c == 0x60 || (c >= 0x7b && c <= 0x7d)) f |= LOCAL;
  store<u8>(CLASS + c, f);
}

// @ts-ignore: decorator
@inline export function classOf(c: u8): u8 {
  return load<u8>(CLASS + <usize>c);
}

// @ts-ignore: decorator
@inline export function cls(p: usize, i: i32): u8 {
  return load<u8>(CLASS + <usize>load<u8>(p + i));
}

/** Byte `i` is in [0, n) and of a class in `flags`. */
// @ts-ignore: decorator
@inline export function is(p: usize, i: i32, n: i32, flags: u8): bool {
  return i >= 0 && i < n && (cls(p, i) & flags) != 0;
}

// @ts-ignore: decorator
@inline export function digitAt(p: usize, i: i32): i32 {
  return <i32>load<u8>(p + i) - 0x30;
}

// @ts-ignore: decorator
@inline export function byteAt(p: usize, i: i32, n: i32): u32 {
  return i >= 0 && i < n ? <u32>load<u8>(p + i) : 0;
}

/** No letter or digit at `i` (or the text ends there). */
export function boundary(p: usize, i: i32, n: i32): bool {
  return i >= n || i < 0 || (cls(p, i) & WORD) == 0;
}

export function allDigits(p: usize, s: i32, count: i32): bool {
  for (let k = 0; k < count; k++) if ((cls(p, s + k) & DIGIT) == 0) return false;
  return true;
}

/** The `count` digits at `s` as a number. */
export function digitsValue(p: usize, s: i32, count: i32): i32 {
  let v = 0;
  for (let k = 0; k < count; k++) v = v * 10 + digitAt(p, s + k);
  return v;
}

export function isSpaceByte(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

/** `prefix` (ASCII) at `s`, exactly. */
export function startsWithCase(p: usize, s: i32, n: i32, prefix: string): bool {
  const m = prefix.length;
  if (s + m > n) return false;
  for (let i = 0; i < m; i++) if (<u32>load<u8>(p + s + i) != <u32>prefix.charCodeAt(i)) return false;
  return true;
}

/** `word` (lower-case ASCII) at `s`, in any case. */
export function startsWithWord(p: usize, s: i32, n: i32, word: string): bool {
  const m = word.length;
  if (s + m > n) return false;
  for (let i = 0; i < m; i++) {
    let c = <u32>load<u8>(p + s + i);
    if (c - 0x41 < 26) c += 0x20;
    if (c != <u32>word.charCodeAt(i)) return false;
  }
  return true;
}

/** Upper-case letters or digits, `count` of them from `s`. */
export function upperAlnum(p: usize, s: i32, count: i32): bool {
  for (let k = 0; k < count; k++) {
    const c = <u32>load<u8>(p + s + k);
    if (!(c - 0x30 < 10 || c - 0x41 < 26)) return false;
  }
  return true;
}

/** The end of the run of bytes of a class in `flags` from `s`. */
export function runEnd(p: usize, s: i32, n: i32, flags: u8): i32 {
  let k = s;
  while (k < n && (cls(p, k) & flags) != 0) k++;
  return k;
}

/** The Luhn check over `count` digits at `digits` (one digit value per byte). */
export function luhn(digits: usize, count: i32): bool {
  let sum = 0;
  for (let k = 0; k < count; k++) {
    let d = <i32>load<u8>(digits + count - 1 - k);
    if ((k & 1) == 1) {
      d <<= 1;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 == 0;
}
