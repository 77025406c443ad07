// A canonical JSON text: object keys sorted at every level, no whitespace. Two documents have the
// same canonical text exactly when they are the same JSON value, whatever their key order, so it
// decides whether a write changes anything and versions the effective config.

/** The canonical JSON text of a JSON value (recursive: call it on admitted, bounded-depth data). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}
