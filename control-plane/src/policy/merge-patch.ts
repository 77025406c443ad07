// JSON merge patch (RFC 7396) for PATCH /v1/policies/{name}: objects merge key by key, null
// removes a key, anything else (arrays included) replaces. Results are built on null-prototype
// objects, so a key such as "__proto__" or "constructor" is an ordinary key and can never reach
// a prototype; admission then copies the result to plain JSON data before validating it.

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Returns `target` with `patch` applied; neither argument is modified. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result = Object.create(null) as Record<string, unknown>;
  if (isObject(target)) for (const [key, value] of Object.entries(target)) result[key] = value;
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}
