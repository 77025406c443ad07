// Repeated identical warnings and errors are logged once per window, then with a count: a disk
// that refuses every write must not turn into thousands of identical lines a second (the count is
// what an operator needs, and the log pipeline stays usable), the way klog's and Prometheus's
// callers rate-limit their repeated errors. Other levels pass through untouched.

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
  const maxKeys = options.maxKeys ?? 256;
  const seen = new Map<string, { sinceMs: number; suppressed: number }>();
  return (record: object) => {
    const level = (record as { level?: unknown }).level;
    if (level !== "warn" && level !== "error") {
      log(record);
      return;
    }
    const key = JSON.stringify(record);
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
