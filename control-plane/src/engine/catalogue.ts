// The model servers' own metrics the join reads, by what they mean, with where each name is
// defined upstream. Names are as the servers expose them on /metrics (prometheus_client adds
// `_total` to counters; histograms are read through their `_bucket` series). Where a server renamed
// a metric, both names are listed: the current one (generation 0) wins for a series that has both,
// as `rate(new[w]) or rate(old[w])` does in PromQL; the older one (generation 1) serves servers that
// only export it.
//
// Sources read:
//   vLLM   vllm-project/vllm vllm/v1/metrics/loggers.py at 005a810 (PrometheusStatLogger: both the
//          renamed and the deprecated names, labels model_name and engine) and
//          tests/entrypoints/openai/test_metrics.py at 0419b117 (EXPECTED_METRICS_V1; gpu_* names and
//          time_per_output_token_seconds in HIDDEN_DEPRECATED_METRICS, shown only with
//          --show-hidden-metrics-for-version); docs/design/metrics.md at f7e3a08 (the
//          V1 list and the queue/prefill/decode intervals); vllm/v1/spec_decode/metrics.py at
//          ee4ceaa (SpecDecodingProm).
//   SGLang sgl-project/sglang python/sglang/srt/metrics/collector.py at 93d0487
//          (SchedulerMetricsCollector, TokenizerMetricsCollector) and
//          python/sglang/srt/managers/scheduler_metrics_mixin.py at 78ac30c (labels model_name,
//          engine_type, tp_rank, pp_rank, dp_rank; token_usage and spec_accept_rate set per log
//          interval); num_retracted_requests_total from collector.py's newer version in the index.
//          python/sglang/srt/observability/metrics_collector.py at 016d860
//          (SchedulerMetricsCollector.init_new: label priority="" under --enable-priority-scheduling;
//          _log_gauge_queue_count: num_running_reqs and num_queue_reqs written as the total under
//          priority="" and again per priority under priority="<int>").
//   vLLM   (newer) vllm/v1/metrics/loggers.py PrometheusStatLogger as stored in the code index after
//          vllm-project/vllm#38435 (merged 2026-03-28; the index does not name the commit):
//          num_requests_waiting_by_reason{reason="capacity"|"deferred"} (their sum is num_requests_waiting),
//          external_prefix_cache_queries/hits (KV-connector cross-instance cache, tokens),
//          request_time_per_output_token_seconds (per request: decode time over its output tokens),
//          request_prefill_kv_computed_tokens (per request: prompt tokens computed, cache hits excluded;
//          read through its _sum and _count), request_num_preemptions (per finished request: times it
//          was preempted, FinishedRequestStats.num_preemptions; read through its _sum and _count; vLLM's
//          own PrometheusStatLogger tests list it among the finished-request histograms). Checked and
//          not read: kv_offload_* (bytes, times and sizes of transfers, no hits: no hit ratio can be made of them).
//   SGLang python/sglang/srt/observability/metrics_collector.py at 016d860: cached_tokens_total by
//          cache_source (device, host, storage_<backend>, or total where the request had no breakdown).
//   TGI    huggingface/text-generation-inference at db931fc: router/src/server.rs (request
//          histograms, seconds, no model label), backends/v3/src/queue.rs and backend.rs (gauges).

/** The model servers whose metrics the join reads. */
export type EngineServer = "vllm" | "sglang" | "tgi";

/** Per-request latency histograms of the engine (seconds). */
export type EnginePhase = "queue" | "prefill" | "decode" | "inter_token" | "request_tpot";

/** Instant values. */
export type EngineGauge = "waiting" | "running" | "kv_cache_usage" | "spec_accept_rate" | "spec_accept_length" | "waiting_by_reason";

/** Counters, read as rates over the window. */
export type EngineCounter = "prefix_cache_queries" | "prefix_cache_hits" | "preemptions" | "spec_draft_tokens" | "spec_accepted_tokens" | "external_prefix_cache_queries" | "external_prefix_cache_hits" | "prefill_kv_computed_tokens" | "prefill_kv_computed_requests" | "request_preemptions" | "request_preemptions_requests";

interface Base {
  /** The family name on /metrics. */
  name: string;
  server: EngineServer;
  /** 0: the current name; 1: an older one, read only where a series lacks the current name. */
  generation: 0 | 1;
  /** Where upstream defines it. */
  source: string;
  /**
   * A label under which the server writes the family twice: once as the total (the label empty or
   * absent) and again per value of the label. Only the total is read, or the total would be doubled.
   */
  totalWhereEmpty?: string;
  /** A label the family is also reported by (its values bounded upstream): the join keeps it for a per-value series. */
  groupBy?: string;
  /** When the server registers the family at all (a later release, a KV connector): absent elsewhere, and not a fault. */
  registeredWhen?: string;
}

/** One engine metric the join reads. */
export type EngineMetric =
  | (Base & { kind: "histogram"; signal: EnginePhase })
  | (Base & { kind: "gauge"; signal: EngineGauge })
  | (Base & { kind: "counter"; signal: EngineCounter });

const VLLM = "vllm/v1/metrics/loggers.py PrometheusStatLogger";
const VLLM_SPEC = "vllm/v1/spec_decode/metrics.py SpecDecodingProm";
const SGL_SCHED = "sglang srt/metrics/collector.py SchedulerMetricsCollector";
const SGL_TOK = "sglang srt/metrics/collector.py TokenizerMetricsCollector";
const TGI_ROUTER = "text-generation-inference router/src/server.rs";
const TGI_V3 = "text-generation-inference backends/v3/src";

/** Every engine metric the join reads. */
export const ENGINE_METRICS: readonly EngineMetric[] = [
  { name: "vllm:num_requests_waiting", server: "vllm", kind: "gauge", signal: "waiting", generation: 0, source: VLLM },
  { name: "vllm:num_requests_running", server: "vllm", kind: "gauge", signal: "running", generation: 0, source: VLLM },
  { name: "vllm:kv_cache_usage_perc", server: "vllm", kind: "gauge", signal: "kv_cache_usage", generation: 0, source: `${VLLM} (0.9+)` },
  { name: "vllm:gpu_cache_usage_perc", server: "vllm", kind: "gauge", signal: "kv_cache_usage", generation: 1, source: `${VLLM} (deprecated in 0.9, gone by 0.12)` },
  { name: "vllm:prefix_cache_queries_total", server: "vllm", kind: "counter", signal: "prefix_cache_queries", generation: 0, source: `${VLLM} (0.9+; tokens)` },
  { name: "vllm:gpu_prefix_cache_queries_total", server: "vllm", kind: "counter", signal: "prefix_cache_queries", generation: 1, source: `${VLLM} (deprecated in 0.9)` },
  { name: "vllm:prefix_cache_hits_total", server: "vllm", kind: "counter", signal: "prefix_cache_hits", generation: 0, source: `${VLLM} (0.9+; tokens)` },
  { name: "vllm:gpu_prefix_cache_hits_total", server: "vllm", kind: "counter", signal: "prefix_cache_hits", generation: 1, source: `${VLLM} (deprecated in 0.9)` },
  { name: "vllm:num_requests_waiting_by_reason", server: "vllm", kind: "gauge", signal: "waiting_by_reason", generation: 0, source: `${VLLM} (after #38435)`, groupBy: "reason", registeredWhen: "vLLM after #38435" },
  { name: "vllm:external_prefix_cache_queries_total", server: "vllm", kind: "counter", signal: "external_prefix_cache_queries", generation: 0, source: `${VLLM} (KV connector; tokens)`, registeredWhen: "vLLM after #38435, with a KV connector" },
  { name: "vllm:external_prefix_cache_hits_total", server: "vllm", kind: "counter", signal: "external_prefix_cache_hits", generation: 0, source: `${VLLM} (KV connector; tokens)`, registeredWhen: "vLLM after #38435, with a KV connector" },
  { name: "vllm:request_time_per_output_token_seconds", server: "vllm", kind: "histogram", signal: "request_tpot", generation: 0, source: `${VLLM} (per request)`, registeredWhen: "vLLM after #38435" },
  { name: "vllm:request_prefill_kv_computed_tokens_sum", server: "vllm", kind: "counter", signal: "prefill_kv_computed_tokens", generation: 0, source: `${VLLM} (histogram's sum; tokens)`, registeredWhen: "vLLM after #38435" },
  { name: "vllm:request_prefill_kv_computed_tokens_count", server: "vllm", kind: "counter", signal: "prefill_kv_computed_requests", generation: 0, source: `${VLLM} (histogram's count; requests)`, registeredWhen: "vLLM after #38435" },
  { name: "vllm:num_preemptions_total", server: "vllm", kind: "counter", signal: "preemptions", generation: 0, source: VLLM },
  { name: "vllm:request_num_preemptions_sum", server: "vllm", kind: "counter", signal: "request_preemptions", generation: 0, source: `${VLLM} (histogram's sum; preemptions of finished requests)`, registeredWhen: "vLLM after #38435" },
  { name: "vllm:request_num_preemptions_count", server: "vllm", kind: "counter", signal: "request_preemptions_requests", generation: 0, source: `${VLLM} (histogram's count; finished requests)`, registeredWhen: "vLLM after #38435" },
  { name: "vllm:spec_decode_num_draft_tokens_total", server: "vllm", kind: "counter", signal: "spec_draft_tokens", generation: 0, source: VLLM_SPEC },
  { name: "vllm:spec_decode_num_accepted_tokens_total", server: "vllm", kind: "counter", signal: "spec_accepted_tokens", generation: 0, source: VLLM_SPEC },
  { name: "vllm:request_queue_time_seconds", server: "vllm", kind: "histogram", signal: "queue", generation: 0, source: `${VLLM} (QUEUED to SCHEDULED)` },
  { name: "vllm:request_prefill_time_seconds", server: "vllm", kind: "histogram", signal: "prefill", generation: 0, source: `${VLLM} (SCHEDULED to first token)` },
  { name: "vllm:request_decode_time_seconds", server: "vllm", kind: "histogram", signal: "decode", generation: 0, source: `${VLLM} (first to last token)` },
  { name: "vllm:inter_token_latency_seconds", server: "vllm", kind: "histogram", signal: "inter_token", generation: 0, source: `${VLLM} (0.11+)` },
  { name: "vllm:time_per_output_token_seconds", server: "vllm", kind: "histogram", signal: "inter_token", generation: 1, source: `${VLLM} (deprecated in 0.11)` },
  { name: "sglang:num_queue_reqs", server: "sglang", kind: "gauge", signal: "waiting", generation: 0, source: SGL_SCHED, totalWhereEmpty: "priority" },
  { name: "sglang:num_running_reqs", server: "sglang", kind: "gauge", signal: "running", generation: 0, source: SGL_SCHED, totalWhereEmpty: "priority" },
  { name: "sglang:token_usage", server: "sglang", kind: "gauge", signal: "kv_cache_usage", generation: 0, source: `${SGL_SCHED} (share of the KV token pool)` },
  { name: "sglang:prompt_tokens_total", server: "sglang", kind: "counter", signal: "prefix_cache_queries", generation: 0, source: SGL_TOK },
  { name: "sglang:cached_tokens_total", server: "sglang", kind: "counter", signal: "prefix_cache_hits", generation: 0, source: SGL_TOK, groupBy: "cache_source" },
  { name: "sglang:num_retracted_requests_total", server: "sglang", kind: "counter", signal: "preemptions", generation: 0, source: `${SGL_SCHED} (newer versions)` },
  { name: "sglang:spec_accept_rate", server: "sglang", kind: "gauge", signal: "spec_accept_rate", generation: 0, source: `${SGL_SCHED} (accepted / draft tokens per log interval)` },
  { name: "sglang:spec_accept_length", server: "sglang", kind: "gauge", signal: "spec_accept_length", generation: 0, source: `${SGL_SCHED} (0 when speculative decoding is off)` },
  { name: "sglang:queue_time_seconds", server: "sglang", kind: "histogram", signal: "queue", generation: 0, source: SGL_SCHED },
  { name: "sglang:inter_token_latency_seconds", server: "sglang", kind: "histogram", signal: "inter_token", generation: 0, source: SGL_TOK },
  { name: "tgi_queue_size", server: "tgi", kind: "gauge", signal: "waiting", generation: 0, source: `${TGI_V3}/queue.rs` },
  { name: "tgi_batch_current_size", server: "tgi", kind: "gauge", signal: "running", generation: 0, source: `${TGI_V3}/backend.rs` },
  { name: "tgi_request_queue_duration", server: "tgi", kind: "histogram", signal: "queue", generation: 0, source: TGI_ROUTER },
];

/** The series names the join reads, mapped to their metric (histograms by their `_bucket` series). */
export const ENGINE_SERIES: ReadonlyMap<string, EngineMetric> = new Map(ENGINE_METRICS.map((m) => [m.kind === "histogram" ? `${m.name}_bucket` : m.name, m]));

/** Prefixes of every engine's series (what the join forwards from an engine target by default). */
export const ENGINE_PREFIXES = ["vllm:", "sglang:", "tgi_"] as const;
