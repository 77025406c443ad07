// Turns a CustomResourceDefinition (apiextensions.k8s.io/v1, YAML or JSON) into the resource
// types the emulator serves, one per served version, each with its openAPIV3Schema.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { assertRulesKnown, type StructuralSchema } from "./schema.js";
import type { ResourceType } from "./store.js";

interface CrdDocument {
  apiVersion?: string;
  kind?: string;
  spec?: {
    group?: string;
    scope?: string;
    names?: { plural?: string; kind?: string };
    versions?: { name?: string; served?: boolean; schema?: { openAPIV3Schema?: StructuralSchema }; subresources?: { status?: object } }[];
  };
}

/** Resource types for every served version of the CRD; throws on a malformed CRD. */
export function resourceTypesFromCrd(crd: unknown): ResourceType[] {
  const doc = crd as CrdDocument;
  if (doc.apiVersion !== "apiextensions.k8s.io/v1" || doc.kind !== "CustomResourceDefinition") {
    throw new Error("kube-emulator: expected an apiextensions.k8s.io/v1 CustomResourceDefinition");
  }
  const spec = doc.spec;
  const group = spec?.group;
  const plural = spec?.names?.plural;
  const kind = spec?.names?.kind;
  if (!group || !plural || !kind) throw new Error("kube-emulator: CRD needs spec.group, spec.names.plural and spec.names.kind");
  return (spec?.versions ?? [])
    .filter((v) => v.served !== false)
    .map((v) => {
      if (!v.name) throw new Error("kube-emulator: CRD version without a name");
      const schema = v.schema?.openAPIV3Schema;
      if (schema !== undefined) assertRulesKnown(schema);
      const type: ResourceType = {
        group,
        version: v.name,
        plural,
        kind,
        namespaced: spec?.scope !== "Cluster",
        statusSubresource: v.subresources?.status !== undefined,
        allowUnconditionalUpdate: false,
      };
      if (schema !== undefined) type.schema = schema;
      return type;
    });
}

/** Reads a CRD file (YAML or JSON). */
export function loadCrdFile(path: string): ResourceType[] {
  return resourceTypesFromCrd(parse(readFileSync(path, "utf8")));
}
