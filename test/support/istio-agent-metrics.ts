// Istio's metrics merging and a STRICT sidecar's inbound port, emulated for a pod on 127.0.0.1:
// what the injector does to a pod's prometheus.io annotations, what pilot-agent serves on its
// status port at /stats/prometheus, and what a plaintext client meets on an application port under
// a STRICT PeerAuthentication. Read at istio/istio 86c9f01f (pkg/kube/inject/webhook.go,
// pilot/cmd/pilot-agent/status/server.go, pilot/cmd/pilot-agent/metrics/metrics.go,
// pilot/pkg/networking/core/filterchain_options.go) and envoyproxy/envoy (admin stats params at
// 74fe3651, the listener at 23762b82); each rule names the function it follows.
//
// One concession to running on one host: inside a real pod the application and the sidecar's
// capture share the port number (iptables redirects inbound traffic to 15006). Here the port the
// pod declares is the STRICT front, and `localhost` maps it to where the application really listens.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import type { V1Container, V1Pod } from "@kubernetes/client-node";

/** webhook.go: the annotations metrics merging reads, compared after strutil.SanitizeLabelName. */
const PROMETHEUS_SCRAPE = "prometheus.io/scrape";
const PROMETHEUS_PORT = "prometheus.io/port";
const PROMETHEUS_PATH = "prometheus.io/path";
const ISTIO_SCRAPE_TARGETS = "prometheus.istio.io/scrape-targets";
const MERGE_METRICS = "prometheus.istio.io/merge-metrics";
/** status.PrometheusScrapingConfig: the env var carrying the original scrape configuration. */
export const ISTIO_PROMETHEUS_ANNOTATIONS = "ISTIO_PROMETHEUS_ANNOTATIONS";

/** server.go istioReservedPorts: ports metrics merging refuses to scrape. */
const RESERVED_PORTS = new Map([
  ["15000", "Envoy admin"], ["15001", "outbound traffic capture"], ["15004", "pilot debug"], ["15006", "inbound traffic capture"],
  ["15008", "HBONE tunnel"], ["15020", "pilot-agent status / merged Prometheus"], ["15021", "Envoy health"], ["15053", "DNS proxy"],
  ["15090", "Envoy Prometheus (already merged)"],
]);

/** server.go ScrapeTarget / PrometheusScrapeConfiguration (JSON field order as Go marshals the struct). */
export interface PrometheusScrapeConfiguration {
  scrape: string;
  path: string;
  port: string;
  targets?: { port: string; path: string }[];
}

/** The mesh settings the injector reads (meshConfig.enablePrometheusMerge, defaultConfig.statusPort). */
export interface MeshSettings {
  statusPort: number;
  enablePrometheusMerge?: boolean;
}

// strutil.SanitizeLabelName as webhook.go applies it to annotation keys: every character outside
// [a-zA-Z0-9_] becomes '_', so prometheus.io/port and prometheus_io_port are one key.
const sanitize = (key: string): string => key.replace(/[^a-zA-Z0-9_]/g, "_");
const annotationOf = (pod: V1Pod, key: string): string | undefined => {
  for (const [k, v] of Object.entries(pod.metadata?.annotations ?? {})) if (sanitize(k) === sanitize(key)) return v;
  return undefined;
};

// server.go ParseScrapeTargets: comma-separated port:path pairs, trimmed, path defaulting to /metrics.
function parseScrapeTargets(raw: string): { port: string; path: string }[] {
  const out: { port: string; path: string }[] = [];
  for (const entry of raw.split(",").map((e) => e.trim())) {
    if (entry === "") continue;
    // strings.SplitN(entry, ":", 2): the port, and the rest (which may hold more colons) as the path.
    const colon = entry.indexOf(":");
    const port = (colon < 0 ? entry : entry.slice(0, colon)).trim();
    const path = colon < 0 ? "" : entry.slice(colon + 1).trim();
    if (port === "") throw new Error(`empty port in scrape target "${entry}"`);
    out.push({ port, path: path === "" ? "/metrics" : path });
  }
  return out;
}

// webhook.go validation of a port in the scrape configuration: numeric 1..65535, not the agent's, not reserved.
function checkPort(port: string, statusPort: number, what: "targets: target port" | "configuration: port"): void {
  const n = Number(port);
  if (!/^\d+$/.test(port) || n < 1 || n > 65535) throw new Error(`invalid prometheus scrape ${what.split(":")[0]}: invalid ${what.split(": ")[1]} "${port}"`);
  const prefix = `invalid prometheus scrape ${what} ${port}`;
  if (String(n) === String(statusPort)) throw new Error(`${prefix} conflicts with agent port`);
  const reserved = RESERVED_PORTS.get(String(n));
  if (reserved !== undefined) throw new Error(`${prefix} is reserved for Istio (${reserved}) and cannot be scraped`);
}

/**
 * The sidecar injector on a pod (a copy comes back): the istio-proxy container, the status
 * annotation, and applyPrometheusMerge (webhook.go postProcessPod). Throws with Istio's message
 * where the webhook refuses the pod.
 */
export function injectSidecar(pod: V1Pod, mesh: MeshSettings): V1Pod {
  const out = structuredClone(pod);
  out.metadata = { ...out.metadata, annotations: { ...(out.metadata?.annotations ?? {}) } };
  out.metadata.annotations!["sidecar.istio.io/status"] = JSON.stringify({ initContainers: ["istio-init"], containers: ["istio-proxy"] });
  const proxy: V1Container = { name: "istio-proxy", image: "docker.io/istio/proxyv2:1.28.0", env: [] };
  out.spec = { ...out.spec!, containers: [...(out.spec?.containers ?? []), proxy] };
  applyPrometheusMerge(out, proxy, mesh);
  return out;
}

// webhook.go applyPrometheusMerge: moves the prometheus.io annotations into the sidecar's
// ISTIO_PROMETHEUS_ANNOTATIONS and points them at pilot-agent's status port.
function applyPrometheusMerge(pod: V1Pod, proxy: V1Container, mesh: MeshSettings): void {
  // getPrometheusScrape: an unparsable or absent prometheus.io/scrape counts as true.
  const scrapeAnnotation = annotationOf(pod, PROMETHEUS_SCRAPE);
  if (scrapeAnnotation !== undefined && /^(0|f|F|false|FALSE|False)$/.test(scrapeAnnotation)) return;
  // enablePrometheusMerge: the pod's annotation first, then the mesh setting, else true.
  const podMerge = annotationOf(pod, MERGE_METRICS);
  const merge = podMerge !== undefined && /^(1|t|T|true|TRUE|True|0|f|F|false|FALSE|False)$/.test(podMerge) ? /^(1|t|T|true|TRUE|True)$/.test(podMerge) : (mesh.enablePrometheusMerge ?? true);
  if (!merge) return;
  const targetPort = String(mesh.statusPort);
  // Already pointing at the agent: a re-injection, left alone.
  if (annotationOf(pod, PROMETHEUS_PORT) === targetPort) return;
  // getPrometheusScrapeConfiguration.
  const scrape: PrometheusScrapeConfiguration = { scrape: annotationOf(pod, PROMETHEUS_SCRAPE) ?? "", path: annotationOf(pod, PROMETHEUS_PATH) ?? "", port: annotationOf(pod, PROMETHEUS_PORT) ?? "" };
  const rawTargets = annotationOf(pod, ISTIO_SCRAPE_TARGETS);
  if (rawTargets !== undefined) scrape.targets = parseScrapeTargets(rawTargets);
  if (scrape.targets !== undefined && scrape.targets.length > 0) {
    // Old agents read only port/path: the first target fills them.
    scrape.port = scrape.targets[0]!.port;
    scrape.path = scrape.targets[0]!.path;
    for (const t of scrape.targets) checkPort(t.port, mesh.statusPort, "targets: target port");
  } else if (scrape.port !== "") {
    checkPort(scrape.port, mesh.statusPort, "configuration: port");
  }
  // Only a non-empty configuration is handed to the agent (PrometheusScrapeConfiguration.IsEmpty).
  if (scrape.scrape !== "" || scrape.path !== "" || scrape.port !== "" || (scrape.targets?.length ?? 0) > 0) {
    const json: Record<string, unknown> = { scrape: scrape.scrape, path: scrape.path, port: scrape.port };
    if (scrape.targets !== undefined && scrape.targets.length > 0) json.targets = scrape.targets;
    proxy.env = [...(proxy.env ?? []), { name: ISTIO_PROMETHEUS_ANNOTATIONS, value: JSON.stringify(json) }];
  }
  // clearPrometheusAnnotations, then the agent's endpoint.
  const annotations = pod.metadata!.annotations!;
  for (const key of Object.keys(annotations)) if ([PROMETHEUS_PATH, PROMETHEUS_PORT, PROMETHEUS_SCRAPE, ISTIO_SCRAPE_TARGETS].some((a) => sanitize(a) === sanitize(key))) delete annotations[key];
  annotations[PROMETHEUS_PORT] = targetPort;
  annotations[PROMETHEUS_PATH] = "/stats/prometheus";
  annotations[PROMETHEUS_SCRAPE] = "true";
}

/** One of Envoy's stats as /stats/prometheus prints it: the stat's Envoy name (what `filter` matches) and its lines. */
export interface EnvoyStat {
  name: string;
  text: string;
}

/** pilot-agent's status server, as far as metrics merging goes. */
export interface PilotAgentOptions {
  /** Envoy's stats (its /stats/prometheus on 15090, which the agent reads over localhost). */
  envoyStats: () => EnvoyStat[];
  /** Where `localhost:<port>` of the pod's network namespace reaches (the application's real address). */
  localhost: (port: string) => string;
  /** PILOT_AGENT_MERGE_ENVOY_STATS (features.AgentMergeEnvoyStats), default true. */
  mergeEnvoyStats?: boolean;
  /** Istio >= 1.24 passes the scrape's query on to Envoy (istio/istio 85cd183a); older agents drop it. */
  forwardsQuery?: boolean;
}

/** A running emulated pilot-agent. */
export interface PilotAgent {
  /** The status port (what the mesh's statusPort would be). */
  port: number;
  /**
   * NewServer's reading of the sidecar's ISTIO_PROMETHEUS_ANNOTATIONS (undefined: the agent merges
   * no application). Separate from the start only because the test learns the port first.
   */
  configure(prometheusAnnotations: string | undefined): void;
  /** The agent's scrape counters (metrics.go ScrapeTotals, scrapeErrors by type). */
  scrapes: number;
  failures: { envoy: number; application: number; agent: number };
  /** Query strings Envoy received from the agent, in order. */
  envoyQueries: string[];
  close(): Promise<void>;
}

/** The ISTIO_PROMETHEUS_ANNOTATIONS the injector gave a pod's istio-proxy container, if any. */
export function prometheusAnnotationsOf(pod: V1Pod): string | undefined {
  return pod.spec?.containers?.find((c) => c.name === "istio-proxy")?.env?.find((e) => e.name === ISTIO_PROMETHEUS_ANNOTATIONS)?.value;
}

// server.go allowedContentTypes, reduced to what the app request's Accept becomes for a Prometheus
// text client: */* and text types kept as text/plain version 0.0.4; nothing recognised falls back to it too.
function appAccept(accept: string | undefined): string {
  const types = (accept ?? "").split(",").map((e) => e.split(";")[0]!.trim());
  return types.includes("application/openmetrics-text") ? "application/openmetrics-text;version=0.0.1;q=0.2,text/plain;version=0.0.4;q=0.1" : "text/plain;version=0.0.4;q=0.1";
}

// server.go negotiateMetricsFormat: OpenMetrics 1.0.0 or 0.0.1 when the app answered so, else text.
function negotiated(contentType: string | null): string {
  const [media = "", ...params] = (contentType ?? "").split(";").map((p) => p.trim());
  if (media !== "application/openmetrics-text") return "text/plain; version=0.0.4; charset=utf-8";
  const version = params.find((p) => p.startsWith("version="))?.slice(8) ?? "";
  return `application/openmetrics-text; version=${version === "1.0.0" ? "1.0.0" : "0.0.1"}; charset=utf-8`;
}

/** server.go defaultMaxAppMetricsBodyBytes: a multi-target app body over 10 MiB is dropped. */
const MAX_APP_BODY_BYTES = 10 * 1024 * 1024;

/** Starts the agent: handleStats on /stats/prometheus and /metrics; `configure` does NewServer's parsing. */
export async function startPilotAgent(opts: PilotAgentOptions): Promise<PilotAgent> {
  let targets: { port: string; path: string }[] | undefined;
  // NewServer: only a sidecar with the env set merges an application; scrape "false" turns it off;
  // the refusals throw with Istio's message.
  const configure = (raw: string | undefined): void => {
    targets = undefined;
    if (raw === undefined) return;
    const prom = JSON.parse(raw) as Partial<PrometheusScrapeConfiguration>;
    if (prom.scrape === "false") return;
    let parsed: { port: string; path: string }[];
    if (prom.targets === undefined || prom.targets.length === 0) {
      // Legacy path: defaults /metrics and port 80.
      const port = prom.port || "80";
      if (port === String(agent.port)) throw new Error("invalid prometheus scrape configuration: application port is the same as agent port, which may lead to a recursive loop");
      parsed = [{ port, path: prom.path || "/metrics" }];
    } else {
      parsed = prom.targets.map((t) => ({ port: t.port, path: t.path || "/metrics" }));
    }
    for (const t of parsed) {
      const n = Number(t.port);
      if (!/^\d+$/.test(t.port) || n < 1 || n > 65535) throw new Error(`invalid prometheus scrape configuration: invalid target port "${t.port}"`);
      if (n === agent.port) throw new Error(`invalid prometheus scrape configuration: target port ${t.port} is the same as agent port, which may lead to a recursive loop`);
      const reserved = RESERVED_PORTS.get(String(n));
      if (reserved !== undefined) throw new Error(`invalid prometheus scrape configuration: target port ${t.port} is reserved for Istio (${reserved}) and cannot be scraped`);
    }
    targets = parsed;
  };
  const agent: PilotAgent = { port: 0, configure, scrapes: 0, failures: { envoy: 0, application: 0, agent: 0 }, envoyQueries: [], close: async () => undefined };

  // The emulated Envoy admin /stats/prometheus: admin stats_params.cc StatsParams::parse reads
  // `filter` as an RE2 (an invalid one is a 400); stats_params.h shouldShowMetric shows a stat only
  // when RE2::PartialMatch(metric.name(), filter).
  const envoyAnswer = (query: string): { status: number; body: string } => {
    agent.envoyQueries.push(query);
    const filter = new URLSearchParams(query).get("filter");
    let re: RegExp | undefined;
    if (filter !== null && filter !== "") {
      try {
        re = new RegExp(filter);
      } catch {
        return { status: 400, body: "Invalid re2 regex" };
      }
    }
    return { status: 200, body: opts.envoyStats().filter((s) => re === undefined || re.test(s.name)).map((s) => s.text).join("") };
  };

  // server.go scrape: the app request carries the client's User-Agent and scrape timeout (a
  // context deadline from X-Prometheus-Scrape-Timeout-Seconds, none without it); non-200 is an error.
  const scrapeApp = async (t: { port: string; path: string }, req: IncomingMessage): Promise<{ body: Buffer; contentType: string | null }> => {
    const timeout = Number(req.headers["x-prometheus-scrape-timeout-seconds"]);
    const res = await fetch(`http://${opts.localhost(t.port)}${t.path}`, {
      headers: { accept: appAccept(req.headers.accept), ...(req.headers["user-agent"] ? { "user-agent": req.headers["user-agent"] } : {}) },
      ...(Number.isFinite(timeout) && timeout > 0 ? { signal: AbortSignal.timeout(timeout * 1000) } : {}),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`error scraping, status code: ${res.status}`);
    }
    return { body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get("content-type") };
  };

  // metrics.go: the agent's own registry, every name under the istio_agent_ prefix (server.go
  // initializeMonitoring wraps the registerer with it), written before Envoy's and the app's.
  const agentMetrics = (): string =>
    [
      "# HELP istio_agent_scrapes_total The total number of scrapes.",
      "# TYPE istio_agent_scrapes_total counter",
      `istio_agent_scrapes_total ${agent.scrapes}`,
      "# HELP istio_agent_scrape_failures_total The total number of failed scrapes.",
      "# TYPE istio_agent_scrape_failures_total counter",
      `istio_agent_scrape_failures_total{type="agent"} ${agent.failures.agent}`,
      `istio_agent_scrape_failures_total{type="application"} ${agent.failures.application}`,
      `istio_agent_scrape_failures_total{type="envoy"} ${agent.failures.envoy}`,
      "# HELP istio_agent_go_goroutines Number of goroutines that currently exist.",
      "# TYPE istio_agent_go_goroutines gauge",
      "istio_agent_go_goroutines 42",
      "",
    ].join("\n");

  // server.go handleStats: Envoy's stats (with the scrape's query), then the application(s); errors
  // only counted, never answered (the merged output is always 200); agent, Envoy, app in that order.
  const handleStats = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    agent.scrapes += 1;
    const query = (req.url ?? "").includes("?") ? (req.url ?? "").slice((req.url ?? "").indexOf("?") + 1) : "";
    let envoy = "";
    if (opts.mergeEnvoyStats ?? true) {
      const answer = envoyAnswer(opts.forwardsQuery === false ? "" : query);
      if (answer.status === 200) envoy = answer.body;
      else agent.failures.envoy += 1;
    }
    let format = "text/plain; version=0.0.4; charset=utf-8";
    const bodies: string[] = [];
    if (targets !== undefined && targets.length === 1) {
      try {
        const app = await scrapeApp(targets[0]!, req);
        format = negotiated(app.contentType);
        bodies.push(app.body.toString("utf8"));
      } catch {
        agent.failures.application += 1;
      }
    } else if (targets !== undefined) {
      // scrapeMultipleApps: concurrent, each capped; the first success picks the format, a disagreeing one makes it text.
      const results = await Promise.all(targets.map((t) => scrapeApp(t, req).catch(() => undefined)));
      let chosen: string | undefined;
      for (const r of results) {
        if (r === undefined || r.body.length > MAX_APP_BODY_BYTES) {
          agent.failures.application += 1;
          continue;
        }
        const f = negotiated(r.contentType);
        chosen = chosen === undefined || chosen === f ? f : "text/plain; version=0.0.4; charset=utf-8";
        // stripOpenMetricsEOF, then a newline between bodies.
        const text = r.body.toString("utf8").replace(/# EOF[ \t\r\n]*$/, "");
        bodies.push(text.endsWith("\n") || text === "" ? text : `${text}\n`);
      }
      format = chosen ?? format;
      if (format.startsWith("application/openmetrics-text")) bodies.push("# EOF\n");
    }
    res.writeHead(200, { "content-type": format });
    res.end(agentMetrics() + envoy + bodies.join(""));
  };

  const server: Server = createHttpServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/stats/prometheus" || path === "/metrics") {
      handleStats(req, res).catch(() => res.destroy());
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  agent.port = (server.address() as AddressInfo).port;
  agent.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return agent;
}

/** PeerAuthentication mode of the emulated inbound port. */
export type MtlsMode = "STRICT" | "PERMISSIVE";

/** A sidecar-captured application port. */
export interface InboundPort {
  port: number;
  /** Connections closed for matching no filter chain (Envoy's listener stat no_filter_chain_match). */
  noFilterChainMatch: number;
  close(): Promise<void>;
}

// TLS record type 22 (handshake) opens every ClientHello: what the tls_inspector listener filter
// detects as transport protocol "tls"; anything else it calls "raw_buffer".
const TLS_HANDSHAKE = 0x16;

/**
 * The sidecar's inbound capture of one application port. Under STRICT, Istio builds only filter
 * chains matching transport protocol "tls" (filterchain_options.go getFilterChainMatchOptions,
 * inboundStrict*FilterChainMatchOptions); a plaintext connection matches none, and Envoy closes
 * the socket without a byte (active_stream_listener_base.cc ActiveStreamListenerBase::newConnection,
 * "no matching filter chain found"). Under PERMISSIVE the raw_buffer chain passes plaintext to the
 * application. The emulation speaks no TLS: a TLS client is closed too (it would need Istio's certificates).
 */
export async function startInboundPort(mode: MtlsMode, app: () => string): Promise<InboundPort> {
  const inbound: InboundPort = { port: 0, noFilterChainMatch: 0, close: async () => undefined };
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.once("data", (first: Buffer) => {
      if (mode === "STRICT" || first[0] === TLS_HANDSHAKE) {
        inbound.noFilterChainMatch += 1;
        client.destroy();
        return;
      }
      const [host, port] = app().split(":") as [string, string];
      const upstream = connect({ host, port: Number(port) });
      sockets.add(upstream);
      upstream.on("close", () => sockets.delete(upstream));
      upstream.write(first);
      client.pipe(upstream).pipe(client);
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  inbound.port = (server.address() as AddressInfo).port;
  inbound.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return inbound;
}
