// Which LLM protocol a request speaks, from its :path: each protocol's path matchers (suffixes,
// and optionally prefixes), compiled so that a path that is no LLM call costs one 8-byte compare
// per suffix. Pure logic: no host calls.
import { equalBytes, startsWith } from "../bytes";
import { Protocol } from "./index";

/** One protocol's paths: the path (without query) ends with a suffix and, when any are given, begins with a prefix. */
export class ProtocolPaths {
  protocol: Protocol;
  prefixes: Array<ArrayBuffer>;
  suffixes: Array<ArrayBuffer> = [];
  /** Per suffix: its last (up to) 8 bytes as a little-endian u64, and how far a path's last 8 bytes shift right to compare. */
  private tails: Array<u64> = [];
  private shifts: Array<u64> = [];

  constructor(protocol: Protocol, prefixes: Array<string>, suffixes: Array<string>) {
    this.protocol = protocol;
    this.prefixes = prefixes.map<ArrayBuffer>((s: string) => String.UTF8.encode(s));
    this.setSuffixes(suffixes.map<ArrayBuffer>((s: string) => String.UTF8.encode(s)));
  }

  setSuffixes(suffixes: Array<ArrayBuffer>): void {
    this.suffixes = suffixes;
    this.tails = [];
    this.shifts = [];
    for (let i = 0; i < suffixes.length; i++) {
      const s = changetype<usize>(suffixes[i]);
      const n = suffixes[i].byteLength;
      let tail: u64 = 0;
      if (n >= 8) {
        tail = load<u64>(s + n - 8);
      } else {
        for (let k = 0; k < n; k++) tail |= (<u64>load<u8>(s + k)) << (<u64>k << 3);
      }
      this.tails.push(tail);
      this.shifts.push(n >= 8 ? 0 : <u64>(64 - 8 * n));
    }
  }

  /** Whether the path's first `end` bytes at `p` match; `last8` is its last 8 bytes (end >= 8). Sets MATCHED_PREFIX. */
  matches(p: usize, end: i32, last8: u64): bool {
    const suffixes = this.suffixes;
    for (let i = 0; i < suffixes.length; i++) {
      if (last8 >> unchecked(this.shifts[i]) != unchecked(this.tails[i])) continue;
      const n = suffixes[i].byteLength;
      if (n > end || (n > 8 && !equalBytes(p + end - n, n - 8, changetype<usize>(suffixes[i]), n - 8))) continue;
      if (this.prefixMatches(p, end - n)) return true;
    }
    return false;
  }

  /** No prefixes, or the path begins with one (before `room` bytes, so it does not overlap the suffix). */
  private prefixMatches(p: usize, room: i32): bool {
    const prefixes = this.prefixes;
    if (prefixes.length == 0) {
      matchedPrefixLength = 0;
      return true;
    }
    for (let i = 0; i < prefixes.length; i++) {
      const n = prefixes[i].byteLength;
      if (n <= room && startsWith(p, room, prefixes[i])) {
        matchedPrefixLength = n;
        return true;
      }
    }
    return false;
  }
}

/** The length of the prefix the last successful match began with (0: none). */
export let matchedPrefixLength: i32 = 0;

/** The protocol whose paths the `length`-byte path at `p` (query ignored) matches first, or -1. */
export function protocolOf(p: usize, length: i32, paths: Array<ProtocolPaths>): i32 {
  let end = length;
  for (let i = 0; i < end; i++) {
    if (load<u8>(p + i) == 0x3f) {
      end = i;
      break;
    }
  }
  // The path's last 8 bytes (fewer: zero-filled below, so a short path compares as its bytes).
  let last8: u64 = 0;
  if (end >= 8) {
    last8 = load<u64>(p + end - 8);
  } else {
    for (let k = 0; k < end; k++) last8 |= (<u64>load<u8>(p + k)) << (<u64>(k + 8 - end) << 3);
  }
  for (let i = 0; i < paths.length; i++) {
    const protocol = unchecked(paths[i]);
    if (protocol.matches(p, end, last8)) return protocol.protocol;
  }
  return -1;
}
