// The OTLP/HTTP span receiver, when enabled: an in-memory store of the newest spans, within a byte
// budget, that the filter-facing listener fills (POST /v1/traces) and the dashboard reads.
import type { AppDeps } from "../app.js";
import type { FilterAppDeps } from "../filters/app.js";
import type { TracesConfig } from "../traces/config.js";
import { defaultBudgetBytes } from "../traces/memory-budget.js";
import { TraceStore } from "../traces/store.js";

/** The receiver's parts when it is on: the store the dashboard reads and the receiver's limits. */
export interface TracesPart {
  api: NonNullable<AppDeps["traces"]>;
  receiver: NonNullable<FilterAppDeps["traces"]>;
}

/** The store (with its byte budget: traces.maxBytes, or a fraction of the memory limit) and the receiver's limits. */
export function tracesPart(config: TracesConfig): TracesPart | undefined {
  if (!config.enabled) return undefined;
  const maxBytes = config.maxBytes > 0 ? config.maxBytes : defaultBudgetBytes(config.memoryFraction);
  const store = new TraceStore(config.maxSpans, { maxBytes });
  return {
    api: { store, linkTemplate: config.linkTemplate },
    receiver: { store, maxBodyBytes: config.maxBodyBytes, maxInflightBytes: config.maxInflightBytes, maxDepth: config.maxDepth },
  };
}

/** How the start-up log describes the receiver. */
export function tracesStatus(part: TracesPart | undefined, filtersUrl: string): string {
  return part !== undefined
    ? `receiving OTLP/HTTP (JSON or protobuf) at ${filtersUrl}/v1/traces, holding at most ${part.api.store.maxSpans} spans and ${part.api.store.maxBytes} bytes`
    : "off (TOKENTRACE_TRACES_ENABLED=true turns the span receiver on)";
}
