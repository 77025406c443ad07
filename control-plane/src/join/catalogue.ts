// Names of the series the join adds (documented with units in README "Joined and derived series").

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
/** Per scrape target: 1 when the scrape succeeded. */
export const UP = "up";
/** Per scrape target: how long the scrape took. */
export const SCRAPE_DURATION = "scrape_duration_seconds";
