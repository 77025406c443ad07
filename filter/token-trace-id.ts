// The x-token-trace-id header: an id that follows one LLM request end to end, independent of
// trace sampling. Pure logic: no host calls.
import { hexOf } from "./traceparent";

export const MAX_TOKEN_TRACE_ID_LENGTH: i32 = 128;

/** Well-formed: 1 to 128 characters of [A-Za-z0-9._:-]. Anything else is replaced by a new id. */
export function isValidTokenTraceId(value: string): bool {
  if (value.length == 0 || value.length > MAX_TOKEN_TRACE_ID_LENGTH) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)) continue;
    if (c == 0x2e || c == 0x5f || c == 0x3a || c == 0x2d) continue;
    return false;
  }
  return true;
}

/** Formats 16 random bytes at `ptr` as a UUIDv4 (RFC 9562), setting the version and variant bits. */
export function uuidV4(ptr: usize): string {
  store<u8>(ptr + 6, (load<u8>(ptr + 6) & 0x0f) | 0x40);
  store<u8>(ptr + 8, (load<u8>(ptr + 8) & 0x3f) | 0x80);
  const hex = hexOf(ptr, 16);
  return hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-" + hex.substring(16, 20) + "-" + hex.substring(20, 32);
}
