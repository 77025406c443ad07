// Envoy's custom wasm metrics as the test host keeps them: stored as `wasmcustom.<name>`, labelled by
// Istio's extraStatTags convention (`TAG=.=VALUE;.;` inside the name), rendered like /stats/prometheus.
import { AbiViolation } from "./errors.js";
import { MetricType } from "./abi.js";
import { FILTER_STAT_TAGS } from "../filter/catalogue.js";

/** The prefix Envoy gives every metric a wasm module defines (a registered custom stat namespace). */
export const WASM_CUSTOM_PREFIX = "wasmcustom.";

/** Envoy's default histogram bucket bounds. */
export const ENVOY_DEFAULT_BUCKETS: readonly number[] = [
  0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000,
];

/** The tags the project's filter encodes into its stat names (Istio extraStatTags), from its catalogue. */
export const DEFAULT_STAT_TAGS: readonly string[] = FILTER_STAT_TAGS;

type Kind = "counter" | "gauge" | "histogram";
const KIND_OF_TYPE: Record<number, Kind> = { [MetricType.Counter]: "counter", [MetricType.Gauge]: "gauge", [MetricType.Histogram]: "histogram" };

interface Metric {
  readonly id: number;
  readonly kind: Kind;
  readonly name: string; // as the module defined it (no wasmcustom. prefix)
  value: number;
  samples: number[]; // every recorded value, up to maxRetainedSamples
  dropped: number; // samples recorded past that cap (counted in buckets, sum and count only)
  bucketCounts: number[]; // per bucket bound, non-cumulative; the last slot is above every bound
  bins: Map<number, { left: number; width: number; count: number }>; // Envoy's circllhist bins, by left edge
  sum: number;
  count: number;
}

/** One stat after tag extraction: its tag-extracted name and its tags in extraction order. */
export interface ExtractedStat {
  extractedName: string;
  tags: Array<[string, string]>;
}

/** Istio's extraStatTags regex for one tag, as its bootstrap writes it: `(TAG=\.=(.*?);\.;)`. */
export function istioTagRegex(tag: string): RegExp {
  return new RegExp(`(${tag}=\\.=(.*?);\\.;)`, "d");
}

/**
 * Envoy's tag extraction over the full stat name: each extractor searches the original name; group 1
 * is the text removed from the name, group 2 the tag value; removals are merged at the end.
 */
export function extractTags(fullName: string, tagRegexes: ReadonlyArray<readonly [string, RegExp]>): ExtractedStat {
  const tags: Array<[string, string]> = [];
  let removed: Array<[number, number]> | undefined;
  for (const [tag, re] of tagRegexes) {
    const m = re.exec(fullName);
    if (!m || m[1] === undefined) continue;
    const start = m.indices?.[1]?.[0] ?? fullName.indexOf(m[1], m.index);
    tags.push([tag, m[2] ?? m[1]]);
    (removed ??= []).push([start, start + m[1].length]);
  }
  if (!removed) return { extractedName: fullName, tags };
  removed.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (const [s, e] of removed) {
    if (s > at) out += fullName.slice(at, s);
    at = Math.max(at, e);
  }
  out += fullName.slice(at);
  return { extractedName: out, tags };
}

// Envoy's StatName ordering compares dot-separated tokens one by one.
function compareStatNames(a: string, b: string): number {
  const ta = a.split(".");
  const tb = b.split(".");
  for (let i = 0; i < Math.min(ta.length, tb.length); i++) {
    if (ta[i] !== tb[i]) return ta[i]! < tb[i]! ? -1 : 1;
  }
  return ta.length - tb.length;
}

/** Prometheus text-format escaping of a label value. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

const sanitize = (s: string): string => s.replace(/[^a-zA-Z0-9_]/g, "_");

/** Envoy's PrometheusStatsFormatter::metricName: custom namespace stripped, else `envoy_` added. */
export function prometheusMetricName(extractedName: string): string | undefined {
  if (extractedName.startsWith(WASM_CUSTOM_PREFIX)) {
    const name = sanitize(extractedName.slice(WASM_CUSTOM_PREFIX.length));
    return name === "" || /^[0-9]/.test(name) ? undefined : name;
  }
  return `envoy_${sanitize(extractedName)}`;
}

/**
 * The circllhist bin Envoy puts an integer sample in (hist_insert_intscale(v, 0)): two significant
 * digits, [left, left + width); 0 has its own zero-width bin.
 */
export function envoyBin(v: number): [left: number, width: number] {
  const left = envoyBinLeft(v);
  return [left, binWidth];
}

/** The width of the bin envoyBinLeft last placed a value in. */
let binWidth = 0;

/** The left edge of a value's bin (and its width in binWidth), without allocating: histograms record on every request. */
function envoyBinLeft(v: number): number {
  if (v === 0) {
    binWidth = 0; // 0 has its own zero-width bin
    return 0;
  }
  let val = v;
  let exp = 1;
  if (val < 10) {
    val *= 10;
    exp -= 1;
  }
  while (val >= 100) {
    val = Math.floor(val / 10);
    exp++;
  }
  const p = 10 ** exp;
  binWidth = p / 10;
  return (val / 10) * p;
}

function sortedBins(m: Metric): Array<{ left: number; width: number; count: number }> {
  return [...m.bins.values()].sort((a, b) => a.left - b.left);
}

// hist_approx_count_below: the samples of every bin whose upper edge is <= the bound.
function envoyCountsBelow(m: Metric, bounds: readonly number[]): number[] {
  const bins = sortedBins(m);
  return bounds.map((le) => {
    let n = 0;
    for (const bin of bins) {
      if (bin.left + bin.width <= le) n += bin.count;
      else break;
    }
    return n;
  });
}

function exactCountsBelow(m: Metric, bounds: readonly number[]): number[] {
  let cumulative = 0;
  return bounds.map((_le, b) => (cumulative += m.bucketCounts[b]!));
}

// hist_approx_sum: bin midpoints times counts, in bin order.
function envoySum(m: Metric): number {
  let sum = 0;
  for (const bin of sortedBins(m)) sum += (bin.left === 0 && bin.width === 0 ? 0 : bin.left + bin.width / 2) * bin.count;
  return sum;
}

/** fmt's `{:.32g}`, which Envoy's Prometheus output uses for bucket bounds and sums. */
export function formatG32(x: number): string {
  if (x === 0) return "0";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : x < 0 ? "-inf" : "nan";
  const exp = Math.floor(Math.log10(Math.abs(x)));
  if (exp < -4 || exp >= 32) {
    const [mant, e] = x.toExponential(31).split("e") as [string, string];
    const m = mant.includes(".") ? mant.replace(/0+$/, "").replace(/\.$/, "") : mant;
    const n = Number(e);
    return `${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const fixed = x.toFixed(Math.max(0, 31 - exp));
  return fixed.includes(".") ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
}

/** Options for a StatsStore. */
export interface StatsOptions {
  statTags?: readonly string[];
  histogramBuckets?: readonly number[];
  /**
   * "envoy" (default): buckets and sums from Envoy's circllhist bins (2 significant digits: a sample
   * counts under `le` only when its whole bin is <= le, the sum adds bin midpoints), printed with
   * Envoy's %.32g. "exact": each sample counted and summed as recorded.
   */
  histogramMode?: "envoy" | "exact";
  /** Raw histogram samples kept per histogram for histogram()/samples(), default 1,000,000. */
  maxRetainedSamples?: number;
}

/** The metrics a VM defined, with Envoy's semantics, plus the host's own counters. */
export class StatsStore {
  private readonly byId = new Map<number, Metric>();
  private readonly byName = new Map<string, Metric>();
  private readonly hostCounters = new Map<string, number>();
  private nextIndex = 1;
  private readonly tagRegexes: Array<[string, RegExp]>;
  readonly buckets: readonly number[];
  private readonly maxRetained: number;
  private readonly mode: "envoy" | "exact";

  constructor(opts: StatsOptions = {}) {
    this.tagRegexes = (opts.statTags ?? DEFAULT_STAT_TAGS).map((t) => [t, istioTagRegex(t)]);
    this.buckets = opts.histogramBuckets ?? ENVOY_DEFAULT_BUCKETS;
    this.maxRetained = opts.maxRetainedSamples ?? 1_000_000;
    this.mode = opts.histogramMode ?? "envoy";
  }

  /**
   * proxy_define_metric (Context::defineMetric): every definition gets the next id of its type (the
   * type in the low 2 bits), the same name the same stat.
   */
  define(type: number, name: string): number {
    const kind = KIND_OF_TYPE[type];
    if (kind === undefined) throw new AbiViolation(`proxy_define_metric: metric type ${type} is not 0 (counter), 1 (gauge) or 2 (histogram)`);
    if (name.length === 0) throw new AbiViolation("proxy_define_metric: empty metric name");
    const id = (this.nextIndex++ << 2) | type;
    const existing = this.byName.get(name);
    if (existing) {
      if (existing.kind !== kind) throw new AbiViolation(`proxy_define_metric: "${name}" is already defined as a ${existing.kind}, not a ${kind}`);
      this.byId.set(id, existing);
      return id;
    }
    const m: Metric = { id, kind, name, value: 0, samples: [], dropped: 0, bucketCounts: new Array<number>(this.buckets.length + 1).fill(0), bins: new Map(), sum: 0, count: 0 };
    this.byId.set(id, m);
    this.byName.set(name, m);
    return id;
  }

  private metric(id: number, call: string): Metric {
    const m = this.byId.get(id);
    if (!m) throw new AbiViolation(`${call}: unknown metric id ${id}`);
    return m;
  }

  /** proxy_increment_metric: counters need delta > 0; gauges take any delta but may not go below 0; histograms refuse. */
  increment(id: number, delta: bigint): void {
    const m = this.metric(id, "proxy_increment_metric");
    if (m.kind === "histogram") throw new AbiViolation(`proxy_increment_metric on histogram "${m.name}": histograms take proxy_record_metric only`);
    if (m.kind === "counter" && delta <= 0n) throw new AbiViolation(`proxy_increment_metric on counter "${m.name}" with delta ${delta}: Envoy requires > 0`);
    const next = m.value + Number(delta);
    if (next < 0) throw new AbiViolation(`proxy_increment_metric on gauge "${m.name}" with delta ${delta} takes it below 0 (Envoy gauges are unsigned)`);
    m.value = next;
  }

  /** proxy_record_metric: histograms record, gauges are set; counters refuse. */
  record(id: number, value: bigint): void {
    const m = this.metric(id, "proxy_record_metric");
    if (m.kind === "counter") throw new AbiViolation(`proxy_record_metric on counter "${m.name}": counters take proxy_increment_metric only`);
    const v = value >= 0n ? Number(value) : Number(BigInt.asUintN(64, value));
    if (m.kind === "gauge") {
      m.value = v;
      return;
    }
    if (m.samples.length < this.maxRetained) m.samples.push(v);
    else m.dropped++;
    let b = 0;
    while (b < this.buckets.length && v > this.buckets[b]!) b++;
    m.bucketCounts[b]!++;
    m.sum += v;
    m.count++;
    const left = envoyBinLeft(v);
    const bin = m.bins.get(left);
    if (bin) bin.count++;
    else m.bins.set(left, { left, width: binWidth, count: 1 });
  }

  private retained(m: Metric): number[] {
    if (m.dropped > 0) throw new Error(`histogram "${m.name}" kept only its first ${m.samples.length} samples (${m.dropped} more recorded): raise maxRetainedSamples`);
    return [...m.samples];
  }

  /** proxy_get_metric: counters and gauges. */
  get(id: number): bigint {
    const m = this.metric(id, "proxy_get_metric");
    if (m.kind === "histogram") throw new AbiViolation(`proxy_get_metric on histogram "${m.name}": Envoy answers BadArgument`);
    return BigInt(m.value);
  }

  /** Adds to a counter the host itself keeps (rendered with Envoy's `envoy_` prefix). */
  incrementHostCounter(name: string, delta = 1): void {
    this.hostCounters.set(name, (this.hostCounters.get(name) ?? 0) + delta);
  }

  hostCounter(name: string): number | undefined {
    return this.hostCounters.get(name);
  }

  /** Every defined stat name, as the filter defined it, in definition order. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  counter(name: string): number | undefined {
    const m = this.byName.get(name);
    return m?.kind === "counter" ? m.value : undefined;
  }

  gauge(name: string): number | undefined {
    const m = this.byName.get(name);
    return m?.kind === "gauge" ? m.value : undefined;
  }

  histogram(name: string): number[] | undefined {
    const m = this.byName.get(name);
    return m?.kind === "histogram" ? this.retained(m) : undefined;
  }

  /** Tag extraction of one defined name (without the wasmcustom. prefix in the result). */
  extract(name: string): ExtractedStat {
    const e = extractTags(WASM_CUSTOM_PREFIX + name, this.tagRegexes);
    return { extractedName: e.extractedName.slice(WASM_CUSTOM_PREFIX.length), tags: e.tags };
  }

  private find(metric: string, labels: Record<string, string>, kinds: Kind[]): Metric | undefined {
    const want = Object.entries(labels);
    for (const m of this.byName.values()) {
      if (!kinds.includes(m.kind)) continue;
      const e = this.extract(m.name);
      if (e.extractedName !== metric || e.tags.length !== want.length) continue;
      if (want.every(([k, v]) => e.tags.some(([tk, tv]) => tk === k && tv === v))) return m;
    }
    return undefined;
  }

  /** Counter or gauge value after Istio tag extraction; labels must match exactly. */
  value(metric: string, labels: Record<string, string> = {}): number | undefined {
    return this.find(metric, labels, ["counter", "gauge"])?.value;
  }

  /** Histogram samples after tag extraction; labels must match exactly. */
  samples(metric: string, labels: Record<string, string> = {}): number[] | undefined {
    const m = this.find(metric, labels, ["histogram"]);
    return m ? this.retained(m) : undefined;
  }

  /**
   * Histogram samples of every series with exactly `labels` plus, optionally, `over` with any value
   * (as a query summing `over` away sees them), in definition order; [] when there is none.
   */
  samplesOver(metric: string, labels: Record<string, string>, over: string): number[] {
    const want = Object.entries(labels);
    const out: number[] = [];
    for (const m of this.byName.values()) {
      if (m.kind !== "histogram") continue;
      const e = this.extract(m.name);
      if (e.extractedName !== metric) continue;
      const rest = e.tags.filter(([k]) => k !== over);
      if (rest.length !== want.length || !want.every(([k, v]) => rest.some(([tk, tv]) => tk === k && tv === v))) continue;
      out.push(...this.retained(m));
    }
    return out;
  }

  /** Envoy's /stats/prometheus text for these stats, as an Istio sidecar prints them. */
  prometheus(): string {
    interface Row { full: string; tags: Array<[string, string]>; metric?: Metric; hostValue?: number }
    const groups: Record<Kind, Map<string, Row[]>> = { counter: new Map(), gauge: new Map(), histogram: new Map() };
    const add = (kind: Kind, full: string, row: Row): void => {
      const e = extractTags(full, this.tagRegexes);
      row.tags = e.tags;
      const list = groups[kind].get(e.extractedName);
      if (list) list.push(row);
      else groups[kind].set(e.extractedName, [row]);
    };
    for (const m of this.byName.values()) add(m.kind, WASM_CUSTOM_PREFIX + m.name, { full: WASM_CUSTOM_PREFIX + m.name, tags: [], metric: m });
    for (const [name, v] of this.hostCounters) add("counter", name, { full: name, tags: [], hostValue: v });

    const fmtTags = (tags: Array<[string, string]>): string => tags.map(([k, v]) => `${sanitize(k)}="${escapeLabelValue(v)}"`).join(",");
    let out = "";
    for (const kind of ["counter", "gauge", "histogram"] as const) {
      const names = [...groups[kind].keys()].sort(compareStatNames);
      for (const extracted of names) {
        const promName = prometheusMetricName(extracted);
        if (promName === undefined) continue;
        out += `# TYPE ${promName} ${kind}\n`;
        const rows = groups[kind].get(extracted)!.sort((a, b) => compareStatNames(a.full, b.full));
        for (const row of rows) {
          const tags = fmtTags(row.tags);
          if (kind !== "histogram") {
            out += `${promName}{${tags}} ${row.metric ? row.metric.value : row.hostValue}\n`;
            continue;
          }
          const m = row.metric!;
          const histTags = tags === "" ? "" : `${tags},`;
          const counts = this.mode === "envoy" ? envoyCountsBelow(m, this.buckets) : exactCountsBelow(m, this.buckets);
          this.buckets.forEach((le, b) => {
            out += `${promName}_bucket{${histTags}le="${formatG32(le)}"} ${counts[b]}\n`;
          });
          out += `${promName}_bucket{${histTags}le="+Inf"} ${m.count}\n`;
          out += `${promName}_sum{${tags}} ${formatG32(this.mode === "envoy" ? envoySum(m) : m.sum)}\n`;
          out += `${promName}_count{${tags}} ${m.count}\n`;
        }
        out += "\n";
      }
    }
    return out;
  }
}
