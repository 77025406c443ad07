// The cause panels' endpoint: GET /v1/dashboard/engine-causes, per model of a namespace, why it is
// slow as its model servers see it (engine-signals.ts): the waiting queue beside the running batch,
// KV-cache usage, preemptions per second, prefix-cache hits and speculative acceptance, time per
// output token (P50/P95/P99) and the engine's P99 split into queue, prefill and decode beside the
// sidecars' own TTFT P99 for that model (every route of the namespace, window.ts); where the cache
// hits (SGLang's prefix-cache hits per tier, vLLM's external KV-connector cache) and why requests
// wait (vLLM's waiting requests by reason, prompt tokens computed and preemptions per finished
// request). Latencies and tokens are rounded to 0.1, the rest to 3 decimals, so 15 minutes of a
// model are about 20 to 37 KB.
import type { NextFunction, Request, RequestHandler, Response, Router } from "express";
import type { EngineColumn, EngineSignals, ModelKey } from "./engine-signals.js";
import { queryString, rangeOf } from "./query.js";
import type { DashboardSource, RouteInterval } from "./series.js";
import { resolution, windowColumns } from "./window.js";

/** The engine columns the cause panels show, as the store keeps them. */
export const CAUSE_COLUMNS = [
  "requestsWaiting",
  "requestsRunning",
  "kvCacheUsage",
  "preemptionsPerSecond",
  "prefixCacheHitRatio",
  "specDecodeAcceptance",
  "queueP99Ms",
  "prefillP99Ms",
  "decodeP99Ms",
  "externalPrefixCacheHitRatio",
  "promptTokensComputedPerRequest",
  "preemptionsPerRequest",
] as const satisfies readonly EngineColumn[];

/** Rounded to 0.1 (ms, tokens): finer than the engine's buckets resolve, and two characters a value less. */
const TO_TENTHS = new Set<string>(["queueP99Ms", "prefillP99Ms", "decodeP99Ms", "promptTokensComputedPerRequest"]);

/** The TPOT columns of the answer (tpotP50Ms, ...), from vLLM's per-request TPOT, else its inter-token latency. */
const TPOT = {
  request_tpot: ["requestTpotP50Ms", "requestTpotP95Ms", "requestTpotP99Ms"],
  inter_token: ["interTokenP50Ms", "interTokenP95Ms", "interTokenP99Ms"],
} as const satisfies Record<string, readonly EngineColumn[]>;
export const TPOT_COLUMNS = ["tpotP50Ms", "tpotP95Ms", "tpotP99Ms"] as const;

/** What each panel needs the model server to export (vLLM's names; SGLang and TGI map theirs, docs/dashboard.md). */
export const CAUSE_NEEDS = {
  queue: "vllm:num_requests_waiting and vllm:num_requests_running (always on)",
  kvCache: "vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before 0.9) and vllm:num_preemptions_total",
  cacheHits: "vllm:prefix_cache_queries_total and _hits_total with prefix caching on (vLLM v1's default); speculative acceptance needs --speculative-config",
  tpot: "vllm:request_time_per_output_token_seconds, else vllm:inter_token_latency_seconds (vllm:time_per_output_token_seconds before 0.11)",
  phases: "vllm:request_queue_time_seconds, vllm:request_prefill_time_seconds and vllm:request_decode_time_seconds (vLLM v1); the TTFT beside them is the sidecar filter's tokentrace_llm_ttft_ms",
  cacheTiers:
    "SGLang's sglang:cached_tokens_total by cache_source and sglang:prompt_tokens_total (--enable-metrics; the host tier with --enable-hierarchical-cache, storage_<backend> with --hicache-storage-backend), or vLLM's vllm:external_prefix_cache_queries_total and _hits_total with a KV connector (--kv-transfer-config; vLLM after vllm-project/vllm#38435)",
  waitReasons:
    "vllm:num_requests_waiting_by_reason, and vllm:request_prefill_kv_computed_tokens and vllm:request_num_preemptions (per finished request), all in vLLM after vllm-project/vllm#38435",
} as const;

/** What the endpoint is given (the dashboard's dependencies, the read guard, the clock). */
export interface EngineCausesContext {
  deps: { dashboard?: DashboardSource };
  read: RequestHandler;
  now: () => number;
}

const round3 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);
const round1 = (v: number | null): number | null => (v === null ? null : Math.round(v * 10) / 10);

/** GET /v1/dashboard/engine-causes. */
export function engineCausesRoutes(router: Router, { deps, read, now }: EngineCausesContext): void {
  router.get("/v1/dashboard/engine-causes", read, (req: Request, res: Response, next: NextFunction) => {
    const namespace = queryString(req, "namespace");
    const rangeSeconds = rangeOf(req, next);
    if (rangeSeconds === undefined) return;
    const engine = deps.dashboard?.engine;
    const keys = engine?.models(namespace) ?? [];
    const grid = resolution(rangeSeconds * 1000, engine && keys.length > 0 ? engine.scrapeIntervalMs(keys[0]!) : 2000);
    const q = { nowMs: now(), rangeMs: rangeSeconds * 1000, stepMs: grid.stepMs, lookbackMs: grid.windowMs };
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      pipeline: deps.dashboard ? "on" : "off",
      namespace: namespace ?? null,
      rangeSeconds,
      stepSeconds: grid.stepMs / 1000,
      lookbackSeconds: grid.windowMs / 1000,
      needs: CAUSE_NEEDS,
      models: keys.map((k) => causesOf(engine!, deps.dashboard!, k, q, grid)),
    });
  });
}

function causesOf(engine: EngineSignals, dashboard: DashboardSource, k: ModelKey, q: { nowMs: number; rangeMs: number; stepMs: number; lookbackMs: number }, grid: ReturnType<typeof resolution>) {
  const tpotSource = engine.has(k, "requestTpotP99Ms") ? "request_tpot" : engine.has(k, "interTokenP99Ms") ? "inter_token" : null;
  const stored = engine.columns(k, q, [...CAUSE_COLUMNS, ...TPOT[tpotSource ?? "request_tpot"]]);
  const columns: Record<string, (number | null)[]> = { t: stored.t };
  for (const c of CAUSE_COLUMNS) columns[c] = stored[c].map(TO_TENTHS.has(c) ? round1 : round3);
  TPOT_COLUMNS.forEach((c, i) => (columns[c] = stored[TPOT[tpotSource ?? "request_tpot"][i]!].map(round1)));
  columns.sidecarTtftP99Ms = sidecarTtftP99(dashboard, k, q, grid).map(round1);
  // Arrays, not objects keyed by the label values: those come from the model servers.
  const waitingByReason = engine.labelled(k, q, "waitingByReason").map((x) => ({ reason: x.value, values: x.values.map(round3) }));
  const prefixCacheHitsByTier = engine.labelled(k, q, "prefixCacheHitRatioByTier").map((x) => ({ tier: x.value, values: x.values.map(round3) }));
  return { namespace: k.namespace, model: k.model, pods: [...new Set(engine.points(k).map((p) => p.pod))].sort(), tpotSource, columns, waitingByReason, prefixCacheHitsByTier };
}

/** The sidecars' TTFT P99 of the model over every route of its namespace, on the engine columns' steps (null where no route saw it). */
function sidecarTtftP99(dashboard: DashboardSource, k: ModelKey, q: { nowMs: number; rangeMs: number; stepMs: number }, grid: ReturnType<typeof resolution>): (number | null)[] {
  const intervals: RouteInterval[] = [];
  for (const r of dashboard.routes()) if (r.namespace === k.namespace) for (const i of dashboard.intervals(r)) if (i.counts.models.has(k.model)) intervals.push(i);
  const cols = windowColumns(intervals, { nowMs: q.nowMs, rangeMs: q.rangeMs, stepMs: q.stepMs, windowMs: grid.windowMs, samplingWindowMs: grid.samplingWindowMs, model: k.model });
  return cols.ttftP99 ?? cols.t!.map(() => null);
}
