// Per LoRA adapter of a base model: requests, input and output tokens per second and P99 TTFT and
// duration over the last 5 minutes, from the sidecars' route and model figures the dashboard already
// keeps (series.ts: a LoRA request's `model` is the adapter's name), joined per pod as the group
// tokentrace.lora-adapters of istio/observability/recording-rules.yaml joins them: only the pods
// that report the adapter for this base model count, so one adapter name loaded on two base models
// stays two rows and a base model's own requests count for no adapter. Rates are summed per route
// and pod then added (`sum by (...) (rate(x[5m]))`); buckets are added before the quantile
// (`histogram_quantile(0.99, sum by (..., le) (rate(x_bucket[5m])))`), length classes summed away.
// Computed on read: nothing is kept beyond the intervals series.ts holds within its byte budget.
import { histogramQuantile } from "../promql/quantile.js";
import type { AdapterRow } from "./lora-adapters.js";
import { addDeltas, type Buckets } from "./bucket-deltas.js";
import type { DashboardSource } from "./series.js";

/** The window of the figures: the recording rules' 5 minutes (the page's shortest range). */
export const ADAPTER_FIGURES_WINDOW_MS = 300_000;

/** One adapter's figures over the window; null where its pods' sidecars reported no call of it. */
export interface AdapterFigures {
  requestsPerSecond: number | null;
  inputTokensPerSecond: number | null;
  outputTokensPerSecond: number | null;
  ttftP99Ms: number | null;
  durationP99Ms: number | null;
}

/** An adapter row with its figures (GET /v1/dashboard/models `adapters`). */
export type AdapterRowWithFigures = AdapterRow & AdapterFigures;

/** Which adapter of which base model, on which pods. */
export interface AdapterOnPods {
  adapter: string;
  pods: readonly string[];
}

/** Scrapes of one route may reach the store a little out of order: intervals ending this long before the window still get looked at. */
const ORDER_SLACK_MS = 60_000;

const round3 = (v: number): number => Math.round(v * 1000) / 1000;

interface Sum {
  seen: boolean;
  requests: number;
  input: number;
  output: number;
  ttft: Buckets;
  duration: Buckets;
}

/** Each wanted adapter's figures, in the order given, over `windowMs` ending at `nowMs`, from the routes of `namespace`. */
export function adapterFigures(source: Pick<DashboardSource, "routes" | "intervals">, namespace: string, wanted: readonly AdapterOnPods[], q: { nowMs: number; windowMs: number }): AdapterFigures[] {
  const sums: Sum[] = wanted.map(() => ({ seen: false, requests: 0, input: 0, output: 0, ttft: new Map(), duration: new Map() }));
  // (pod, model) -> the wanted rows it counts for: one lookup per model of an interval.
  const index = new Map<string, number[]>();
  wanted.forEach((w, n) => {
    for (const pod of w.pods) {
      const k = `${pod}\u0000${w.adapter}`;
      const rows = index.get(k);
      if (rows) rows.push(n);
      else index.set(k, [n]);
    }
  });
  const from = q.nowMs - q.windowMs;
  for (const key of source.routes()) {
    if (key.namespace !== namespace) continue;
    const intervals = source.intervals(key);
    const podSeconds = new Map<string, number>();
    // Per wanted row and pod: the increases of this route, made rates below with the pod's seconds.
    const increases = new Map<number, Map<string, { requests: number; input: number; output: number }>>();
    for (let j = intervals.length - 1; j >= 0; j--) {
      const i = intervals[j]!;
      if (i.endMs <= from - ORDER_SLACK_MS) break;
      if (i.endMs <= from || i.endMs > q.nowMs) continue;
      podSeconds.set(i.pod, (podSeconds.get(i.pod) ?? 0) + i.seconds);
      for (const [model, m] of i.counts.models) {
        for (const n of index.get(`${i.pod}\u0000${model}`) ?? []) {
          let perPod = increases.get(n);
          if (!perPod) increases.set(n, (perPod = new Map()));
          const inc = perPod.get(i.pod) ?? { requests: 0, input: 0, output: 0 };
          inc.requests += m.llmRequests;
          inc.input += m.inputTokens;
          inc.output += m.outputTokens;
          perPod.set(i.pod, inc);
          addDeltas(sums[n]!.ttft, m.ttft);
          addDeltas(sums[n]!.duration, m.duration);
        }
      }
    }
    for (const [n, perPod] of increases) {
      const s = sums[n]!;
      for (const [pod, inc] of perPod) {
        const seconds = podSeconds.get(pod) ?? 0;
        if (seconds <= 0) continue;
        s.seen = true;
        s.requests += inc.requests / seconds;
        s.input += inc.input / seconds;
        s.output += inc.output / seconds;
      }
    }
  }
  return sums.map((s) => {
    const ttft = histogramQuantile(0.99, s.ttft);
    const duration = histogramQuantile(0.99, s.duration);
    return {
      requestsPerSecond: s.seen ? round3(s.requests) : null,
      inputTokensPerSecond: s.seen ? round3(s.input) : null,
      outputTokensPerSecond: s.seen ? round3(s.output) : null,
      ttftP99Ms: ttft === null || !Number.isFinite(ttft) ? null : round3(ttft),
      durationP99Ms: duration === null || !Number.isFinite(duration) ? null : round3(duration),
    };
  });
}

/** The adapter rows of each (namespace, base model), with their figures over ADAPTER_FIGURES_WINDOW_MS: one pass over a namespace's routes for all its base models. */
export function adapterRowsWithFigures(source: DashboardSource, keys: readonly { namespace: string; model: string }[], nowMs: number, lookbackMs: number): AdapterRowWithFigures[][] {
  const rows = keys.map((k) => source.lora?.adapters(k.namespace, k.model, nowMs, lookbackMs) ?? []);
  const out: AdapterRowWithFigures[][] = rows.map(() => []);
  for (const namespace of new Set(keys.map((k) => k.namespace))) {
    const at: [number, number][] = [];
    keys.forEach((k, i) => {
      if (k.namespace === namespace) rows[i]!.forEach((_, j) => at.push([i, j]));
    });
    if (at.length === 0) continue;
    const figures = adapterFigures(source, namespace, at.map(([i, j]) => rows[i]![j]!), { nowMs, windowMs: ADAPTER_FIGURES_WINDOW_MS });
    at.forEach(([i, j], n) => out[i]!.push({ ...rows[i]![j]!, ...figures[n]! }));
  }
  return out;
}
