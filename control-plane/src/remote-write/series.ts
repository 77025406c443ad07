// The unit remote write ships: one series (sorted, unique labels) and its samples in time order.
import type { Labels } from "../scrape/sample.js";

/** One sample; `stale` marks a Prometheus staleness marker (the value is then ignored). */
export interface WriteSample {
  value: number;
  timestampMs: number;
  stale?: boolean;
}

/** One series: labels as flat name/value pairs sorted by name, `__name__` included. */
export interface WriteSeries {
  labels: Labels;
  samples: WriteSample[];
}

/** Why a label set cannot be sent as it is. */
export type LabelProblem = "missing_name" | "duplicate_label" | "empty_label_name";

/**
 * Sorts labels by name and drops empty values (remote write 1.0 forbids them; an empty value
 * means "absent" in Prometheus anyway). Returns the problem instead when the set cannot be sent.
 */
export function normalizeLabels(labels: Labels): Labels | LabelProblem {
  const pairs: [string, string][] = [];
  let hasName = false;
  for (let i = 0; i < labels.length; i += 2) {
    const n = labels[i]!;
    const v = labels[i + 1]!;
    if (n === "") return "empty_label_name";
    if (v === "") continue;
    if (n === "__name__") hasName = true;
    pairs.push([n, v]);
  }
  if (!hasName) return "missing_name";
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: Labels = [];
  for (let i = 0; i < pairs.length; i++) {
    if (i > 0 && pairs[i]![0] === pairs[i - 1]![0]) return "duplicate_label";
    out.push(pairs[i]![0], pairs[i]![1]);
  }
  return out;
}

/** What seriesKey puts between names and values. */
export const SERIES_KEY_SEPARATOR = "\xff";

/**
 * A stable key for a sorted label set, one per set: its names and values joined by the separator.
 * U+00FF is valid in a label value, so a set holding it would join ambiguously (a scraped value
 * "x\xffb\xffy" of label a, and a="x" with b="y", would be one key, one series, each overwriting
 * the other's samples); such a set is keyed by the separator and its JSON instead. No joined key
 * starts with the separator (its first name is not empty, and holds no separator), and JSON is one
 * text per set, so no two sets share a key.
 */
export function seriesKey(labels: Labels): string {
  return keySplitsBack(labels) ? labels.join(SERIES_KEY_SEPARATOR) : SERIES_KEY_SEPARATOR + JSON.stringify(labels);
}

/** Whether seriesKey joins `labels` and labelsOfKey gives them back: no name or value holds the separator. */
export function keySplitsBack(labels: Labels): boolean {
  for (const x of labels) if (x.includes(SERIES_KEY_SEPARATOR)) return false;
  return true;
}

/** The labels of a key made by seriesKey from labels for which keySplitsBack holds. */
export function labelsOfKey(key: string): Labels {
  return key.split(SERIES_KEY_SEPARATOR);
}
