// CustomResourceDefinitions written through the API (`kubectl apply -f crd.yaml`), validated as
// k8s.io/apiextensions-apiserver 1aa2717a validates them (pkg/apis/apiextensions/validation/
// validation.go ValidateCustomResourceDefinition, pkg/apiserver/schema/validation.go
// validateStructuralInvariants), then served: the emulator registers each served version and
// reports NamesAccepted and Established, as the establishing controller does.
import { compileError } from "./cel.js";
import type { Json } from "./patch.js";
import type { StructuralSchema } from "./schema.js";
import type { StatusCause } from "./status.js";
import type { KubeObject, ResourceType } from "./store.js";

/** What a printer column says (additionalPrinterColumns). */
export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

interface CrdVersion {
  name?: string;
  served?: boolean;
  storage?: boolean;
  schema?: { openAPIV3Schema?: StructuralSchema };
  subresources?: { status?: object; scale?: object };
  additionalPrinterColumns?: PrinterColumn[];
}

interface CrdSpec {
  group?: string;
  scope?: string;
  names?: { plural?: string; singular?: string; kind?: string; listKind?: string; shortNames?: string[] };
  versions?: CrdVersion[];
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// validation.go printerColumnDatatypes and customResourceColumnDefinitionFormats.
const printerColumnTypes = ["boolean", "date", "integer", "number", "string"];
const printerColumnFormats = ["int32", "int64", "float", "double", "byte", "date", "date-time", "password"];
const openapiTypes = ["array", "boolean", "integer", "number", "object", "string"];
// validation.go allowedFieldsAtRootSchema (as JSON keys) when the status subresource is on.
const allowedAtRootWithStatus = new Set([
  "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
  "maxItems", "minItems", "uniqueItems", "multipleOf", "required", "items", "properties", "externalDocs", "example", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations",
]);
// ValidateCustomResourceDefinitionOpenAPISchema: JSON-Schema features CRDs do not support; the
// last three are not even fields of JSONSchemaProps (kubectl's strict field validation refuses
// them as unknown fields, a lenient apply silently drops the constraint).
const unsupportedKeys: Record<string, string> = {
  $ref: "$ref is not supported",
  definitions: "definitions is not supported",
  id: "id is not supported",
  patternProperties: "patternProperties is not supported",
  dependencies: "dependencies is not supported",
  additionalItems: "additionalItems is not supported",
  $defs: "unknown field: JSONSchemaProps has no $defs",
  propertyNames: "unknown field: JSONSchemaProps has no propertyNames",
  const: "unknown field: JSONSchemaProps has no const",
};

type Level = "root" | "field" | "item";

// schema/validation.go validateStructuralInvariants, plus the per-node OpenAPI checks of validation.go.
function checkSchema(schema: StructuralSchema & Record<string, unknown>, path: string, level: Level, causes: StatusCause[]): void {
  const add = (reason: string, field: string, message: string) => causes.push({ reason, field: `${path}.${field}`, message });
  for (const [key, message] of Object.entries(unsupportedKeys)) if (Object.hasOwn(schema, key)) add("FieldValueForbidden", key, `Forbidden: ${message}`);
  if (schema.uniqueItems === true) add("FieldValueForbidden", "uniqueItems", "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic");
  if ((schema.type as unknown) === "null") add("FieldValueForbidden", "type", "Forbidden: type cannot be set to null, use nullable as an alternative");
  else if (schema.type !== undefined && !openapiTypes.includes(schema.type)) add("FieldValueNotSupported", "type", `Unsupported value: ${JSON.stringify(schema.type)}`);
  const special = schema["x-kubernetes-int-or-string"] === true || schema["x-kubernetes-preserve-unknown-fields"] === true;
  if (schema.type === undefined && !special) {
    add("FieldValueRequired", "type", `Required value: must not be empty ${level === "root" ? "at the root" : level === "item" ? "for specified array items" : "for specified object fields"}`);
  }
  if (level === "root" && schema.type !== undefined && schema.type !== "object") add("FieldValueInvalid", "type", `Invalid value: ${JSON.stringify(schema.type)}: must be object at the root`);
  if (schema.type === "array" && schema.items === undefined) add("FieldValueRequired", "items", "Required value: must be specified");
  if (schema.additionalProperties !== undefined) {
    if (level === "root") add("FieldValueForbidden", "additionalProperties", "Forbidden: must not be used at the root");
    // additionalProperties and properties are mutual exclusive (false included).
    if (schema.properties !== undefined && Object.keys(schema.properties).length > 0 && (schema.additionalProperties === false || typeof schema.additionalProperties === "object")) {
      add("FieldValueForbidden", "additionalProperties", "Forbidden: additionalProperties and properties are mutual exclusive");
    }
    if (typeof schema.additionalProperties === "object") checkSchema(schema.additionalProperties as StructuralSchema & Record<string, unknown>, `${path}.additionalProperties`, "field", causes);
  }
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    // validateStructuralMetadataInvariants: only the root's metadata is restricted (a field named
    // metadata deeper down, as EnvoyFilter's match.proxy.metadata, is an ordinary field).
    if (name === "metadata" && level === "root") {
      const extra = Object.keys(sub.properties ?? {}).filter((k) => k !== "name" && k !== "generateName");
      if (extra.length > 0 || (sub.type !== undefined && sub.type !== "object")) add("FieldValueForbidden", "properties[metadata]", "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified");
    }
    checkSchema(sub as StructuralSchema & Record<string, unknown>, `${path}.properties[${name}]`, "field", causes);
  }
  if (schema.items !== undefined) {
    if (Array.isArray(schema.items)) add("FieldValueForbidden", "items", "Forbidden: items must be a schema object and not an array");
    else checkSchema(schema.items as StructuralSchema & Record<string, unknown>, `${path}.items`, "item", causes);
  }
  // Inside anyOf/allOf/oneOf/not only value validations may appear (validateNestedValueValidation),
  // except the IntOrString pattern: an anyOf (or allOf's first anyOf) of exactly
  // [{type: integer}, {type: string}] (isIntOrStringAnyOfPattern, isIntOrStringAllOfPattern).
  const intOrString = (list: unknown): boolean => Array.isArray(list) && list.length === 2 && JSON.stringify(list) === JSON.stringify([{ type: "integer" }, { type: "string" }]);
  for (const key of ["anyOf", "allOf", "oneOf"] as const) {
    const list = (schema as Record<string, unknown>)[key];
    if (!Array.isArray(list) || (key === "anyOf" && intOrString(list))) continue;
    list.forEach((nested: Record<string, unknown>, i: number) => {
      checkNested(nested, `${key}[${i}]`, key === "allOf" && i === 0 && intOrString(nested.anyOf), add);
    });
  }
  if (schema["x-kubernetes-list-type"] !== undefined && schema.type !== "array") add("FieldValueInvalid", "type", "Invalid value: must be array if x-kubernetes-list-type is specified");
  if (schema["x-kubernetes-list-type"] === "map" && (schema["x-kubernetes-list-map-keys"] ?? []).length === 0) add("FieldValueRequired", "x-kubernetes-list-map-keys", "Required value: must not be empty if x-kubernetes-list-type is map");
  (schema["x-kubernetes-validations"] ?? []).forEach((rule, i) => {
    const at = `x-kubernetes-validations[${i}]`;
    if (typeof rule.rule !== "string" || rule.rule === "") {
      add("FieldValueRequired", `${at}.rule`, "Required value: rule is not specified");
      return;
    }
    if (rule.message !== undefined && (rule.message.trim() === "" || /[\r\n]/.test(rule.message))) add("FieldValueInvalid", `${at}.message`, "Invalid value: must be non-empty and must not contain line breaks");
    if (rule.reason !== undefined && !["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"].includes(rule.reason)) add("FieldValueNotSupported", `${at}.reason`, `Unsupported value: ${JSON.stringify(rule.reason)}`);
    const error = compileError(rule.rule, schema);
    if (error !== undefined) add("FieldValueInvalid", `${at}.rule`, `Invalid value: ${JSON.stringify(rule.rule)}: ${error}`);
  });
}

// schema/validation.go validateNestedValueValidation: value validations only, at any depth of the
// nested schema; a property named metadata is refused there.
function checkNested(nested: Record<string, unknown>, at: string, skipAnyOf: boolean, add: (reason: string, field: string, message: string) => void): void {
  for (const forbidden of ["type", "additionalProperties", "default", "title", "description", "nullable", "x-kubernetes-validations"]) {
    if (Object.hasOwn(nested, forbidden)) add("FieldValueForbidden", `${at}.${forbidden}`, `Forbidden: must be ${forbidden === "nullable" ? "false" : forbidden === "additionalProperties" ? "undefined" : "empty"} to be structural`);
  }
  const properties = (nested.properties ?? {}) as Record<string, Record<string, unknown>>;
  if (Object.hasOwn(properties, "metadata")) add("FieldValueForbidden", `${at}.properties[metadata]`, "Forbidden: must not be specified in a nested context");
  for (const [name, sub] of Object.entries(properties)) checkNested(sub, `${at}.properties[${name}]`, false, add);
  if (typeof nested.items === "object" && nested.items !== null) checkNested(nested.items as Record<string, unknown>, `${at}.items`, false, add);
  for (const key of ["anyOf", "allOf", "oneOf"] as const) {
    const list = nested[key];
    if (!Array.isArray(list) || (key === "anyOf" && skipAnyOf)) continue;
    list.forEach((inner: Record<string, unknown>, i: number) => checkNested(inner, `${at}.${key}[${i}]`, false, add));
  }
}

// validation.go validateSimpleJSONPath (printer columns): a dot path, optionally with [..] parts.
function simpleJsonPathProblem(path: string): string | undefined {
  if (path === "") return "must not be empty";
  if (!path.startsWith(".")) return "must be a simple json path starting with .";
  if (path === ".") return "must be a json path in the dot notation";
  return undefined;
}

/** ValidateCustomResourceDefinition (the parts that can refuse a CRD the project writes). */
export function validateCrd(object: KubeObject): { causes: StatusCause[] } {
  const causes: StatusCause[] = [];
  const spec = (object.spec ?? {}) as CrdSpec;
  const name = object.metadata?.name ?? "";
  const plural = spec.names?.plural ?? "";
  const group = spec.group ?? "";
  if (name !== `${plural}.${group}`) causes.push({ reason: "FieldValueInvalid", field: "metadata.name", message: `Invalid value: ${JSON.stringify(name)}: must be spec.names.plural+"."+spec.group` });
  if (group === "") causes.push({ reason: "FieldValueRequired", field: "spec.group", message: "Required value" });
  else if (!dnsSubdomain.test(group) || !group.includes(".")) causes.push({ reason: "FieldValueInvalid", field: "spec.group", message: `Invalid value: ${JSON.stringify(group)}: should be a domain with at least one dot` });
  if (spec.scope !== "Namespaced" && spec.scope !== "Cluster") causes.push({ reason: "FieldValueNotSupported", field: "spec.scope", message: `Unsupported value: ${JSON.stringify(spec.scope ?? "")}: supported values: "Cluster", "Namespaced"` });
  for (const key of ["plural", "singular", "kind", "listKind"] as const) {
    if (!spec.names?.[key]) causes.push({ reason: "FieldValueRequired", field: `spec.names.${key}`, message: "Required value" });
  }
  for (const key of ["plural", "singular"] as const) {
    const value = spec.names?.[key];
    if (value && !dnsLabel.test(value)) causes.push({ reason: "FieldValueInvalid", field: `spec.names.${key}`, message: `Invalid value: ${JSON.stringify(value)}: a lowercase RFC 1123 label` });
  }
  if (spec.names?.kind !== undefined && spec.names.kind === spec.names.listKind) causes.push({ reason: "FieldValueInvalid", field: "spec.names.listKind", message: `Invalid value: ${JSON.stringify(spec.names.listKind)}: kind and listKind may not be the same` });
  const versions = spec.versions ?? [];
  if (versions.length === 0) causes.push({ reason: "FieldValueRequired", field: "spec.versions", message: "Required value" });
  if (new Set(versions.map((v) => v.name)).size !== versions.length) causes.push({ reason: "FieldValueInvalid", field: "spec.versions", message: "Invalid value: must contain unique version names" });
  if (versions.filter((v) => v.storage === true).length !== 1) causes.push({ reason: "FieldValueInvalid", field: "spec.versions", message: "Invalid value: must have exactly one version marked as storage version" });
  versions.forEach((version, i) => {
    const at = `spec.versions[${i}]`;
    const schema = version.schema?.openAPIV3Schema;
    if (version.served !== false && schema === undefined) {
      causes.push({ reason: "FieldValueRequired", field: `${at}.schema.openAPIV3Schema`, message: "Required value: schemas are required" });
      return;
    }
    if (schema === undefined) return;
    checkSchema(schema as StructuralSchema & Record<string, unknown>, `${at}.schema.openAPIV3Schema`, "root", causes);
    if (version.subresources?.status !== undefined) {
      const extra = Object.keys(schema).filter((k) => !allowedAtRootWithStatus.has(k));
      if (extra.length > 0) causes.push({ reason: "FieldValueInvalid", field: `${at}.schema.openAPIV3Schema`, message: `Invalid value: only [${[...allowedAtRootWithStatus].join(" ")}] fields are allowed at the root of the schema if the status subresource is enabled` });
    }
    (version.additionalPrinterColumns ?? []).forEach((column, j) => {
      const col = `${at}.additionalPrinterColumns[${j}]`;
      if (!column.name) causes.push({ reason: "FieldValueRequired", field: `${col}.name`, message: "Required value" });
      if (!printerColumnTypes.includes(column.type)) causes.push({ reason: "FieldValueInvalid", field: `${col}.type`, message: `Invalid value: ${JSON.stringify(column.type)}: must be one of ${printerColumnTypes.join(",")}` });
      if (column.format !== undefined && !printerColumnFormats.includes(column.format)) causes.push({ reason: "FieldValueInvalid", field: `${col}.format`, message: `Invalid value: ${JSON.stringify(column.format)}: must be one of ${printerColumnFormats.join(",")}` });
      const problem = simpleJsonPathProblem(column.jsonPath ?? "");
      if (problem !== undefined) causes.push({ reason: problem === "must not be empty" ? "FieldValueRequired" : "FieldValueInvalid", field: `${col}.JSONPath`, message: `Invalid value: ${JSON.stringify(column.jsonPath)}: ${problem}` });
    });
  });
  return { causes };
}

/** Served resource types of a stored (valid) CRD, one per served version. */
export function typesOfCrd(object: KubeObject): ResourceType[] {
  const spec = (object.spec ?? {}) as CrdSpec;
  return (spec.versions ?? [])
    .filter((v) => v.served !== false)
    .map((v) => {
      const type: ResourceType = {
        group: spec.group as string,
        version: v.name as string,
        plural: spec.names?.plural as string,
        kind: spec.names?.kind as string,
        namespaced: spec.scope !== "Cluster",
        statusSubresource: v.subresources?.status !== undefined,
        allowUnconditionalUpdate: false,
      };
      if (v.schema?.openAPIV3Schema !== undefined) type.schema = v.schema.openAPIV3Schema;
      if (v.additionalPrinterColumns !== undefined) type.printerColumns = v.additionalPrinterColumns;
      return type;
    });
}

/** The status the API server reports once names are accepted and the resource is served. */
export function establishedStatus(object: KubeObject, now: string): Json {
  const spec = (object.spec ?? {}) as CrdSpec;
  const condition = (type: string, reason: string, message: string) => ({ type, status: "True", lastTransitionTime: now, reason, message });
  return {
    acceptedNames: { plural: spec.names?.plural ?? "", singular: spec.names?.singular ?? "", kind: spec.names?.kind ?? "", listKind: spec.names?.listKind ?? "" },
    conditions: [condition("NamesAccepted", "NoConflicts", "no conflicts found"), condition("Established", "InitialNamesAccepted", "the initial names have been accepted")],
    storedVersions: (spec.versions ?? []).filter((v) => v.storage === true).map((v) => v.name ?? ""),
  } as Json;
}

/** The CustomResourceDefinition type itself (cluster-scoped, apiextensions.k8s.io/v1). */
export const crdType: ResourceType = {
  group: "apiextensions.k8s.io",
  version: "v1",
  plural: "customresourcedefinitions",
  kind: "CustomResourceDefinition",
  namespaced: false,
  allowUnconditionalUpdate: true,
  statusSubresource: true,
  native: {
    schema: { type: "object", properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true }, status: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } },
    validate: (object) => validateCrd(object),
  },
};
