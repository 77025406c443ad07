// Sampling: which rate applies to a request, and the consistent-probability decision.
// Pure logic: no host calls.
import { asciiLowerCase, Config, ForceRule, RouteRule } from "./config";
import { hexValue } from "./json";

/** 2^56: the randomness of a level-2 trace-id is its low 56 bits (REFERENCE section 4). */
const TWO_POW_56: f64 = 72057594037927936.0;
const MAX_THRESHOLD: u64 = 0x100000000000000;

/**
 * OpenTelemetry's rejection threshold for probability `rate`: T = (1 - p) * 2^56, so a trace is
 * kept when its randomness R >= T. p = 1 gives 0 (keep all), p = 0 gives 2^56 (keep none).
 */
export function thresholdFor(rate: f64): u64 {
  if (!(rate > 0)) return MAX_THRESHOLD;
  if (rate >= 1) return 0;
  const t = Math.round((1.0 - rate) * TWO_POW_56);
  return t >= TWO_POW_56 ? MAX_THRESHOLD : <u64>t;
}

/** The low 56 bits of a 32-hex-digit trace-id. */
export function traceRandomness(traceIdHex: string): u64 {
  let r: u64 = 0;
  for (let i = 18; i < 32; i++) r = (r << 4) | <u64>hexValue(traceIdHex.charCodeAt(i));
  return r;
}

/** The decision every hop reaches for the same trace-id and rate. */
export function isSampled(traceIdHex: string, rate: f64): bool {
  return traceRandomness(traceIdHex) >= thresholdFor(rate);
}

/** The `th` value of the OpenTelemetry tracestate entry: 14 hex digits, trailing zeros removed ("0" for keep-all). */
export function thresholdTraceStateValue(threshold: u64): string {
  if (threshold == 0) return "0";
  let hex = "";
  const digits = "0123456789abcdef";
  for (let shift = 52; shift >= 0; shift -= 4) hex += digits.charAt(<i32>((threshold >> <u64>shift) & 0xf));
  let end = hex.length;
  while (end > 1 && hex.charCodeAt(end - 1) == 0x30) end--;
  return hex.substring(0, end);
}

/** The rate for a request: the first route rule whose every given matcher matches, else the default. */
export function rateFor(config: Config, routeName: string, path: string, authority: string): f64 {
  const rules = config.routes;
  if (rules.length == 0) return config.defaultRate;
  let host = "";
  let hostComputed = false;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i];
    if (rule.routeName.length > 0 && rule.routeName != routeName) continue;
    if (rule.pathPrefix.length > 0 && !path.startsWith(rule.pathPrefix)) continue;
    if (rule.host.length > 0) {
      if (!hostComputed) {
        host = hostWithoutPort(authority);
        hostComputed = true;
      }
      if (rule.host != host) continue;
    }
    return rule.rate;
  }
  return config.defaultRate;
}

/** Lower-cased host of an :authority value, without its port (IPv6 literals keep their brackets). */
export function hostWithoutPort(authority: string): string {
  let end = authority.length;
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    if (close > 0) end = close + 1;
  } else {
    const colon = authority.lastIndexOf(":");
    if (colon >= 0) end = colon;
  }
  return asciiLowerCase(authority.substring(0, end));
}

/** True when a force rule matches the header value seen for its header (null: header absent). */
export function forceRuleMatches(rule: ForceRule, value: string | null): bool {
  if (value === null) return false;
  return !rule.hasValue || rule.value == value;
}

export { RouteRule };
