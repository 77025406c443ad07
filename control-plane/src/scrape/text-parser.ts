// Streaming parser for the Prometheus text exposition format (version 0.0.4). A hand scanner over
// char codes: one pass per line, no regular expression, label values sliced straight out of the
// input when they hold no escape. A malformed line is reported with its number and reason and the
// rest of the scrape is kept, as Prometheus itself cannot (it drops the whole scrape).
import type { FamilyMetadata, Labels, MetricType, ParsedSample } from "./sample.js";

/** A line the parser skipped, with its 1-based number and why. */
export interface ParseError {
  line: number;
  reason: string;
}

/** Everything one exposition yielded. */
export interface ParseResult {
  samples: ParsedSample[];
  families: Map<string, FamilyMetadata>;
  errors: ParseError[];
}

const SPACE = 32;
const TAB = 9;
const HASH = 35;
const LBRACE = 123;
const RBRACE = 125;
const EQUALS = 61;
const QUOTE = 34;
const COMMA = 44;
const BACKSLASH = 92;
const CR = 13;

const TYPES: Record<string, MetricType> = {
  counter: "counter",
  gauge: "gauge",
  histogram: "histogram",
  summary: "summary",
  untyped: "untyped",
  // OpenMetrics spells "untyped" as "unknown"; accept it from exporters that mix the two.
  unknown: "untyped",
};

function isNameStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c === 58;
}
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 58;
}
function isLabelStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}
function isLabelChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

/** Parses a sample value the way Go's ParseFloat does for the forms exporters emit. */
export function parseValue(tok: string): number | undefined {
  const len = tok.length;
  if (len === 0) return undefined;
  let plain = true;
  for (let i = 0; i < len; i++) {
    const c = tok.charCodeAt(i);
    // digits . + - e E
    if (!((c >= 48 && c <= 57) || c === 46 || c === 43 || c === 45 || c === 101 || c === 69)) {
      plain = false;
      break;
    }
  }
  if (plain) {
    const n = Number(tok);
    return Number.isNaN(n) ? undefined : n;
  }
  const lower = tok.toLowerCase();
  if (lower === "nan") return NaN;
  if (lower === "+inf" || lower === "inf" || lower === "+infinity" || lower === "infinity") return Infinity;
  if (lower === "-inf" || lower === "-infinity") return -Infinity;
  return undefined;
}

function unescapeHelp(s: string): string {
  if (s.indexOf("\\") < 0) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\" && i + 1 < s.length) {
      const n = s[i + 1]!;
      if (n === "\\") { out += "\\"; i++; continue; }
      if (n === "n") { out += "\n"; i++; continue; }
    }
    out += c;
  }
  return out;
}

/**
 * Incremental parser: `push` chunks as they arrive (a line may straddle chunks), then `end`.
 * Samples go to `onSample` as soon as their line is complete, so a large scrape never has to be
 * held twice.
 */
export class TextParser {
  readonly families = new Map<string, FamilyMetadata>();
  readonly errors: ParseError[] = [];
  private pending = "";
  private lineNo = 0;
  private prevName = "";
  private prevLabels: Labels = [];
  private readonly scratch: Labels = [];
  // Per label position of the previous/current line: 1 when its value was taken verbatim (no
  // escapes), so the string can be matched byte for byte against the next line.
  private prevPlain = new Uint8Array(64);
  private plain = new Uint8Array(64);
  // Position of the next backslash in the current text (>>> 0 turns "none" into 2^32 - 1).
  private nextBackslash = -1;

  constructor(private readonly onSample: (s: ParsedSample) => void) {}

  /** Feeds the next chunk of the body. */
  push(chunk: string): void {
    const text = this.pending.length > 0 ? this.pending + chunk : chunk;
    this.nextBackslash = -1;
    let start = 0;
    for (;;) {
      const nl = text.indexOf("\n", start);
      if (nl < 0) break;
      this.line(text, start, nl);
      start = nl + 1;
    }
    this.pending = start < text.length ? text.slice(start) : "";
  }

  /** Parses a trailing line without a newline and returns the collected metadata and errors. */
  end(): void {
    if (this.pending.length > 0) {
      const t = this.pending;
      this.pending = "";
      this.nextBackslash = -1;
      this.line(t, 0, t.length);
    }
  }

  private fail(reason: string): void {
    this.errors.push({ line: this.lineNo, reason });
  }

  private line(s: string, start: number, end: number): void {
    this.lineNo++;
    if (end > start && s.charCodeAt(end - 1) === CR) end--;
    let i = start;
    while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
    if (i === end) return;
    if (s.charCodeAt(i) === HASH) {
      this.comment(s, i + 1, end);
      return;
    }
    this.sample(s, i, end);
  }

  private comment(s: string, i: number, end: number): void {
    while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
    const kwStart = i;
    while (i < end && s.charCodeAt(i) !== SPACE && s.charCodeAt(i) !== TAB) i++;
    const kw = s.slice(kwStart, i);
    const isHelp = kw === "HELP";
    if (!isHelp && kw !== "TYPE") return; // a plain comment, or "# EOF" from OpenMetrics output
    while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
    const nameStart = i;
    if (i >= end || !isNameStart(s.charCodeAt(i))) {
      this.fail(`# ${kw} without a valid metric name`);
      return;
    }
    while (i < end && isNameChar(s.charCodeAt(i))) i++;
    const name = s.slice(nameStart, i);
    if (i < end && s.charCodeAt(i) !== SPACE && s.charCodeAt(i) !== TAB) {
      this.fail(`# ${kw}: invalid character in metric name "${s.slice(nameStart, i + 1)}"`);
      return;
    }
    // One separator after the name; HELP text keeps any further leading space as written.
    if (i < end) i++;
    const rest = s.slice(i, end);
    let meta = this.families.get(name);
    if (isHelp) {
      if (meta) meta.help = unescapeHelp(rest);
      else this.families.set(name, { type: "untyped", help: unescapeHelp(rest) });
    } else {
      const type = TYPES[rest.trim()];
      if (type === undefined) {
        this.fail(`# TYPE ${name}: unknown type "${rest.trim()}"`);
        return;
      }
      if (meta) meta.type = type;
      else {
        meta = { type };
        this.families.set(name, meta);
      }
    }
  }

  private sample(s: string, i: number, end: number): void {
    const nameStart = i;
    if (!isNameStart(s.charCodeAt(i))) {
      this.fail(`invalid metric name starting with "${s[i]}"`);
      return;
    }
    // Consecutive series of a family repeat their name and most label names and values: reusing
    // the previous line's strings when the bytes match saves most allocations (and GC) of a scrape.
    const prev = this.prevLabels;
    let name: string;
    const pn = this.prevName;
    if (pn.length > 0 && s.startsWith(pn, i) && !isNameChar(s.charCodeAt(i + pn.length))) {
      name = pn;
      i += pn.length;
    } else {
      i++;
      while (i < end && isNameChar(s.charCodeAt(i))) i++;
      name = s.slice(nameStart, i);
      this.prevName = name;
    }
    while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
    // Labels collect in a reused scratch array and are copied out once at their final size, instead
    // of a fresh array growing 4 -> 8 -> 16 -> 32 for a dcgm-exporter line.
    const labels = this.scratch;
    labels.length = 0;
    if (i < end && s.charCodeAt(i) === LBRACE) {
      i++;
      for (;;) {
        while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
        if (i >= end) {
          this.fail(`${name}: unterminated label set`);
          return;
        }
        if (s.charCodeAt(i) === RBRACE) {
          i++;
          break;
        }
        const lnStart = i;
        const k = labels.length;
        let labelName = prev[k];
        if (labelName !== undefined && s.startsWith(labelName, i) && !isLabelChar(s.charCodeAt(i + labelName.length))) {
          i += labelName.length;
        } else {
          if (!isLabelStart(s.charCodeAt(i))) {
            this.fail(`${name}: invalid label name starting with "${s[i]}"`);
            return;
          }
          i++;
          while (i < end && isLabelChar(s.charCodeAt(i))) i++;
          labelName = s.slice(lnStart, i);
        }
        while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
        if (i >= end || s.charCodeAt(i) !== EQUALS) {
          this.fail(`${name}: expected "=" after label name "${labelName}"`);
          return;
        }
        i++;
        while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
        if (i >= end || s.charCodeAt(i) !== QUOTE) {
          this.fail(`${name}: expected '"' to open the value of label "${labelName}"`);
          return;
        }
        i++;
        const vStart = i;
        let value: string;
        const pv = prev[k + 1];
        if (pv !== undefined && this.prevPlain[k >> 1] === 1 && s.startsWith(pv, i) && s.charCodeAt(i + pv.length) === QUOTE) {
          value = pv;
          i += pv.length;
          this.plain[k >> 1] = 1;
        } else {
          let q = s.indexOf('"', i);
          if (this.nextBackslash < i) this.nextBackslash = s.indexOf("\\", i) >>> 0; // -1 -> never
          if (this.nextBackslash < q) {
            // Escapes present: walk char by char so an escaped quote does not end the value.
            while (i < end) {
              const c = s.charCodeAt(i);
              if (c === QUOTE) break;
              i += c === BACKSLASH ? 2 : 1;
            }
            q = i;
            if (q >= end) {
              this.fail(`${name}: unterminated value of label "${labelName}"`);
              return;
            }
            value = unescapeLabelValue(s, vStart, q);
            this.plain[k >> 1] = 0;
          } else {
            if (q < 0 || q >= end) {
              this.fail(`${name}: unterminated value of label "${labelName}"`);
              return;
            }
            value = s.slice(vStart, q);
            this.plain[k >> 1] = 1;
          }
          i = q;
        }
        i++; // closing quote
        for (let k = 0; k < labels.length; k += 2) {
          if (labels[k] === labelName) {
            this.fail(`${name}: duplicate label "${labelName}"`);
            return;
          }
        }
        labels.push(labelName, value);
        while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
        if (i < end && s.charCodeAt(i) === COMMA) {
          i++;
          continue;
        }
        if (i < end && s.charCodeAt(i) === RBRACE) {
          i++;
          break;
        }
        this.fail(i >= end ? `${name}: unterminated label set` : `${name}: expected "," or "}" after the value of label "${labelName}"`);
        return;
      }
      while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
    }
    const vStart = i;
    // Integers (most counters, gauges and bucket counts) are read in the scan itself: exact below
    // 2^53 (15 digits here), and no token string to allocate.
    let int = 0;
    let digitsOnly = true;
    while (i < end) {
      const c = s.charCodeAt(i);
      if (c === SPACE || c === TAB) break;
      if (c >= 48 && c <= 57) int = int * 10 + (c - 48);
      else digitsOnly = false;
      i++;
    }
    if (vStart === i) {
      this.fail(`${name}: missing value`);
      return;
    }
    let value: number | undefined;
    if (digitsOnly && i - vStart <= 15) value = int;
    else {
      const valueTok = s.slice(vStart, i);
      value = parseValue(valueTok);
      if (value === undefined) {
        this.fail(`${name}: invalid value "${valueTok}"`);
        return;
      }
    }
    while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
    let timestampMs: number | undefined;
    if (i < end) {
      const tStart = i;
      while (i < end && s.charCodeAt(i) !== SPACE && s.charCodeAt(i) !== TAB) i++;
      const tTok = s.slice(tStart, i);
      if (!isInteger(tTok)) {
        this.fail(`${name}: invalid timestamp "${tTok}"`);
        return;
      }
      timestampMs = Number(tTok);
      while (i < end && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === TAB)) i++;
      if (i < end) {
        this.fail(`${name}: unexpected text after the timestamp`);
        return;
      }
    }
    const own = labels.slice();
    this.prevLabels = own;
    const swap = this.prevPlain;
    this.prevPlain = this.plain;
    this.plain = swap;
    const sample: ParsedSample =
      timestampMs === undefined ? { name, labels: own, value } : { name, labels: own, value, timestampMs };
    this.onSample(sample);
  }
}

function isInteger(tok: string): boolean {
  let i = tok.charCodeAt(0) === 45 ? 1 : 0;
  if (i >= tok.length) return false;
  for (; i < tok.length; i++) {
    const c = tok.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function unescapeLabelValue(s: string, start: number, end: number): string {
  let out = "";
  let from = start;
  for (let i = start; i < end; i++) {
    if (s.charCodeAt(i) !== BACKSLASH || i + 1 >= end) continue;
    const n = s.charCodeAt(i + 1);
    const rep = n === BACKSLASH ? "\\" : n === QUOTE ? '"' : n === 110 ? "\n" : undefined;
    if (rep === undefined) {
      i++;
      continue; // an unknown escape is kept as written
    }
    out += s.slice(from, i) + rep;
    i++;
    from = i + 1;
  }
  return out + s.slice(from, end);
}

/** Parses a whole exposition held in memory. */
export function parseText(text: string): ParseResult {
  const samples: ParsedSample[] = [];
  const p = new TextParser((s) => samples.push(s));
  p.push(text);
  p.end();
  return { samples, families: p.families, errors: p.errors };
}

/** The family a series name belongs to, given the declared families (`foo_bucket` -> `foo`). */
export function familyOf(name: string, families: Map<string, FamilyMetadata>): string {
  if (families.has(name)) return name;
  for (const suffix of ["_bucket", "_count", "_sum", "_total", "_created"]) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      if (families.has(base)) return base;
    }
  }
  return name;
}
