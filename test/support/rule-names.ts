// The one table between the two paths: each series the pipeline's join writes that
// istio/observability/recording-rules.yaml also computes, and the name of the rule that computes it
// (Prometheus's level:metric:operations, https://prometheus.io/docs/practices/rules/). Same labels,
// values and units; only the name differs, so both can live in one Prometheus. The rules-vs-join
// tests compare through it, the dashboard and alerts read `(pipeline or rule)` through it, and
// test/istio/rule-names.test.ts checks it against the rule file and the join's catalogue.
import * as C from "../../control-plane/src/join/catalogue.js";

/** Join series name -> recording rule name. */
export const RULE_FOR_SERIES: ReadonlyMap<string, string> = new Map([
  [C.OUTPUT_TOKENS_PER_SECOND_PER_GPU, "namespace_pod_route_model:tokentrace_llm_output_tokens_per_gpu:irate2m"],
  [C.GPU_SECONDS_PER_1K_TOKENS, "namespace_pod_model:tokentrace_gpu_seconds_per_1k_output_tokens:irate2m"],
  [C.TOKENS_PER_JOULE, "gpu_uuid:tokentrace_gpu_tokens_per_joule:irate2m"],
  [C.ROUTE_LATENCY, "namespace_pod_route_model:tokentrace_route_latency_seconds:irate2m"],
  [C.ROUTE_GPU_UTILIZATION, "namespace_pod_route_model:tokentrace_gpu_utilization_percent:avg"],
  [C.MODEL_GPU_UTILIZATION, "namespace_pod_model:tokentrace_gpu_utilization_percent:avg"],
  [C.MODEL_REQUESTS_WAITING, "namespace_pod_model:tokentrace_model_requests_waiting:sum"],
  [C.MODEL_REQUESTS_RUNNING, "namespace_pod_model:tokentrace_model_requests_running:sum"],
  [C.MODEL_KV_CACHE_USAGE, "namespace_pod_model:tokentrace_model_kv_cache_usage_ratio:avg"],
  [C.MODEL_PREFIX_CACHE_HIT_RATIO, "namespace_pod_model:tokentrace_model_prefix_cache_hit_ratio:rate5m"],
  [C.MODEL_PREEMPTIONS_PER_SECOND, "namespace_pod_model:tokentrace_model_preemptions:rate5m"],
  [C.MODEL_SPEC_DECODE_ACCEPTANCE, "namespace_pod_model:tokentrace_model_spec_decode_acceptance_ratio:rate5m"],
  [C.MODEL_LATENCY_QUANTILE, "namespace_pod_model:tokentrace_model_latency_seconds:histogram_quantile_rate5m"],
  [C.ROUTE_LATENCY_QUANTILE, "namespace_pod_route_model:tokentrace_route_latency_seconds:histogram_quantile_rate5m"],
  [C.MODEL_REQUESTS_WAITING_BY_REASON, "namespace_pod_model_reason:tokentrace_model_requests_waiting:sum"],
  [C.MODEL_EXTERNAL_PREFIX_CACHE_HIT_RATIO, "namespace_pod_model:tokentrace_model_external_prefix_cache_hit_ratio:rate5m"],
  [C.MODEL_PREFIX_CACHE_HIT_RATIO_BY_SOURCE, "namespace_pod_model_cache_source:tokentrace_model_prefix_cache_hit_ratio:rate5m"],
  [C.MODEL_PREFILL_KV_COMPUTED_TOKENS_MEAN, "namespace_pod_model:tokentrace_model_prefill_kv_computed_tokens:mean_rate5m"],
  [C.MODEL_REQUEST_PREEMPTIONS_MEAN, "namespace_pod_model:tokentrace_model_request_preemptions:mean_rate5m"],
  [C.MODEL_REQUEST_TPOT_QUANTILE, "namespace_pod_model:tokentrace_model_request_time_per_output_token_seconds:histogram_quantile"],
  // The pipeline's links carry one more label (gpu_pods): read both with `or on (namespace, pod, gpu_uuid)`.
  [C.POD_GPU_INFO, "namespace_pod_gpu_uuid:tokentrace_pod_gpu_info:group"],
]);

/** Recording rule name -> join series name. */
export const SERIES_FOR_RULE: ReadonlyMap<string, string> = new Map([...RULE_FOR_SERIES].map(([series, rule]) => [rule, series]));

/** The rule name for a join series; throws for a series no rule computes. */
export function ruleFor(series: string): string {
  const rule = RULE_FOR_SERIES.get(series);
  if (rule === undefined) throw new Error(`no recording rule computes ${series}`);
  return rule;
}

/** The level:metric:operations shape every recorded name must have. */
export const RULE_NAME_SHAPE = /^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$/;
