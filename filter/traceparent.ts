// W3C Trace Context level 2: parse and write `traceparent`, validate `tracestate`, on the raw
// header bytes. Pure logic: no host calls.
import { equalBytes, isLowerHexByte, writeHex } from "./bytes";

export const FLAG_SAMPLED: u8 = 0x01;
/** Level 2: the right-most 7 bytes of the trace-id are random. */
export const FLAG_RANDOM: u8 = 0x02;

export const TRACEPARENT_LENGTH: i32 = 55;
/** Offsets of the fields in a version-00 traceparent. */
export const TRACE_ID_OFFSET: i32 = 3;
export const PARENT_ID_OFFSET: i32 = 36;
export const FLAGS_OFFSET: i32 = 53;

/** Result of parseTraceParent: invalid, or valid with these bits. */
export const TRACEPARENT_INVALID: i32 = -1;
/** Set in a valid result when the header must be re-emitted (a later version, or surrounding whitespace). */
export const TRACEPARENT_REWRITE: i32 = 0x100;

function isOws(c: u32): bool {
  return c == 0x20 || c == 0x09;
}

/**
 * Parses the traceparent bytes at `ptr` and, when valid, writes its canonical version-00 form
 * (55 bytes) at `out`. Returns TRACEPARENT_INVALID, or the flags byte plus TRACEPARENT_REWRITE
 * when the canonical form differs from the input.
 */
export function parseTraceParent(ptr: usize, length: i32, out: usize): i32 {
  let start = 0;
  let end = length;
  while (start < end && isOws(load<u8>(ptr + start))) start++;
  while (end > start && isOws(load<u8>(ptr + end - 1))) end--;
  const n = end - start;
  const v = ptr + start;
  if (n < TRACEPARENT_LENGTH) return TRACEPARENT_INVALID;
  const v0 = <u32>load<u8>(v);
  const v1 = <u32>load<u8>(v + 1);
  if (!isLowerHexByte(v0) || !isLowerHexByte(v1)) return TRACEPARENT_INVALID;
  const isV00 = v0 == 0x30 && v1 == 0x30;
  if (v0 == 0x66 && v1 == 0x66) return TRACEPARENT_INVALID; // version ff
  if (isV00) {
    if (n != TRACEPARENT_LENGTH) return TRACEPARENT_INVALID;
  } else if (n > TRACEPARENT_LENGTH && load<u8>(v + TRACEPARENT_LENGTH) != 0x2d) {
    return TRACEPARENT_INVALID; // a later version may append fields, always after a dash
  }
  if (load<u8>(v + 2) != 0x2d || load<u8>(v + 35) != 0x2d || load<u8>(v + 52) != 0x2d) return TRACEPARENT_INVALID;
  for (let i = TRACE_ID_OFFSET; i < TRACEPARENT_LENGTH; i++) {
    if (i == 35 || i == 52) continue;
    if (!isLowerHexByte(load<u8>(v + i))) return TRACEPARENT_INVALID;
  }
  if (isAllHexZero(v + TRACE_ID_OFFSET, 32) || isAllHexZero(v + PARENT_ID_OFFSET, 16)) return TRACEPARENT_INVALID;
  store<u8>(out, 0x30);
  store<u8>(out + 1, 0x30);
  memory.copy(out + 2, v + 2, TRACEPARENT_LENGTH - 2);
  const flags = readHexByte(out + FLAGS_OFFSET);
  const rewrite = !isV00 || n != length;
  return flags | (rewrite ? TRACEPARENT_REWRITE : 0);
}

/** Writes a version-00 traceparent at `out` from a 16-byte trace-id, an 8-byte span id and flags. */
export function writeTraceParent(out: usize, traceId: usize, spanId: usize, flags: u8): void {
  store<u8>(out, 0x30);
  store<u8>(out + 1, 0x30);
  store<u8>(out + 2, 0x2d);
  writeHex(out + TRACE_ID_OFFSET, traceId, 16);
  store<u8>(out + 35, 0x2d);
  writeHex(out + PARENT_ID_OFFSET, spanId, 8);
  store<u8>(out + 52, 0x2d);
  writeFlags(out, flags);
}

/** Overwrites the flags field of the traceparent at `out`. */
export function writeFlags(out: usize, flags: u8): void {
  const one = memory.data(1);
  store<u8>(one, flags);
  writeHex(out + FLAGS_OFFSET, one, 1);
}

function readHexByte(ptr: usize): i32 {
  return (hexNibble(load<u8>(ptr)) << 4) | hexNibble(load<u8>(ptr + 1));
}

function hexNibble(c: u32): i32 {
  return c - 0x30 < 10 ? <i32>(c - 0x30) : <i32>(c - 0x57);
}

function isAllHexZero(ptr: usize, length: i32): bool {
  for (let i = 0; i < length; i++) if (load<u8>(ptr + i) != 0x30) return false;
  return true;
}

const MAX_TRACESTATE_MEMBERS: i32 = 32;
// Offsets and lengths of the keys seen so far, to reject duplicates without allocating.
const KEY_OFFSETS: usize = memory.data(4 * (MAX_TRACESTATE_MEMBERS + 1));
const KEY_LENGTHS: usize = memory.data(4 * (MAX_TRACESTATE_MEMBERS + 1));

/** True when the bytes are a valid tracestate list (W3C level 2 grammar, at most 32 members, unique keys). */
export function isValidTraceState(ptr: usize, length: i32): bool {
  let members = 0;
  let start = 0;
  while (start <= length) {
    let end = start;
    while (end < length && load<u8>(ptr + end) != 0x2c) end++;
    // list-members are separated by OWS "," OWS; empty members are allowed
    let a = start;
    let b = end;
    while (a < b && isOws(load<u8>(ptr + a))) a++;
    while (b > a && isOws(load<u8>(ptr + b - 1))) b--;
    start = end + 1;
    if (a == b) continue;
    let eq = a;
    while (eq < b && load<u8>(ptr + eq) != 0x3d) eq++;
    if (eq == a || eq == b) return false;
    if (!isTraceStateKey(ptr + a, eq - a) || !isTraceStateValue(ptr + eq + 1, b - eq - 1)) return false;
    for (let k = 0; k < members; k++) {
      if (equalBytes(ptr + load<u32>(KEY_OFFSETS + 4 * k), load<i32>(KEY_LENGTHS + 4 * k), ptr + a, eq - a)) return false;
    }
    if (members == MAX_TRACESTATE_MEMBERS) return false;
    store<u32>(KEY_OFFSETS + 4 * members, a);
    store<i32>(KEY_LENGTHS + 4 * members, eq - a);
    members++;
  }
  return true;
}

function isLcAlpha(c: u32): bool {
  return c - 0x61 < 26;
}

function isKeyChar(c: u32): bool {
  return c - 0x61 < 26 || c - 0x30 < 10 || c == 0x5f || c == 0x2d || c == 0x2a || c == 0x2f;
}

function isTraceStateKey(key: usize, length: i32): bool {
  let at = -1;
  for (let i = 0; i < length; i++) {
    if (load<u8>(key + i) == 0x40) {
      at = i;
      break;
    }
  }
  if (at < 0) {
    // simple-key = lcalpha 0*255( lcalpha / DIGIT / "_" / "-"/ "*" / "/" )
    if (length > 256 || !isLcAlpha(load<u8>(key))) return false;
    for (let i = 1; i < length; i++) if (!isKeyChar(load<u8>(key + i))) return false;
    return true;
  }
  // multi-tenant-key = tenant-id "@" system-id
  const tenantLength = at;
  const systemLength = length - at - 1;
  if (tenantLength < 1 || tenantLength > 241 || systemLength < 1 || systemLength > 14) return false;
  const t0 = <u32>load<u8>(key);
  if (!(isLcAlpha(t0) || t0 - 0x30 < 10)) return false;
  for (let i = 1; i < tenantLength; i++) if (!isKeyChar(load<u8>(key + i))) return false;
  const system = key + at + 1;
  if (!isLcAlpha(load<u8>(system))) return false;
  for (let i = 1; i < systemLength; i++) if (!isKeyChar(load<u8>(system + i))) return false;
  return true;
}

/** value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E. */
function isTraceStateValue(value: usize, length: i32): bool {
  if (length < 1 || length > 256) return false;
  for (let i = 0; i < length; i++) {
    const c = <u32>load<u8>(value + i);
    if (c < 0x20 || c > 0x7e || c == 0x2c || c == 0x3d) return false;
  }
  return load<u8>(value + length - 1) != 0x20;
}
