// The redaction engine: every value pii.ts finds in a text is replaced before the text leaves the
// filter, by a typed placeholder ("[EMAIL]") or, when the policy asks for linkable pseudonyms, by
// the type and a salted keyed hash of the value ("[EMAIL:3f9a1c2e8b7d4a60]": HMAC-SHA-256 under
// the policy's salt of the type and the value in a normal form, first 64 bits), so the same
// address reads the same in every span without being readable. Counts what it replaced by type.
// Pure logic: no host calls.
import { ByteWriter } from "./byte-writer";
import { find, foundEnd, foundStart, Pii } from "./pii";
import { HmacKey } from "./sha256";

const PLACEHOLDERS: StaticArray<string> = ["[EMAIL", "[PHONE", "[PAYMENT_CARD", "[IP_ADDRESS", "[NATIONAL_ID", "[CREDENTIAL"];
/** The stat label of each type (tokentrace_content_redactions_total{redacted=...}). */
export const PII_NAMES: StaticArray<string> = ["email", "phone", "payment_card", "ip_address", "national_id", "credential"];

/** Longest normal form hashed: longer values (only credentials can be) are hashed by their first bytes. */
const MAX_HASHED: i32 = 1024;
const HASH_INPUT: usize = memory.data(MAX_HASHED + 1);
const MAC: usize = memory.data(32);
const HEX_DIGITS: usize = memory.data<u8>([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);

export class Redactor {
  private key: HmacKey | null = null;
  /** Values replaced since the last takeCounts(), by Pii type. */
  counts: StaticArray<i32> = new StaticArray<i32>(Pii.COUNT);

  /** `salt`: the policy's pseudonym salt (UTF-8), or null for typed placeholders. */
  constructor(salt: ArrayBuffer | null) {
    if (salt !== null) this.key = new HmacKey(salt);
  }

  get pseudonyms(): bool {
    return this.key !== null;
  }

  /**
   * Writes the `n` bytes of text at `p` as JSON string content with every value found replaced.
   * Values are looked for in all `n` bytes, but text is written only up to `visibleEnd` (at a
   * character boundary): a value beginning before it is replaced whole, nothing after it is shown.
   */
  redact(out: ByteWriter, p: usize, n: i32, visibleEnd: i32): void {
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
      out.byte(0x3a);
      for (let i = 0; i < 8; i++) {
        const b = load<u8>(MAC + i);
        out.byte(load<u8>(HEX_DIGITS + (b >> 4)));
        out.byte(load<u8>(HEX_DIGITS + (b & 0xf)));
      }
    }
    out.byte(0x5d);
  }

  /** The counts since the last call, which start again from zero. */
  takeCounts(into: StaticArray<i32>): void {
    for (let i = 0; i < Pii.COUNT; i++) {
      unchecked((into[i] = unchecked(this.counts[i])));
      unchecked((this.counts[i] = 0));
    }
  }
}

/**
 * Writes the type and the value in its normal form at HASH_INPUT and returns the length: the same
 * address, number or key written differently (case, spaces, dashes) hashes the same.
 */
function normalForm(type: i32, p: usize, n: i32): i32 {
  store<u8>(HASH_INPUT, <u8>type);
  let m = 1;
  for (let i = 0; i < n && m <= MAX_HASHED; i++) {
    let c = <u32>load<u8>(p + i);
    if (type == Pii.Phone || type == Pii.PaymentCard || type == Pii.NationalId) {
      if (c == 0x78) c = 0x58; // the check character x is X
      if (!(c - 0x30 < 10 || c == 0x58)) continue; // digits only
    } else if (type == Pii.Email || type == Pii.IpAddress) {
      if (c - 0x41 < 26) c += 0x20;
    }
    store<u8>(HASH_INPUT + m++, <u8>c);
  }
  return m;
}
