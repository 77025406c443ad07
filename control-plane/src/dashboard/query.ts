// What every dashboard endpoint reads from its query string.
import type { NextFunction, Request } from "express";
import { ApiError } from "../api/errors.js";

/** Time ranges the page offers, in seconds (5 min to 1 h). */
export const RANGES_SECONDS = [300, 900, 1800, 3600] as const;

/** A non-empty query string value, else undefined. */
export function queryString(req: Request, name: string): string | undefined {
  const v = req.query[name];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The `range` query (seconds, default 900), or undefined after passing a 400 to `next`. */
export function rangeOf(req: Request, next: NextFunction): number | undefined {
  const rangeText = queryString(req, "range") ?? "900";
  const rangeSeconds = Number(rangeText);
  if ((RANGES_SECONDS as readonly number[]).includes(rangeSeconds)) return rangeSeconds;
  next(new ApiError(400, "invalid query", [{ field: "range", reason: `must be one of ${RANGES_SECONDS.join(", ")} (seconds), got ${JSON.stringify(rangeText)}` }]));
  return undefined;
}

