// W3C Trace Context Level 2 `tracestate` (w3c/trace-context spec/20-http_request_header_format.md):
// the header may arrive as several field lines, which form one list; the grammar and the limits
// (32 list-members, keys and values of at most 256 characters) apply to that combination. Pure
// logic: no host calls. Lines are spans of bytes that stay where they lie for one callback.

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
    for (let line = 0; line < this.count; line++) {
      const p = unchecked(this.ptrs[line]);
      const n = unchecked(this.lengths[line]);
      let start = 0;
      while (start <= n) {
        const end = memberEnd(p, start, n);
        const a = trimStart(p, start, end);
        const b = trimEnd(p, a, end);
        start = end + 1;
        if (a == b) continue; // empty and whitespace-only members are allowed
        let eq = a;
        while (eq < b && load<u8>(p + eq) != 0x3d) eq++;
        if (eq == b || !isKey(p + a, eq - a) || !isValue(p + eq + 1, b - eq - 1)) return false;
        if (members == MAX_MEMBERS) return false;
        if (!this.hasDuplicateKeys && keyIsListed(p + a, eq - a, members)) this.hasDuplicateKeys = true;
        store<usize>(KEY_PTRS + <usize>members * sizeof<usize>(), p + a);
        store<i32>(KEY_LENGTHS + (<usize>members << 2), eq - a);
        members++;
        bytes += b - a + 1;
      }
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
    for (let line = 0; line < this.count; line++) {
      const p = unchecked(this.ptrs[line]);
      const n = unchecked(this.lengths[line]);
      let start = 0;
      while (start <= n) {
        const end = memberEnd(p, start, n);
        const a = trimStart(p, start, end);
        const b = trimEnd(p, a, end);
        start = end + 1;
        if (a == b) continue;
        let eq = a;
        while (load<u8>(p + eq) != 0x3d) eq++;
        if (dropDuplicates && keyIsListed(p + a, eq - a, kept)) continue;
        store<usize>(KEY_PTRS + <usize>kept * sizeof<usize>(), p + a);
        store<i32>(KEY_LENGTHS + (<usize>kept << 2), eq - a);
        kept++;
        if (written > 0) store<u8>(out + written++, 0x2c);
        memory.copy(out + written, p + a, b - a);
        written += b - a;
      }
    }
    return written;
  }
}

// The keys met so far in the list being read: where they lie, to find duplicates without allocating.
const KEY_PTRS: usize = memory.data(sizeof<usize>() * MAX_MEMBERS);
const KEY_LENGTHS: usize = memory.data(4 * MAX_MEMBERS);

function keyIsListed(key: usize, length: i32, listed: i32): bool {
  for (let k = 0; k < listed; k++) {
    if (load<i32>(KEY_LENGTHS + (<usize>k << 2)) != length) continue;
    if (memory.compare(load<usize>(KEY_PTRS + <usize>k * sizeof<usize>()), key, length) == 0) return true;
  }
  return false;
}

/** list = list-member 0*31( OWS "," OWS list-member ): the index of the "," ending the member at `start`, or `n`. */
function memberEnd(p: usize, start: i32, n: i32): i32 {
  let end = start;
  while (end < n && load<u8>(p + end) != 0x2c) end++;
  return end;
}

function isOws(c: u32): bool {
  return c == 0x20 || c == 0x09;
}

function trimStart(p: usize, a: i32, b: i32): i32 {
  while (a < b && isOws(load<u8>(p + a))) a++;
  return a;
}

function trimEnd(p: usize, a: i32, b: i32): i32 {
  while (b > a && isOws(load<u8>(p + b - 1))) b--;
  return b;
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
