// What /openapi.json says each operation can answer, as "METHOD /template STATUS" keys (405 as
// "405 /template", listed once per path under x-other-methods), and the template a path falls under.
import { matchPath, pathMethods } from "../../../control-plane/src/api/method-guard.js";

/** The parts of the document read here. */
export interface OpenApiPaths {
  paths: Record<string, Record<string, unknown>>;
}

/** Every documented (operation, status). */
export function documentedStatuses(doc: OpenApiPaths): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (method === "parameters") continue;
      if (method === "x-other-methods") out.add(`405 ${path}`);
      else for (const code of Object.keys((operation as { responses: object }).responses)) out.add(`${method.toUpperCase()} ${path} ${code}`);
    }
  }
  return out;
}

/** The key a response is documented under, or undefined for a path the document does not describe. */
export function statusKey(doc: OpenApiPaths, method: string, path: string, status: number): string | undefined {
  const template = matchPath(pathMethods(doc.paths), path.split("?")[0] as string)?.template;
  if (template === undefined) return undefined;
  return status === 405 ? `405 ${template}` : `${method} ${template} ${status}`;
}
