// Request bodies: JSON only, identity-encoded UTF-8, at most the configured bytes, decoded
// strictly (strict-json.ts). Every refusal names what to change; nothing is inflated, so the 415
// for a gzip body says what the server really accepts.
import express, { type NextFunction, type Request, type Response } from "express";
import { closeAfterResponse, declaredLength } from "../http/limited-body.js";
import { ApiError } from "./errors.js";
import { decodeStrictJson } from "./strict-json.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Middleware: `req.body` becomes the decoded JSON value of a body of one of `mediaTypes`. */
export function jsonBody(limitBytes: number, mediaTypes: readonly string[]) {
  const readRaw = express.raw({ type: () => true, limit: limitBytes, inflate: false });
  const accepted = mediaTypes.join(" or ");
  return (req: Request, res: Response, next: NextFunction): void => {
    // A declared length over the limit is refused before a byte of the body is read, and the
    // connection closed after the answer (body-parser would read the whole body first).
    const declared = declaredLength(req);
    if (declared !== undefined && declared > limitBytes) {
      closeAfterResponse(res);
      next(new ApiError(413, "request body too large", [{ field: "(body)", reason: `larger than ${limitBytes} bytes` }]));
      return;
    }
    const encoding = (req.get("content-encoding") ?? "").trim().toLowerCase();
    if (encoding !== "" && encoding !== "identity") {
      next(new ApiError(415, "unsupported media type", [{ field: "content-encoding", reason: `only unencoded (identity) bodies are accepted, got ${JSON.stringify(encoding.slice(0, 64))}` }]));
      return;
    }
    if (!req.is([...mediaTypes])) {
      next(new ApiError(415, "unsupported media type", [{ field: "content-type", reason: `must be ${accepted}` }]));
      return;
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(req.get("content-type") ?? "")?.[1];
    if (charset !== undefined && charset.toLowerCase() !== "utf-8") {
      next(new ApiError(415, "unsupported media type", [{ field: "content-type", reason: "charset must be utf-8" }]));
      return;
    }
    readRaw(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) {
        next(error);
        return;
      }
      const raw: unknown = req.body;
      let text: string;
      try {
        text = Buffer.isBuffer(raw) ? utf8.decode(raw) : "";
      } catch {
        next(new ApiError(400, "invalid JSON", [{ field: "(body)", reason: "not valid UTF-8" }]));
        return;
      }
      const decoded = decodeStrictJson(text);
      if (!decoded.ok) {
        next(new ApiError(400, "invalid JSON", [{ field: decoded.field, reason: decoded.reason }]));
        return;
      }
      req.body = decoded.value;
      next();
    });
  };
}
