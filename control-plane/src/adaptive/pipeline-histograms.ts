// The windows live tail-keep thresholds are computed from (live-thresholds.ts), fed by the control
// plane's own metrics pipeline: each joined Envoy batch carries the filter's cumulative
// tokentrace_llm_duration_ms and tokentrace_llm_ttft_ms buckets per (route, model); a target's
// window is its latest scrape minus its scrape from about `windowMs` earlier (what
// increase(...[window]) would see), and a policy's windows are those of the targets in its
// namespace, summed per (route, model) bound. On a waypoint the series also carry pod_ip, and
// duration and TTFT carry the filter's length class (output_length, input_length): they are summed
// over both, since thresholds are per route and model. A target not scraped for `maxAgeMs` no
// longer counts.
import { counterDelta } from "../join/joiner.js";
import { labelValue } from "../scrape/sample.js";
import { NamePool } from "../scrape/name-pool.js";
import type { WriteSeries } from "../remote-write/series.js";
import type { PairWindow } from "./live-thresholds.js";
import type { RateBatchSource } from "./pipeline-rates.js";

const DURATION_BUCKET = "tokentrace_llm_duration_ms_bucket";
const TTFT_BUCKET = "tokentrace_llm_ttft_ms_bucket";

/** Where windows come from (the pipeline here; tests feed their own). */
export interface WindowSource {
  windows(policyName: string): PairWindow[];
}

/** Options of {@link PipelineHistogramSource}. */
export interface PipelineHistogramSourceOptions {
  /** The target namespace of a policy (undefined when the policy is gone). */
  namespaceOf: (policyName: string) => string | undefined;
  /** Milliseconds clock (injected in tests). */
  now: () => number;
  /** The window a threshold is computed over. */
  windowMs: number;
  /** A target whose last scrape is older than this no longer counts. */
  maxAgeMs: number;
}

interface Pair {
  route: string;
  model: string;
  duration: Map<number, number>;
  ttft: Map<number, number>;
}

interface Snapshot {
  timestampMs: number;
  pairs: Map<string, Pair>;
}

interface TargetHistory {
  namespace: string;
  /** Oldest first; the first is the newest at least windowMs before the last, when there is one. */
  snapshots: Snapshot[];
}

const keyOf = (route: string, model: string): string => `${route}\u0000${model}`;

function boundOf(le: string | undefined): number | undefined {
  if (le === undefined) return undefined;
  if (le === "+Inf") return Infinity;
  const n = Number(le);
  return Number.isFinite(n) ? n : undefined;
}

/** later − earlier per bound; a total that went down means the sidecar restarted: its counts started from zero. */
function delta(later: ReadonlyMap<number, number>, earlier: ReadonlyMap<number, number> | undefined): Map<number, number> {
  const reset = earlier !== undefined && (later.get(Infinity) ?? 0) < (earlier.get(Infinity) ?? 0);
  const out = new Map<number, number>();
  for (const [le, count] of later) out.set(le, reset || earlier === undefined ? count : counterDelta(earlier.get(le) ?? 0, count));
  return out;
}

function addInto(sum: Map<number, number>, h: ReadonlyMap<number, number>): void {
  for (const [le, count] of h) sum.set(le, (sum.get(le) ?? 0) + count);
}

/** Duration and TTFT windows per (route, model) from the pipeline's joined batches (see the file comment). */
export class PipelineHistogramSource implements WindowSource {
  private readonly targets = new Map<string, TargetHistory>();
  /** Route and model names the snapshots keep (copies: a kept slice would keep its scrape's text). */
  private readonly names = new NamePool();
  private sweptAtMs = -Infinity;

  constructor(private readonly options: PipelineHistogramSourceOptions) {}

  /** Targets whose snapshots are held. */
  get targetCount(): number {
    return this.targets.size;
  }

  /** Takes one joined batch (the pipeline's onBatch); batches of targets other than Envoy sidecars are ignored. */
  observe(series: WriteSeries[], source: RateBatchSource): void {
    const { target, timestampMs } = source;
    if ((target.kind !== "envoy" && target.kind !== "static") || target.namespace === undefined) return;
    const pairs = new Map<string, Pair>();
    for (const s of series) {
      const name = labelValue(s.labels, "__name__");
      const which = name === DURATION_BUCKET ? "duration" : name === TTFT_BUCKET ? "ttft" : undefined;
      if (which === undefined) continue;
      const route = labelValue(s.labels, "route");
      const model = labelValue(s.labels, "model");
      const le = boundOf(labelValue(s.labels, "le"));
      const value = s.samples[s.samples.length - 1]?.value;
      if (route === undefined || model === undefined || le === undefined || value === undefined || !Number.isFinite(value)) continue;
      const key = keyOf(route, model);
      let pair = pairs.get(key);
      if (pair === undefined) pairs.set(key, (pair = { route: this.names.of(route), model: this.names.of(model), duration: new Map(), ttft: new Map() }));
      // Summed over pod_ip (a waypoint) and anything else a series carries beyond route and model.
      pair[which].set(le, (pair[which].get(le) ?? 0) + value);
    }
    // Targets gone (a pod of an old rollout) go even when nothing asks for windows (live thresholds off).
    if (timestampMs - this.sweptAtMs >= this.options.maxAgeMs) this.sweep(timestampMs - this.options.maxAgeMs);
    let history = this.targets.get(target.id);
    if (history === undefined || history.namespace !== target.namespace) this.targets.set(target.id, (history = { namespace: target.namespace, snapshots: [] }));
    const last = history.snapshots[history.snapshots.length - 1];
    if (last !== undefined && timestampMs <= last.timestampMs) return;
    history.snapshots.push({ timestampMs, pairs });
    // Keep one snapshot at or before the window's start, as the baseline, and every later one.
    while (history.snapshots.length > 2 && history.snapshots[1]!.timestampMs <= timestampMs - this.options.windowMs) history.snapshots.shift();
  }

  windows(policyName: string): PairWindow[] {
    const namespace = this.options.namespaceOf(policyName);
    if (namespace === undefined) return [];
    this.sweep(this.options.now() - this.options.maxAgeMs);
    const sum = new Map<string, Pair>();
    for (const history of this.targets.values()) {
      const latest = history.snapshots[history.snapshots.length - 1]!;
      // One scrape gives no window yet (as increase() needs two points).
      if (history.namespace !== namespace || history.snapshots.length < 2) continue;
      const baseline = history.snapshots[0]!;
      for (const [key, pair] of latest.pairs) {
        const before = baseline.pairs.get(key);
        let total = sum.get(key);
        if (total === undefined) sum.set(key, (total = { route: pair.route, model: pair.model, duration: new Map(), ttft: new Map() }));
        addInto(total.duration, delta(pair.duration, before?.duration));
        addInto(total.ttft, delta(pair.ttft, before?.ttft));
      }
    }
    return [...sum.values()].map((p) => ({ route: p.route, model: p.model, duration: p.duration, ...(p.ttft.size > 0 ? { ttft: p.ttft } : {}) }));
  }

  /** Forgets targets last scraped before `oldest` (or never with a snapshot). */
  private sweep(oldest: number): void {
    this.sweptAtMs = oldest + this.options.maxAgeMs;
    for (const [id, history] of this.targets) {
      const latest = history.snapshots[history.snapshots.length - 1];
      if (latest === undefined || latest.timestampMs < oldest) this.targets.delete(id);
    }
  }
}
