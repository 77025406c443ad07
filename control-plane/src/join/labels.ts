// Label hygiene for joined series: valid names, no empty values, bounded value length, one
// spelling of the hostname label (the cap on distinct series is the series gate's).
import type { Labels } from "../scrape/sample.js";

/** Longest label value kept; longer ones are cut (a label is an identity, not a payload). */
export const MAX_LABEL_VALUE_LENGTH = 256;

const isNameChar = (c: number, first: boolean): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || (!first && c >= 48 && c <= 57);

/** Makes a valid Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, other characters become "_". */
export function sanitizeLabelName(name: string): string {
  // Every forwarded series passes here, and nearly every name is valid already: it is returned as
  // it is, with no new string.
  let i = 0;
  while (i < name.length && isNameChar(name.charCodeAt(i), i === 0)) i++;
  if (i === name.length) return name === "" ? "_" : name;
  let out = name.slice(0, i);
  for (; i < name.length; i++) out += isNameChar(name.charCodeAt(i), i === 0) ? name[i] : "_";
  return out;
}

/** Label sets up to this many names are checked for a repeat by a scan, larger ones with a Set. */
const SCANNED_NAMES = 32;

/** Whether `name` is among the names (even indexes) of `labels`. */
function hasName(labels: Labels, name: string): boolean {
  for (let i = 0; i < labels.length; i += 2) if (labels[i] === name) return true;
  return false;
}

/**
 * Returns a cleaned copy: empty values dropped, names sanitised, `Hostname` (older dcgm-exporter)
 * renamed `hostname` (newer), values cut to MAX_LABEL_VALUE_LENGTH, later duplicates dropped.
 */
export function cleanLabels(labels: Labels): Labels {
  const out: Labels = [];
  // A Set for each series was most of what this cost; a scan of the names kept so far is cheaper for real label sets.
  const seen = labels.length > 2 * SCANNED_NAMES ? new Set<string>() : undefined;
  for (let i = 0; i < labels.length; i += 2) {
    const raw = labels[i]!;
    let v = labels[i + 1]!;
    if (v === "") continue;
    const n = raw === "Hostname" ? "hostname" : sanitizeLabelName(raw);
    if (seen === undefined ? hasName(out, n) : seen.has(n)) continue;
    seen?.add(n);
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
