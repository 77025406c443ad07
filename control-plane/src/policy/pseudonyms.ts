// The control plane's side of `spans.content.pseudonyms`: the key never lives in a policy. It
// lives in files the operator names (`content.keysDir`; in Kubernetes the Secret
// tokentrace-content-keys) and reaches the filters only through the filter-facing listener's
// content-key endpoint. A policy that still carries the old `salt` is refused, naming the field
// and where the key lives now; the value is never echoed.
import type { FieldError, PluginConfig } from "./model.js";

/** The refused field's path, as the API reports it. */
export const saltField = "pluginConfig.spans.content.pseudonyms.salt";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function pseudonymsOf(pluginConfig: unknown): Record<string, unknown> | undefined {
  if (!isObject(pluginConfig) || !isObject(pluginConfig.spans)) return undefined;
  const content = pluginConfig.spans.content;
  if (!isObject(content) || !isObject(content.pseudonyms)) return undefined;
  return content.pseudonyms;
}

/** The salt refusal, or nothing; checked before the schema so the message says where the key went. */
export function saltErrors(pluginConfig: unknown): FieldError[] {
  const pseudonyms = pseudonymsOf(pluginConfig);
  if (pseudonyms === undefined || !Object.hasOwn(pseudonyms, "salt")) return [];
  return [
    {
      field: saltField,
      reason:
        "the pseudonym key no longer lives in a policy: remove this field. The control plane reads it from content.keysDir (in Kubernetes the Secret tokentrace-content-keys) and serves it only to the filters, on the filter-facing listener",
    },
  ];
}

/** Whether a policy's filter configuration turns pseudonyms on (`spans.content.pseudonyms` present and not `enabled: false`). */
export function pseudonymsOn(pluginConfig: PluginConfig): boolean {
  const pseudonyms = pseudonymsOf(pluginConfig);
  return pseudonyms !== undefined && pseudonyms.enabled !== false;
}

/**
 * The filter schema without a `salt` under `spans.content.pseudonyms` (a copy). Until
 * filter/config.schema.json drops the field itself, the control plane validates with this, so a
 * policy turning pseudonyms on without a salt is valid; afterwards it changes nothing.
 */
export function withoutSalt<T>(filterSchema: T): T {
  const copy = structuredClone(filterSchema) as unknown;
  const node = (root: unknown, ...path: string[]): unknown => path.reduce((at, key) => (isObject(at) ? at[key] : undefined), root);
  const pseudonyms = node(copy, "properties", "spans", "properties", "content", "properties", "pseudonyms");
  if (isObject(pseudonyms)) {
    if (isObject(pseudonyms.properties)) delete pseudonyms.properties.salt;
    if (Array.isArray(pseudonyms.required)) {
      pseudonyms.required = pseudonyms.required.filter((k) => k !== "salt");
      if ((pseudonyms.required as unknown[]).length === 0) delete pseudonyms.required;
    }
  }
  return copy as T;
}
