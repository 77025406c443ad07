// Detectors of personal data and secrets in UTF-8 text, for redaction (redact.ts): e-mail
// addresses, phone numbers, payment card numbers (Luhn), IPv4 and IPv6 addresses, national
// identity numbers with their checks (PRC resident ID, ISO 7064 MOD 11-2; Brazil's CPF, two
// mod-11 digits; the US SSN's assignment rules, it has no check digit), and credential-shaped
// strings (bearer and basic credentials, known API key and token prefixes, JWTs, "password=..."
// style assignments). Each looks only at the bytes it is given; one pass finds the next value.
// Pure logic: no host calls.

export const enum Pii { Email, Phone, PaymentCard, IpAddress, NationalId, Credential, Iban, COUNT }

/** Where the value the last successful find() found begins and ends (byte offsets). */
export let foundStart: i32 = 0;
export let foundEnd: i32 = 0;

// Character classes, one byte of flags per byte value.
const DIGIT: u8 = 1;
const ALPHA: u8 = 2;
const HEX: u8 = 4;
/** RFC 5322 atext and "." (an e-mail local part). */
const LOCAL: u8 = 8;
/** Letters, digits, "-" (a domain label). */
const LABEL: u8 = 16;
/** Letters, digits, "_", "-" (API key bodies, base64url). */
const KEY_BODY: u8 = 32;
/** Letters, digits and "-._~+/=" (RFC 6750 b64token, base64). */
const TOKEN68: u8 = 64;
const WORD: u8 = DIGIT | ALPHA;
const CLASS: usize = memory.data(256);
for (let c = 0; c < 256; c++) {
  let f: u8 = 0;
  const digit = c >= 0x30 && c <= 0x39;
  const alpha = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
  if (digit) f |= DIGIT;
  if (alpha) f |= ALPHA;
  if (digit || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)) f |= HEX;
  if (digit || alpha) f |= LOCAL | LABEL | KEY_BODY | TOKEN68;
  if (c == 0x2d) f |= LOCAL | LABEL | KEY_BODY | TOKEN68; // -
  if (c == 0x5f) f |= LOCAL | KEY_BODY | TOKEN68; // _
  if (c == 0x2e || c == 0x7e || c == 0x2b || c == 0x2f || c == 0x3d) f |= LOCAL | TOKEN68; // . ~ + / =
  // the rest of atext: ! # $ % & ' * ? ^ ` { | }
  if (c == 0x21 || (c >= 0x23 && c <= 0x27) || c == 0x2a || c == 0x3f || c == 0x5e || c == 0x60 || (c >= 0x7b && c <= 0x7d)) f |= LOCAL;
  store<u8>(CLASS + c, f);
}

// @ts-ignore: decorator
@inline function cls(p: usize, i: i32): u8 {
  return load<u8>(CLASS + <usize>load<u8>(p + i));
}

// @ts-ignore: decorator
@inline function is(p: usize, i: i32, n: i32, flags: u8): bool {
  return i >= 0 && i < n && (cls(p, i) & flags) != 0;
}

// @ts-ignore: decorator
@inline function digitAt(p: usize, i: i32): i32 {
  return <i32>load<u8>(p + i) - 0x30;
}

function found(start: i32, end: i32, type: Pii): i32 {
  foundStart = start;
  foundEnd = end;
  return type;
}

/**
 * Finds the first value beginning in [from, limit) of the `n` bytes at `p` (it may end past
 * `limit`); `lowest` is where a value may begin at the earliest (text before it has gone out).
 * Returns its Pii type with foundStart/foundEnd set, or -1.
 */
export function find(p: usize, from: i32, n: i32, limit: i32, lowest: i32): i32 {
  const t = scan(p, from, n, lowest);
  return t >= 0 && foundStart < limit ? t : -1;
}

/** The first value found from `from` on (an e-mail address's "@" may lie past where it begins). */
function scan(p: usize, from: i32, n: i32, lowest: i32): i32 {
  let i = from;
  while (i < n) {
    const c = load<u8>(p + i);
    const f = load<u8>(CLASS + <usize>c);
    if ((f & WORD) != 0) {
      // A word: a credential at its start, numbers wherever a run of digits begins in it.
      if ((f & ALPHA) != 0) {
        const t = credentialAt(p, i, n);
        if (t >= 0) return t;
      }
      let k = i;
      while (k < n && (cls(p, k) & WORD) != 0) {
        if ((cls(p, k) & DIGIT) != 0 && (k == 0 || (cls(p, k - 1) & DIGIT) == 0)) {
          const t = numberAt(p, k, n);
          if (t >= 0) return t;
        }
        k++;
      }
      i = k;
      continue;
    }
    if (c == 0x40) {
      if (emailAround(p, i, n, lowest)) return Pii.Email;
    } else if (c == 0x3a) {
      if (ipv6From(p, i, n, lowest)) return Pii.IpAddress;
    } else if (c == 0x2b || c == 0x28) {
      if (!is(p, i - 1, n, DIGIT) && phoneAt(p, i, n)) return Pii.Phone;
    }
    i++;
  }
  return -1;
}

// ---- numbers ----

/** A value that is a number beginning at `s` (no digit before it): an identity number, card, IPv4 address or phone number. */
function numberAt(p: usize, s: i32, n: i32): i32 {
  if (prcResidentIdAt(p, s, n)) return Pii.NationalId;
  if (ssnAt(p, s, n)) return Pii.NationalId;
  if (cpfAt(p, s, n)) return Pii.NationalId;
  if (cardAt(p, s, n)) return Pii.PaymentCard;
  if (ipv4At(p, s, n)) return Pii.IpAddress;
  if (phoneAt(p, s, n)) return Pii.Phone;
  return -1;
}

/** No letter or digit at `i` (or the text ends there). */
function boundary(p: usize, i: i32, n: i32): bool {
  return i >= n || (cls(p, i) & WORD) == 0;
}

function allDigits(p: usize, s: i32, count: i32): bool {
  for (let k = 0; k < count; k++) if ((cls(p, s + k) & DIGIT) == 0) return false;
  return true;
}

// ISO 7064 MOD 11-2 weights of the first 17 digits (2^(17-i) mod 11).
const PRC_WEIGHTS: StaticArray<u8> = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];

/**
 * The 18-character PRC resident identity number (GB 11643-1999): a region code, a birth date
 * YYYYMMDD, a sequence number and an ISO 7064 MOD 11-2 check character (0-9 or X).
 */
function prcResidentIdAt(p: usize, s: i32, n: i32): bool {
  if (s + 18 > n || !allDigits(p, s, 17)) return false;
  const last = load<u8>(p + s + 17);
  const check = last == 0x58 || last == 0x78 ? 10 : <i32>last - 0x30;
  if (check < 0 || check > 10 || !boundary(p, s + 18, n) || digitAt(p, s) == 0) return false;
  const year = digitAt(p, s + 6) * 1000 + digitAt(p, s + 7) * 100 + digitAt(p, s + 8) * 10 + digitAt(p, s + 9);
  const month = digitAt(p, s + 10) * 10 + digitAt(p, s + 11);
  const day = digitAt(p, s + 12) * 10 + digitAt(p, s + 13);
  if (year < 1800 || year > 2099 || month < 1 || month > 12 || day < 1 || day > 31) return false;
  let sum = 0;
  for (let k = 0; k < 17; k++) sum += digitAt(p, s + k) * <i32>unchecked(PRC_WEIGHTS[k]);
  return (12 - (sum % 11)) % 11 == check && span(s, s + 18);
}

/** A US Social Security number written AAA-GG-SSSS, as the SSA assigns them (no area 000, 666 or 9xx, no group 00, no serial 0000). */
function ssnAt(p: usize, s: i32, n: i32): bool {
  if (s + 11 > n || load<u8>(p + s + 3) != 0x2d || load<u8>(p + s + 6) != 0x2d) return false;
  if (!allDigits(p, s, 3) || !allDigits(p, s + 4, 2) || !allDigits(p, s + 7, 4) || !boundary(p, s + 11, n)) return false;
  const area = digitAt(p, s) * 100 + digitAt(p, s + 1) * 10 + digitAt(p, s + 2);
  const group = digitAt(p, s + 4) * 10 + digitAt(p, s + 5);
  const serial = digitAt(p, s + 7) * 1000 + digitAt(p, s + 8) * 100 + digitAt(p, s + 9) * 10 + digitAt(p, s + 10);
  return area != 0 && area != 666 && area < 900 && group != 0 && serial != 0 && span(s, s + 11);
}

const CPF_DIGITS: usize = memory.data(11);

/** Brazil's CPF, 11 digits (or written 000.000.000-00) whose last two are mod-11 check digits. */
function cpfAt(p: usize, s: i32, n: i32): bool {
  let end = 0;
  if (s + 14 <= n && load<u8>(p + s + 3) == 0x2e && load<u8>(p + s + 7) == 0x2e && load<u8>(p + s + 11) == 0x2d &&
      allDigits(p, s, 3) && allDigits(p, s + 4, 3) && allDigits(p, s + 8, 3) && allDigits(p, s + 12, 2)) {
    end = s + 14;
    for (let k = 0, j = 0; k < 14; k++) if (k != 3 && k != 7 && k != 11) store<u8>(CPF_DIGITS + j++, <u8>digitAt(p, s + k));
  } else if (s + 11 <= n && allDigits(p, s, 11)) {
    end = s + 11;
    for (let k = 0; k < 11; k++) store<u8>(CPF_DIGITS + k, <u8>digitAt(p, s + k));
  } else {
    return false;
  }
  if (!boundary(p, end, n)) return false;
  let same = true;
  for (let k = 1; k < 11; k++) if (load<u8>(CPF_DIGITS + k) != load<u8>(CPF_DIGITS)) same = false;
  if (same) return false; // 000.000.000-00 and the like pass the checks but are no CPF
  for (let check = 9; check <= 10; check++) {
    let sum = 0;
    for (let k = 0; k < check; k++) sum += <i32>load<u8>(CPF_DIGITS + k) * (check + 1 - k);
    if (((sum * 10) % 11) % 10 != <i32>load<u8>(CPF_DIGITS + check)) return false;
  }
  return span(s, end);
}

const CARD_DIGITS: usize = memory.data(19);

/**
 * A payment card number: 13 to 19 digits, together or in groups split by one space or one dash
 * each (the same throughout), passing the Luhn check. The longest such number wins.
 */
function cardAt(p: usize, s: i32, n: i32): bool {
  let count = 0;
  let k = s;
  let separator: u8 = 0;
  let bestEnd = -1;
  while (true) {
    // one group of digits
    const groupStart = k;
    while (k < n && (cls(p, k) & DIGIT) != 0) {
      if (count == 19) return bestEnd >= 0 && span(s, bestEnd); // more digits than any card
      store<u8>(CARD_DIGITS + count++, <u8>digitAt(p, k));
      k++;
    }
    if (k == groupStart) break;
    if (count >= 13 && boundary(p, k, n) && luhn(count)) bestEnd = k;
    if (k + 1 >= n) break;
    const c = load<u8>(p + k);
    if (c != 0x20 && c != 0x2d) break;
    if (separator == 0) separator = c;
    else if (c != separator) break;
    if ((cls(p, k + 1) & DIGIT) == 0) break;
    k++;
  }
  return bestEnd >= 0 && span(s, bestEnd);
}

/** Sets the value found; true. */
function span(start: i32, end: i32): bool {
  foundStart = start;
  foundEnd = end;
  return true;
}

/** The Luhn check over the first `count` digits in CARD_DIGITS. */
function luhn(count: i32): bool {
  let sum = 0;
  for (let k = 0; k < count; k++) {
    let d = <i32>load<u8>(CARD_DIGITS + count - 1 - k);
    if ((k & 1) == 1) {
      d <<= 1;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 == 0;
}

/** A dotted-quad IPv4 address (each part 0-255), not part of a longer dotted number or a word (v1.2.3.4). */
function ipv4At(p: usize, s: i32, n: i32): bool {
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
  foundStart = s;
  foundEnd = k;
  return true;
}

/**
 * A phone number: "+" and 8 to 15 digits (E.164), or 10 to 11 digits in groups (national forms
 * such as (415) 555-2671, 020 7946 0958, 06 12 34 56 78), or 11 digits 1[3-9]... (a PRC mobile
 * number). Groups are split by one or two of " -.()"; groups after the first have two digits or
 * more; a date (2024-01-15 ...) is no phone number. The longest such number wins.
 */
function phoneAt(p: usize, s: i32, n: i32): bool {
  // Not the middle of a longer run of numbers (000-12-3456: no phone number begins at 12).
  if (s >= 2 && isPhoneSeparator(load<u8>(p + s - 1)) && (cls(p, s - 2) & DIGIT) != 0) return false;
  let k = s;
  const plus = load<u8>(p + k) == 0x2b;
  if (plus) k++;
  let digits = 0;
  let groups = 0;
  let bestEnd = -1;
  let firstGroup = 0;
  let secondGroup = 0;
  let thirdGroup = 0;
  let dateSeparator: u8 = 0;
  while (k < n && groups < 7) {
    // separators before the group: at most two of " -.()" ("(" only before the first)
    const sepStart = k;
    while (k < n && k - sepStart < 2 && isPhoneSeparator(load<u8>(p + k))) k++;
    if (groups == 0 && plus && k != sepStart) return false; // "+" is followed by a digit
    if (groups > 0 && k == sepStart) break;
    const separator = k > sepStart ? load<u8>(p + k - 1) : <u8>0;
    const groupStart = k;
    while (k < n && (cls(p, k) & DIGIT) != 0) k++;
    const size = k - groupStart;
    if (size == 0 || (groups > 0 && size < 2)) break;
    if (groups == 0) firstGroup = size;
    else if (groups == 1) {
      secondGroup = size;
      dateSeparator = separator;
    } else if (groups == 2) thirdGroup = size;
    digits += size;
    groups++;
    if (digits > 15) break;
    if (!boundary(p, k, n)) break;
    // Dots do not mix with other separators: +1 415 555 2671 10.0.0.1 is a number and an address.
    const next = k + 1 < n ? load<u8>(p + k) : 0;
    if (groups > 1 && isPhoneSeparator(next) && (cls(p, k + 1) & DIGIT) != 0 && (next == 0x2e) != (separator == 0x2e)) break;
    if (plus ? digits >= 8 : (digits == 10 || digits == 11) && groups > 1) bestEnd = k;
    if (!plus && groups == 1 && size == 11 && digitAt(p, groupStart) == 1 && digitAt(p, groupStart + 1) >= 3) bestEnd = k; // PRC mobile
  }
  if (bestEnd < 0) return false;
  // YYYY-MM-DD (or / .) followed by a time is a date, not a phone number.
  if (!plus && firstGroup == 4 && secondGroup == 2 && thirdGroup == 2 && (dateSeparator == 0x2d || dateSeparator == 0x2f || dateSeparator == 0x2e)) return false;
  foundStart = s;
  foundEnd = bestEnd;
  return true;
}

function isPhoneSeparator(c: u8): bool {
  return c == 0x20 || c == 0x2d || c == 0x2e || c == 0x28 || c == 0x29;
}

// ---- addresses ----

/** An e-mail address around the "@" at `at`: a local part of atext, a domain of two labels or more ending in a letter TLD. */
function emailAround(p: usize, at: i32, n: i32, lowest: i32): bool {
  let s = at;
  while (s > lowest && at - s < 64 && (cls(p, s - 1) & LOCAL) != 0) s--;
  while (s < at && load<u8>(p + s) == 0x2e) s++; // a local part does not begin with "."
  if (s == at || load<u8>(p + at - 1) == 0x2e) return false;
  let k = at + 1;
  let labels = 0;
  let tldAlpha = false;
  let end = -1;
  while (k < n) {
    const labelStart = k;
    let alpha = true;
    while (k < n && k - labelStart < 63 && (cls(p, k) & LABEL) != 0) {
      if ((cls(p, k) & ALPHA) == 0) alpha = false;
      k++;
    }
    if (k == labelStart || load<u8>(p + labelStart) == 0x2d || load<u8>(p + k - 1) == 0x2d) break;
    labels++;
    tldAlpha = alpha && k - labelStart >= 2;
    if (labels >= 2 && tldAlpha) end = k;
    if (k + 1 >= n || load<u8>(p + k) != 0x2e || (cls(p, k + 1) & LABEL) == 0) break;
    k++;
  }
  if (end < 0) return false;
  foundStart = s;
  foundEnd = end;
  return true;
}

/**
 * An IPv6 address (RFC 4291 text forms: eight groups of 1-4 hex digits, one "::" for a run of zero
 * groups, an IPv4 tail) whose first colon is at `colon`.
 */
function ipv6From(p: usize, colon: i32, n: i32, lowest: i32): bool {
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
  if (end < n && ((cls(p, end) & WORD) != 0 || (load<u8>(p + end) == 0x3a && is(p, end + 1, n, HEX)))) return false;
  foundStart = s;
  foundEnd = end;
  return true;
}

// ---- credentials ----

// Known secret prefixes (case-sensitive) and the shortest body that follows each (letters,
// digits, "_", "-"): OpenAI and Anthropic (sk-), Stripe, GitHub, GitLab, Slack, Hugging Face, npm, PyPI.
const PREFIXES: StaticArray<string> = [
  "sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
  "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-", "hf_", "npm_", "pypi-",
];
const PREFIX_MIN_BODY: StaticArray<u8> = [20, 16, 16, 16, 16, 30, 30, 30, 30, 30, 30, 20, 10, 10, 10, 10, 10, 10, 30, 36, 50];
/** The shortest prefix plus body ("xoxb-" and 10). */
const MIN_PREFIXED: i32 = 15;
/** The longest secret word or scheme ("client_secret"). */
const MAX_SECRET_WORD: i32 = 13;
/** Words (any case) after which ":" or "=" assigns a secret. */
const SECRET_WORDS: StaticArray<string> = [
  "password", "passwd", "pwd", "private_key", "secret", "client_secret", "token", "api_key", "apikey", "api-key", "access_token", "auth_token",
];
/** Bit c - 0x61 is set for the lower-case letters some prefix or secret word begins with. */
const FIRST_LETTERS: u32 = 0b0000_0000_1000_1110_1010_0000_1101_0111; // x t s r p n h g e c b a

/** A credential at the start of the word at `s`; returns Pii.Credential (foundStart/foundEnd: the secret itself) or -1. */
function credentialAt(p: usize, s: i32, n: i32): i32 {
  const c = load<u8>(p + s);
  const lower = <u32>(c | 0x20) - 0x61;
  if (lower >= 26 || (FIRST_LETTERS & (1 << lower)) == 0) return -1; // "A" (AKIA, AIza) passes as "a"
  // Every form below begins with a run of key characters of a known length (a prefix and its
  // body, a JWT's first part, a scheme or a secret word followed by no key character): measured
  // once, it rules out most words before any comparison.
  let end = s;
  while (end < n && (cls(p, end) & KEY_BODY) != 0) end++;
  const run = end - s;
  // AWS access key ids (AKIA/ASIA + 16 upper-case letters or digits) and Google API keys (AIza + 35).
  if (c == 0x41) {
    if (run >= 20 && (startsWithCase(p, s, n, "AKIA") || startsWithCase(p, s, n, "ASIA")) && upperAlnum(p, s + 4, 16) && boundary(p, s + 20, n)) return found(s, s + 20, Pii.Credential);
    if (run == 39 && startsWithCase(p, s, n, "AIza")) return found(s, s + 39, Pii.Credential);
  }
  if (run >= MIN_PREFIXED) {
    for (let i = 0; i < PREFIXES.length; i++) {
      const prefix = unchecked(PREFIXES[i]);
      if (<u32>prefix.charCodeAt(0) == <u32>c && prefixed(p, s, n, prefix, unchecked(PREFIX_MIN_BODY[i]))) return Pii.Credential;
    }
  }
  // A JSON Web Token: three base64url parts, the first a JSON header ("eyJ" is base64 of '{"').
  if (c == 0x65 && run >= 8 && startsWithCase(p, s, n, "eyJ")) {
    let k = s;
    let parts = 0;
    while (parts < 3) {
      const start = k;
      while (k < n && (cls(p, k) & KEY_BODY) != 0) k++;
      if (k - start < (parts == 2 ? 0 : 8)) break;
      parts++;
      if (parts == 3 || k >= n || load<u8>(p + k) != 0x2e) break;
      k++;
    }
    if (parts == 3) return found(s, k, Pii.Credential);
  }
  // Authorization schemes: the credentials after "Bearer " (RFC 6750) or "Basic " (RFC 7617).
  if (run > MAX_SECRET_WORD) return -1;
  const bearer = run == 6 && startsWithWord(p, s, n, "bearer ");
  if (bearer || (run == 5 && startsWithWord(p, s, n, "basic "))) {
    let k = s + (bearer ? 6 : 5);
    while (k < n && load<u8>(p + k) == 0x20) k++;
    const start = k;
    while (k < n && (cls(p, k) & TOKEN68) != 0) k++;
    return k - start >= (bearer ? 16 : 8) && boundary(p, k, n) ? found(start, k, Pii.Credential) : -1;
  }
  for (let i = 0; i < SECRET_WORDS.length; i++) {
    const word = unchecked(SECRET_WORDS[i]);
    if (word.length == run && <u32>word.charCodeAt(0) == lower + 0x61 && assigned(p, s, n, word)) return Pii.Credential;
  }
  return -1;
}

/** `prefix` at `s` followed by at least `minBody` key characters: the whole is the secret. */
function prefixed(p: usize, s: i32, n: i32, prefix: string, minBody: i32): bool {
  if (!startsWithCase(p, s, n, prefix)) return false;
  let k = s + prefix.length;
  while (k < n && (cls(p, k) & KEY_BODY) != 0) k++;
  if (k - s - prefix.length < minBody) return false;
  foundStart = s;
  foundEnd = k;
  return true;
}

/** "password: hunter2", "api_key=...", "\"token\": \"...\"": `word` at `s`, then the value assigned to it is the secret. */
function assigned(p: usize, s: i32, n: i32, word: string): bool {
  if (!startsWithWord(p, s, n, word) || is(p, s + word.length, n, KEY_BODY)) return false;
  let k = s + word.length;
  // an optional closing quote, spaces, ":" or "=", spaces, an optional opening quote
  if (k < n && (load<u8>(p + k) == 0x22 || load<u8>(p + k) == 0x27)) k++;
  while (k < n && load<u8>(p + k) == 0x20) k++;
  if (k >= n || (load<u8>(p + k) != 0x3a && load<u8>(p + k) != 0x3d)) return false;
  k++;
  while (k < n && load<u8>(p + k) == 0x20) k++;
  if (k < n && (load<u8>(p + k) == 0x22 || load<u8>(p + k) == 0x27)) k++;
  const start = k;
  while (k < n && !endsSecret(load<u8>(p + k))) k++;
  if (k - start < 4) return false;
  foundStart = start;
  foundEnd = k;
  return true;
}

function endsSecret(c: u8): bool {
  return c <= 0x20 || c == 0x22 || c == 0x27 || c == 0x26 || c == 0x2c || c == 0x3b || c == 0x3c || c == 0x3e || c == 0x29 || c == 0x5d || c == 0x7d;
}

function startsWithCase(p: usize, s: i32, n: i32, prefix: string): bool {
  const m = prefix.length;
  if (s + m > n) return false;
  for (let i = 0; i < m; i++) if (<u32>load<u8>(p + s + i) != <u32>prefix.charCodeAt(i)) return false;
  return true;
}

/** `word` (lower-case ASCII) at `s`, in any case. */
function startsWithWord(p: usize, s: i32, n: i32, word: string): bool {
  const m = word.length;
  if (s + m > n) return false;
  for (let i = 0; i < m; i++) {
    let c = <u32>load<u8>(p + s + i);
    if (c - 0x41 < 26) c += 0x20;
    if (c != <u32>word.charCodeAt(i)) return false;
  }
  return true;
}

function upperAlnum(p: usize, s: i32, count: i32): bool {
  for (let k = 0; k < count; k++) {
    const c = <u32>load<u8>(p + s + k);
    if (!(c - 0x30 < 10 || c - 0x41 < 26)) return false;
  }
  return true;
}
