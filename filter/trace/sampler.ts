// Sampling: which rate applies to a request, and the consistent-probability decision.
// Pure logic: no host calls.
import { equalAsciiLowerCase, equalBytes, startsWith } from "../bytes";
import { Config, ForceRule } from "../config/config";

/** 2^56: the randomness of a level-2 trace-id is its low 56 bits (REFERENCE section 4). */
const TWO_POW_56: f64 = 72057594037927936.0;
const MAX_THRESHOLD: u64 = 0x100000000000000;

/**
 * OpenTelemetry's rejection threshold for probability `rate`: T = (1 - p) * 2^56, so a trace is
 * kept when its randomness R >= T. p = 1 gives 0 (keep all), p = 0 gives 2^56 (keep none).
 */
export function thresholdFor(rate: f64): u64 {
  // Nearly every request uses the same rate as the one before.
  if (rate == lastRate) return lastThreshold;
  const threshold = computeThreshold(rate);
  lastRate = rate;
  lastThreshold = threshold;
  return threshold;
}

let lastRate: f64 = -1;
let lastThreshold: u64 = MAX_THRESHOLD;

function computeThreshold(rate: f64): u64 {
  if (!(rate > 0)) return MAX_THRESHOLD;
  if (rate >= 1) return 0;
  const t = Math.round((1.0 - rate) * TWO_POW_56);
  return t >= TWO_POW_56 ? MAX_THRESHOLD : <u64>t;
}

/** The randomness of a 16-byte trace-id: its right-most 7 bytes, big-endian. */
export function traceRandomness(traceId: usize): u64 {
  let r: u64 = 0;
  for (let i = 9; i < 16; i++) r = (r << 8) | <u64>load<u8>(traceId + i);
  return r;
}

/** The decision every hop reaches for the same trace-id and rate. */
export function isSampled(traceId: usize, rate: f64): bool {
  return traceRandomness(traceId) >= thresholdFor(rate);
}

/** Writes the `th` value of the OpenTelemetry tracestate entry at `out` (14 hex digits, trailing zeros removed; "0" keeps all) and returns its length. */
export function writeThreshold(out: usize, threshold: u64): i32 {
  if (threshold == 0) {
    store<u8>(out, 0x30);
    return 1;
  }
  let n = 0;
  for (let shift = 52; shift >= 0; shift -= 4) {
    const d = <u32>((threshold >> <u64>shift) & 0xf);
    store<u8>(out + n, d < 10 ? 0x30 + d : 0x57 + d);
    n++;
  }
  while (n > 1 && load<u8>(out + n - 1) == 0x30) n--;
  return n;
}

/** The request attributes rules match on, as raw header bytes where they lie (length -1: not read or absent). */
export class RequestMatch {
  routeName: usize = 0;
  routeNameLength: i32 = -1;
  path: usize = 0;
  pathLength: i32 = -1;
  authority: usize = 0;
  authorityLength: i32 = -1;
}

/** The rate for a request: the first route rule whose every given matcher matches, else the default. */
export function rateFor(config: Config, req: RequestMatch): f64 {
  const rules = config.routes;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i];
    const routeName = rule.routeNameBytes;
    if (routeName !== null) {
      if (req.routeNameLength < 0 || !equalBytes(req.routeName, req.routeNameLength, changetype<usize>(routeName), routeName.byteLength)) continue;
    }
    const prefix = rule.pathPrefixBytes;
    if (prefix !== null) {
      if (req.pathLength < 0 || !startsWith(req.path, req.pathLength, prefix)) continue;
    }
    const host = rule.hostBytes;
    if (host !== null) {
      if (req.authorityLength < 0) continue;
      if (!equalAsciiLowerCase(req.authority, hostLength(req.authority, req.authorityLength), host)) continue;
    }
    return rule.rate;
  }
  return config.defaultRate;
}

/** Length of the host part of an :authority value, without its port (IPv6 literals keep their brackets). */
export function hostLength(p: usize, n: i32): i32 {
  if (n > 0 && load<u8>(p) == 0x5b) {
    for (let i = 1; i < n; i++) if (load<u8>(p + i) == 0x5d) return i + 1;
    return n;
  }
  for (let i = n - 1; i >= 0; i--) if (load<u8>(p + i) == 0x3a) return i;
  return n;
}

/** True when a force rule matches the `length` bytes seen for its header (-1: header absent). */
export function forceRuleMatches(rule: ForceRule, value: usize, length: i32): bool {
  if (length < 0) return false;
  const want = rule.valueBytes;
  return want === null || equalBytes(changetype<usize>(want), want.byteLength, value, length);
}
