// The remote-write self-metrics catalogue, registered on an explicit prom-client Registry.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Self-metrics of every remote-write target (label `target` = the configured target name). */
export interface RemoteWriteMetrics {
  queueBytes: Gauge<"target">;
  queueSamples: Gauge<"target">;
  samplesSent: Counter<"target">;
  samplesRetried: Counter<"target" | "reason">;
  samplesDropped: Counter<"target" | "reason">;
  sendDuration: Histogram<"target">;
  lagSeconds: Gauge<"target">;
  protocolFallbacks: Counter<"target">;
  queueRestarts: Counter<"target">;
}

/** Creates the metrics on `registry`. */
export function createRemoteWriteMetrics(registry: Registry): RemoteWriteMetrics {
  const registers = [registry];
  return {
    queueBytes: new Gauge({ name: "tokentrace_remote_write_queue_bytes", help: "Bytes of the on-disk queue of a remote-write target.", labelNames: ["target"], registers }),
    queueSamples: new Gauge({ name: "tokentrace_remote_write_queue_samples", help: "Samples queued and not yet delivered.", labelNames: ["target"], registers }),
    samplesSent: new Counter({ name: "tokentrace_remote_write_samples_sent_total", help: "Samples the receiver accepted.", labelNames: ["target"], registers }),
    samplesRetried: new Counter({ name: "tokentrace_remote_write_samples_retried_total", help: "Samples in sends that were retried, by reason.", labelNames: ["target", "reason"], registers }),
    samplesDropped: new Counter({ name: "tokentrace_remote_write_samples_dropped_total", help: "Samples given up on, by reason (queue_full, queue_write_failed, unreadable_record, unknown_series, deadline, http_<status>; out_of_order and invalid_labels from the writer's checks or a receiver's 400 text, which also gives duplicate_sample, out_of_bounds, too_old).", labelNames: ["target", "reason"], registers }),
    sendDuration: new Histogram({ name: "tokentrace_remote_write_send_duration_seconds", help: "Wall time of one send including retries.", labelNames: ["target"], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers }),
    lagSeconds: new Gauge({ name: "tokentrace_remote_write_lag_seconds", help: "Newest queued sample time minus newest delivered sample time.", labelNames: ["target"], registers }),
    protocolFallbacks: new Counter({ name: "tokentrace_remote_write_protocol_fallbacks_total", help: "Times a 2.0 target fell back to 1.0 (415, or a receiver that did not confirm 2.0).", labelNames: ["target"], registers }),
    queueRestarts: new Counter({ name: "tokentrace_remote_write_queue_restarts_total", help: "Times a target's sender failed and its queue was reopened from disk.", labelNames: ["target"], registers }),
  };
}
