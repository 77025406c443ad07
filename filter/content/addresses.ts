// Detectors of addresses: e-mail addresses (RFC 5322 atext and quoted local parts, sub-addresses,
// RFC 6531 internationalised local parts, IDNA domains in Unicode or punycode) and IP addresses
// (IPv4 dotted quads, RFC 4291 IPv6 text forms). Pure logic.
// Formats: RFC 5322 3.2.3/3.4.1 (atext, quoted-string local parts), RFC 6531 3.3 (UTF-8 local parts
// and domains), RFC 5321 4.5.3.1 (64-octet local part), RFC 3490 3.1 (IDNA labels; "xn--" punycode,
// RFC 3492), Presidio's email recognizer as the reference of what PII engines match
// (microsoft/presidio presidio-analyzer/presidio_analyzer/predefined_recognizers/generic/email_recognizer.py at 0aa9f8e).
import { ALPHA, byteAt, cls, HEX, is, LABEL, LOCAL, span, WORD, foundEnd, digitAt, DIGIT, boundary } from "./chars";

// ---- code points ----

/** The length of the code point decoded by the last codePointAt / the start of the last codePointBefore. */
let cpLength: i32 = 0;
let cpStart: i32 = 0;

/** The code point of the UTF-8 sequence at `i` (cpLength set), or 0xfffd when it is none. */
function codePointAt(p: usize, i: i32, n: i32): u32 {
  const c = <u32>load<u8>(p + i);
  let size = 0;
  let cp: u32 = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    size = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    size = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    size = 4;
    cp = c & 0x07;
  }
  if (size == 0 || i + size > n) {
    cpLength = 1;
    return 0xfffd;
  }
  for (let k = 1; k < size; k++) {
    const b = <u32>load<u8>(p + i + k);
    if ((b & 0xc0) != 0x80) {
      cpLength = 1;
      return 0xfffd;
    }
    cp = (cp << 6) | (b & 0x3f);
  }
  cpLength = size;
  return cp;
}

/** The code point that ends just before `i` (cpStart set), not looking before `lowest`. */
function codePointBefore(p: usize, i: i32, lowest: i32): u32 {
  let s = i - 1;
  while (s > lowest && i - s < 4 && (load<u8>(p + s) & 0xc0) == 0x80) s--;
  cpStart = s;
  const cp = codePointAt(p, s, i);
  return s + cpLength == i ? cp : 0xfffd;
}

/**
 * A non-ASCII code point that may be part of a word (a name, an address): letters and marks of
 * every script; not the punctuation, symbols, spaces and specials that end words (Latin-1's
 * U+0080-U+00BF, the General Punctuation to Miscellaneous Symbols blocks, CJK punctuation and the
 * full-width forms of ASCII punctuation, emoji).
 */
export function isWordCodePoint(cp: u32): bool {
  if (cp <= 0xbf || cp == 0xd7 || cp == 0xf7) return false;
  if (cp >= 0x2000 && cp <= 0x2bff) return false;
  if (cp >= 0x3000 && cp <= 0x303f) return false;
  if (cp >= 0xfe10 && cp <= 0xfe6f) return false;
  if (cp >= 0xff00 && cp <= 0xff65) {
    // full-width forms: digits and letters are word characters, punctuation is not
    return (cp >= 0xff10 && cp <= 0xff19) || (cp >= 0xff21 && cp <= 0xff3a) || (cp >= 0xff41 && cp <= 0xff5a);
  }
  if (cp >= 0xfff0 && cp <= 0xffff) return false;
  return cp < 0x1f000;
}

/** CJK ideographs, kana and Hangul: scripts written without spaces, so a run of them next to ASCII is no one word. */
function isCjk(cp: u32): bool {
  return (cp >= 0x2e80 && cp <= 0x9fff) || (cp >= 0xac00 && cp <= 0xd7af) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xff66 && cp <= 0xff9f) || (cp >= 0x20000 && cp <= 0x3ffff);
}

// ---- e-mail addresses ----

/** Longest local part (RFC 5321 4.5.3.1.1: 64 octets). */
const MAX_LOCAL: i32 = 64;
/** Longest domain label (RFC 1035: 63 octets). */
const MAX_LABEL: i32 = 63;

/**
 * An e-mail address around the "@" at `at`: a local part (atext with dots, UTF-8 letters, or a
 * quoted string) and a domain of two labels or more (ASCII, Unicode or punycode) ending in a
 * top-level domain of two letters or more, or a punycode or Unicode one.
 */
export function emailAround(p: usize, at: i32, n: i32, lowest: i32): bool {
  let s = at;
  if (at - 1 >= lowest && load<u8>(p + at - 1) == 0x22) {
    // "quoted local part"@domain: back to the opening quote (no line break; an escaped quote is part of it)
    s = at - 2;
    while (s >= lowest && at - s <= MAX_LOCAL + 2) {
      const c = load<u8>(p + s);
      if (c == 0x0a || c == 0x0d) return false;
      if (c == 0x22 && !(s > lowest && load<u8>(p + s - 1) == 0x5c)) break;
      s--;
    }
    if (s < lowest || at - s > MAX_LOCAL + 2 || at - s < 3) return false;
  } else {
    // ASCII atext and UTF-8 letters; a run of CJK next to ASCII is not taken across (邮箱ana@ is ana@).
    let script = 0; // 1: Latin or ASCII seen, 2: CJK seen
    while (s > lowest && at - s < MAX_LOCAL) {
      const b = <u32>load<u8>(p + s - 1);
      if (b < 0x80) {
        if ((cls(p, s - 1) & LOCAL) == 0) break;
        if ((cls(p, s - 1) & WORD) != 0) {
          if (script == 2) break;
          script = 1;
        }
        s--;
        continue;
      }
      const cp = codePointBefore(p, s, lowest);
      if (!isWordCodePoint(cp)) break;
      const cjk = isCjk(cp);
      if ((cjk && script == 1) || (!cjk && script == 2)) break;
      script = cjk ? 2 : 1;
      s = cpStart;
    }
    while (s < at && load<u8>(p + s) == 0x2e) s++; // a local part does not begin with "."
    if (s == at || load<u8>(p + at - 1) == 0x2e) return false;
  }
  const end = domainEnd(p, at + 1, n);
  return end > 0 && span(s, end);
}

/** Where a domain of two labels or more that begins at `k` ends, or -1 (its last label a TLD). */
function domainEnd(p: usize, k: i32, n: i32): i32 {
  let labels = 0;
  let end = -1;
  while (k < n) {
    const labelStart = k;
    let letters = true;
    let ascii = true;
    while (k < n && k - labelStart < MAX_LABEL) {
      const b = <u32>load<u8>(p + k);
      if (b < 0x80) {
        if ((cls(p, k) & LABEL) == 0) break;
        if ((cls(p, k) & ALPHA) == 0) letters = false;
        k++;
      } else {
        const cp = codePointAt(p, k, n);
        if (!isWordCodePoint(cp)) break;
        ascii = false;
        k += cpLength;
      }
    }
    if (k == labelStart || load<u8>(p + labelStart) == 0x2d || load<u8>(p + k - 1) == 0x2d) break;
    labels++;
    const size = k - labelStart;
    // A top-level domain: letters (2+), punycode (xn--), or Unicode (an IDN TLD such as 广告 or рф).
    const tld = ascii ? (letters && size >= 2) || (size >= 5 && isPunycode(p, labelStart)) : true;
    if (labels >= 2 && tld) end = k;
    if (k + 1 >= n || load<u8>(p + k) != 0x2e) break;
    const next = <u32>load<u8>(p + k + 1);
    if (next < 0x80 ? (cls(p, k + 1) & LABEL) == 0 : !isWordCodePoint(codePointAt(p, k + 1, n))) break;
    k++;
  }
  return end;
}

function isPunycode(p: usize, s: i32): bool {
  return (load<u8>(p + s) | 0x20) == 0x78 && (load<u8>(p + s + 1) | 0x20) == 0x6e && load<u8>(p + s + 2) == 0x2d && load<u8>(p + s + 3) == 0x2d;
}

/** A byte a local part may hold: atext, ".", or part of a UTF-8 sequence (checked when the "@" is found). */
// @ts-ignore: decorator
@inline export function isLocalByte(p: usize, i: i32): bool {
  return load<u8>(p + i) >= 0x80 || (cls(p, i) & LOCAL) != 0;
}

// ---- IP addresses ----

/** A dotted-quad IPv4 address (each part 0-255), not part of a longer dotted number or a word (v1.2.3.4). */
export function ipv4At(p: usize, s: i32, n: i32): bool {
  if (s > 0 && (load<u8>(p + s - 1) == 0x2e || (cls(p, s - 1) & WORD) != 0)) return false;
  let k = s;
  for (let part = 0; part < 4; part++) {
    if (part > 0) {
      if (k >= n || load<u8>(p + k) != 0x2e) return false;
      k++;
    }
    let value = 0;
    const begin = k;
    while (k < n && k - begin < 4 && (cls(p, k) & DIGIT) != 0) value = value * 10 + digitAt(p, k++);
    if (k == begin || k - begin > 3 || value > 255) return false;
  }
  if (!boundary(p, k, n) || (k + 1 < n && load<u8>(p + k) == 0x2e && (cls(p, k + 1) & DIGIT) != 0)) return false;
  return span(s, k);
}

/**
 * An IPv6 address (RFC 4291 2.2 text forms: eight groups of 1-4 hex digits, one "::" for a run of
 * zero groups, an IPv4 tail) whose first colon is at `colon`.
 */
export function ipv6From(p: usize, colon: i32, n: i32, lowest: i32): bool {
  let s = colon;
  while (s > lowest && colon - s < 4 && (cls(p, s - 1) & HEX) != 0) s--;
  // It begins at a boundary: not inside a word, and not after another colon.
  if (s > 0 && ((cls(p, s - 1) & WORD) != 0 || load<u8>(p + s - 1) == 0x3a || load<u8>(p + s - 1) == 0x2e)) return false;
  let k = s;
  let groups = 0;
  let compressed = false;
  let end = -1;
  if (k + 1 < n && load<u8>(p + k) == 0x3a) {
    if (load<u8>(p + k + 1) != 0x3a) return false;
    compressed = true;
    k += 2;
    end = k;
  }
  while (k < n && groups < 8) {
    const groupStart = k;
    while (k < n && k - groupStart < 5 && (cls(p, k) & HEX) != 0) k++;
    const size = k - groupStart;
    if (size == 0) break;
    if (k < n && load<u8>(p + k) == 0x2e && groups <= 6 && ipv4At(p, groupStart, n)) {
      // an IPv4 tail counts as two groups
      groups += 2;
      k = foundEnd;
      end = k;
      break;
    }
    if (size > 4) return false;
    groups++;
    end = k;
    if (k + 1 < n && load<u8>(p + k) == 0x3a && load<u8>(p + k + 1) == 0x3a) {
      if (compressed) return false;
      compressed = true;
      k += 2;
      end = k;
      continue;
    }
    if (k + 1 < n && load<u8>(p + k) == 0x3a && (cls(p, k + 1) & HEX) != 0) {
      k++;
      continue;
    }
    break;
  }
  if (groups == 0 || (compressed ? groups > 7 : groups != 8)) return false;
  // Not followed by more of an address (a letter or digit, or a colon and a hex digit): a colon ending a phrase is fine.
  if (end < n && ((cls(p, end) & WORD) != 0 || (byteAt(p, end, n) == 0x3a && is(p, end + 1, n, HEX)))) return false;
  return span(s, end);
}
