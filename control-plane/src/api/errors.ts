// The one JSON error shape of the API, `{ "error": ..., "details": [{ "field", "reason" }] }`,
// and the single express error handler that produces it for every failure.
import type { NextFunction, Request, Response } from "express";
import type { FieldError } from "../policy/model.js";

/** An expected failure with its HTTP status; thrown by handlers, rendered by {@link errorHandler}. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly details: FieldError[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(error);
  }
}

/** 404 for paths no route serves. */
export function notFoundHandler(req: Request, _res: Response, next: NextFunction): void {
  next(new ApiError(404, "not found", [{ field: "path", reason: `no route for ${req.method} ${req.path}` }]));
}

/** What express, its router and body-parser attach to the errors they raise (http-errors). */
interface HttpLibraryError {
  type?: string;
  status?: number;
  expose?: boolean;
  limit?: number;
}

/** An error express or body-parser raised for a bad request, as an ApiError; undefined for anything else. */
function fromHttpLibrary(err: unknown): ApiError | undefined {
  const e = err as HttpLibraryError;
  if (e === null || typeof e !== "object") return undefined;
  if (e.type === "entity.too.large") return new ApiError(413, "request body too large", [{ field: "(body)", reason: `larger than ${e.limit ?? "the limit"} bytes` }]);
  if (e.type === "encoding.unsupported" || e.type === "charset.unsupported") {
    return new ApiError(415, "unsupported media type", [{ field: "content-encoding", reason: "only unencoded (identity) UTF-8 JSON bodies are accepted" }]);
  }
  if (e.type === "request.aborted" || e.type === "request.size.invalid") return new ApiError(400, "incomplete body", [{ field: "(body)", reason: "the body ended before its declared length" }]);
  // The router's decodeURIComponent of a path parameter (e.g. /v1/policies/%zz): a URIError marked 400.
  if (err instanceof URIError && e.status === 400) return new ApiError(400, "invalid path", [{ field: "path", reason: "malformed percent-encoding" }]);
  if (typeof e.status === "number" && e.status >= 400 && e.status < 500 && e.expose === true) {
    return new ApiError(e.status, "bad request", [{ field: "(request)", reason: String((err as Error).message ?? "refused") }]);
  }
  return undefined;
}

/** Renders every error as JSON; unexpected ones as 500 without internals. */
export function errorHandler(log: (record: object) => void) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    let apiError = err instanceof ApiError ? err : fromHttpLibrary(err);
    if (apiError === undefined) {
      log({ level: "error", msg: "unhandled error", error: err instanceof Error ? err.stack ?? err.message : String(err) });
      apiError = new ApiError(500, "internal error");
    }
    if (res.headersSent) return;
    res.status(apiError.status).set(apiError.headers).json({ error: apiError.error, details: apiError.details });
  };
}
