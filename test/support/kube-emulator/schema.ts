// Validation of custom resources against a CRD's `openAPIV3Schema`, the way the apiserver does
// it: unknown fields are pruned (reported as warnings, or rejected under fieldValidation=Strict),
// and each violation becomes a StatusCause with the apiserver's wording and a dotted field path.
// x-kubernetes-validations (CEL) rules are compiled at registration and evaluated here (cel.ts);
// a rule the emulator cannot compile fails registration, so no rule is silently skipped.
import type { StatusCause } from "./status.js";
import type { Json } from "./patch.js";
import { compileError, compileRule, evaluateRule, rootForRules, type ValidationRule } from "./cel.js";

/** The subset of OpenAPI v3 structural schema that CRDs use and the emulator checks. */
export interface StructuralSchema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema | boolean;
  items?: StructuralSchema;
  required?: string[];
  enum?: Json[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  /** OpenAPI v3.0 form: the bound itself is excluded. */
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minProperties?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  nullable?: boolean;
  format?: string;
  anyOf?: StructuralSchema[];
  allOf?: StructuralSchema[];
  oneOf?: StructuralSchema[];
  not?: StructuralSchema;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-validations"?: ValidationRule[];
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
}

function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Throws when a CEL rule of the schema does not compile (or uses what the emulator cannot evaluate). */
export function assertRulesKnown(schema: StructuralSchema, path = "<root>"): void {
  for (const rule of schema["x-kubernetes-validations"] ?? []) {
    const error = compileError(rule.rule, schema);
    if (error !== undefined) throw new Error(`kube-emulator: CEL rule at ${path} (${rule.rule}): ${error}`);
  }
  for (const [name, sub] of Object.entries(schema.properties ?? {})) assertRulesKnown(sub, `${path}.${name}`);
  if (schema.items) assertRulesKnown(schema.items, `${path}[]`);
  if (typeof schema.additionalProperties === "object") assertRulesKnown(schema.additionalProperties, `${path}{}`);
  for (const sub of [...(schema.anyOf ?? []), ...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.not === undefined ? [] : [schema.not])]) assertRulesKnown(sub, path);
}

/** Outcome of validation: causes (empty when valid) and the pruned unknown field paths. */
export interface ValidationOutcome {
  causes: StatusCause[];
  unknownFields: string[];
}

function typeName(value: Json): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function show(value: Json): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (isObject(value)) return '"object"';
  if (Array.isArray(value)) return '"array"';
  return String(value);
}

// String formats the API server checks: kube-openapi strfmt for CRDs (pkg/validation/strfmt:
// date-time as RFC 3339, byte as standard base64), and the same rules when it decodes built-in
// kinds (metav1.Time.UnmarshalJSON parses time.RFC3339; a []byte is base64.StdEncoding).
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Why `value` is not of string format `format`, or undefined (unknown formats are not checked, as strfmt does). */
export function formatProblem(format: string, value: string): string | undefined {
  if (format === "date-time") return rfc3339.test(value) && !Number.isNaN(Date.parse(value)) ? undefined : "not an RFC 3339 date-time";
  if (format === "byte") return base64.test(value) ? undefined : "not base64";
  return undefined;
}

function typeMatches(expected: string, value: Json): boolean {
  const actual = typeName(value);
  if (expected === "number") return actual === "number" || actual === "integer";
  return expected === actual;
}

/**
 * Validates `value` (mutating it to prune unknown fields) and returns every violation.
 * `path` is the dotted field path of `value`, e.g. `spec`.
 */
export function validateValue(schema: StructuralSchema, value: Json, path: string, out: ValidationOutcome): void {
  if (value === null) {
    if (schema.nullable) return;
    if (schema.type !== undefined) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: "null": ${path} in body must be of type ${schema.type}: "null"` });
    }
    return;
  }
  if (schema["x-kubernetes-int-or-string"]) {
    if (typeName(value) !== "integer" && typeof value !== "string") {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body must be of type integer-or-string` });
    }
    return;
  }
  if (schema.type !== undefined && !typeMatches(schema.type, value)) {
    out.causes.push({
      reason: "FieldValueTypeInvalid",
      field: path,
      message: `Invalid value: "${typeName(value)}": ${path} in body must be of type ${schema.type}: "${typeName(value)}"`,
    });
    return;
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    out.causes.push({
      reason: "FieldValueNotSupported",
      field: path,
      message: `Unsupported value: ${show(value)}: supported values: ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`,
    });
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body should be at least ${schema.minLength} chars long` });
    }
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) {
      out.causes.push({ reason: "FieldValueTooLong", field: path, message: `Too long: may not be more than ${schema.maxLength} bytes` });
    }
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body should match '${schema.pattern}'` });
    }
  }
  if (typeof value === "string" && schema.format !== undefined) {
    const problem = formatProblem(schema.format, value);
    if (problem !== undefined) out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body must be of type ${schema.format}: ${show(value)}` });
  }
  if (typeof value === "number") {
    if (schema.format === "int32" && (value > 2147483647 || value < -2147483648)) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${value}: ${path} in body must be of type int32` });
    }
    // 2^63 is the first double past int64 (JSON decoding into an int64 overflows there).
    if (schema.format === "int64" && (value >= 2 ** 63 || value < -(2 ** 63))) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${value}: ${path} in body must be of type int64` });
    }
    if (schema.minimum !== undefined && (schema.exclusiveMinimum === true ? value <= schema.minimum : value < schema.minimum)) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${value}: ${path} in body should be greater than ${schema.exclusiveMinimum === true ? "" : "or equal to "}${schema.minimum}` });
    }
    if (schema.maximum !== undefined && (schema.exclusiveMaximum === true ? value >= schema.maximum : value > schema.maximum)) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${value}: ${path} in body should be less than ${schema.exclusiveMaximum === true ? "" : "or equal to "}${schema.maximum}` });
    }
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      out.causes.push({ reason: "FieldValueTooMany", field: path, message: `Too many: ${value.length}: must have at most ${schema.maxItems} items` });
    }
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${value.length}: ${path} in body should have at least ${schema.minItems} items` });
    }
    if (schema.items) {
      const items = schema.items;
      value.forEach((item, i) => validateValue(items, item, `${path}[${i}]`, out));
    }
    const keys = schema["x-kubernetes-list-map-keys"];
    if (schema["x-kubernetes-list-type"] === "map" && keys !== undefined) {
      const seen = new Set<string>();
      value.forEach((item, i) => {
        const key = JSON.stringify(keys.map((k) => (isObject(item) ? item[k] : undefined)));
        if (seen.has(key)) out.causes.push({ reason: "FieldValueDuplicate", field: `${path}[${i}]`, message: `Duplicate value: ${key}` });
        seen.add(key);
      });
    }
  }
  if (isObject(value)) {
    if (schema.minProperties !== undefined && Object.keys(value).length < schema.minProperties) {
      out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${Object.keys(value).length}: ${path} in body should have at least ${schema.minProperties} properties` });
    }
    if (schema.maxProperties !== undefined && Object.keys(value).length > schema.maxProperties) {
      out.causes.push({ reason: "FieldValueTooMany", field: path, message: `Too many: ${Object.keys(value).length}: must have at most ${schema.maxProperties} items` });
    }
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(value, name)) out.causes.push({ reason: "FieldValueRequired", field: `${path}.${name}`, message: "Required value" });
    }
    const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
    for (const key of Object.keys(value)) {
      const child = value[key] as Json;
      const sub = schema.properties?.[key];
      if (sub !== undefined && Object.hasOwn(schema.properties ?? {}, key)) {
        validateValue(sub, child, `${path}.${key}`, out);
      } else if (typeof schema.additionalProperties === "object") {
        validateValue(schema.additionalProperties, child, `${path}.${key}`, out);
      } else if (schema.additionalProperties === true || preserve) {
        // kept as is
      } else if (schema.properties !== undefined || schema.type === "object") {
        out.unknownFields.push(`${path}.${key}`);
        delete value[key];
      }
    }
  }
  // kube-openapi pkg/validation/validate/schema_props.go schemaPropsValidator.Validate: the value
  // against each nested schema (value validations only, so nothing is pruned by them).
  const holds = (alt: StructuralSchema): boolean => {
    const trial: ValidationOutcome = { causes: [], unknownFields: [] };
    validateValue(alt, structuredClone(value), path, trial);
    return trial.causes.length === 0;
  };
  if (schema.anyOf !== undefined && !schema.anyOf.some(holds)) {
    out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body must match at least one schema in anyOf` });
  }
  if (schema.oneOf !== undefined) {
    const valid = schema.oneOf.filter(holds).length;
    if (valid !== 1) out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body must validate one and only one schema (oneOf). ${valid === 0 ? "Found none valid" : `Found ${valid} valid alternatives`}` });
  }
  if (schema.allOf !== undefined) {
    const valid = schema.allOf.filter(holds).length;
    if (valid !== schema.allOf.length) out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body must validate all the schemas (allOf)${valid === 0 ? ". None validated" : ""}` });
  }
  if (schema.not !== undefined && holds(schema.not)) {
    out.causes.push({ reason: "FieldValueInvalid", field: path, message: `Invalid value: ${show(value)}: ${path} in body must not validate the schema (not)` });
  }
}

/**
 * x-kubernetes-validations over the (pruned) value: each failing rule is one cause at its node,
 * or at its fieldPath. `old` is the stored value, correlated through object properties, map
 * entries and the items of map-type lists, for transition rules (schema/cel/validation.go).
 */
function validateRules(schema: StructuralSchema, value: Json | undefined, path: string, out: ValidationOutcome, old: Json | undefined): void {
  if (value === undefined || value === null) return;
  for (const rule of schema["x-kubernetes-validations"] ?? []) {
    const message = evaluateRule(compileRule(rule), value, old, schema);
    if (message === undefined) continue;
    const field = rule.fieldPath === undefined ? path : `${path}${rule.fieldPath}`;
    const reason = rule.reason ?? "FieldValueInvalid";
    // schema/cel/validation.go reports the rule's schema type as the value (field.Invalid(path, sts.Type, ...)).
    const body = reason === "FieldValueForbidden" ? `Forbidden: ${message}` : reason === "FieldValueRequired" ? `Required value: ${message}` : `Invalid value: ${JSON.stringify(schema.type ?? "object")}: ${message}`;
    out.causes.push({ reason, field, message: body });
  }
  const join = (key: string): string => (path === "" ? key : `${path}.${key}`);
  if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      const sub = schema.properties !== undefined && Object.hasOwn(schema.properties, key) ? schema.properties[key] : typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined;
      if (sub !== undefined) validateRules(sub, child, join(key), out, isObject(old) && Object.hasOwn(old, key) ? (old[key] as Json) : undefined);
    }
  } else if (Array.isArray(value) && schema.items !== undefined) {
    const mapKeys = schema["x-kubernetes-list-type"] === "map" ? schema["x-kubernetes-list-map-keys"] : undefined;
    const keyOf = (item: Json): string | undefined => (mapKeys === undefined || !isObject(item) ? undefined : JSON.stringify(mapKeys.map((k) => item[k])));
    const olds = Array.isArray(old) ? old : [];
    value.forEach((item, i) => {
      const key = keyOf(item);
      validateRules(schema.items as StructuralSchema, item, `${path}[${i}]`, out, key === undefined ? undefined : olds.find((o) => keyOf(o) === key));
    });
  }
}

// customresource/strategy.go hasBlockingErr: these make the server skip every CEL rule.
const blockingReasons = new Set(["FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"]);

/** Validates a whole object: metadata/apiVersion/kind are the server's, everything else the schema's. */
export function validateObject(schema: StructuralSchema, object: { [key: string]: Json }, old?: { [key: string]: Json }): ValidationOutcome {
  const out = validateStructure(schema, object);
  if (out.causes.some((c) => blockingReasons.has(c.reason))) {
    out.causes.push({ reason: "FieldValueInvalid", field: "", message: 'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' });
  } else {
    validateRules(schema, rootForRules(object), "", out, old === undefined ? undefined : rootForRules(old));
  }
  return out;
}

function validateStructure(schema: StructuralSchema, object: { [key: string]: Json }): ValidationOutcome {
  const out: ValidationOutcome = { causes: [], unknownFields: [] };
  for (const name of schema.required ?? []) {
    if (!Object.hasOwn(object, name)) out.causes.push({ reason: "FieldValueRequired", field: name, message: "Required value" });
  }
  for (const key of Object.keys(object)) {
    if (key === "apiVersion" || key === "kind" || key === "metadata") continue;
    const sub = schema.properties?.[key];
    if (sub !== undefined && Object.hasOwn(schema.properties ?? {}, key)) {
      validateValue(sub, object[key] as Json, key, out);
    } else if (schema["x-kubernetes-preserve-unknown-fields"] !== true) {
      out.unknownFields.push(key);
      delete object[key];
    }
  }
  return out;
}
