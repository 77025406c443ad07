// GET /api/v1/rules as Prometheus 2.42 answers it, for tests of readers of that API. The shape
// follows prometheus/prometheus@003276ee web/api/v1/api.go (rules(): RuleDiscovery, RuleGroup,
// alertingRule, recordingRule, Alert; respond()/respondError() for the envelope), plus the fields
// 2.42 adds (keepFiringFor per alerting rule, limit per group), as measured on Debian's
// 2.42.0+ds-5+deb12u1: labels and annotations are JSON objects, value is Go's 'e' format, activeAt
// RFC 3339 with nanoseconds.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One alert of a rule (Alert in api.go). */
export interface ApiAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing";
  activeAt: string;
  value: string;
}

/** An alerting rule's entry (alertingRule in api.go). */
export function alertingRule(r: { name: string; query: string; duration: number; labels?: Record<string, string>; annotations?: Record<string, string>; alerts: ApiAlert[] }): object {
  // The rule's state is its most advanced alert's (rules/alerting.go State()).
  const state = r.alerts.some((a) => a.state === "firing") ? "firing" : r.alerts.length > 0 ? "pending" : "inactive";
  return {
    state,
    name: r.name,
    query: r.query,
    duration: r.duration,
    keepFiringFor: 0,
    labels: r.labels ?? {},
    annotations: r.annotations ?? {},
    alerts: r.alerts,
    health: "ok",
    evaluationTime: 0.000455664,
    lastEvaluation: "2026-12-05T03:26:41.524642647Z",
    type: "alerting",
  };
}

/** A recording rule's entry (recordingRule in api.go): present without ?type=alert. */
export function recordingRule(name: string, query: string): object {
  return { name, query, health: "ok", evaluationTime: 0.00004, lastEvaluation: "2026-12-05T03:26:41.525Z", type: "recording" };
}

/** The success envelope around the groups (respond() with RuleDiscovery). */
export function rulesAnswer(groups: { name: string; file: string; interval: number; rules: object[] }[]): object {
  return { status: "success", data: { groups: groups.map((g) => ({ ...g, limit: 0, evaluationTime: 0.0006, lastEvaluation: "2026-12-05T03:26:41.524628972Z" })) } };
}

/** A server on 127.0.0.1 whose handler answers each request; counts requests. */
export async function startRulesApi(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server: Server = createServer((req, res) => {
    n++;
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => n,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** Answers `body` as JSON with `status` (api.go respond()/respondError() set content-type and length). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
