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

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/** Renders every error as JSON; unexpected ones as 500 without internals. */
export function errorHandler(log: (record: object) => void) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else {
      const parser = err as BodyParserError;
      if (parser.type === "entity.too.large") {
        apiError = new ApiError(413, "request body too large", [{ field: "(body)", reason: `larger than ${parser.limit ?? "the limit"} bytes` }]);
      } else if (parser.type === "entity.parse.failed") {
        apiError = new ApiError(400, "invalid JSON", [{ field: "(body)", reason: "not valid JSON" }]);
      } else if (parser.type === "encoding.unsupported" || parser.type === "charset.unsupported") {
        apiError = new ApiError(415, "unsupported encoding", [{ field: "content-encoding", reason: "only identity-encoded UTF-8 JSON is accepted" }]);
      } else {
        log({ level: "error", msg: "unhandled error", error: err instanceof Error ? err.stack ?? err.message : String(err) });
        apiError = new ApiError(500, "internal error");
      }
    }
    if (res.headersSent) return;
    res.status(apiError.status).set(apiError.headers).json({ error: apiError.error, details: apiError.details });
  };
}
