// The SamplingPolicy CustomResourceDefinition (tokentrace.dev/v1alpha1), generated from the very
// JSON Schemas the REST API and the filter validate with (control-plane/src/policy/validate.ts's
// policy envelope, filter/config.schema.json for pluginConfig), so a policy applied with kubectl
// is held to the same rules as one written through the API. A CRD schema must be structural
// (k8s.io/apiextensions-apiserver pkg/apiserver/schema/validation.go), so the JSON Schema is
// translated: $ref inlined, `additionalProperties: false` dropped (unknown fields are pruned, and
// refused under kubectl's strict field validation), defaults dropped (the filter applies them;
// the API server would otherwise store them), draft-2020 exclusive bounds turned into OpenAPI
// 3.0's, and what a structural schema cannot say becomes x-kubernetes-validations (CEL): label
// key patterns (propertyNames), forbidden values (not), a bound that holds under a flag (if/then),
// exactly one target kind, no policySource.
// `make manifests` writes it to istio/base/samplingpolicy-crd.yaml.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { policySchema, TARGET_REF_GROUPS, WAYPOINT_GATEWAY_CLASS } from "../control-plane/src/policy/validate.js";

type Schema = Record<string, unknown>;

export const GROUP = "tokentrace.dev";
export const VERSION = "v1alpha1";
export const PLURAL = "samplingpolicies";
export const KIND = "SamplingPolicy";

const filterSchema = JSON.parse(readFileSync(fileURLToPath(new URL("../filter/config.schema.json", import.meta.url)), "utf8")) as Schema;

/** A CEL string literal (single-quoted, backslashes and quotes escaped). */
function celString(value: string): string {
  return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** JSON Schema (draft 2020, as validate.ts and the filter use it) -> structural OpenAPI v3 schema. */
export function toStructural(node: Schema, path: string): Schema {
  const out: Schema = {};
  const rules: { rule: string; message: string }[] = [];
  for (const [key, value] of Object.entries(node)) {
    switch (key) {
      case "$id":
      case "$schema":
      case "default":
      case "additionalProperties":
        if (key === "additionalProperties" && isSchema(value)) out.additionalProperties = toStructural(value, `${path}{}`);
        break;
      case "$ref":
        // The only reference: the policy's pluginConfig is the filter's schema.
        if (value !== filterSchema.$id) throw new Error(`${path}: unknown $ref ${String(value)}`);
        Object.assign(out, toStructural(filterSchema, path));
        break;
      case "properties":
        out.properties = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([name, sub]) => [name, toStructural(sub, `${path}.${name}`)]));
        break;
      case "items":
        out.items = toStructural(value as Schema, `${path}[]`);
        break;
      case "exclusiveMinimum":
        out.minimum = value;
        out.exclusiveMinimum = true;
        break;
      case "exclusiveMaximum":
        out.maximum = value;
        out.exclusiveMaximum = true;
        break;
      case "propertyNames": {
        // JSONSchemaProps has no propertyNames: the key rules become CEL over the map's keys.
        const names = value as { pattern?: string; maxLength?: number };
        const checks = [names.pattern === undefined ? undefined : `k.matches(${celString(names.pattern)})`, names.maxLength === undefined ? undefined : `k.size() <= ${names.maxLength}`].filter((c) => c !== undefined);
        rules.push({ rule: `self.all(k, ${checks.join(" && ")})`, message: "invalid label key" });
        break;
      }
      case "if": {
        // Only `if: {properties: {flag: {const}}, required: [flag]}, then: {properties: {field: {maximum}}}`
        // is used (the look-ahead's bound under llm.requestUsageInStream): CEL over both fields.
        const cond = value as { properties?: Record<string, { const?: unknown }>; required?: string[] };
        const flag = cond.required?.[0];
        const expected = flag === undefined ? undefined : cond.properties?.[flag]?.const;
        const then = node.then as { properties?: Record<string, { maximum?: number; description?: string }> } | undefined;
        if (flag === undefined || typeof expected !== "boolean" || cond.required?.length !== 1 || then?.properties === undefined) throw new Error(`${path}: unsupported if`);
        for (const [field, bound] of Object.entries(then.properties)) {
          if (typeof bound.maximum !== "number") throw new Error(`${path}: unsupported then.${field}`);
          rules.push({ rule: `!(has(self.${flag}) && self.${flag} == ${String(expected)}) || !has(self.${field}) || self.${field} <= ${bound.maximum}`, message: `${field}: ${bound.description ?? `at most ${bound.maximum} when ${flag} is ${String(expected)}`}` });
        }
        break;
      }
      case "then":
        break; // translated with its "if"
      case "not": {
        // Only `not: {anyOf: [{enum}, {pattern}]}` is used (reserved header names).
        const alternatives = ((value as { anyOf?: Schema[] }).anyOf ?? [value as Schema]).map((alt) => {
          if (Array.isArray(alt.enum)) return `self in [${(alt.enum as string[]).map(celString).join(", ")}]`;
          if (typeof alt.pattern === "string") return `self.matches(${celString(alt.pattern)})`;
          throw new Error(`${path}: unsupported not`);
        });
        rules.push({ rule: `!(${alternatives.join(" || ")})`, message: "must not be a reserved header (see the filter's config schema)" });
        break;
      }
      default:
        out[key] = value;
    }
  }
  if (rules.length > 0) out["x-kubernetes-validations"] = [...((out["x-kubernetes-validations"] as unknown[]) ?? []), ...rules];
  return out;
}

/** spec: the policy without its name (metadata.name) and with its target namespace the object's namespace. */
function specSchema(): Schema {
  const envelope = toStructural(policySchema as unknown as Schema, "policy");
  const properties = { ...(envelope.properties as Record<string, Schema>) };
  delete properties.name;
  const target: Schema = { ...(properties.target as Schema), properties: { ...((properties.target as Schema).properties as Record<string, Schema>) } };
  delete (target.properties as Record<string, Schema>).namespace;
  target.required = ((target.required as string[]) ?? []).filter((r) => r !== "namespace");
  if ((target.required as string[]).length === 0) delete target.required;
  // validatePolicy's rules that a structural schema cannot say.
  target["x-kubernetes-validations"] = [{ rule: "has(self.selector) != has(self.targetRefs)", message: "exactly one of selector or targetRefs is required" }];
  const refs = (target.properties as Record<string, Schema>).targetRefs as Schema;
  const groupOf = [...TARGET_REF_GROUPS].map(([kind, group]) => `self.kind == ${celString(kind)} ? ${celString(group)} : `).join("");
  refs.items = {
    ...(refs.items as Schema),
    "x-kubernetes-validations": [
      // policyattachment.go matchesGroupKind on CanonicalGroup (empty reads as core), as validatePolicy.
      { rule: `(has(self.group) && self.group != '' ? self.group : 'core') == (${groupOf}'')`, message: "group must be gateway.networking.k8s.io for Gateway and GatewayClass, networking.istio.io for ServiceEntry, empty or core for Service (what Istio attaches)" },
      { rule: `self.kind != 'GatewayClass' || self.name == ${celString(WAYPOINT_GATEWAY_CLASS)}`, message: `the only GatewayClass Istio attaches a policy to is ${WAYPOINT_GATEWAY_CLASS}` },
    ],
  };
  properties.target = target;
  const pluginConfig = properties.pluginConfig as Schema;
  pluginConfig["x-kubernetes-validations"] = [...((pluginConfig["x-kubernetes-validations"] as unknown[]) ?? []), { rule: "!has(self.policySource)", message: "policySource is only for a filter's local pluginConfig, never in a policy" }];
  return {
    type: "object",
    description: "A sampling policy: the workloads it targets (in this namespace) and the filter configuration they get.",
    required: (envelope.required as string[]).filter((r) => r !== "name"),
    properties,
  };
}

/** What the control plane reports about a policy (written through the status subresource by the leader). */
const statusSchema: Schema = {
  type: "object",
  properties: {
    observedGeneration: { type: "integer", format: "int64", minimum: 0 },
    wasmPlugin: { type: "string", maxLength: 317, description: "namespace/name of the WasmPlugin the policy produced." },
    adaptive: {
      type: "object",
      description: "Rates adaptive sampling and live tail-keep thresholds currently applied (the leader writes them; every replica serves them).",
      required: ["observedGeneration"],
      properties: {
        observedGeneration: { type: "integer", format: "int64", minimum: 0, description: "The generation whose policy these rates were computed for; rates for another generation are not applied." },
        defaultRate: { type: "number", minimum: 0, maximum: 1 },
        routeRates: { type: "array", maxItems: 256, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["index"], items: { type: "object", required: ["index", "rate"], properties: { index: { type: "integer", minimum: 0 }, rate: { type: "number", minimum: 0, maximum: 1 } } } },
        keepLive: {
          type: "array",
          maxItems: 128,
          description: "Live tail-keep thresholds (spans.keep.live) the leader computed, per route and model; followers serve them to the filters that pull from them.",
          items: {
            type: "object",
            required: ["route"],
            properties: {
              route: { type: "string", minLength: 1, maxLength: 64 },
              model: { type: "string", minLength: 1, maxLength: 64 },
              durationMs: { type: "integer", minimum: 1, maximum: 3600000 },
              ttftMs: { type: "integer", minimum: 1, maximum: 3600000 },
            },
          },
        },
      },
    },
    conditions: {
      type: "array",
      maxItems: 8,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
      items: {
        type: "object",
        required: ["type", "status", "lastTransitionTime", "reason", "message"],
        properties: {
          type: { type: "string", maxLength: 316, pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$" },
          status: { type: "string", enum: ["True", "False", "Unknown"] },
          observedGeneration: { type: "integer", format: "int64", minimum: 0 },
          lastTransitionTime: { type: "string", format: "date-time" },
          reason: { type: "string", minLength: 1, maxLength: 1024, pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" },
          message: { type: "string", maxLength: 32768 },
        },
      },
    },
  },
};

/** The CRD object. */
export function samplingPolicyCrd(): Schema {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${PLURAL}.${GROUP}`, labels: { "app.kubernetes.io/name": "tokentrace" } },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { plural: PLURAL, singular: "samplingpolicy", kind: KIND, listKind: `${KIND}List`, shortNames: ["sp"], categories: ["tokentrace"] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: "Accepted", type: "string", jsonPath: '.status.conditions[?(@.type=="Accepted")].status' },
            { name: "Programmed", type: "string", jsonPath: '.status.conditions[?(@.type=="Programmed")].status' },
            { name: "Default rate", type: "number", jsonPath: ".spec.pluginConfig.sampling.defaultRate" },
            { name: "WasmPlugin", type: "string", priority: 1, jsonPath: ".status.wasmPlugin" },
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: "SamplingPolicy: tokentrace's sampling policy for the workloads of its namespace.",
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: specSchema(),
                status: statusSchema,
              },
              // validate.ts: the name is a DNS label of at most 53 characters (the WasmPlugin is tokentrace-<name>).
              "x-kubernetes-validations": [{ rule: "self.metadata.name.size() <= 53 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", message: "metadata.name must be a DNS label of at most 53 characters" }],
            },
          },
        },
      ],
    },
  };
}
