// Detectors of numbers that identify a person: national identity numbers with their checks, payment
// card numbers (Luhn) and phone numbers in international and national forms, bare, grouped, dotted
// or bracketed as people type them. Each starts at the first digit of a run (no digit before it).
// Pure logic. Formats, read as facts from:
// - PRC resident ID: GB 11643-1999 (region, birth date, sequence, ISO 7064 MOD 11-2 check character).
// - US SSN: the SSA's assignment rules (no area 000, 666 or 9xx, no group 00, no serial 0000);
//   separators and context words as microsoft/presidio us_ssn_recognizer.py (0aa9f8e) matches them.
// - Brazil CPF: two mod-11 check digits, written 000.000.000-00.
// - India Aadhaar: 12 digits, first 2-9, Verhoeff check, grouped 4-4-4 (presidio in_aadhaar_recognizer.py, 0aa9f8e).
// - Spain DNI / NIE: 8 digits (NIE: X, Y or Z and 7) and the letter of the number mod 23
//   (presidio es_nif_recognizer.py and es_nie_recognizer.py, 0aa9f8e).
// - Canada SIN: 9 digits, Luhn, grouped 3-3-3 (presidio ca_sin_recognizer.py, 0aa9f8e).
// - Payment cards: 13 to 19 digits, Luhn (ISO/IEC 7812-1), grouped by spaces, dashes or dots.
// - Phones: E.164 (at most 15 digits with the country code); "00" as the international prefix and
//   "0" as the national trunk prefix of most plans, NANP's [2-9]XX [2-9]XX XXXX, China's mobile
//   1[3-9] and eleven digits (google/libphonenumber resources/PhoneNumberMetadata.xml at 0009e8cd:
//   internationalPrefix, nationalPrefix, generalDesc and possibleLengths per territory).
import { ALPHA, allDigits, boundary, cls, DIGIT, digitAt, is, luhn, span, startsWithWord } from "./chars";

// ISO 7064 MOD 11-2 weights of the first 17 digits (2^(17-i) mod 11).
const PRC_WEIGHTS: StaticArray<u8> = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const DIGITS: usize = memory.data(24);

/** Copies the digits of `count` bytes at `s` into DIGITS, skipping the separator bytes at the offsets in `skip` (a bit mask); returns how many. */
function collect(p: usize, s: i32, count: i32, skip: u32): i32 {
  let j = 0;
  for (let k = 0; k < count; k++) if ((skip & (1 << k)) == 0) store<u8>(DIGITS + j++, <u8>digitAt(p, s + k));
  return j;
}

/** `sep` (one byte) at every offset of `at` from `s`, the same byte each time, one of " -." (or `allowed`). */
function separatorsAt(p: usize, s: i32, n: i32, offsets: StaticArray<u8>, allowed: string): bool {
  const first = <u32>load<u8>(p + s + <i32>unchecked(offsets[0]));
  let ok = false;
  for (let i = 0; i < allowed.length; i++) if (<u32>allowed.charCodeAt(i) == first) ok = true;
  if (!ok) return false;
  for (let i = 1; i < offsets.length; i++) if (<u32>load<u8>(p + s + <i32>unchecked(offsets[i])) != first) return false;
  return true;
}

const PRC_GROUPED_SEPARATORS: StaticArray<u8> = [6, 15];

/**
 * The 18-character PRC resident identity number: 17 digits and a check character (0-9 or X),
 * together or grouped 6-8-4 by spaces or dashes (110105 19491231 002X).
 */
export function prcResidentIdAt(p: usize, s: i32, n: i32): bool {
  let end = s + 18;
  let skip: u32 = 0;
  if (s + 18 <= n && allDigits(p, s, 17)) {
    // together
  } else if (s + 20 <= n && allDigits(p, s, 6) && allDigits(p, s + 7, 8) && allDigits(p, s + 16, 3) && separatorsAt(p, s, n, PRC_GROUPED_SEPARATORS, " -")) {
    end = s + 20;
    skip = (1 << 6) | (1 << 15);
  } else {
    return false;
  }
  const last = load<u8>(p + end - 1);
  const check = last == 0x58 || last == 0x78 ? 10 : <i32>last - 0x30;
  if (check < 0 || check > 10 || !boundary(p, end, n) || digitAt(p, s) == 0) return false;
  collect(p, s, end - s - 1, skip);
  const year = <i32>load<u8>(DIGITS + 6) * 1000 + <i32>load<u8>(DIGITS + 7) * 100 + <i32>load<u8>(DIGITS + 8) * 10 + <i32>load<u8>(DIGITS + 9);
  const month = <i32>load<u8>(DIGITS + 10) * 10 + <i32>load<u8>(DIGITS + 11);
  const day = <i32>load<u8>(DIGITS + 12) * 10 + <i32>load<u8>(DIGITS + 13);
  if (year < 1800 || year > 2099 || month < 1 || month > 12 || day < 1 || day > 31) return false;
  let sum = 0;
  for (let k = 0; k < 17; k++) sum += <i32>load<u8>(DIGITS + k) * <i32>unchecked(PRC_WEIGHTS[k]);
  return (12 - (sum % 11)) % 11 == check && span(s, end);
}

const SSN_SEPARATORS: StaticArray<u8> = [3, 6];
/** How far before a bare nine-digit number a context word makes it an SSN. */
const SSN_CONTEXT_BYTES: i32 = 32;

/**
 * A US Social Security number as the SSA assigns them, written AAA-GG-SSSS (or with spaces or
 * dots), or nine bare digits after "SSN" or "social security" (a bare number alone is too often
 * something else).
 */
export function ssnAt(p: usize, s: i32, n: i32): bool {
  let end = s + 11;
  if (s + 11 <= n && allDigits(p, s, 3) && allDigits(p, s + 4, 2) && allDigits(p, s + 7, 4) && separatorsAt(p, s, n, SSN_SEPARATORS, "- .")) {
    collect(p, s, 11, (1 << 3) | (1 << 6));
  } else if (s + 9 <= n && allDigits(p, s, 9) && ssnContext(p, s)) {
    end = s + 9;
    collect(p, s, 9, 0);
  } else {
    return false;
  }
  if (!boundary(p, end, n)) return false;
  const area = <i32>load<u8>(DIGITS) * 100 + <i32>load<u8>(DIGITS + 1) * 10 + <i32>load<u8>(DIGITS + 2);
  const group = <i32>load<u8>(DIGITS + 3) * 10 + <i32>load<u8>(DIGITS + 4);
  const serial = <i32>load<u8>(DIGITS + 5) * 1000 + <i32>load<u8>(DIGITS + 6) * 100 + <i32>load<u8>(DIGITS + 7) * 10 + <i32>load<u8>(DIGITS + 8);
  return area != 0 && area != 666 && area < 900 && group != 0 && serial != 0 && span(s, end);
}

function ssnContext(p: usize, s: i32): bool {
  const from = s > SSN_CONTEXT_BYTES ? s - SSN_CONTEXT_BYTES : 0;
  for (let i = from; i + 3 <= s; i++) {
    if (startsWithWord(p, i, s, "ssn") || startsWithWord(p, i, s, "social security")) return true;
  }
  return false;
}

/** Brazil's CPF, 11 digits (or written 000.000.000-00) whose last two are mod-11 check digits. */
export function cpfAt(p: usize, s: i32, n: i32): bool {
  let end = 0;
  if (s + 14 <= n && load<u8>(p + s + 3) == 0x2e && load<u8>(p + s + 7) == 0x2e && load<u8>(p + s + 11) == 0x2d &&
      allDigits(p, s, 3) && allDigits(p, s + 4, 3) && allDigits(p, s + 8, 3) && allDigits(p, s + 12, 2)) {
    end = s + 14;
    collect(p, s, 14, (1 << 3) | (1 << 7) | (1 << 11));
  } else if (s + 11 <= n && allDigits(p, s, 11)) {
    end = s + 11;
    collect(p, s, 11, 0);
  } else {
    return false;
  }
  if (!boundary(p, end, n)) return false;
  let same = true;
  for (let k = 1; k < 11; k++) if (load<u8>(DIGITS + k) != load<u8>(DIGITS)) same = false;
  if (same) return false; // 000.000.000-00 and the like pass the checks but are no CPF
  for (let check = 9; check <= 10; check++) {
    let sum = 0;
    for (let k = 0; k < check; k++) sum += <i32>load<u8>(DIGITS + k) * (check + 1 - k);
    if (((sum * 10) % 11) % 10 != <i32>load<u8>(DIGITS + check)) return false;
  }
  return span(s, end);
}

// Verhoeff's dihedral group D5 tables: multiplication, permutation, inverse.
const VERHOEFF_D: StaticArray<u8> = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 0, 6, 7, 8, 9, 5, 2, 3, 4, 0, 1, 7, 8, 9, 5, 6, 3, 4, 0, 1, 2, 8, 9, 5, 6, 7,
  4, 0, 1, 2, 3, 9, 5, 6, 7, 8, 5, 9, 8, 7, 6, 0, 4, 3, 2, 1, 6, 5, 9, 8, 7, 1, 0, 4, 3, 2, 7, 6, 5, 9, 8, 2, 1, 0, 4, 3,
  8, 7, 6, 5, 9, 3, 2, 1, 0, 4, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
];
const VERHOEFF_P: StaticArray<u8> = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 5, 7, 6, 2, 8, 3, 0, 9, 4, 5, 8, 0, 3, 7, 9, 6, 1, 4, 2, 8, 9, 1, 6, 0, 4, 3, 5, 2, 7,
  9, 4, 5, 3, 1, 2, 6, 8, 7, 0, 4, 2, 8, 6, 5, 7, 3, 9, 0, 1, 2, 7, 9, 3, 8, 0, 6, 4, 1, 5, 7, 0, 4, 6, 9, 1, 3, 2, 5, 8,
];

const AADHAAR_SEPARATORS: StaticArray<u8> = [4, 9];

/** An Aadhaar number: 12 digits, the first 2-9, passing Verhoeff's check; grouped 4-4-4, or bare after "Aadhaar"/"UIDAI". */
export function aadhaarAt(p: usize, s: i32, n: i32): bool {
  let end = s + 14;
  if (s + 14 <= n && allDigits(p, s, 4) && allDigits(p, s + 5, 4) && allDigits(p, s + 10, 4) && separatorsAt(p, s, n, AADHAAR_SEPARATORS, " -")) {
    collect(p, s, 14, (1 << 4) | (1 << 9));
  } else if (s + 12 <= n && allDigits(p, s, 12) && aadhaarContext(p, s)) {
    end = s + 12;
    collect(p, s, 12, 0);
  } else {
    return false;
  }
  if (!boundary(p, end, n) || load<u8>(DIGITS) < 2) return false;
  let c = 0;
  for (let k = 0; k < 12; k++) {
    const d = <i32>load<u8>(DIGITS + 11 - k);
    c = <i32>unchecked(VERHOEFF_D[c * 10 + <i32>unchecked(VERHOEFF_P[(k % 8) * 10 + d])]);
  }
  return c == 0 && span(s, end);
}

function aadhaarContext(p: usize, s: i32): bool {
  const from = s > SSN_CONTEXT_BYTES ? s - SSN_CONTEXT_BYTES : 0;
  for (let i = from; i + 5 <= s; i++) if (startsWithWord(p, i, s, "aadhaar") || startsWithWord(p, i, s, "uidai")) return true;
  return false;
}

const DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE";

/**
 * Spain's DNI: 8 digits and the letter of the number mod 23 (12345678Z, 12345678-Z); `prefix` 0-2
 * for an NIE (X, Y, Z and 7 digits) whose letter has been read at `s - 1`, else -1.
 */
export function dniAt(p: usize, s: i32, n: i32, prefix: i32): bool {
  const digits = prefix < 0 ? 8 : 7;
  if (s + digits + 1 > n || !allDigits(p, s, digits)) return false;
  let k = s + digits;
  if (load<u8>(p + k) == 0x2d || load<u8>(p + k) == 0x20) k++;
  if (k >= n) return false;
  const letter = <u32>load<u8>(p + k) & ~0x20;
  if (letter - 0x41 >= 26 || !boundary(p, k + 1, n)) return false;
  let number = prefix < 0 ? 0 : prefix;
  for (let i = 0; i < digits; i++) number = number * 10 + digitAt(p, s + i);
  return <u32>DNI_LETTERS.charCodeAt(number % 23) == letter && span(prefix < 0 ? s : s - 1, k + 1);
}

const SIN_SEPARATORS: StaticArray<u8> = [3, 7];

/** A Canadian Social Insurance Number grouped 3-3-3 by spaces or dashes, first digit 1-7 or 9, passing Luhn. */
export function sinAt(p: usize, s: i32, n: i32): bool {
  if (s + 11 > n || !allDigits(p, s, 3) || !allDigits(p, s + 4, 3) || !allDigits(p, s + 8, 3) || !separatorsAt(p, s, n, SIN_SEPARATORS, " -")) return false;
  if (!boundary(p, s + 11, n)) return false;
  const first = digitAt(p, s);
  if (first == 0 || first == 8) return false;
  collect(p, s, 11, (1 << 3) | (1 << 7));
  return luhn(DIGITS, 9) && span(s, s + 11);
}

/**
 * A payment card number: 13 to 19 digits, together or in groups split by one space, dash or dot
 * each (the same throughout), passing the Luhn check. The longest such number wins.
 */
export function cardAt(p: usize, s: i32, n: i32): bool {
  let count = 0;
  let k = s;
  let separator: u8 = 0;
  let bestEnd = -1;
  while (true) {
    const groupStart = k;
    while (k < n && (cls(p, k) & DIGIT) != 0) {
      if (count == 19) return bestEnd >= 0 && span(s, bestEnd); // more digits than any card
      store<u8>(DIGITS + count++, <u8>digitAt(p, k));
      k++;
    }
    if (k == groupStart) break;
    if (count >= 13 && boundary(p, k, n) && luhn(DIGITS, count)) bestEnd = k;
    if (k + 1 >= n) break;
    const c = load<u8>(p + k);
    if (c != 0x20 && c != 0x2d && c != 0x2e) break;
    if (separator == 0) separator = c;
    else if (c != separator) break;
    if ((cls(p, k + 1) & DIGIT) == 0) break;
    k++;
  }
  return bestEnd >= 0 && span(s, bestEnd);
}

// ---- phone numbers ----

/** Digits of a phone number read so far, and its groups' sizes. */
const PHONE_DIGITS: usize = memory.data(20);
const MAX_PHONE_GROUPS: i32 = 8;
const GROUP_SIZES: usize = memory.data(MAX_PHONE_GROUPS);

function isPhoneSeparator(c: u32): bool {
  return c == 0x20 || c == 0x2d || c == 0x2e || c == 0x2f || c == 0x28 || c == 0x29;
}

/**
 * A phone number beginning at `s` (a digit, "+" or "("): groups of digits split by one or two of
 * " -./()" as people type them. Accepted when the digits read so far are
 * - international: "+" or "00" and 8 to 15 digits (E.164), groups of any size, a "(0)" trunk allowed;
 * - national with the trunk prefix 0 (0X...): 9 to 12 digits (06 12 34 56 78, 0151 12345678, 030/1234567), or 10-11 bare;
 * - NANP: [2-9]XX [2-9]XX XXXX, bare or grouped 3-3-4 or bracketed, with or without a leading 1;
 * - China's mobile numbers: 1[3-9] and 11 digits, bare or grouped 3-4-4;
 * - otherwise 10 or 11 digits in two groups or more of two digits or more;
 * and not a date (YYYY-MM-DD). The longest such number wins.
 */
export function phoneAt(p: usize, s: i32, n: i32): bool {
  // Not the middle of a longer run of numbers (000-12-3456: no phone number begins at 12), nor the end of a word (DE88 ...).
  if (s >= 2 && isPhoneSeparator(load<u8>(p + s - 1)) && (cls(p, s - 2) & DIGIT) != 0) return false;
  if (s >= 1 && (cls(p, s) & DIGIT) != 0 && (cls(p, s - 1) & ALPHA) != 0) return false;
  let k = s;
  const plus = load<u8>(p + k) == 0x2b;
  if (plus) k++;
  let digits = 0;
  let groups = 0;
  let bestEnd = -1;
  let dotted = -1; // 1: dots separate the groups, 0: other separators (they do not mix)
  while (k < n && groups < MAX_PHONE_GROUPS) {
    // separators before the group: at most two of " -./()" ("(" may also open the first group)
    const sepStart = k;
    while (k < n && k - sepStart < 2 && isPhoneSeparator(load<u8>(p + k))) k++;
    if (groups == 0 && k != sepStart && (plus || load<u8>(p + sepStart) != 0x28 || k - sepStart > 1)) return false;
    if (groups > 0 && k == sepStart) break;
    if (groups > 0) {
      let dot = 0;
      for (let i = sepStart; i < k; i++) if (load<u8>(p + i) == 0x2e) dot = 1;
      if (dotted < 0) dotted = dot;
      else if (dotted != dot) break;
    }
    const groupStart = k;
    while (k < n && (cls(p, k) & DIGIT) != 0 && digits + (k - groupStart) < 18) k++;
    const size = k - groupStart;
    if (size == 0) break;
    if (!boundary(p, k, n)) break; // digits run into a word: no phone number
    for (let i = 0; i < size; i++) store<u8>(PHONE_DIGITS + digits + i, <u8>digitAt(p, groupStart + i));
    store<u8>(GROUP_SIZES + groups, <u8>size);
    digits += size;
    groups++;
    if (digits > 17) break;
    // Dots do not mix with other separators: +1 415 555 2671 10.0.0.1 is a number and an address.
    if (groups > 1 && k + 1 < n && isPhoneSeparator(load<u8>(p + k)) && (cls(p, k + 1) & DIGIT) != 0 && (load<u8>(p + k) == 0x2e) != (dotted == 1)) break;
    if (acceptedPhone(plus, digits, groups)) bestEnd = k;
  }
  if (bestEnd < 0) return false;
  return span(s, bestEnd);
}

// @ts-ignore: decorator
@inline function phoneDigit(i: i32): i32 {
  return <i32>load<u8>(PHONE_DIGITS + i);
}

// @ts-ignore: decorator
@inline function groupSize(i: i32): i32 {
  return <i32>load<u8>(GROUP_SIZES + i);
}

function acceptedPhone(plus: bool, digits: i32, groups: i32): bool {
  if (plus) return digits >= 8 && digits <= 15 && phoneDigit(0) != 0;
  const first = groupSize(0);
  // YYYY-MM-DD (or / .) is a date, not a phone number.
  if (groups >= 3 && first == 4 && groupSize(1) == 2 && groupSize(2) == 2) return false;
  let laterShort = false;
  for (let i = 1; i < groups; i++) if (groupSize(i) < 2) laterShort = true;
  // 10 or 11 digits in groups of two or more, whatever their first digits ((000) 000-0000 too)
  if (!laterShort && (digits == 10 || digits == 11) && groups > 1) return true;
  // "00" international prefix, then the country code: 8 to 15 digits after it
  if (phoneDigit(0) == 0 && phoneDigit(1) == 0 && first >= 3 && phoneDigit(2) != 0 && digits - 2 >= 8 && digits - 2 <= 15 && (groups >= 2 || digits >= 11)) return true;
  // the national trunk prefix 0: 9 to 12 digits in groups of two or more, or 10-11 bare
  if (phoneDigit(0) == 0 && phoneDigit(1) != 0 && first >= 2) {
    if (groups == 1 ? digits == 10 || digits == 11 : !laterShort && digits >= 9 && digits <= 12) return true;
  }
  // NANP bare: [2-9]XX [2-9]XX XXXX, or 1 and that
  if (groups == 1 && digits == 10 && nanp(0)) return true;
  if (digits == 11 && phoneDigit(0) == 1) {
    if (groups == 1 && (nanp(1) || phoneDigit(1) >= 3)) return true; // NANP with its 1, or China's mobile numbers
    if (groups == 4 && first == 1 && groupSize(1) == 3 && groupSize(2) == 3) return nanp(1); // 1 415 555 2671
  }
  return false;
}

/** The ten digits from `at` are a NANP number: [2-9]XX [2-9]XX XXXX. */
function nanp(at: i32): bool {
  return phoneDigit(at) >= 2 && phoneDigit(at + 3) >= 2;
}

/** A number beginning at `s` is no phone number's middle: used by the scan before it asks. */
export function phoneStart(p: usize, s: i32, n: i32): bool {
  return !is(p, s - 1, n, DIGIT);
}
