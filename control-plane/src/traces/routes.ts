// The optional OTLP/HTTP span receiver (POST /v1/traces, JSON or binary protobuf, gzip or identity)
// and the dashboard's reads of what it holds (GET /v1/dashboard/traces). Responses follow the
// OTLP/HTTP specification (opentelemetry-proto ac2c4b5, docs/specification.md "OTLP/HTTP
// Response"), in the request's content type: 200 with an ExportTraceServiceResponse
// (partialSuccess when spans were rejected), 400 with a Status for a body that cannot be decoded,
// 413 past the size limit (also after decompression), 415 for another content type or encoding.
import { gunzip } from "node:zlib";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { ApiError } from "../api/errors.js";
import { decodeExportRequest } from "./otlp-json.js";
import { protobufExportRequest, protobufExportResponse, protobufStatus } from "./otlp-protobuf.js";
import type { TraceStore } from "./store.js";

/** What the receiver needs. */
export interface TraceRoutesDeps {
  store: TraceStore;
  /** Largest accepted body, before and after decompression. */
  maxBodyBytes: number;
  /** The read guard of the API (public or token). */
  read: (req: Request, res: Response, next: NextFunction) => void;
}

const JSON_TYPE = "application/json";
const PROTOBUF_TYPE = "application/x-protobuf";

/** A response in the request's encoding, with exactly its content type (express's send would add a charset). */
function reply(res: Response, code: number, type: string, body: Buffer | object): void {
  res.statusCode = code;
  res.setHeader("content-type", type);
  res.end(Buffer.isBuffer(body) ? body : JSON.stringify(body));
}

function status(res: Response, code: number, type: string, message: string): void {
  // google.rpc.Status: code 3 = INVALID_ARGUMENT (the spec says clients may ignore it).
  reply(res, code, type, type === PROTOBUF_TYPE ? protobufStatus(3, message) : { code: 3, message });
}

function readBody(req: Request, limit: number): Promise<Buffer | "too-large"> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on("end", () => resolve(over ? "too-large" : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function gunzipLimited(body: Buffer, limit: number): Promise<Buffer | "too-large" | "corrupt"> {
  return new Promise((resolve) => {
    gunzip(body, { maxOutputLength: limit }, (error, out) => {
      if (!error) resolve(out);
      else resolve((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" ? "too-large" : "corrupt");
    });
  });
}

/** POST /v1/traces and GET /v1/dashboard/traces. */
export function traceRoutes(deps: TraceRoutesDeps): Router {
  const router = express.Router();

  router.post("/v1/traces", async (req: Request, res: Response, next: NextFunction) => {
    try {
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
      if (type !== JSON_TYPE && type !== PROTOBUF_TYPE) {
        req.resume();
        status(res, 415, JSON_TYPE, `content-type ${JSON.stringify(type)} is not accepted: application/json or application/x-protobuf`);
        return;
      }
      if (encoding !== "identity" && encoding !== "gzip") {
        req.resume();
        status(res, 415, type, `content-encoding ${JSON.stringify(encoding)} is not accepted: gzip or identity`);
        return;
      }
      let body = await readBody(req, deps.maxBodyBytes);
      if (body !== "too-large" && encoding === "gzip") {
        const inflated = await gunzipLimited(body, deps.maxBodyBytes);
        if (inflated === "corrupt") {
          status(res, 400, type, "the body is not valid gzip");
          return;
        }
        body = inflated;
      }
      if (body === "too-large") {
        status(res, 413, type, `the body is larger than ${deps.maxBodyBytes} bytes`);
        return;
      }
      let parsed: unknown;
      try {
        parsed = type === PROTOBUF_TYPE ? protobufExportRequest(body) : JSON.parse(body.toString("utf8"));
      } catch (error) {
        status(res, 400, type, type === PROTOBUF_TYPE ? `the body is not a protobuf ExportTraceServiceRequest: ${(error as Error).message}` : "the body is not valid JSON");
        return;
      }
      let decoded;
      try {
        decoded = decodeExportRequest(parsed);
      } catch (error) {
        status(res, 400, type, (error as Error).message);
        return;
      }
      deps.store.add(decoded.spans);
      const problems = decoded.problems.join("; ");
      if (type === PROTOBUF_TYPE) reply(res, 200, type, protobufExportResponse(decoded.rejected, problems));
      else reply(res, 200, type, decoded.rejected === 0 ? {} : { partialSuccess: { rejectedSpans: String(decoded.rejected), errorMessage: problems } });
    } catch (error) {
      next(error);
    }
  });

  router.get("/v1/dashboard/traces", deps.read, (req: Request, res: Response, next: NextFunction) => {
    const q = (name: string): string | undefined => (typeof req.query[name] === "string" && req.query[name] !== "" ? (req.query[name] as string) : undefined);
    const limitText = q("limit") ?? "50";
    const limit = Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      next(new ApiError(400, "invalid query", [{ field: "limit", reason: `must be an integer in [1, 500], got ${JSON.stringify(limitText)}` }]));
      return;
    }
    const minText = q("minDurationMs");
    const minDurationMs = minText === undefined ? undefined : Number(minText);
    if (minDurationMs !== undefined && !(Number.isFinite(minDurationMs) && minDurationMs >= 0)) {
      next(new ApiError(400, "invalid query", [{ field: "minDurationMs", reason: `must be a number >= 0, got ${JSON.stringify(minText)}` }]));
      return;
    }
    const id = q("id");
    const calls =
      id !== undefined
        ? deps.store.lookup(id)
        : deps.store.recent({ route: q("route"), limit, errorsOnly: q("errors") === "true", ...(minDurationMs !== undefined ? { minDurationMs } : {}) });
    res.set("cache-control", "no-store").json({ held: deps.store.size, maxSpans: deps.store.maxSpans, items: calls });
  });
  return router;
}
