// meta.k8s.io/v1 Tables, what `kubectl get` asks for (Accept: application/json;as=Table;...):
// a Name column, then a custom resource's additionalPrinterColumns, each cell found by client-go
// JSONPath (missing keys allowed) and typed as the column says. Read at apiextensions-apiserver
// 1aa2717a pkg/registry/customresource/tableconvertor/tableconvertor.go and apimachinery eed236ce
// pkg/util/duration/duration.go (HumanDuration, for date columns). Without printer columns a CRD
// gets an Age column (apiserver's default for custom resources).
import type { Json } from "./patch.js";
import type { KubeObject, ResourceType } from "./store.js";

/** True when the Accept header asks for a v1 Table. */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => /;\s*as=Table/.test(part) && /;\s*g=meta\.k8s\.io/.test(part) && /;\s*v=v1(;|$|\s)/.test(part));
}

/** apimachinery duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(ms / 60_000);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(ms / 3_600_000);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.trunc(hours / 24) % 365;
    return days === 0 ? `${Math.trunc(hours / 24 / 365)}y` : `${Math.trunc(hours / 24 / 365)}y${days}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** client-go JSONPath for what printer columns use: `.a.b`, `[n]`, `[*]`, `[?(@.k=="v")]`; missing keys give nothing. */
export function jsonPath(root: Json, path: string): Json[] {
  const tokens = path.match(/\.[^.[\]]+|\[\?\(@\.[^)]*\)\]|\[[^\]]*\]/g) ?? [];
  let current: Json[] = [root];
  for (const token of tokens) {
    const next: Json[] = [];
    for (const value of current) {
      if (token.startsWith(".")) {
        if (isObject(value) && Object.hasOwn(value, token.slice(1))) next.push(value[token.slice(1)] as Json);
      } else if (token === "[*]") {
        if (Array.isArray(value)) next.push(...value);
        else if (isObject(value)) next.push(...Object.values(value));
      } else if (token.startsWith("[?(@.")) {
        const m = /^\[\?\(@\.([\w.-]+)\s*==\s*["']([^"']*)["']\)\]$/.exec(token);
        if (m !== null && Array.isArray(value)) next.push(...value.filter((item) => isObject(item) && item[m[1] as string] === m[2]));
      } else if (/^\[-?\d+\]$/.test(token) && Array.isArray(value)) {
        const i = Number(token.slice(1, -1));
        const item = value[i < 0 ? value.length + i : i];
        if (item !== undefined) next.push(item);
      }
    }
    current = next;
  }
  return current;
}

// tableconvertor.go cellForJSONValue (and the string branch's PrintResults).
function cell(type: string, value: Json, nowMs: number): Json {
  switch (type) {
    case "integer":
      return typeof value === "number" ? Math.trunc(value) : null;
    case "number":
      return typeof value === "number" ? value : null;
    case "boolean":
      return typeof value === "boolean" ? value : null;
    case "string":
      return typeof value === "string" ? value : JSON.stringify(value);
    case "date": {
      if (typeof value !== "string") return null;
      const at = Date.parse(value);
      return Number.isNaN(at) ? "<invalid>" : humanDuration(nowMs - at);
    }
    default:
      return null;
  }
}

/** The Table for objects of `type` (one for a get, several for a list). */
export function toTable(type: ResourceType, objects: KubeObject[], resourceVersion: string, nowMs: number): Json {
  const columns = type.printerColumns ?? [{ name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" }];
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: [
      { name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace.", priority: 0 },
      ...columns.map((c) => ({ name: c.name, type: c.type, format: c.format ?? "", description: c.description ?? `Custom resource definition column (in JSONPath format): ${c.jsonPath}`, priority: c.priority ?? 0 })),
    ],
    rows: objects.map((object) => ({
      cells: [object.metadata?.name ?? "", ...columns.map((c) => {
        const found = jsonPath(object as Json, c.jsonPath);
        return found.length === 0 ? null : cell(c.type, found[0] as Json, nowMs);
      })],
      object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: (object.metadata ?? {}) as Json },
    })),
  } as Json;
}
