// Validation of policies: the policy envelope is described here, `pluginConfig` by the filter's
// own schema (filter/config.schema.json, shared with the filter so both accept the same JSON).
// Every violation becomes one {field, reason} with a path like `pluginConfig.sampling.routes[0].rate`.
import { readFileSync } from "node:fs";
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import type { FieldError, Policy } from "./model.js";
import { saltErrors, saltField, withoutSalt } from "./pseudonyms.js";

/** Where the shared filter schema lives. */
export const filterSchemaUrl = new URL("../../../filter/config.schema.json", import.meta.url);

// The pseudonym key is not part of a policy (pseudonyms.ts): the schema is read without `salt`.
const filterSchema = withoutSalt(JSON.parse(readFileSync(filterSchemaUrl, "utf8")) as { $id: string });

const labelKey = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$";
const labelValue = "^$|^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$";
const dnsLabel = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/**
 * The targetRef kinds Istio attaches a policy to, with the canonical group each must name
 * (istio pilot/pkg/model/policyattachment.go at 86c9f01f, matchesGroupKind; the group is compared
 * after pkg/config/model.go CanonicalGroup, which reads an empty group as "core").
 */
export const TARGET_REF_GROUPS: ReadonlyMap<string, string> = new Map([
  ["Gateway", "gateway.networking.k8s.io"],
  ["GatewayClass", "gateway.networking.k8s.io"],
  ["Service", "core"],
  ["ServiceEntry", "networking.istio.io"],
]);
const TARGET_REF_KINDS = ["Gateway", "GatewayClass", "Service", "ServiceEntry"] as const;
/** istio pkg/config/constants WaypointGatewayClassName: the one GatewayClass a policy attaches to. */
export const WAYPOINT_GATEWAY_CLASS = "istio-waypoint";
/** The group pattern of Istio's own PolicyTargetReference (manifests/charts/base/files/crd-all.gen.yaml at 86c9f01f). */
const GROUP_PATTERN = "^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/** pkg/config/model.go CanonicalGroup: an empty group is the core group. */
export function canonicalGroup(group: string | undefined): string {
  return group === undefined || group === "" ? "core" : group;
}

/** JSON Schema of a policy as the API accepts it (also published in /openapi.json). */
export const policySchema = {
  $id: "https://tokentrace.dev/schemas/policy.json",
  type: "object",
  additionalProperties: false,
  required: ["name", "target", "pluginConfig"],
  properties: {
    name: { type: "string", minLength: 1, maxLength: 53, pattern: dnsLabel, description: "DNS label; also names the WasmPlugin (tokentrace-<name>)." },
    target: {
      type: "object",
      additionalProperties: false,
      required: ["namespace"],
      properties: {
        namespace: { type: "string", minLength: 1, maxLength: 63, pattern: dnsLabel },
        selector: {
          type: "object",
          additionalProperties: false,
          required: ["matchLabels"],
          properties: {
            matchLabels: {
              type: "object",
              maxProperties: 64,
              propertyNames: { maxLength: 253, pattern: labelKey },
              additionalProperties: { type: "string", maxLength: 63, pattern: labelValue },
            },
          },
        },
        targetRefs: {
          type: "array",
          minItems: 1,
          maxItems: 16,
          items: {
            type: "object",
            additionalProperties: false,
            required: ["kind", "name"],
            // What Istio attaches a WasmPlugin to (pilot/pkg/model/policyattachment.go at 86c9f01f,
            // ShouldAttachPolicy): a Gateway (a waypoint or a gateway), the istio-waypoint
            // GatewayClass, a Service or ServiceEntry (waypoints only). Anything else never attaches.
            properties: {
              group: { type: "string", maxLength: 253, pattern: GROUP_PATTERN, description: "gateway.networking.k8s.io for Gateway and GatewayClass, networking.istio.io for ServiceEntry, empty, absent or core for Service." },
              kind: { type: "string", enum: [...TARGET_REF_KINDS], description: "Gateway (a waypoint's or a gateway's), GatewayClass (istio-waypoint: every waypoint; the policy in Istio's root namespace), Service or ServiceEntry (a waypoint's traffic to it). A sidecar ignores every targetRefs policy." },
              name: { type: "string", minLength: 1, maxLength: 253 },
            },
          },
        },
      },
    },
    pluginConfig: { $ref: filterSchema.$id },
    adaptive: {
      type: "object",
      additionalProperties: false,
      required: ["targetTracesPerSecond"],
      properties: {
        targetTracesPerSecond: { type: "number", exclusiveMinimum: 0, maximum: 100000 },
        floorRate: { type: "number", minimum: 0.00001, maximum: 1 },
        minTracesPerMinute: { type: "number", minimum: 0, maximum: 6000 },
        maxIncreaseFactor: { type: "number", exclusiveMinimum: 1, maximum: 10 },
        tolerance: { type: "number", minimum: 0, maximum: 0.9 },
      },
    },
  },
} as const;

const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addSchema(filterSchema);
const validatePolicySchema = ajv.compile(policySchema);

/** `/a/0/b` -> `a[0].b`; with `extra` appended as a property. */
export function fieldPath(instancePath: string, extra?: string): string {
  let out = "";
  for (const raw of instancePath.split("/").slice(1)) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^(0|[1-9][0-9]*)$/.test(token)) out += `[${token}]`;
    else out += out === "" ? token : `.${token}`;
  }
  if (extra !== undefined) out += out === "" ? extra : `.${extra}`;
  return out === "" ? "(body)" : out;
}

/** Maps ajv errors to API field errors; deduplicated, in ajv's order. */
export function toFieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const error of errors ?? []) {
    // Errors inside propertyNames repeat the outer propertyNames error, which names the key.
    if (error.propertyName !== undefined) continue;
    // An if/then's own error only says "must match then"; the error inside the then names the field.
    if (error.keyword === "if") continue;
    let item: FieldError;
    if (error.keyword === "maximum" && error.schemaPath.endsWith("/llm/then/properties/maxRequestBodyBytes/maximum")) {
      item = { field: fieldPath(error.instancePath), reason: `must be at most ${(error.params as { limit: number }).limit} with llm.requestUsageInStream: the request body is then held in Envoy, which answers 413 to a body over its per_connection_buffer_limit_bytes (1048576 by default)` };
    } else if (error.keyword === "additionalProperties") {
      item = { field: fieldPath(error.instancePath, (error.params as { additionalProperty: string }).additionalProperty), reason: "unknown field" };
    } else if (error.keyword === "required") {
      item = { field: fieldPath(error.instancePath, (error.params as { missingProperty: string }).missingProperty), reason: "required" };
    } else if (error.keyword === "enum") {
      item = { field: fieldPath(error.instancePath), reason: `must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")}` };
    } else if (error.keyword === "propertyNames") {
      item = { field: fieldPath(error.instancePath, (error.params as { propertyName: string }).propertyName), reason: "invalid label key" };
    } else if (error.keyword === "pattern" && error.instancePath.includes("/matchLabels/")) {
      item = { field: fieldPath(error.instancePath), reason: "invalid label value" };
    } else {
      item = { field: fieldPath(error.instancePath), reason: error.message ?? error.keyword };
    }
    const key = `${item.field}\u0000${item.reason}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(item);
    }
  }
  return out;
}

/** Validation result: the typed policy, or every field error. */
export type PolicyValidation = { ok: true; policy: Policy } | { ok: false; errors: FieldError[] };

/** Validates an untrusted body as a policy. */
export function validatePolicy(body: unknown): PolicyValidation {
  const salt = saltErrors((body as { pluginConfig?: unknown } | null)?.pluginConfig);
  if (!validatePolicySchema(body) || salt.length > 0) {
    // The salt's own message replaces the schema's "unknown field" for it.
    return { ok: false, errors: [...toFieldErrors(validatePolicySchema.errors).filter((e) => e.field !== saltField), ...salt] };
  }
  const policy = body as unknown as Policy;
  // policySource is the filter's bootstrap setting; the filter rejects a pulled policy carrying it.
  if (Object.hasOwn(policy.pluginConfig as object, "policySource")) {
    return { ok: false, errors: [{ field: "pluginConfig.policySource", reason: "only for a filter's local pluginConfig, never in a policy" }] };
  }
  const target = policy.target as { selector?: unknown; targetRefs?: unknown };
  const hasSel = target.selector !== undefined;
  const hasRefs = target.targetRefs !== undefined;
  if (hasSel === hasRefs) {
    return { ok: false, errors: [{ field: "target", reason: "exactly one of selector or targetRefs is required" }] };
  }
  const refErrors: FieldError[] = [];
  ((target.targetRefs as { group?: string; kind: string; name: string }[] | undefined) ?? []).forEach((ref, i) => {
    const group = TARGET_REF_GROUPS.get(ref.kind) ?? "";
    if (canonicalGroup(ref.group) !== group) refErrors.push({ field: `target.targetRefs[${i}].group`, reason: `must be ${group === "core" ? 'empty, absent or "core"' : `"${group}"`} for kind ${ref.kind} (what Istio attaches)` });
    if (ref.kind === "GatewayClass" && ref.name !== WAYPOINT_GATEWAY_CLASS) refErrors.push({ field: `target.targetRefs[${i}].name`, reason: `must be "${WAYPOINT_GATEWAY_CLASS}": the only GatewayClass Istio attaches a policy to` });
  });
  if (refErrors.length > 0) return { ok: false, errors: refErrors };
  return { ok: true, policy };
}
