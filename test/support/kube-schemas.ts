// Validation of manifests against the schemas their real consumers hold, from fixtures taken from
// upstream (test/fixtures/schemas/, each naming its source and commit): Kubernetes' OpenAPI
// definitions for built-in kinds, Istio's and prometheus-operator's CRDs, and IstioOperator as
// istioctl decodes it (istio-operator-definitions.yaml over istio-mesh-definitions.yaml).
//
// What is checked, and how:
// - Built-in kinds and IstioOperator: the object against its definition ($refs followed, cycles
//   included): every field must be declared (the API server's strict field validation, kubectl's
//   default, refuses any other; istioctl decodes IstioOperator with DisallowUnknownFields), types
//   as the JSON decoder reads them (integers, int32/int64 ranges, int-or-string, a Quantity as a
//   number or a string of its grammar, date-time, base64 bytes) and enums. The Go validation an
//   API server runs after decoding (ValidateDeployment and the like: name formats, port ranges) is
//   not emulated here.
// - Custom kinds: through the kube emulator's CRD validation (test/support/kube-emulator/schema.ts:
//   the structural schema with pruning reported as unknown fields, formats, and every
//   x-kubernetes-validations CEL rule, which must compile), metadata as ObjectMeta.
import { readFileSync } from "node:fs";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import type { Json } from "./kube-emulator/patch.js";
import { assertRulesKnown, validateObject, validateValue, type StructuralSchema, type ValidationOutcome } from "./kube-emulator/schema.js";

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/schemas/${name}`, import.meta.url), "utf8");

type Definition = Record<string, unknown>;
const definitions: Record<string, Definition> = {
  ...(parseYaml(fixture("kubernetes-definitions.yaml")) as Record<string, Definition>),
  ...(parseYaml(fixture("istio-mesh-definitions.yaml")) as Record<string, Definition>),
  ...(parseYaml(fixture("istio-operator-definitions.yaml")) as Record<string, Definition>),
};
const crds = [...parseAllDocuments(fixture("istio-crds.yaml")), ...parseAllDocuments(fixture("prometheusrule-crd.yaml"))].map((d) => d.toJSON() as CrdDocument);

interface CrdDocument {
  spec: { group: string; names: { kind: string }; versions: { name: string; served: boolean; schema: { openAPIV3Schema: StructuralSchema } }[] };
}

// Every CEL rule of the CRDs must be one the emulator evaluates (none is skipped).
for (const crd of crds) for (const version of crd.spec.versions) assertRulesKnown(version.schema.openAPIV3Schema, `${crd.spec.names.kind} ${version.name}`);

// apimachinery pkg/api/resource/quantity.go: <signedNumber><suffix>, suffix binarySI (Ki..Ei),
// decimalSI (n u m "" k M G T P E) or decimalExponent (e|E<signedNumber>); Quantity.UnmarshalJSON
// also reads a bare JSON number.
const quantityPattern = "^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$";
const quantity: StructuralSchema = { anyOf: [{ type: "number" }, { type: "string", pattern: quantityPattern }] };

const built = new Map<string, StructuralSchema>();

/** A swagger 2.0 definition as a structural schema; $refs become shared nodes (cycles allowed). */
function schemaOf(name: string): StructuralSchema {
  if (name === "io.k8s.apimachinery.pkg.api.resource.Quantity") return quantity;
  const known = built.get(name);
  if (known !== undefined) return known;
  const definition = definitions[name];
  if (definition === undefined) throw new Error(`no OpenAPI definition ${name}`);
  const shell: StructuralSchema = {};
  built.set(name, shell);
  Object.assign(shell, convert(definition));
  return shell;
}

const copiedKeys = new Set(["type", "format", "enum", "required", "pattern", "minimum", "maximum", "x-kubernetes-list-type", "x-kubernetes-list-map-keys"]);

function convert(node: Definition): StructuralSchema {
  const ref = node.$ref;
  if (typeof ref === "string") return schemaOf(ref.replace("#/definitions/", ""));
  // intstr.IntOrString: apimachinery's OpenAPI says string with format int-or-string.
  if (node.format === "int-or-string") return { "x-kubernetes-int-or-string": true };
  const out: StructuralSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "properties") out.properties = Object.fromEntries(Object.entries(value as Record<string, Definition>).map(([k, v]) => [k, convert(v)]));
    else if (key === "items") out.items = convert(value as Definition);
    else if (key === "additionalProperties") out.additionalProperties = typeof value === "boolean" ? value : convert(value as Definition);
    else if (copiedKeys.has(key)) (out as Record<string, unknown>)[key] = value;
  }
  // An object with neither properties nor additionalProperties is opaque (FieldsV1, RawExtension).
  if (out.type === "object" && out.properties === undefined && out.additionalProperties === undefined) out["x-kubernetes-preserve-unknown-fields"] = true;
  // A definition with no type at all (apiextensions JSON, JSONSchemaPropsOr*) takes any JSON.
  if (out.type === undefined && out.properties === undefined) out["x-kubernetes-preserve-unknown-fields"] = true;
  return out;
}

/** The definition name of a built-in apiVersion/kind (its x-kubernetes-group-version-kind). */
function builtinDefinition(apiVersion: string, kind: string): string | undefined {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  for (const [name, definition] of Object.entries(definitions)) {
    const gvks = (definition["x-kubernetes-group-version-kind"] ?? []) as { group: string; version: string; kind: string }[];
    if (gvks.some((g) => g.group === group && g.version === version && g.kind === kind)) return name;
  }
  return undefined;
}

/** The served CRD schema of a custom apiVersion/kind. */
function customSchema(apiVersion: string, kind: string): StructuralSchema | undefined {
  const [group, version] = apiVersion.split("/");
  const crd = crds.find((c) => c.spec.group === group && c.spec.names.kind === kind);
  return crd?.spec.versions.find((v) => v.name === version && v.served)?.schema.openAPIV3Schema;
}

/** Whether a fixture holds the schema of this apiVersion/kind. */
export function hasSchema(apiVersion: string, kind: string): boolean {
  return builtinDefinition(apiVersion, kind) !== undefined || customSchema(apiVersion, kind) !== undefined;
}

/** Every violation of `object` (a copy is checked): "field: message" lines, unknown fields included. */
export function schemaErrors(object: Record<string, unknown>): string[] {
  const { apiVersion, kind } = object as { apiVersion: string; kind: string };
  const copy = structuredClone(object) as { [key: string]: Json };
  let out: ValidationOutcome;
  const builtin = builtinDefinition(apiVersion, kind);
  if (builtin !== undefined) {
    out = { causes: [], unknownFields: [] };
    validateValue(schemaOf(builtin), copy, "", out);
  } else {
    const schema = customSchema(apiVersion, kind);
    if (schema === undefined) return [`no schema for ${apiVersion}/${kind}`];
    out = validateObject(schema, copy);
    // A custom resource's metadata is ObjectMeta, checked as the API server decodes it.
    if (copy.metadata !== undefined) validateValue(schemaOf("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), copy.metadata, ".metadata", out);
  }
  const clean = (field: string): string => field.replace(/^\./, "");
  return [...out.causes.map((c) => `${clean(c.field)}: ${c.message}`), ...out.unknownFields.map((f) => `${clean(f)}: unknown field`)];
}

/** Throws with every violation. */
export function assertSchemaValid(object: Record<string, unknown>): void {
  const errors = schemaErrors(object);
  if (errors.length > 0) throw new Error(`${String(object.kind)} ${String((object.metadata as { name?: string } | undefined)?.name)}: ${errors.join("; ")}`);
}
