// W3C Trace Context Level 2 `tracestate` (w3c/trace-context spec/20-http_request_header_format.md):
// the header may arrive as several field lines, which form one list; the grammar and the limits
// (32 list-members, keys and values of at most 256 characters) apply to that combination. Pure
// logic: no host calls. Lines are spans of bytes that stay where they lie for one callback.
import { sameBytes } from "../bytes";

const MAX_MEMBERS: i32 = 32;
const MAX_KEY: i32 = 256;
const MAX_VALUE: i32 = 256;
/** More field lines than this cannot all carry members (32 at most): the header is refused. */
export const MAX_TRACESTATE_LINES: i32 = 64;

/** The `tracestate` field lines of a request, in order, and what validating their combination found. */
export class TraceStateLines {
  count: i32 = 0;
  private ptrs: StaticArray<usize> = new StaticArray<usize>(MAX_TRACESTATE_LINES);
  private lengths: StaticArray<i32> = new StaticArray<i32>(MAX_TRACESTATE_LINES);
  /** Set by validate(): some key is listed twice (the spec lets a vendor pass that on or drop the later ones). */
  hasDuplicateKeys: bool = false;
  /** Set by validate(): the members of every line, the size a combination written by write() needs. */
  combinedBytes: i32 = 0;

  clear(): void {
    this.count = 0;
    this.hasDuplicateKeys = false;
    this.combinedBytes = 0;
  }

  /** Adds one field line; false when there are more lines than MAX_TRACESTATE_LINES. */
  add(ptr: usize, length: i32): bool {
    if (this.count == MAX_TRACESTATE_LINES) return false;
    unchecked((this.ptrs[this.count] = ptr));
    unchecked((this.lengths[this.count] = length));
    this.count++;
    return true;
  }

  /**
   * True when the lines together are one valid list: every non-empty list-member is `key=value`
   * in the Level 2 grammar, at most 32 members in all. Records duplicate keys and the combined size.
   */
  validate(): bool {
    let members = 0;
    let bytes = 0;
    this.hasDuplicateKeys = false;
    this.rewind();
    while (this.nextMember()) {
      const member = this.member;
      const keyLength = this.keyLength;
      const length = this.memberLength;
      if (keyLength < 0 || !isKey(member, keyLength) || !isValue(member + keyLength + 1, length - keyLength - 1)) return false;
      if (members == MAX_MEMBERS) return false;
      if (!this.hasDuplicateKeys && keyIsListed(member, keyLength, members)) this.hasDuplicateKeys = true;
      listKey(members++, member, keyLength);
      bytes += length + 1;
    }
    this.combinedBytes = bytes;
    return true;
  }

  /**
   * Writes the validated lines as one list at `out` (combinedBytes at most): members in order,
   * joined by ",", without empty members; with `dropDuplicates`, a key seen before is skipped
   * (the left-most entry is the most recent). Returns the length written.
   */
  write(out: usize, dropDuplicates: bool): i32 {
    let written = 0;
    let kept = 0;
    this.rewind();
    while (this.nextMember()) {
      const member = this.member;
      if (dropDuplicates && keyIsListed(member, this.keyLength, kept)) continue;
      listKey(kept++, member, this.keyLength);
      if (written > 0) store<u8>(out + written++, 0x2c);
      memory.copy(out + written, member, this.memberLength);
      written += this.memberLength;
    }
    return written;
  }

  // A cursor over the list-members of every line (list = list-member 0*31( OWS "," OWS list-member )).
  private line: i32 = 0;
  private at: i32 = 0;
  /** The member found by nextMember: its bytes without the OWS around it, and where its "=" is (-1: none). */
  private member: usize = 0;
  private memberLength: i32 = 0;
  private keyLength: i32 = -1;

  private rewind(): void {
    this.line = 0;
    this.at = 0;
  }

  /** Moves to the next non-empty member (empty and whitespace-only ones are allowed and skipped); false at the end. */
  private nextMember(): bool {
    while (this.line < this.count) {
      const p = unchecked(this.ptrs[this.line]);
      const n = unchecked(this.lengths[this.line]);
      if (this.at > n) {
        this.line++;
        this.at = 0;
        continue;
      }
      let end = this.at;
      while (end < n && load<u8>(p + end) != 0x2c) end++;
      let a = this.at;
      let b = end;
      while (a < b && isOws(load<u8>(p + a))) a++;
      while (b > a && isOws(load<u8>(p + b - 1))) b--;
      this.at = end + 1;
      if (a == b) continue;
      let eq = a;
      while (eq < b && load<u8>(p + eq) != 0x3d) eq++;
      this.member = p + a;
      this.memberLength = b - a;
      this.keyLength = eq == b ? -1 : eq - a;
      return true;
    }
    return false;
  }
}

// The keys met so far in the list being read: where they lie, to find duplicates without allocating.
const KEY_PTRS: usize = memory.data(sizeof<usize>() * MAX_MEMBERS);
const KEY_LENGTHS: usize = memory.data(4 * MAX_MEMBERS);

function keyIsListed(key: usize, length: i32, listed: i32): bool {
  for (let k = 0; k < listed; k++) {
    if (load<i32>(KEY_LENGTHS + (<usize>k << 2)) != length) continue;
    if (sameBytes(load<usize>(KEY_PTRS + <usize>k * sizeof<usize>()), key, length)) return true;
  }
  return false;
}

function listKey(k: i32, key: usize, length: i32): void {
  store<usize>(KEY_PTRS + <usize>k * sizeof<usize>(), key);
  store<i32>(KEY_LENGTHS + (<usize>k << 2), length);
}

function isOws(c: u32): bool {
  return c == 0x20 || c == 0x09;
}

/** key = ( lcalpha / DIGIT ) 0*255 keychar; keychar = lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@". */
function isKey(key: usize, length: i32): bool {
  if (length < 1 || length > MAX_KEY) return false;
  const first = <u32>load<u8>(key);
  if (!(first - 0x61 < 26 || first - 0x30 < 10)) return false;
  for (let i = 1; i < length; i++) {
    const c = <u32>load<u8>(key + i);
    if (c - 0x61 < 26 || c - 0x30 < 10 || c == 0x5f || c == 0x2d || c == 0x2a || c == 0x2f || c == 0x40) continue;
    return false;
  }
  return true;
}

/** value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E. */
function isValue(value: usize, length: i32): bool {
  if (length < 1 || length > MAX_VALUE) return false;
  for (let i = 0; i < length; i++) {
    const c = <u32>load<u8>(value + i);
    if (c < 0x20 || c > 0x7e || c == 0x2c || c == 0x3d) return false;
  }
  return load<u8>(value + length - 1) != 0x20;
}
