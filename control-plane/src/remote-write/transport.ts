// The transport contract (after opentelemetry-js exporters): one attempt, classified. Retry policy
// lives in retry.ts, not here.
import { rejectionReason, REJECTION_TEXT_BYTES } from "./rejection.js";

/** Which remote-write protocol a body is encoded in. */
export type Protocol = "1.0" | "2.0";

/** The outcome of one send attempt. */
export type SendResult =
  | { kind: "success"; status: number; samplesWritten?: number }
  | { kind: "retryable"; reason: string; status?: number; retryAfterMs?: number }
  /** `samplesWritten` on a failure: a 2.0 receiver's partial write (the rest of the request was stored). */
  | { kind: "failed"; reason: string; status?: number; samplesWritten?: number };

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
    // Drain the body so the connection can be reused; its text is never logged (it may echo data),
    // only a 400's first bytes are kept, for the reason the receiver refused the samples.
    const text = await drainKeeping(res, res.status === 400 ? REJECTION_TEXT_BYTES : 0);
    const now = this.opts.now ? this.opts.now() : Date.now();
    const result = classifyStatus(res.status, parseRetryAfter(res.headers.get("retry-after"), now));
    if (result.kind === "failed" && res.status === 400) result.reason = rejectionReason(new TextDecoder().decode(text));
    if (result.kind === "success" || (result.kind === "failed" && res.status === 400)) {
      // A 2.0 receiver sends the count on a 400 too: what it stored of a partly refused request.
      const written = res.headers.get("x-prometheus-remote-write-samples-written");
      if (written !== null && /^\d+$/.test(written)) result.samplesWritten = Number(written);
    }
    return result;
  }
}

/** Reads a response body to its end, keeping at most its first `keepBytes` bytes. */
async function drainKeeping(res: Response, keepBytes: number): Promise<Uint8Array> {
  const kept = new Uint8Array(keepBytes);
  let n = 0;
  const reader = res.body?.getReader();
  if (!reader) return kept.subarray(0, 0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.length, keepBytes - n);
      if (take > 0) kept.set(value.subarray(0, take), n);
      n += take;
    }
  } catch {
    // A body cut short: what arrived is enough for a reason, and the status is already known.
  }
  return kept.subarray(0, n);
}
