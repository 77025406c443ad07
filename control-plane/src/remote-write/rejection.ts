// What a receiver's 400 says, read into a bounded set of reasons for the drop counter. A 1.0 request
// answered 400 by Prometheus's receiver was refused as a whole: the handler appends its samples in one
// appender and rolls all of them back on the first sample the TSDB refuses (out of order, out of
// bounds, a different value at a timestamp it has, too old), answering 400 with that error's text so
// the sender does not retry (prometheus/prometheus@002042c9 storage/remote/write_handler.go,
// writeHandler.ServeHTTP and writeHandler.write; 2.42, installed here, does the same). So the sender
// splits the request (split.ts). A 2.0 request is written partly: writeV2 commits the rest, answers
// 400 and says how many samples it stored in X-Prometheus-Remote-Write-Samples-Written, so there is
// nothing to split.

/** Why a receiver refused samples; `http_400` when its text names none of these. */
export type RejectionReason = "out_of_order" | "duplicate_sample" | "out_of_bounds" | "too_old" | "invalid_labels" | "http_400";

// Prometheus's storage errors (storage/interface.go ErrOutOfOrderSample, ErrDuplicateSampleForTimestamp,
// ErrOutOfBounds, ErrTooOldSample) and Mimir's error ids (err-mimir-sample-*), matched on lower case.
const PATTERNS: readonly [RegExp, RejectionReason][] = [
  [/out of order sample|sample-out-of-order|sample timestamp out of order/, "out_of_order"],
  [/duplicate sample for timestamp|sample-duplicate-timestamp/, "duplicate_sample"],
  [/too old sample|sample-timestamp-too-old/, "too_old"],
  [/out of bounds|sample-timestamp-too-new/, "out_of_bounds"],
  [/invalid metric name|invalid label|duplicate label|missing-metric-name|label-invalid/, "invalid_labels"],
];

/** Most bytes of a 400's body read for its reason: the error text comes first; the rest is never kept. */
export const REJECTION_TEXT_BYTES = 4096;

/** The reason a 400's body text gives (the first that matches), or `http_400`. */
export function rejectionReason(text: string): RejectionReason {
  const t = text.slice(0, REJECTION_TEXT_BYTES).toLowerCase();
  for (const [re, reason] of PATTERNS) if (re.test(t)) return reason;
  return "http_400";
}
