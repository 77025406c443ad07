// W3C Trace Context Level 2 `traceparent` (w3c/trace-context spec/20-http_request_header_format.md),
// parsed and written on the raw header bytes. Pure logic: no host calls.
import { isLowerHexByte, writeHex } from "../bytes";

export const FLAG_SAMPLED: u8 = 0x01;
/** Level 2: the right-most 7 bytes of the trace-id are random. */
export const FLAG_RANDOM: u8 = 0x02;
/** The flags this version defines; "Vendors MUST set those [other flags] to zero". */
const KNOWN_FLAGS: i32 = 0x03;

export const TRACEPARENT_LENGTH: i32 = 55;
/** Offsets of the fields in a version-00 traceparent. */
export const TRACE_ID_OFFSET: i32 = 3;
export const PARENT_ID_OFFSET: i32 = 36;
export const FLAGS_OFFSET: i32 = 53;

/** Result of parseTraceParent: invalid, or valid with these bits. */
export const TRACEPARENT_INVALID: i32 = -1;
/** Set in a valid result when the header must be re-emitted (a later version, surrounding whitespace, unknown flags). */
export const TRACEPARENT_REWRITE: i32 = 0x100;

function isOws(c: u32): bool {
  return c == 0x20 || c == 0x09;
}

/**
 * Parses the traceparent bytes at `ptr` and, when valid, writes its canonical version-00 form
 * (55 bytes, unknown flags zeroed) at `out`. Returns TRACEPARENT_INVALID, or the known flags plus
 * TRACEPARENT_REWRITE when the canonical form differs from the input.
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
  const received = readHexByte(out + FLAGS_OFFSET);
  const flags = received & KNOWN_FLAGS;
  if (flags != received) writeFlags(out, <u8>flags);
  const rewrite = !isV00 || n != length || flags != received;
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
