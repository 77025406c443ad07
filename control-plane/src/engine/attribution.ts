// Latency attribution per route and model: the sidecar's own TTFT and decode percentiles (the
// filter's tokentrace_llm_ttft_ms and tokentrace_llm_decode_ms histograms, streaming responses)
// beside the engine's, and what lies outside the engine. For TTFT that is the sidecar's percentile
// minus the engine's queue and prefill percentiles (what the engine core does before the first
// token): network, proxy, the server's HTTP and tokenizer work; for decode, the sidecar's decode
// percentile minus the engine's (detokenising and streaming the tokens out). A difference of
// percentiles is not the percentile of the per-request differences: it is exact when the slow
// requests are slow in every phase alike, and can go below zero when they are not.
import { extrapolatedRate } from "../promql/rate.js";
import type { WindowSeries } from "../promql/series-window.js";
import { seriesOrderKeyOf } from "../promql/series-order.js";
import type { NamePool } from "../scrape/name-pool.js";
import { labelValue, type ParsedSample } from "../scrape/sample.js";
import { quantilesOf, sumByLe, type ModelSignals } from "./signals.js";

/** The filter's histograms read here (ms), by phase. */
const SIDECAR_HISTOGRAMS = new Map([
  ["tokentrace_llm_ttft_ms_bucket", "ttft"],
  ["tokentrace_llm_decode_ms_bucket", "decode"],
] as const);

/** What the window keeps of one sidecar bucket series. */
export interface SidecarInfo {
  phase: "ttft" | "decode";
  route: string;
  model: string;
  le: string;
}

/** What a window keeps of a sidecar series' info (SeriesWindow's `keep`): its label values as pooled copies, not views of the scrape. */
export function keepSidecarInfo(names: NamePool): (info: SidecarInfo) => SidecarInfo {
  return (info) => ({ phase: info.phase, route: names.of(info.route), model: names.of(info.model), le: names.of(info.le) });
}

/** Route-level phases, seconds per quantile. */
export type RoutePhase = "ttft" | "decode" | "outside_ttft" | "outside_decode";

/**
 * The filter's TTFT and decode bucket series of one Envoy scrape, keyed for the window by their
 * whole label set: a series with labels beyond route, model and le (a length class, a waypoint's
 * pod_ip) is its own series, rated on its own and summed by le per route and model, as
 * `sum by (..., le) (rate(x_bucket[w]))` does.
 */
export function sidecarEntries(targetId: string, samples: readonly ParsedSample[]): { key: string; info: SidecarInfo; value: number }[] {
  const out: { key: string; info: SidecarInfo; value: number }[] = [];
  for (const s of samples) {
    const phase = SIDECAR_HISTOGRAMS.get(s.name as "tokentrace_llm_ttft_ms_bucket");
    if (!phase) continue;
    const le = labelValue(s.labels, "le") ?? "";
    if (le === "") continue;
    const route = labelValue(s.labels, "route") ?? "";
    const model = labelValue(s.labels, "model") ?? "";
    out.push({ key: `${targetId}\xff${seriesOrderKeyOf(s.name, s.labels)}`, info: { phase, route, model, le }, value: s.value });
  }
  return out;
}

/** Per "route\xffmodel": each route-level phase's percentiles (seconds) at `t`, given the engine's signals of the same instant. */
export function routePhases(all: readonly WindowSeries<SidecarInfo>[], engine: ReadonlyMap<string, ModelSignals>, t: number, windowMs: number): Map<string, Map<RoutePhase, Map<number, number>>> {
  const groups = new Map<string, WindowSeries<SidecarInfo>[]>();
  for (const s of all) {
    const k = `${s.info.route}\xff${s.info.model}\xff${s.info.phase}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(s);
  }
  const out = new Map<string, Map<RoutePhase, Map<number, number>>>();
  for (const [k, series] of groups) {
    const [route, model, phase] = k.split("\xff") as [string, string, "ttft" | "decode"];
    const rates = series
      .map((s) => ({ info: s.info, value: extrapolatedRate(s, t, windowMs) }))
      .filter((x): x is { info: SidecarInfo; value: number } => x.value !== undefined);
    const q = quantilesOf(sumByLe(rates), 1000);
    if (q.size === 0) continue;
    const rm = `${route}\xff${model}`;
    let phases = out.get(rm);
    if (!phases) out.set(rm, (phases = new Map()));
    phases.set(phase, q);
  }
  for (const [rm, phases] of out) {
    const e = engine.get(rm.slice(rm.indexOf("\xff") + 1))?.phases;
    if (!e) continue;
    const outside = (sidecar: Map<number, number> | undefined, parts: (Map<number, number> | undefined)[]): Map<number, number> => {
      const r = new Map<number, number>();
      if (!sidecar || parts.some((p) => !p)) return r;
      for (const [q, v] of sidecar) {
        const inside = parts.map((p) => p!.get(q));
        if (inside.some((x) => x === undefined)) continue;
        r.set(q, v - inside.reduce((a, b) => a! + b!)!);
      }
      return r;
    };
    const ttft = outside(phases.get("ttft"), [e.get("queue"), e.get("prefill")]);
    const decode = outside(phases.get("decode"), [e.get("decode")]);
    if (ttft.size > 0) phases.set("outside_ttft", ttft);
    if (decode.size > 0) phases.set("outside_decode", decode);
  }
  return out;
}
