// The redaction engine: every value pii.ts finds in a text is replaced before the text leaves the
// filter, by a typed placeholder ("[EMAIL]") or, when the policy asks for linkable pseudonyms and
// the key is held, by the type and a keyed hash of the value ("[EMAIL:3f9a1c2e8b7d4a60]":
// HMAC-SHA-256 under the key the control plane serves of the type and the value in a normal
// form, first 64 bits), so the same address reads the same in every span without being readable.
// Where the visible window cuts the text, the token still open at the cut is masked whole
// ("[TRUNCATED]"): its beginning never leaves, whatever it is. Counts what it replaced by type.
// Pure logic: no host calls.
import { writeHex } from "../bytes";
import { ByteWriter } from "./byte-writer";
import { foundEnd, foundStart } from "./chars";
import { find, Pii } from "./pii";
import { HmacKey } from "./sha256";

/** Counts by type: the Pii types, then tokens masked at a cut. */
export const REDACTED_COUNT: i32 = Pii.COUNT + 1;
const TRUNCATED: i32 = Pii.COUNT;
/** The stat label of each count (tokentrace_content_redactions_total{redacted=...}). */
export const REDACTED_NAMES: StaticArray<string> = ["email", "phone", "payment_card", "ip_address", "national_id", "credential", "iban", "truncated"];
const PLACEHOLDERS: StaticArray<string> = ["[EMAIL", "[PHONE", "[PAYMENT_CARD", "[IP_ADDRESS", "[NATIONAL_ID", "[CREDENTIAL", "[IBAN", "[TRUNCATED"];

/**
 * A token open at a cut is masked when this many bytes of it or more are before the cut: "a few
 * characters" reveal nothing of a secret (three bytes cannot hold the eight of any secret part).
 */
export const OPEN_TOKEN_MIN: i32 = 4;

/** Longest normal form hashed: longer values (only credentials can be) are hashed by their first bytes. */
const MAX_HASHED: i32 = 1024;
const HASH_INPUT: usize = memory.data(MAX_HASHED + 1);
const MAC: usize = memory.data(32);
const HEX: usize = memory.data(16);

export class Redactor {
  /** The pseudonym key for the text being written, or null for typed placeholders. */
  key: HmacKey | null = null;
  /** Values replaced since reset(), by REDACTED_NAMES. */
  counts: StaticArray<i32> = new StaticArray<i32>(REDACTED_COUNT);
  /** Pseudonyms written since reset(). */
  pseudonymsWritten: i32 = 0;

  reset(): void {
    for (let i = 0; i < REDACTED_COUNT; i++) unchecked((this.counts[i] = 0));
    this.pseudonymsWritten = 0;
  }

  /**
   * Writes the `n` bytes of text at `p` as JSON string content with every value found replaced.
   * Values are looked for in all `n` bytes, but text is written only up to `visibleEnd` (at a
   * character boundary): a value beginning before it is replaced whole, nothing after it is shown.
   * `cut`: the text goes on past `visibleEnd` (the window or the buffer cut it).
   */
  redact(out: ByteWriter, p: usize, n: i32, visibleEnd: i32, cut: bool): void {
    let written = 0;
    let at = 0;
    while (true) {
      const type = find(p, at, n, visibleEnd, written);
      if (type < 0) break;
      const start = foundStart;
      const end = foundEnd;
      out.jsonText(p + written, start - written);
      this.replace(out, type, p + start, end - start);
      written = end;
      at = end;
    }
    if (written >= visibleEnd) return;
    let stop = visibleEnd;
    if (cut) {
      // The token open at the cut (no separator since it began) is masked whole, never shown in part.
      let s = stop;
      while (s > written && isTokenByte(load<u8>(p + s - 1))) s--;
      if (stop - s >= OPEN_TOKEN_MIN && (stop >= n || isTokenByte(load<u8>(p + stop)))) {
        out.jsonText(p + written, s - written);
        unchecked((this.counts[TRUNCATED] += 1));
        out.ascii("[TRUNCATED]");
        return;
      }
    }
    // Never cut a character in two: back up to the start of the one the window ends in.
    if (stop < n) while (stop > written && (load<u8>(p + stop) & 0xc0) == 0x80) stop--;
    out.jsonText(p + written, stop - written);
  }

  private replace(out: ByteWriter, type: i32, p: usize, n: i32): void {
    unchecked((this.counts[type] += 1));
    out.ascii(unchecked(PLACEHOLDERS[type]));
    const key = this.key;
    if (key !== null) {
      const m = normalForm(type, p, n);
      key.mac(HASH_INPUT, m, MAC);
      writeHex(HEX, MAC, 8);
      out.byte(0x3a);
      out.bytes(HEX, 16);
      this.pseudonymsWritten++;
    }
    out.byte(0x5d);
  }
}

/**
 * A byte a token may hold: not ASCII whitespace or a delimiter around words (quotes, brackets,
 * comma, semicolon), and not part of a non-ASCII character (text without spaces, as CJK is
 * written, is no token: masking its run would mask the whole window).
 */
// @ts-ignore: decorator
@inline function isTokenByte(c: u8): bool {
  return c > 0x20 && c < 0x7f && c != 0x22 && c != 0x27 && c != 0x60 && c != 0x28 && c != 0x29 && c != 0x3c && c != 0x3e &&
    c != 0x5b && c != 0x5d && c != 0x7b && c != 0x7d && c != 0x2c && c != 0x3b;
}

/**
 * Writes the type and the value in its normal form at HASH_INPUT and returns the length: the same
 * address, number or key written differently (case, spaces, dashes) hashes the same.
 */
function normalForm(type: i32, p: usize, n: i32): i32 {
  store<u8>(HASH_INPUT, <u8>type);
  let m = 1;
  const digitsOnly = type == Pii.Phone || type == Pii.PaymentCard || type == Pii.NationalId || type == Pii.Iban;
  const lowerCase = type == Pii.Email || type == Pii.IpAddress;
  for (let i = 0; i < n && m <= MAX_HASHED; i++) {
    let c = <u32>load<u8>(p + i);
    if (digitsOnly) {
      if (c - 0x61 < 26) c -= 0x20; // letters of ids and IBANs in upper case (the check character x is X)
      if (!(c - 0x30 < 10 || c - 0x41 < 26)) continue; // digits and letters only
    } else if (lowerCase) {
      if (c - 0x41 < 26) c += 0x20;
    }
    store<u8>(HASH_INPUT + m++, <u8>c);
  }
  return m;
}
