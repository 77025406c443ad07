// Names of the series the join adds (documented with units in control-plane/src/pipeline/README.md "Joined series").

/** GPU state of each (pod, GPU) link, emitted with each Envoy scrape of the pod. */
export const POD_GPU_UTILIZATION = "tokentrace_pod_gpu_utilization_percent";
/**
 * SM activity, 0-1: DCGM_FI_PROF_SM_ACTIVE where the exporter's counters enable it, else (the default
 * counters) DCGM_FI_PROF_GR_ENGINE_ACTIVE; label `source` says which (sm_active, gr_engine_active).
 */
export const POD_GPU_SM_ACTIVE = "tokentrace_pod_gpu_sm_active_ratio";
/** DCGM_FI_PROF_SM_OCCUPANCY, 0-1 (only where the exporter's counters enable it). */
export const POD_GPU_SM_OCCUPANCY = "tokentrace_pod_gpu_sm_occupancy_ratio";
/** DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 0-1 (default counters). */
export const POD_GPU_TENSOR_ACTIVE = "tokentrace_pod_gpu_tensor_active_ratio";
/** DCGM_FI_PROF_DRAM_ACTIVE, 0-1 (default counters). */
export const POD_GPU_DRAM_ACTIVE = "tokentrace_pod_gpu_dram_active_ratio";
export const POD_GPU_MEMORY_USED = "tokentrace_pod_gpu_memory_used_bytes";
export const POD_GPU_POWER = "tokentrace_pod_gpu_power_watts";
/**
 * How full the GPU was while busy, 0-1: its activity divided by its utilisation (the share of time a
 * kernel ran). Label `basis`: sm_active (DCGM_FI_PROF_SM_ACTIVE) where exported, else tensor_dram (the
 * busier of the tensor pipe and the memory interface, both in the default counters). Low while
 * utilisation is high is "busy but starved"; the thresholds are recorded in gpu-health-rules.yaml.
 */
export const POD_GPU_ACTIVITY_WHILE_BUSY = "tokentrace_pod_gpu_activity_while_busy_ratio";
/** Per pod with two or more GPUs: max - min of its GPUs' utilisation, percentage points. */
export const POD_GPU_UTILIZATION_SPREAD = "tokentrace_pod_gpu_utilization_spread_percent";
/** Per pod with two or more GPUs: (max - min) / max of its GPUs' framebuffer use. */
export const POD_GPU_MEMORY_USED_SPREAD = "tokentrace_pod_gpu_memory_used_spread_ratio";
/** Per pod with two or more GPUs: max - min of their SM activity (label source as POD_GPU_SM_ACTIVE). */
export const POD_GPU_SM_ACTIVE_SPREAD = "tokentrace_pod_gpu_sm_active_spread_ratio";
/** 1 per (pod, GPU) link dcgm-exporter reports; `gpu_pods` = pods sharing that GPU. */
export const POD_GPU_INFO = "tokentrace_pod_gpu_info";
// Health of each GPU, at each dcgm-exporter scrape, one series per GPU key (a MIG instance gets its
// GPU's), labels gpu, gpu_uuid, gpu_model, hostname; each only where the exporter exports its field.
/** DCGM_FI_DEV_GPU_TEMP (sensor="gpu") and DCGM_FI_DEV_MEMORY_TEMP (sensor="memory"), °C. */
export const GPU_TEMPERATURE = "tokentrace_gpu_temperature_celsius";
/** 1 while a clock-event (throttle) reason holds, 0 otherwise, one series per reason (label reason). */
export const GPU_CLOCK_EVENT_ACTIVE = "tokentrace_gpu_clock_event_active";
/** Labels xid and xid_class: 1 for the last XID reported, or the count DCGM_EXP_XID_ERRORS_COUNT gives. */
export const GPU_XID_ERRORS = "tokentrace_gpu_xid_errors";
/** Double-bit ECC errors (label scope: volatile, since the last driver load; aggregate, lifetime). */
export const GPU_ECC_DBE_ERRORS = "tokentrace_gpu_ecc_dbe_errors";
/** Pages retired (label cause: dbe, sbe). */
export const GPU_RETIRED_PAGES = "tokentrace_gpu_retired_pages";
/** 1 while a page waits for a GPU reset to be retired. */
export const GPU_RETIRED_PAGES_PENDING = "tokentrace_gpu_retired_pages_pending";
/** Rows remapped (label cause: uncorrectable, correctable). */
export const GPU_REMAPPED_ROWS = "tokentrace_gpu_remapped_rows";
/** 1 once remapping a row failed. */
export const GPU_ROW_REMAP_FAILED = "tokentrace_gpu_row_remap_failed";
/** PCIe replays since boot (a counter). */
export const GPU_PCIE_REPLAYS = "tokentrace_gpu_pcie_replays_total";
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
/** Waiting requests per (namespace, pod, model) by vLLM's reason label: capacity (no room yet) or deferred (LoRA budget, KV transfer, blocked). */
export const MODEL_REQUESTS_WAITING_BY_REASON = "tokentrace_model_requests_waiting_by_reason";
/** Hit ratio of vLLM's KV-connector external prefix cache (tokens hit over tokens queried, rates over the window). */
export const MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO = "tokentrace_model_external_prefix_cache_hit_ratio";
/** SGLang's prefix-cache hit ratio per cache_source (device, host, storage_<backend>): cached tokens from it over all prompt tokens. */
export const MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE = "tokentrace_model_prefix_cache_hit_ratio_by_source";
/** vLLM's prompt tokens computed per request (its prefix-cache hits excluded), mean over the rate window. */
export const MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN = "tokentrace_model_prefill_kv_computed_tokens_mean";
/** vLLM's preemptions per finished request (each a recomputed prefill), mean over the rate window. */
export const MODEL_REQUEST_PREEMPTIONS_MEAN = "tokentrace_model_request_preemptions_mean";
/** vLLM's per-request time per output token (decode time over the request's output tokens), percentiles over the rate window; label quantile. */
export const MODEL_REQUEST_TPOT_QUANTILE = "tokentrace_model_request_tpot_quantile_seconds";
/** Engine latency percentiles per model: phase queue, prefill, decode, inter_token; label quantile. */
export const MODEL_LATENCY_QUANTILE = "tokentrace_model_latency_quantile_seconds";
/**
 * LoRA adapters of a vLLM server, at each engine scrape, one series per adapter (at most
 * MAX_ADAPTERS_PER_POD), labels model (the adapter's name, the `model` requests and route stats
 * carry) and base_model (its parent in the server's /v1/models, else the server's one model):
 * info is 1 for every adapter loaded or in use; running and waiting are 1 while the adapter has
 * running (waiting) requests, else 0 (vLLM exports which adapters, not how many requests).
 */
export const MODEL_LORA_ADAPTER_INFO = "tokentrace_model_lora_adapter_info";
export const MODEL_LORA_ADAPTER_RUNNING = "tokentrace_model_lora_adapter_running";
export const MODEL_LORA_ADAPTER_WAITING = "tokentrace_model_lora_adapter_waiting";
/** Per (namespace, pod, model = the base model): vLLM's --max-loras, the adapters one batch can hold. */
export const MODEL_LORA_MAX_ADAPTERS = "tokentrace_model_lora_max_adapters";
/**
 * Per route and model, evaluated at each sidecar scrape: the sidecar's ttft and decode percentiles
 * and what lies outside the engine (outside_ttft, outside_decode); label quantile.
 */
export const ROUTE_LATENCY_QUANTILE = "tokentrace_route_latency_quantile_seconds";
/**
 * The OpenTelemetry GenAI histograms (Prometheus translation of gen_ai.client.operation.duration,
 * gen_ai.server.time_to_first_token, gen_ai.server.time_per_output_token; seconds), from the filter's
 * tokentrace_llm_duration_ms, _ttft_ms and _tpot_us at each sidecar scrape, with the conventions'
 * boundaries the mesh's buckets contain (derivations/genai.ts); each a _bucket, _sum and _count.
 */
export const GENAI_CLIENT_OPERATION_DURATION = "gen_ai_client_operation_duration_seconds";
export const GENAI_SERVER_TIME_TO_FIRST_TOKEN = "gen_ai_server_time_to_first_token_seconds";
export const GENAI_SERVER_TIME_PER_OUTPUT_TOKEN = "gen_ai_server_time_per_output_token_seconds";
/**
 * The OpenTelemetry GenAI token usage (gen_ai.client.token.usage, {token}) by gen_ai_token_type, from
 * the filter's calls per length class and token counters at each sidecar scrape, with the classes'
 * boundaries (derivations/genai-token-usage.ts); a _bucket, _sum and _count.
 */
export const GENAI_CLIENT_TOKEN_USAGE = "gen_ai_client_token_usage";
/** Per scrape target: 1 when the scrape succeeded. */
export const UP = "up";
/** Per scrape target: how long the scrape took. */
export const SCRAPE_DURATION = "scrape_duration_seconds";
