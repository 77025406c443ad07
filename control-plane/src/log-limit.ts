// Repeated identical warnings and errors are logged once per window, then with a count: a disk
// that refuses every write must not turn into thousands of identical lines a second (the count is
// what an operator needs, and the log pipeline stays usable), the way klog's and Prometheus's
// callers rate-limit their repeated errors. Other levels pass through untouched.
import { createHash } from "node:crypto";

/** Longest record text remembered as it is; a longer one is remembered by its SHA-256. */
export const MAX_KEY_CHARS = 1024;
/** Distinct records remembered by default. */
export const DEFAULT_MAX_KEYS = 256;
// What V8 (Node 20, x64) takes for a remembered record, rounded up from a heap measurement
// (test/control-plane/log-limit-memory.test.ts): its map slot and entry, and its key's header and
// characters (two bytes each past Latin-1).
/** The estimated heap bytes of one remembered record, at most. */
export const REMEMBERED_RECORD_BYTES = 200 + 2 * MAX_KEY_CHARS;

/** Options of {@link limitRepeats}. */
export interface RepeatLimit {
  /** An identical record is logged at most once per window; the next one after it carries the count. */
  windowMs?: number;
  nowMs?: () => number;
  /** Distinct records remembered (the oldest forgotten first). */
  maxKeys?: number;
}

/** Wraps `log` so identical warn/error records repeat at most once per window, then with `repeated: <suppressed count>`. */
export function limitRepeats(log: (record: object) => void, options: RepeatLimit = {}): (record: object) => void {
  const windowMs = options.windowMs ?? 10_000;
  const nowMs = options.nowMs ?? Date.now;
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  const seen = new Map<string, { sinceMs: number; suppressed: number }>();
  return (record: object) => {
    const level = (record as { level?: unknown }).level;
    if (level !== "warn" && level !== "error") {
      log(record);
      return;
    }
    const text = JSON.stringify(record);
    const key = text.length <= MAX_KEY_CHARS ? text : createHash("sha256").update(text).digest("base64");
    const now = nowMs();
    const entry = seen.get(key);
    if (entry !== undefined && now - entry.sinceMs < windowMs) {
      entry.suppressed += 1;
      return;
    }
    seen.delete(key);
    if (seen.size >= maxKeys) seen.delete(seen.keys().next().value as string);
    seen.set(key, { sinceMs: now, suppressed: 0 });
    log(entry !== undefined && entry.suppressed > 0 ? { ...record, repeated: entry.suppressed, repeatedOverMs: now - entry.sinceMs } : record);
  };
}
