// The x-token-trace-id header: an id that follows one LLM request end to end, independent of
// trace sampling. Pure logic: no host calls.
import { writeHex } from "./bytes";

export const MAX_TOKEN_TRACE_ID_LENGTH: i32 = 128;
export const UUID_LENGTH: i32 = 36;

/** Well-formed: 1 to 128 bytes of [A-Za-z0-9._:-]. Anything else is replaced by a new id. */
export function isValidTokenTraceId(ptr: usize, length: i32): bool {
  if (length == 0 || length > MAX_TOKEN_TRACE_ID_LENGTH) return false;
  for (let i = 0; i < length; i++) {
    const c = <u32>load<u8>(ptr + i);
    if (c - 0x61 < 26 || c - 0x41 < 26 || c - 0x30 < 10) continue;
    if (c == 0x2e || c == 0x5f || c == 0x3a || c == 0x2d) continue;
    return false;
  }
  return true;
}

/** Writes 16 random bytes at `random` as a UUIDv4 (RFC 9562) into a new 36-byte buffer, setting the version and variant bits. */
export function uuidV4(random: usize): ArrayBuffer {
  store<u8>(random + 6, (load<u8>(random + 6) & 0x0f) | 0x40);
  store<u8>(random + 8, (load<u8>(random + 8) & 0x3f) | 0x80);
  const out = new ArrayBuffer(UUID_LENGTH);
  const p = changetype<usize>(out);
  writeHex(p, random, 4);
  store<u8>(p + 8, 0x2d);
  writeHex(p + 9, random + 4, 2);
  store<u8>(p + 13, 0x2d);
  writeHex(p + 14, random + 6, 2);
  store<u8>(p + 18, 0x2d);
  writeHex(p + 19, random + 8, 2);
  store<u8>(p + 23, 0x2d);
  writeHex(p + 24, random + 10, 6);
  return out;
}
