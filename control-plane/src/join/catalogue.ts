// Names of the series the join adds (documented with units in control-plane/src/pipeline/README.md "Joined series").

/** GPU state of each (pod, GPU) link, emitted with each Envoy scrape of the pod. */
export const POD_GPU_UTILIZATION = "tokentrace_pod_gpu_utilization_percent";
export const POD_GPU_SM_ACTIVE = "tokentrace_pod_gpu_sm_active_ratio";
export const POD_GPU_MEMORY_USED = "tokentrace_pod_gpu_memory_used_bytes";
export const POD_GPU_POWER = "tokentrace_pod_gpu_power_watts";
/** 1 per (pod, GPU) link dcgm-exporter reports; `gpu_pods` = pods sharing that GPU. */
export const POD_GPU_INFO = "tokentrace_pod_gpu_info";
/** Output tokens per second per GPU of the pod, per route and model, over the last scrape interval. */
export const OUTPUT_TOKENS_PER_SECOND_PER_GPU = "tokentrace_output_tokens_per_second_per_gpu";
/** GPU-seconds the pod held per 1000 output tokens over the last interval. */
export const GPU_SECONDS_PER_1K_TOKENS = "tokentrace_gpu_seconds_per_1k_output_tokens";
/** Output tokens per joule of one GPU: token rate of its pods / mean power from energy counter deltas. */
export const TOKENS_PER_JOULE = "tokentrace_gpu_tokens_per_joule";
/** Mean seconds per request spent in a phase (ttft, decode, queue, prefill) over the last interval. */
export const ROUTE_LATENCY = "tokentrace_route_latency_seconds";
/** Mean utilisation of the pod's GPUs, with the same labels as ROUTE_LATENCY so they sit side by side. */
export const ROUTE_GPU_UTILIZATION = "tokentrace_route_gpu_utilization_percent";
/**
 * The model servers' view per (namespace, pod, model), evaluated at each engine scrape over the
 * rate window (control-plane/src/engine/): requests waiting and running (summed over engines),
 * KV-cache usage (0-1, mean over engines), prefix-cache hit ratio and speculative-decoding
 * acceptance (ratios of counter rates), preemptions per second, and the utilisation of the pod's
 * GPUs (its own share of a time-sliced GPU where dcgm-exporter reports it).
 */
export const MODEL_REQUESTS_WAITING = "tokentrace_model_requests_waiting";
export const MODEL_REQUESTS_RUNNING = "tokentrace_model_requests_running";
export const MODEL_KV_CACHE_USAGE = "tokentrace_model_kv_cache_usage_ratio";
export const MODEL_PREFIX_CACHE_HIT_RATIO = "tokentrace_model_prefix_cache_hit_ratio";
export const MODEL_PREEMPTIONS_PER_SECOND = "tokentrace_model_preemptions_per_second";
export const MODEL_SPEC_DECODE_ACCEPTANCE = "tokentrace_model_spec_decode_acceptance_ratio";
export const MODEL_GPU_UTILIZATION = "tokentrace_model_gpu_utilization_percent";
/** Engine latency percentiles per model: phase queue, prefill, decode, inter_token; label quantile. */
export const MODEL_LATENCY_QUANTILE = "tokentrace_model_latency_quantile_seconds";
/**
 * Per route and model, evaluated at each sidecar scrape: the sidecar's ttft and decode percentiles
 * and what lies outside the engine (outside_ttft, outside_decode); label quantile.
 */
export const ROUTE_LATENCY_QUANTILE = "tokentrace_route_latency_quantile_seconds";
/** Per scrape target: 1 when the scrape succeeded. */
export const UP = "up";
/** Per scrape target: how long the scrape took. */
export const SCRAPE_DURATION = "scrape_duration_seconds";
