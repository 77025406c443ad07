// Label hygiene for joined series: valid names, no empty values, bounded value length, one
// spelling of the hostname label (the cap on distinct series is the series gate's).
import type { Labels } from "../scrape/sample.js";

/** Longest label value kept; longer ones are cut (a label is an identity, not a payload). */
export const MAX_LABEL_VALUE_LENGTH = 256;

/** Makes a valid Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, other characters become "_". */
export function sanitizeLabelName(name: string): string {
  let out = "";
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const ok = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || (i > 0 && c >= 48 && c <= 57);
    out += ok ? name[i] : "_";
  }
  return out === "" ? "_" : out;
}

/**
 * Returns a cleaned copy: empty values dropped, names sanitised, `Hostname` (older dcgm-exporter)
 * renamed `hostname` (newer), values cut to MAX_LABEL_VALUE_LENGTH, later duplicates dropped.
 */
export function cleanLabels(labels: Labels, drop: ReadonlySet<string> = new Set()): Labels {
  const out: Labels = [];
  const seen = new Set<string>();
  for (let i = 0; i < labels.length; i += 2) {
    const raw = labels[i]!;
    let v = labels[i + 1]!;
    if (v === "" || drop.has(raw)) continue;
    const n = raw === "Hostname" ? "hostname" : sanitizeLabelName(raw);
    if (seen.has(n)) continue;
    seen.add(n);
    if (v.length > MAX_LABEL_VALUE_LENGTH) v = v.slice(0, MAX_LABEL_VALUE_LENGTH);
    out.push(n, v);
  }
  return out;
}

/** Sets (or replaces) label `name` in place. */
export function setLabel(labels: Labels, name: string, value: string): void {
  for (let i = 0; i < labels.length; i += 2) {
    if (labels[i] === name) {
      labels[i + 1] = value;
      return;
    }
  }
  labels.push(name, value);
}
