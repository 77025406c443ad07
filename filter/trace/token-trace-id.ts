// The x-token-trace-id header: an id that follows one LLM request end to end, independent of
// trace sampling. Pure logic: no host calls.
import { writeHex } from "../bytes";

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

/** Sets the UUIDv4 version and variant bits (RFC 9562) in the 16 random bytes at `random`. */
export function markUuidV4(random: usize): void {
  store<u8>(random + 6, (load<u8>(random + 6) & 0x0f) | 0x40);
  store<u8>(random + 8, (load<u8>(random + 8) & 0x3f) | 0x80);
}

const UUID_HEX: usize = memory.data(32);

/** Writes the 16 bytes at `id` as a UUID's 36 characters at `dst`. */
export function writeUuid(dst: usize, id: usize): void {
  writeHex(UUID_HEX, id, 16);
  store<u64>(dst, load<u64>(UUID_HEX));
  store<u8>(dst + 8, 0x2d);
  store<u32>(dst + 9, load<u32>(UUID_HEX + 8));
  store<u8>(dst + 13, 0x2d);
  store<u32>(dst + 14, load<u32>(UUID_HEX + 12));
  store<u8>(dst + 18, 0x2d);
  store<u32>(dst + 19, load<u32>(UUID_HEX + 16));
  store<u8>(dst + 23, 0x2d);
  store<u64>(dst + 24, load<u64>(UUID_HEX + 20));
  store<u32>(dst + 32, load<u32>(UUID_HEX + 28));
}
