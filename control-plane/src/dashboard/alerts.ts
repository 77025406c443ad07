// The dashboard's alert list: firing and pending alerts with their annotations, read from a
// Prometheus's rules API (GET /api/v1/rules?type=alert). The answer's shape is Prometheus's
// (prometheus/prometheus@003276ee web/api/v1/api.go: rules(), RuleGroup, alertingRule, Alert;
// 2.42 adds keepFiringFor, measured on Debian's 2.42.0+ds-5+deb12u1). Every read is bounded in
// time, in bytes and in alerts, failures are typed (never thrown) and counted by the caller, and
// reads are shared: the page's refreshes from many browsers cost Prometheus one query per cacheMs.

/** The `alerts` configuration section's values the reader uses. */
export interface AlertsReaderOptions {
  /** Base URL of a Prometheus (or any server of its rules API), e.g. http://prometheus:9090. */
  url: string;
  /** Whole read: connect, answer and body. */
  timeoutMs: number;
  /** Largest answer read; a larger one is refused, not truncated (a cut JSON is no list). */
  maxBytes: number;
  /** Most alerts kept (firing first); the rest are counted in `truncated`. */
  maxAlerts: number;
  /** A read younger than this is served again instead of asking Prometheus. */
  cacheMs: number;
  fetch?: typeof fetch;
  /** Milliseconds clock (tests inject one). */
  now?: () => number;
}

/** Bytes kept of one annotation or label value (summaries and runbooks are a few hundred). */
export const MAX_TEXT_BYTES = 2048;
/** Labels kept per alert (beyond alertname and severity, which the row shows). */
export const MAX_LABELS = 16;

/** One alert as the page shows it. */
export interface AlertView {
  name: string;
  state: "firing" | "pending";
  severity: string | null;
  /** When the alert's expression started holding (Prometheus's activeAt), ISO and ms. */
  activeAt: string;
  activeAtMs: number;
  /** The rule's `for`, seconds (the wait from activeAt to firing). */
  forSeconds: number;
  value: number | null;
  summary: string | null;
  description: string | null;
  /** The `runbook_url` annotation when it is an http(s) URL. */
  runbookUrl: string | null;
  /** The `runbook` annotation (text steps), when the rule has one. */
  runbook: string | null;
  /** The alert's other labels (namespace, pod, model, route...), bounded. */
  labels: Record<string, string>;
}

/** Why a read failed (a bounded label value). */
export type AlertsFailure = "timeout" | "unreachable" | "http_status" | "too_large" | "invalid" | "error_status";

/** A read's result. */
export type AlertsRead =
  | { ok: true; alerts: AlertView[]; truncated: number; readAtMs: number }
  | { ok: false; reason: AlertsFailure; detail: string; readAtMs: number };

const FAILURE_DETAIL_BYTES = 200;

/** A copy of `text` cut to at most `maxBytes` UTF-8 bytes (never in the middle of a character). */
export function boundedText(text: string, maxBytes = MAX_TEXT_BYTES): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes - 3;
  // Back up to a character boundary: UTF-8 continuation bytes are 10xxxxxx.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString("utf8")}...`;
}

/** The body of `response`, or null past `maxBytes` (the stream is cancelled there). */
async function readBounded(response: Response, maxBytes: number): Promise<Buffer | null> {
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === "object" && v !== null && !Array.isArray(v);

/** The string values of a labels object, bounded (Prometheus marshals labels.Labels as one). */
function stringMap(value: unknown, skip: ReadonlySet<string>, max: number): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (!isPlain(value)) return out;
  let n = 0;
  for (const key of Object.keys(value).sort()) {
    const v = value[key];
    if (skip.has(key) || typeof v !== "string") continue;
    if (n++ >= max) break;
    out[boundedText(key, 128)] = boundedText(v);
  }
  return out;
}

const text = (v: unknown): string | null => (typeof v === "string" && v !== "" ? boundedText(v) : null);
const SHOWN_APART = new Set(["alertname", "severity"]);
const SEVERITY_ORDER = ["critical", "warning", "info"];

/**
 * The alerts of one rules-API answer, firing before pending, then by severity and oldest first;
 * null when it is not a successful rules answer.
 */
export function alertsOfRulesAnswer(body: unknown): AlertView[] | null {
  if (!isPlain(body) || body.status !== "success" || !isPlain(body.data) || !Array.isArray(body.data.groups)) return null;
  const alerts: AlertView[] = [];
  for (const group of body.data.groups) {
    if (!isPlain(group) || !Array.isArray(group.rules)) return null;
    for (const rule of group.rules) {
      // type=alert leaves recording rules out, but a server that ignores the parameter may not.
      if (!isPlain(rule) || rule.type !== "alerting" || !Array.isArray(rule.alerts)) continue;
      for (const alert of rule.alerts) {
        if (!isPlain(alert) || (alert.state !== "firing" && alert.state !== "pending")) continue;
        const activeAtMs = typeof alert.activeAt === "string" ? Date.parse(alert.activeAt) : NaN;
        if (!Number.isFinite(activeAtMs)) continue;
        const labels = isPlain(alert.labels) ? alert.labels : {};
        const annotations = isPlain(alert.annotations) ? alert.annotations : {};
        const runbookUrl = text(annotations.runbook_url);
        const value = typeof alert.value === "string" ? Number(alert.value) : NaN;
        alerts.push({
          name: text(labels.alertname) ?? text(rule.name) ?? "(unnamed)",
          state: alert.state,
          severity: text(labels.severity),
          activeAt: new Date(activeAtMs).toISOString(),
          activeAtMs,
          forSeconds: typeof rule.duration === "number" && Number.isFinite(rule.duration) ? rule.duration : 0,
          value: Number.isFinite(value) ? value : null,
          summary: text(annotations.summary),
          description: text(annotations.description),
          runbookUrl: runbookUrl !== null && /^https?:\/\//i.test(runbookUrl) ? runbookUrl : null,
          runbook: text(annotations.runbook),
          labels: stringMap(labels, SHOWN_APART, MAX_LABELS),
        });
      }
    }
  }
  const rank = (s: string | null): number => (s === null ? SEVERITY_ORDER.length : SEVERITY_ORDER.indexOf(s) === -1 ? SEVERITY_ORDER.length : SEVERITY_ORDER.indexOf(s));
  return alerts.sort((a, b) => (a.state !== b.state ? (a.state === "firing" ? -1 : 1) : rank(a.severity) - rank(b.severity) || a.activeAtMs - b.activeAtMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
}

/** Reads a Prometheus's alerts on demand, one read at a time, the last kept for `cacheMs`. */
export class PrometheusAlertsReader {
  private last: AlertsRead | undefined;
  private inflight: Promise<AlertsRead> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly options: AlertsReaderOptions,
    /** Called once per failed read with its reason (the caller's counter). */
    private readonly onFailure: (reason: AlertsFailure) => void = () => undefined,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** The rules API's address. */
  get rulesUrl(): string {
    return new URL("/api/v1/rules?type=alert", this.options.url).toString();
  }

  /** The current alerts: the last read when fresh, else a new one (shared with concurrent callers). */
  async read(): Promise<AlertsRead> {
    if (this.last && this.now() - this.last.readAtMs < this.options.cacheMs) return this.last;
    this.inflight ??= this.readOnce().then((r) => {
      this.last = r;
      this.inflight = undefined;
      if (!r.ok) this.onFailure(r.reason);
      return r;
    });
    return this.inflight;
  }

  private async readOnce(): Promise<AlertsRead> {
    const fail = (reason: AlertsFailure, detail: string): AlertsRead => ({ ok: false, reason, detail: boundedText(detail, FAILURE_DETAIL_BYTES), readAtMs: this.now() });
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    let bytes: Buffer | null;
    let status: number;
    try {
      const response = await (this.options.fetch ?? fetch)(this.rulesUrl, { signal, headers: { accept: "application/json" }, redirect: "error" });
      status = response.status;
      bytes = await readBounded(response, this.options.maxBytes);
    } catch (error) {
      if (signal.aborted) return fail("timeout", `no answer within ${this.options.timeoutMs} ms`);
      return fail("unreachable", String((error as Error).cause ?? error));
    }
    if (bytes === null) return fail("too_large", `answer over ${this.options.maxBytes} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString("utf8"));
    } catch {
      return fail(status === 200 ? "invalid" : "http_status", `HTTP ${status}: not JSON`);
    }
    if (isPlain(body) && body.status === "error") return fail("error_status", `HTTP ${status}: ${typeof body.error === "string" ? body.error : "error"}`);
    if (status !== 200) return fail("http_status", `HTTP ${status}`);
    const alerts = alertsOfRulesAnswer(body);
    if (alerts === null) return fail("invalid", "not a rules API answer (data.groups[].rules[])");
    return { ok: true, alerts: alerts.slice(0, this.options.maxAlerts), truncated: Math.max(0, alerts.length - this.options.maxAlerts), readAtMs: this.now() };
  }
}
