// The OTLP/HTTP span receiver, when enabled: an in-memory store of the newest spans that the app
// mounts at /v1/traces and the dashboard reads.
import type { AppDeps } from "../app.js";
import type { TracesConfig } from "../traces/config.js";
import { TraceStore } from "../traces/store.js";

/** The app's `traces` option when the receiver is on; nothing otherwise. */
export function tracesOption(config: TracesConfig): Pick<AppDeps, "traces"> {
  return config.enabled ? { traces: { store: new TraceStore(config.maxSpans), maxBodyBytes: config.maxBodyBytes, linkTemplate: config.linkTemplate } } : {};
}

/** How the start-up log describes the receiver. */
export function tracesStatus(config: Pick<TracesConfig, "enabled">, url: string): string {
  return config.enabled ? `receiving OTLP/HTTP (JSON or protobuf) at ${url}/v1/traces` : "off (TOKENTRACE_TRACES_ENABLED=true turns the span receiver on)";
}
