// Finds personal data and secrets in UTF-8 text, for redaction (redact.ts): one pass, left to
// right, finds the next value. The detectors themselves are by family: addresses.ts (e-mail, IP),
// numbers.ts (national ids, cards, phones), secrets.ts (tokens, keys, credentials, assigned secrets,
// PEM blocks, IBANs, NINOs). An e-mail address wins over what its local part holds
// (first.last+4155552671@example.com is an address, not a phone number). Pure logic: no host calls.
import { emailAround, ipv4At, ipv6From, isLocalByte } from "./addresses";
import { ALPHA, byteAt, classOf, cls, DIGIT, foundEnd, foundStart, is, KEY_BODY, span, WORD } from "./chars";
import { aadhaarAt, cardAt, cpfAt, dniAt, phoneAt, prcResidentIdAt, sinAt, ssnAt } from "./numbers";
import { pemAt, telegramAt, WordKind, wordAt } from "./secrets";

export const enum Pii { Email, Phone, PaymentCard, IpAddress, NationalId, Credential, Iban, COUNT }

/**
 * How far past `limit` the scan still reads: a value beginning before it is found from a byte after
 * it only for a quoted e-mail local part (64 octets and its quotes).
 */
const LOOK_PAST_LIMIT: i32 = 72;

/**
 * Finds the first value beginning in [from, limit) of the `n` bytes at `p` (it may end past
 * `limit`); `lowest` is where a value may begin at the earliest (text before it has gone out).
 * Returns its Pii type with foundStart/foundEnd (chars.ts) set, or -1.
 */
export function find(p: usize, from: i32, n: i32, limit: i32, lowest: i32): i32 {
  const stop = limit + LOOK_PAST_LIMIT < n ? limit + LOOK_PAST_LIMIT : n;
  const t = scan(p, from, n, stop, lowest);
  return t >= 0 && foundStart < limit ? t : -1;
}

/** The first value found from `from` on, reading triggers up to `stop` (values may run on to `n`). */
function scan(p: usize, from: i32, n: i32, stop: i32, lowest: i32): i32 {
  let i = from;
  // The end of the last run of local-part bytes known to lead to no "@".
  let localEnd = -1;
  while (i < stop) {
    const c = load<u8>(p + i);
    const f = classOf(c);
    if ((f & WORD) != 0) {
      // A word, measured once: every detector below extends its run from where the word ends.
      let wordEnd = i + 1;
      let digits = f & DIGIT;
      while (wordEnd < n) {
        const g = cls(p, wordEnd);
        if ((g & WORD) == 0) break;
        digits |= g & DIGIT;
        wordEnd++;
      }
      if (i >= localEnd) {
        // A word followed by a byte no local part holds is no local part (most words): no call.
        if (wordEnd < n && isLocalByte(p, wordEnd)) {
          const t = emailFirst(p, i, wordEnd, n, lowest);
          if (t >= 0) return t;
          localEnd = lastLocalEnd;
        } else {
          if (wordEnd < n && load<u8>(p + wordEnd) == 0x40 && emailAround(p, wordEnd, n, lowest)) return Pii.Email;
          localEnd = wordEnd;
        }
      }
      // A secret or identifier at the word's start, numbers wherever a run of digits begins in it.
      if ((f & ALPHA) != 0 && (i == 0 || (cls(p, i - 1) & WORD) == 0) && mayStartSecret(p, i, wordEnd, n)) {
        const w = wordAt(p, i, wordEnd, n);
        if (w != WordKind.None) return w == WordKind.Iban ? Pii.Iban : w == WordKind.NationalId ? Pii.NationalId : Pii.Credential;
      }
      if (digits != 0) {
        for (let k = i; k < wordEnd; k++) {
          if ((cls(p, k) & DIGIT) != 0 && (k == 0 || (cls(p, k - 1) & DIGIT) == 0)) {
            const t = numberAt(p, k, n);
            if (t >= 0) return t;
          }
        }
      }
      i = wordEnd;
      continue;
    }
    if (i >= localEnd && isLocalByte(p, i)) {
      const t = emailFirst(p, i, i + 1, n, lowest);
      if (t >= 0) return t;
      localEnd = lastLocalEnd;
    }
    if (c == 0x40) {
      if (emailAround(p, i, n, lowest)) return Pii.Email; // a quoted or non-ASCII local part
    } else if (c == 0x3a) {
      if (ipv6From(p, i, n, lowest)) return Pii.IpAddress;
    } else if (c == 0x2b || c == 0x28) {
      if (!is(p, i - 1, n, DIGIT) && phoneAt(p, i, n)) return Pii.Phone;
    } else if (c == 0x2d) {
      if (pemAt(p, i, n)) return Pii.Credential;
    }
    i++;
  }
  return -1;
}

/**
 * Whether the word [s, e) could begin anything secrets.ts finds: a long run, a name followed by an
 * assignment, a scheme, "Bearer"/"Basic"/"Authorization", an IBAN, NINO or NIE shape, a flag or
 * "is"/"was" after a name. A prose word followed by a space, comma or full stop is none of them,
 * and costs no call.
 */
// @ts-ignore: decorator
@inline function mayStartSecret(p: usize, s: i32, e: i32, n: i32): bool {
  const size = e - s;
  if (size >= 13) return true;
  const first = <u32>load<u8>(p + s) | 0x20;
  if (first == 0x62 && (size == 5 || size == 6)) return true; // Basic, Bearer (any whitespace after)
  const next = e < n ? <u32>load<u8>(p + e) : 0;
  if (next == 0x20) {
    let k = e + 1;
    while (k < n && k - e < 4 && (load<u8>(p + k) == 0x20 || load<u8>(p + k) == 0x09)) k++;
    const raw = k < n ? <u32>load<u8>(p + k) : 0;
    if (raw == 0x3d || raw == 0x3a || raw == 0x3f) return true; // password = x, token := x
    const after = raw | 0x20;
    if (after == 0x69 || after == 0x77 || (raw - 0x30 < 10 && size <= 4)) return true; // "is", "was"; DE89 3704, AB 12 34
  } else if (!(next == 0x2c || next == 0x3b || next == 0x29 || next == 0x5d || next == 0x21 || next == 0x0a || next == 0x0d || next == 0 ||
      (next == 0x2e && (e + 1 >= n || (cls(p, e + 1) & KEY_BODY) == 0)))) {
    return true; // ":", "=", "_", "-", ".", quotes, "?", ">", a tab: maybe a name, a scheme or a longer token
  }
  if (s > 0 && load<u8>(p + s - 1) == 0x2d) return true; // --password value
  const second = s + 1 < n ? classOf(load<u8>(p + s + 1)) : 0;
  if ((second & DIGIT) != 0) return first >= 0x78 && first <= 0x7a; // an NIE: X1234567L
  return (second & ALPHA) != 0 && s + 2 < n && (cls(p, s + 2) & DIGIT) != 0; // an IBAN or NINO: GB82WEST..., AB123456C
}

/** Where the run of local-part bytes the last emailFirst measured ends. */
let lastLocalEnd: i32 = 0;

/**
 * A run of bytes an e-mail local part may hold begins at `i` (they are local bytes up to `k` at
 * least): an address at its "@" wins over what the run holds, but what comes before the address in
 * the run (电话13800138000，邮箱ana@...) is looked at first. Returns a Pii type, or -1.
 */
function emailFirst(p: usize, i: i32, k: i32, n: i32, lowest: i32): i32 {
  while (k < n && isLocalByte(p, k)) k++;
  lastLocalEnd = k;
  if (k >= n || load<u8>(p + k) != 0x40 || !emailAround(p, k, n, lowest)) return -1;
  const start = foundStart;
  const end = foundEnd;
  if (start > i) {
    const t = scan(p, i, start, start, lowest);
    if (t >= 0) return t;
    span(start, end);
  }
  return Pii.Email;
}

/**
 * A value that is a number beginning at `s` (no digit before it): a token, an identity number,
 * card, IPv4 address or phone number. The run of digits there (its length, what follows it) rules
 * out most detectors before any runs: "2024", "v1.2.3" and "123 items" cost a few comparisons.
 */
function numberAt(p: usize, s: i32, n: i32): i32 {
  let e = s + 1;
  while (e < n && (cls(p, e) & DIGIT) != 0) e++;
  const d = e - s;
  const next = e < n ? <u32>load<u8>(p + e) : 0;
  const grouped = e + 1 < n && (next == 0x20 || next == 0x2d || next == 0x2e || next == 0x2f || next == 0x29) && (cls(p, e + 1) & DIGIT) != 0;
  if (next == 0x3a && d >= 5 && telegramAt(p, s, n)) return Pii.Credential;
  if (d >= 17 || d == 6 || d == 11) if (prcResidentIdAt(p, s, n)) return Pii.NationalId;
  if (d == 3 || d == 9) if (ssnAt(p, s, n) || sinAt(p, s, n)) return Pii.NationalId;
  if ((d == 3 && next == 0x2e) || d == 11) if (cpfAt(p, s, n)) return Pii.NationalId;
  // A card's groups (6228-0188-5208-2191-862) may begin like an Aadhaar number: the card wins when
  // it is longer and takes every group of the run (not when the run goes on: 2345 6789 0124 130 692 544).
  if (d == 4 && grouped && cardAt(p, s, n) && foundEnd > s + 14 && !(byteAt(p, foundEnd, n) == next && (cls(p, foundEnd + 1) & DIGIT) != 0)) return Pii.PaymentCard;
  if (d == 4 || d == 12) if (aadhaarAt(p, s, n)) return Pii.NationalId;
  if (d == 8 && dniAt(p, s, n, -1)) return Pii.NationalId;
  if (d >= 13 || (grouped && d >= 3)) if (cardAt(p, s, n)) return Pii.PaymentCard;
  if (d <= 3 && next == 0x2e && ipv4At(p, s, n)) return Pii.IpAddress;
  if (d >= 9 || grouped) if (phoneAt(p, s, n)) return Pii.Phone;
  return -1;
}
