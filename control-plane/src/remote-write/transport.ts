// The transport contract (after opentelemetry-js exporters): one attempt, classified. Retry policy
// lives in retry.ts, not here.

/** Which remote-write protocol a body is encoded in. */
export type Protocol = "1.0" | "2.0";

/** The outcome of one send attempt. */
export type SendResult =
  | { kind: "success"; status: number; samplesWritten?: number }
  | { kind: "retryable"; reason: string; status?: number; retryAfterMs?: number }
  | { kind: "failed"; reason: string; status?: number };

/** Sends one compressed request body. Never throws for network or HTTP errors. */
export interface Transport {
  send(body: Uint8Array, protocol: Protocol): Promise<SendResult>;
}

/** Options of the HTTP transport. */
export interface HttpTransportOptions {
  url: string;
  /** Extra headers (for example `X-Scope-OrgID` for Mimir, or Authorization). */
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Current time in ms since the epoch, to turn an HTTP-date Retry-After into a delay. */
  now?: () => number;
}

const USER_AGENT = "tokentrace-control-plane/0.1.0";

/** Parses Retry-After (delay-seconds or an HTTP-date) into ms from `nowMs`; undefined if absent or bad. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Classifies an HTTP status the way remote write 1.0 asks: 5xx and 429 retry, other 4xx are final. */
export function classifyStatus(status: number, retryAfterMs: number | undefined): SendResult {
  if (status >= 200 && status < 300) return { kind: "success", status };
  if (status === 429 || status >= 500) {
    const r: SendResult = { kind: "retryable", reason: status === 429 ? "http_429" : "http_5xx", status };
    if (retryAfterMs !== undefined) r.retryAfterMs = retryAfterMs;
    return r;
  }
  return { kind: "failed", reason: `http_${status}`, status };
}

/** Remote write over HTTP with the headers the 1.0 and 2.0 specs require. */
export class HttpTransport implements Transport {
  constructor(private readonly opts: HttpTransportOptions) {}

  async send(body: Uint8Array, protocol: Protocol): Promise<SendResult> {
    const headers: Record<string, string> = {
      ...this.opts.headers,
      "Content-Encoding": "snappy",
      "Content-Type": protocol === "2.0" ? "application/x-protobuf;proto=io.prometheus.write.v2.Request" : "application/x-protobuf",
      "X-Prometheus-Remote-Write-Version": protocol === "2.0" ? "2.0.0" : "0.1.0",
      "User-Agent": USER_AGENT,
    };
    let res: Response;
    try {
      res = await fetch(this.opts.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      const name = (err as { name?: string }).name;
      return { kind: "retryable", reason: name === "TimeoutError" ? "timeout" : "network" };
    }
    // Drain the body so the connection can be reused; its text is not logged (it may echo data).
    await res.arrayBuffer().catch(() => undefined);
    const now = this.opts.now ? this.opts.now() : Date.now();
    const result = classifyStatus(res.status, parseRetryAfter(res.headers.get("retry-after"), now));
    if (result.kind === "success") {
      const written = res.headers.get("x-prometheus-remote-write-samples-written");
      if (written !== null && /^\d+$/.test(written)) result.samplesWritten = Number(written);
    }
    return result;
  }
}
