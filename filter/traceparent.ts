// W3C Trace Context level 2: parse and format `traceparent`, validate `tracestate`.
// Pure logic: no host calls.
import { hexValue } from "./json";

export const FLAG_SAMPLED: u8 = 0x01;
/** Level 2: the right-most 7 bytes of the trace-id are random. */
export const FLAG_RANDOM: u8 = 0x02;

const TRACEPARENT_LENGTH: i32 = 55;

/** A parsed trace context; ids are lower-case hex. */
export class TraceParent {
  traceId: string = "";
  parentId: string = "";
  flags: u8 = 0;
  /** True when the header must be re-emitted: a later version re-read with the version-00 layout, or surrounding whitespace. */
  needsRewrite: bool = false;

  sampled(): bool {
    return (this.flags & FLAG_SAMPLED) != 0;
  }

  /** The version-00 header value. */
  format(): string {
    return "00-" + this.traceId + "-" + this.parentId + "-" + hexByte(this.flags);
  }
}

/** Parses a traceparent header value; null when it is invalid (then a new trace starts). */
export function parseTraceParent(raw: string): TraceParent | null {
  const value = trimOws(raw);
  if (value.length < TRACEPARENT_LENGTH) return null;
  if (!isLowerHex(value, 0, 2)) return null;
  const version = value.substring(0, 2);
  if (version == "ff") return null;
  if (version == "00") {
    if (value.length != TRACEPARENT_LENGTH) return null;
  } else if (value.length > TRACEPARENT_LENGTH && value.charCodeAt(TRACEPARENT_LENGTH) != 0x2d) {
    // A later version may append fields, always after a dash.
    return null;
  }
  if (value.charCodeAt(2) != 0x2d || value.charCodeAt(35) != 0x2d || value.charCodeAt(52) != 0x2d) return null;
  if (!isLowerHex(value, 3, 35) || !isLowerHex(value, 36, 52) || !isLowerHex(value, 53, 55)) return null;
  if (isAllZero(value, 3, 35) || isAllZero(value, 36, 52)) return null;
  const tp = new TraceParent();
  tp.traceId = value.substring(3, 35);
  tp.parentId = value.substring(36, 52);
  tp.flags = <u8>((hexValue(value.charCodeAt(53)) << 4) | hexValue(value.charCodeAt(54)));
  tp.needsRewrite = version != "00" || value.length != raw.length;
  return tp;
}

const MAX_TRACESTATE_MEMBERS: i32 = 32;

/** True when `raw` is a valid tracestate list (W3C level 2 grammar, at most 32 members, unique keys). */
export function isValidTraceState(raw: string): bool {
  const keys = new Array<string>();
  let start = 0;
  while (start <= raw.length) {
    let end = raw.indexOf(",", start);
    if (end < 0) end = raw.length;
    const member = trimOws(raw.substring(start, end));
    start = end + 1;
    if (member.length == 0) continue; // empty list-members are allowed
    const eq = member.indexOf("=");
    if (eq <= 0) return false;
    const key = member.substring(0, eq);
    if (!isTraceStateKey(key) || !isTraceStateValue(member, eq + 1)) return false;
    if (keys.includes(key)) return false;
    keys.push(key);
    if (keys.length > MAX_TRACESTATE_MEMBERS) return false;
  }
  return true;
}

function isKeyChar(c: i32): bool {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x5f || c == 0x2d || c == 0x2a || c == 0x2f;
}

function isTraceStateKey(key: string): bool {
  const at = key.indexOf("@");
  if (at < 0) {
    // simple-key = lcalpha 0*255( lcalpha / DIGIT / "_" / "-"/ "*" / "/" )
    if (key.length > 256) return false;
    const first = key.charCodeAt(0);
    if (!(first >= 0x61 && first <= 0x7a)) return false;
    for (let i = 1; i < key.length; i++) if (!isKeyChar(key.charCodeAt(i))) return false;
    return true;
  }
  // multi-tenant-key = tenant-id "@" system-id
  const tenant = key.substring(0, at);
  const system = key.substring(at + 1);
  if (tenant.length < 1 || tenant.length > 241 || system.length < 1 || system.length > 14) return false;
  const t0 = tenant.charCodeAt(0);
  if (!((t0 >= 0x61 && t0 <= 0x7a) || (t0 >= 0x30 && t0 <= 0x39))) return false;
  for (let i = 1; i < tenant.length; i++) if (!isKeyChar(tenant.charCodeAt(i))) return false;
  const s0 = system.charCodeAt(0);
  if (!(s0 >= 0x61 && s0 <= 0x7a)) return false;
  for (let i = 1; i < system.length; i++) if (!isKeyChar(system.charCodeAt(i))) return false;
  return true;
}

/** value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E. */
function isTraceStateValue(member: string, start: i32): bool {
  const length = member.length - start;
  if (length < 1 || length > 256) return false;
  for (let i = start; i < member.length; i++) {
    const c = member.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c == 0x2c || c == 0x3d) return false;
  }
  return member.charCodeAt(member.length - 1) != 0x20;
}

/** Removes optional whitespace (spaces and tabs) at both ends. */
function trimOws(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isOws(s.charCodeAt(start))) start++;
  while (end > start && isOws(s.charCodeAt(end - 1))) end--;
  return start == 0 && end == s.length ? s : s.substring(start, end);
}

function isOws(c: i32): bool {
  return c == 0x20 || c == 0x09;
}

function isLowerHex(s: string, from: i32, to: i32): bool {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

function isAllZero(s: string, from: i32, to: i32): bool {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) != 0x30) return false;
  return true;
}

const HEX_DIGITS = "0123456789abcdef";

export function hexByte(b: u8): string {
  return HEX_DIGITS.charAt(b >> 4) + HEX_DIGITS.charAt(b & 0x0f);
}

/** Lower-case hex of `length` bytes at `ptr`. */
export function hexOf(ptr: usize, length: i32): string {
  const out = new StaticArray<u16>(length * 2);
  for (let i = 0; i < length; i++) {
    const b = load<u8>(ptr + i);
    out[2 * i] = <u16>HEX_DIGITS.charCodeAt(b >> 4);
    out[2 * i + 1] = <u16>HEX_DIGITS.charCodeAt(b & 0x0f);
  }
  return String.UTF16.decodeUnsafe(changetype<usize>(out), length * 4);
}
