// The optional OTLP/HTTP span receiver (POST /v1/traces on the filter-facing listener, JSON or
// binary protobuf, gzip or identity) and the dashboard's reads of what it holds
// (GET /v1/dashboard/traces on the API listener). Responses follow the OTLP/HTTP specification
// (opentelemetry-proto ac2c4b5, docs/specification.md "OTLP/HTTP Response"), in the request's
// content type: 200 with an ExportTraceServiceResponse (partialSuccess when spans were rejected),
// 400 with a Status for a body that cannot be decoded or nests too deep, 413 past the size limit
// (also after decompression; a declared Content-Length over it is refused before the body is
// read), 415 for another content type or encoding, 429 with Retry-After while too many body bytes
// are already being read ("throttling", retryable).
//
// Bounded at every step: bytes being read at once (maxInflightBytes, as kube-apiserver bounds
// requests in flight and answers 429: kubernetes/kubernetes
// staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go WithMaxInFlightLimit), the body
// (maxBodyBytes), its nesting (maxDepth, measured before any tree is built), what a span keeps
// (otlp-json.ts caps, owned copies), and what the store holds (bytes and count, fair per source).
import type { IncomingMessage, ServerResponse } from "node:http";
import { gunzip } from "node:zlib";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { ApiError } from "../api/errors.js";
import type { ControlPlaneMetrics } from "../api/metrics.js";
import { closeAfterResponse, declaredLength, readLimitedBody } from "../http/limited-body.js";
import { boundJsonStrings, keptStringBytes } from "./bounded-input.js";
import { DecodeTurns } from "./decode-turns.js";
import { decodeExportRequest, MAX_STRING, type Decoded } from "./otlp-json.js";
import { protobufExportRequest, protobufExportResponse, protobufStatus } from "./otlp-protobuf.js";
import type { LlmCall, TraceStore } from "./store.js";

/** What the receiver needs. */
export interface TraceReceiverDeps {
  store: TraceStore;
  /** Largest accepted body, before and after decompression. */
  maxBodyBytes: number;
  /** Body bytes being read or decoded at once; 0 = 4 x maxBodyBytes. */
  maxInflightBytes?: number;
  /** Deepest nesting of a body (JSON containers, protobuf messages). */
  maxDepth?: number;
  metrics?: Pick<ControlPlaneMetrics, "spansReceived" | "spansDropped" | "spanRequestsRefused">;
}

const JSON_TYPE = "application/json";
const PROTOBUF_TYPE = "application/x-protobuf";

/** A response in the request's encoding, with exactly its content type (express's send would add a charset). */
function reply(res: ServerResponse, code: number, type: string, body: Buffer | object): void {
  res.statusCode = code;
  res.setHeader("content-type", type);
  res.end(Buffer.isBuffer(body) ? body : JSON.stringify(body));
}

function status(res: ServerResponse, code: number, type: string, message: string): void {
  // google.rpc.Status: code 3 = INVALID_ARGUMENT, 8 = RESOURCE_EXHAUSTED (the spec says clients may ignore it).
  const rpc = code === 429 ? 8 : 3;
  reply(res, code, type, type === PROTOBUF_TYPE ? protobufStatus(rpc, message) : { code: rpc, message });
}

function gunzipLimited(body: Buffer, limit: number): Promise<Buffer | "too-large" | "corrupt"> {
  return new Promise((resolve) => {
    gunzip(body, { maxOutputLength: limit }, (error, out) => {
      if (!error) resolve(out);
      else resolve((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" ? "too-large" : "corrupt");
    });
  });
}

/** A body bounded, parsed and decoded, or why it is refused (400). */
type DecodeOutcome = { ok: true; decoded: Decoded } | { ok: false; reason: "too_deep" | "malformed"; message: string };

function decodeBody(raw: Buffer, type: string, maxDepth: number): DecodeOutcome {
  let body = raw;
  if (type === JSON_TYPE) {
    const bounded = boundJsonStrings(body, maxDepth, keptStringBytes(MAX_STRING));
    if (!bounded.ok) return bounded.reason === "too-deep" ? { ok: false, reason: "too_deep", message: `the body nests deeper than ${maxDepth} levels` } : { ok: false, reason: "malformed", message: "the body is not valid JSON" };
    body = bounded.body;
  }
  let parsed: unknown;
  try {
    parsed = type === PROTOBUF_TYPE ? protobufExportRequest(body, maxDepth) : JSON.parse(body.toString("utf8"));
  } catch (error) {
    const deep = /nested deeper/.test((error as Error).message);
    return { ok: false, reason: deep ? "too_deep" : "malformed", message: type === PROTOBUF_TYPE ? `the body is not a protobuf ExportTraceServiceRequest: ${(error as Error).message}` : "the body is not valid JSON" };
  }
  try {
    return { ok: true, decoded: decodeExportRequest(parsed) };
  } catch (error) {
    return { ok: false, reason: "malformed", message: (error as Error).message };
  }
}

/** Handles one POST /v1/traces from an authenticated `source`; rejects only for bugs. */
export type TraceReceiver = (req: IncomingMessage, res: ServerResponse, source: string) => Promise<void>;

/**
 * The receiver as a plain node handler: the filter-facing listener calls it without express's
 * router (ingest is its hot path); {@link traceReceiverRoutes} mounts it in an express app.
 */
export function traceReceiver(deps: TraceReceiverDeps): TraceReceiver {
  const maxInflight = deps.maxInflightBytes || 4 * deps.maxBodyBytes;
  const maxDepth = deps.maxDepth ?? 32;
  let inflight = 0;
  const turns = new DecodeTurns();
  const refused = (reason: string): void => deps.metrics?.spanRequestsRefused.inc({ reason });

  return async (req, res, source) => {
    let reserved = 0;
    try {
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
      if (type !== JSON_TYPE && type !== PROTOBUF_TYPE) {
        refused("unsupported");
        closeAfterResponse(res);
        status(res, 415, JSON_TYPE, `content-type ${JSON.stringify(type.slice(0, 64))} is not accepted: application/json or application/x-protobuf`);
        return;
      }
      if (encoding !== "identity" && encoding !== "gzip") {
        refused("unsupported");
        closeAfterResponse(res);
        status(res, 415, type, `content-encoding ${JSON.stringify(encoding.slice(0, 64))} is not accepted: gzip or identity`);
        return;
      }
      const declared = declaredLength(req);
      if (declared !== undefined && declared > deps.maxBodyBytes) {
        refused("too_large");
        closeAfterResponse(res);
        status(res, 413, type, `the body is larger than ${deps.maxBodyBytes} bytes`);
        return;
      }
      // Reserve what reading (and inflating) this body may take, before reading a byte of it.
      reserved = Math.min(declared ?? deps.maxBodyBytes, deps.maxBodyBytes) + (encoding === "gzip" ? deps.maxBodyBytes : 0);
      if (inflight + reserved > maxInflight) {
        reserved = 0;
        refused("inflight");
        closeAfterResponse(res);
        res.setHeader("retry-after", "1");
        status(res, 429, type, `the receiver is reading ${maxInflight} bytes of other requests; retry`);
        return;
      }
      inflight += reserved;
      const read = await readLimitedBody(req, deps.maxBodyBytes);
      if (!read.ok) {
        refused(read.reason === "too-large" ? "too_large" : "aborted");
        closeAfterResponse(res);
        status(res, 413, type, `the body is larger than ${deps.maxBodyBytes} bytes`);
        return;
      }
      let body = read.body;
      if (encoding === "gzip") {
        const inflated = await gunzipLimited(body, deps.maxBodyBytes);
        if (inflated === "corrupt") {
          refused("malformed");
          status(res, 400, type, "the body is not valid gzip");
          return;
        }
        if (inflated === "too-large") {
          refused("too_large");
          status(res, 413, type, `the body is larger than ${deps.maxBodyBytes} bytes`);
          return;
        }
        body = inflated;
      }
      const outcome = await turns.run(() => decodeBody(body, type, maxDepth));
      if (!outcome.ok) {
        refused(outcome.reason);
        status(res, 400, type, outcome.message);
        return;
      }
      const decoded = outcome.decoded;
      const added = deps.store.add(decoded.spans, source);
      if (deps.metrics !== undefined) {
        deps.metrics.spansReceived.inc(decoded.spans.length + decoded.rejected);
        if (decoded.rejected > 0) deps.metrics.spansDropped.inc({ reason: "invalid" }, decoded.rejected);
        if (added.evicted > 0) deps.metrics.spansDropped.inc({ reason: "evicted" }, added.evicted);
        for (const [reason, n] of Object.entries(added.refused)) deps.metrics.spansDropped.inc({ reason }, n);
      }
      const rejected = decoded.rejected + (added.refused.over_budget ?? 0) + (added.refused.token_trace_id_conflict ?? 0);
      const problems = [...decoded.problems];
      if (added.refused.token_trace_id_conflict) problems.push("a span's tokentrace.token_trace_id is held by another source under another trace id");
      if (added.refused.over_budget) problems.push("a span is larger than the receiver's byte budget");
      const message = problems.join("; ");
      if (type === PROTOBUF_TYPE) reply(res, 200, type, protobufExportResponse(rejected, message));
      else reply(res, 200, type, rejected === 0 ? {} : { partialSuccess: { rejectedSpans: String(rejected), errorMessage: message } });
    } finally {
      inflight -= reserved;
    }
  };
}

/** POST /v1/traces as an express router (mount after the filter-facing listener's authentication). */
export function traceReceiverRoutes(deps: TraceReceiverDeps): Router {
  const router = express.Router();
  const receive = traceReceiver(deps);
  router.post("/v1/traces", (req: Request, res: Response, next: NextFunction) => {
    receive(req, res, req.filterCaller?.source ?? "local").catch(next);
  });
  return router;
}

/** Span attributes that carry captured prompt and completion text (docs/data-protection.md). */
export const contentAttributes: readonly string[] = ["gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"];

/** A call without its captured content, for callers without a token. */
function withoutContent(call: LlmCall): LlmCall & { contentWithheld?: true } {
  if (!contentAttributes.some((k) => k in call.attributes)) return call;
  const attributes = Object.create(null) as LlmCall["attributes"];
  for (const key in call.attributes) if (!contentAttributes.includes(key)) attributes[key] = call.attributes[key] as LlmCall["attributes"][string];
  return { ...call, attributes, contentWithheld: true };
}

/** GET /v1/dashboard/traces: captured content only to callers with a token of read scope. */
export function traceReadRoutes(deps: { store: TraceStore; read: (req: Request, res: Response, next: NextFunction) => void }): Router {
  const router = express.Router();
  router.get("/v1/dashboard/traces", deps.read, (req: Request, res: Response, next: NextFunction) => {
    const q = (name: string): string | undefined => (typeof req.query[name] === "string" && req.query[name] !== "" ? (req.query[name] as string) : undefined);
    const limitText = q("limit") ?? "50";
    const limit = Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      next(new ApiError(400, "invalid query", [{ field: "limit", reason: `must be an integer in [1, 500], got ${JSON.stringify(limitText.slice(0, 32))}` }]));
      return;
    }
    // Optional non-negative numbers: the thresholds (ms) and the window of start times (Unix ms).
    const numbers: { minDurationMs?: number; minTtftMs?: number; fromMs?: number; toMs?: number } = {};
    for (const field of ["minDurationMs", "minTtftMs", "fromMs", "toMs"] as const) {
      const text = q(field);
      if (text === undefined) continue;
      const value = Number(text);
      if (!(Number.isFinite(value) && value >= 0)) {
        next(new ApiError(400, "invalid query", [{ field, reason: `must be a number >= 0, got ${JSON.stringify(text.slice(0, 32))}` }]));
        return;
      }
      numbers[field] = value;
    }
    const id = q("id");
    const calls = id !== undefined ? deps.store.lookup(id) : deps.store.recent({ route: q("route"), limit, errorsOnly: q("errors") === "true", ...numbers });
    const anonymous = req.principal === undefined || req.principal === "anonymous";
    res.set("cache-control", "no-store").json({ held: deps.store.size, maxSpans: deps.store.maxSpans, heldBytes: deps.store.bytes, maxBytes: deps.store.maxBytes, items: anonymous ? calls.map(withoutContent) : calls });
  });
  return router;
}
