// Label selectors in the apiserver's query syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
// `a notin (x)`, `a`, `!a`, joined by commas (all must hold).

/** One parsed requirement. */
export type Requirement =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists" };

/** Parse result: the requirements, or the error text the apiserver would put in a 400. */
export type ParsedSelector = { ok: true; requirements: Requirement[] } | { ok: false; error: string };

// Splits on commas that are not inside a parenthesised value list.
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

const keyPattern = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Parses a labelSelector query value; the empty string selects everything. */
export function parseLabelSelector(text: string | undefined): ParsedSelector {
  if (text === undefined || text.trim() === "") return { ok: true, requirements: [] };
  const requirements: Requirement[] = [];
  for (const raw of splitTopLevel(text)) {
    const part = raw.trim();
    const setMatch = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    let req: Requirement;
    if (setMatch) {
      const values = (setMatch[3] ?? "").split(",").map((v) => v.trim()).filter((v) => v !== "");
      req = { key: setMatch[1] ?? "", op: setMatch[2] === "in" ? "in" : "notin", values };
    } else if (part.includes("!=")) {
      const [key, value] = part.split("!=", 2) as [string, string];
      req = { key: key.trim(), op: "!=", value: value.trim() };
    } else if (part.includes("=")) {
      const [key, value] = part.split(/==?/, 2) as [string, string];
      req = { key: key.trim(), op: "=", value: value.trim() };
    } else if (part.startsWith("!")) {
      req = { key: part.slice(1).trim(), op: "!exists" };
    } else {
      req = { key: part, op: "exists" };
    }
    if (!keyPattern.test(req.key)) return { ok: false, error: `unable to parse requirement: invalid label key "${req.key}"` };
    requirements.push(req);
  }
  return { ok: true, requirements };
}

/** True when every requirement holds for `labels`. */
export function matchesSelector(requirements: Requirement[], labels: Record<string, string> | undefined): boolean {
  const have = labels ?? {};
  return requirements.every((req) => {
    const value = Object.hasOwn(have, req.key) ? have[req.key] : undefined;
    switch (req.op) {
      case "=":
        return value === req.value;
      case "!=":
        return value !== req.value;
      case "in":
        return value !== undefined && req.values.includes(value);
      case "notin":
        return value === undefined || !req.values.includes(value);
      case "exists":
        return value !== undefined;
      case "!exists":
        return value === undefined;
    }
  });
}

/** Field selectors: only `metadata.name` and `metadata.namespace` equality, as most resources support. */
export function parseFieldSelector(text: string | undefined): ParsedSelector {
  if (text === undefined || text.trim() === "") return { ok: true, requirements: [] };
  const parsed = parseLabelSelector(text);
  if (!parsed.ok) return parsed;
  for (const req of parsed.requirements) {
    if (req.key !== "metadata.name" && req.key !== "metadata.namespace") {
      return { ok: false, error: `field label not supported: ${req.key}` };
    }
    if (req.op !== "=" && req.op !== "!=") return { ok: false, error: `invalid field selector operator for ${req.key}` };
  }
  return parsed;
}
