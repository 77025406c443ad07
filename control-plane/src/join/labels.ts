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

/** Whether `name` is among the first `n` names (even indexes below `n`) of `labels`. */
function hasName(labels: Labels, n: number, name: string): boolean {
  for (let i = 0; i < n; i += 2) if (labels[i] === name) return true;
  return false;
}

/**
 * Where label sets are put together, then copied out at their size: every forwarded series of every
 * scrape passes here, and an array grown by pushes was most of what enrich allocated.
 */
const scratch: string[] = [];

/**
 * Writes the cleaned pairs of `labels` into `out` from index 0 (see cleanLabels) and returns how
 * many elements it wrote; `out`'s elements past that are left as they were.
 */
function cleanInto(labels: Labels, out: string[]): number {
  let n = 0;
  // A Set for each series was most of what this cost; a scan of the names kept so far is cheaper for real label sets.
  const seen = labels.length > 2 * SCANNED_NAMES ? new Set<string>() : undefined;
  for (let i = 0; i < labels.length; i += 2) {
    const raw = labels[i]!;
    let v = labels[i + 1]!;
    if (v === "") continue;
    const name = raw === "Hostname" ? "hostname" : sanitizeLabelName(raw);
    if (seen === undefined ? hasName(out, n, name) : seen.has(name)) continue;
    seen?.add(name);
    if (v.length > MAX_LABEL_VALUE_LENGTH) v = v.slice(0, MAX_LABEL_VALUE_LENGTH);
    out[n++] = name;
    out[n++] = v;
  }
  return n;
}

/**
 * Returns a cleaned copy: empty values dropped, names sanitised, `Hostname` (older dcgm-exporter)
 * renamed `hostname` (newer), values cut to MAX_LABEL_VALUE_LENGTH, later duplicates dropped.
 */
export function cleanLabels(labels: Labels): Labels {
  return scratch.slice(0, cleanInto(labels, scratch));
}

/** Sets (or replaces, where it is) label `name` among the first `n` elements of `labels`; returns the new count. */
function setIn(labels: string[], n: number, name: string, value: string): number {
  for (let i = 0; i < n; i += 2) {
    if (labels[i] === name) {
      labels[i + 1] = value;
      return n;
    }
  }
  labels[n] = name;
  labels[n + 1] = value;
  return n + 2;
}

/**
 * `labels` cleaned (cleanLabels), then each pair of `extra` set over them in order (a name already
 * there keeps its place and takes the value; a new one is added), then `__name__` added: what enrich
 * ships, in one array of its size.
 */
export function enrichedLabels(labels: Labels, extra: Labels, name: string): Labels {
  const out = scratch;
  let n = cleanInto(labels, out);
  for (let i = 0; i < extra.length; i += 2) n = setIn(out, n, extra[i]!, extra[i + 1]!);
  out[n] = "__name__";
  out[n + 1] = name;
  return out.slice(0, n + 2);
}
