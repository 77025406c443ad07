// Scrape and join self-metrics, on the explicit registry the pipeline is given.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Scrape and join metrics. */
export interface PipelineMetrics {
  scrapeDuration: Histogram<"kind">;
  scrapeFailures: Counter<"kind" | "reason">;
  parseErrors: Counter<"kind">;
  targets: Gauge<"kind">;
  seriesDropped: Counter<"reason">;
  activeSeries: Gauge;
  heldPods: Gauge;
  shardMembers: Gauge;
  identityTimeouts: Counter;
  dcgmLabelSpellings: Gauge<"spelling">;
  waypointSeries: Counter<"outcome">;
  modelListFailures: Counter<"reason">;
  loraAdaptersDropped: Counter;
}

/** Creates them on `registry`. */
export function createPipelineMetrics(registry: Registry): PipelineMetrics {
  const registers = [registry];
  return {
    scrapeDuration: new Histogram({ name: "tokentrace_scrape_duration_seconds", help: "Wall time of one scrape, by target kind.", labelNames: ["kind"], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers }),
    scrapeFailures: new Counter({ name: "tokentrace_scrape_failures_total", help: "Failed scrapes by target kind and reason (timeout, network, http_<status>, body_too_large).", labelNames: ["kind", "reason"], registers }),
    parseErrors: new Counter({ name: "tokentrace_scrape_parse_errors_total", help: "Exposition lines skipped as malformed, by target kind.", labelNames: ["kind"], registers }),
    targets: new Gauge({ name: "tokentrace_scrape_targets", help: "Targets being scraped, by kind.", labelNames: ["kind"], registers }),
    seriesDropped: new Counter({ name: "tokentrace_join_series_dropped_total", help: "Joined series not shipped, by reason: cardinality_cap (past join.maxSeries, or the bytes that many series of 400 characters of labels cost), invalid_labels; window_budget counts scraped series a pod's rate window did not take (the join's windows at their byte budget), whose derived latency series are not made.", labelNames: ["reason"], registers }),
    activeSeries: new Gauge({ name: "tokentrace_join_active_series", help: "Distinct series admitted under the cardinality cap.", registers }),
    shardMembers: new Gauge({ name: "tokentrace_pipeline_shard_members", help: "Live pipeline replicas splitting the targets (from their Leases); 0 while this replica cannot renew its own.", registers }),
    heldPods: new Gauge({ name: "tokentrace_join_pods_awaiting_gpu_identity", help: "Pods whose scraped series are held until dcgm-exporter says which GPUs they use (or that they use none).", registers }),
    identityTimeouts: new Counter({ name: "tokentrace_join_gpu_identity_timeouts_total", help: "Pods whose GPU identity was settled by join.gpuIdentityWaitMs running out (their dcgm-exporter kept failing).", registers }),
    waypointSeries: new Counter({
      name: "tokentrace_join_waypoint_series_total",
      help: "Series scraped from Istio waypoints, counted by the replica that keeps them, by outcome: joined (pod_ip resolved to a discovered pod: joined with its GPUs), unresolved (pod_ip names no single discovered pod, or is \"other\": kept with the waypoint's own labels, joined to nothing), dropped (past the distinct pod_ip cap per waypoint).",
      labelNames: ["outcome"],
      registers,
    }),
    modelListFailures: new Counter({
      name: "tokentrace_engine_model_list_failures_total",
      help: "vLLM model lists (GET /v1/models, for each LoRA adapter's base model) not read, by reason (timeout, network, http_<status>, body_too_large, invalid_json); the last good list is kept.",
      labelNames: ["reason"],
      registers,
    }),
    loraAdaptersDropped: new Counter({ name: "tokentrace_engine_lora_adapters_dropped_total", help: "LoRA adapters left out by the per-pod bound (64) or with a name over 256 characters: from a vLLM model list when it is read, from vllm:lora_requests_info at every scrape that has them.", registers }),
    dcgmLabelSpellings: new Gauge({
      name: "tokentrace_join_dcgm_label_spellings",
      help: "dcgm-exporters whose latest scrape labelled pods other than the exporter's default way, by spelling: old_namespace (run with --use-old-namespace), honor_labels_renamed (scraped through a Prometheus with honor_labels false). The join reads both; other consumers do not.",
      labelNames: ["spelling"],
      registers,
    }),
  };
}
