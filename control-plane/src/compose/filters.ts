// The filter-facing listener: its own port and bind address (filters.host, filters.port), its own
// authentication (filters.auth), serving the policy pull, the content key and the span receiver.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { loadTokens } from "../api/auth.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import { ContentKeyRing } from "../content/keys.js";
import type { ContentConfig } from "../content/config.js";
import { createFilterApp } from "../filters/app.js";
import type { FiltersConfig } from "../filters/config.js";
import type { HttpConfig } from "../http/config.js";
import { listenOn } from "../listen.js";
import type { OverrideSource } from "../policy/effective.js";
import type { PolicyRepository } from "../policy/repository.js";
import type { Runtime } from "./runtime.js";
import type { TracesPart } from "./traces.js";

/** The running filter-facing listener. */
export interface FilterListener {
  server: Server;
  url: string;
  keys: ContentKeyRing;
  stop(): void;
}

/** Reads the keys, builds the app and binds it; throws a start-up failure (bad tokens, a taken port). */
export async function startFilterListener(parts: {
  config: FiltersConfig;
  http: HttpConfig;
  content: ContentConfig;
  runtime: Pick<Runtime, "log" | "ticker">;
  store: PolicyRepository;
  overrides: OverrideSource;
  metrics: ControlPlaneMetrics;
  traces: TracesPart | undefined;
}): Promise<FilterListener> {
  const { config, runtime } = parts;
  const tokens = config.auth === "token" ? loadTokens(config.tokensFile, config.tokens, "filters") : { tokens: [], errors: [] };
  if (tokens.errors.length > 0) throw new Error(tokens.errors.join("; "));
  const keys = new ContentKeyRing(parts.content.keysDir, runtime.log);
  keys.start((name, ms, task) => runtime.ticker.every(name, ms, task), parts.content.rereadIntervalMs);
  const app = createFilterApp({
    auth: config.auth,
    trustDomain: config.mesh.trustDomain,
    tokens: tokens.tokens,
    store: parts.store,
    overrides: parts.overrides,
    metrics: parts.metrics,
    keys,
    ...(parts.traces !== undefined ? { traces: parts.traces.receiver } : {}),
    log: runtime.log,
  });
  let server: Server;
  try {
    server = await listenOn(app, config.port, config.host, "filters.port (TOKENTRACE_FILTERS_PORT)", parts.http);
  } catch (error) {
    keys.stop();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  return { server, url: `http://${host}:${port}`, keys, stop: () => keys.stop() };
}
