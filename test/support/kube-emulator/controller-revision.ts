// apps/v1 ControllerRevision: an immutable snapshot of some state (`data`) with a revision number,
// what StatefulSets and DaemonSets keep their history in. Read at kubernetes/kubernetes 00010901
// pkg/apis/apps/validation/validation.go (ValidateControllerRevision, ValidateControllerRevisionUpdate).
import type { Json } from "./patch.js";
import type { StructuralSchema } from "./schema.js";
import type { StatusCause } from "./status.js";
import type { KubeObject, ResourceType } from "./store.js";

const controllerRevisionSchema: StructuralSchema = {
  type: "object",
  properties: {
    // runtime.RawExtension: any JSON object.
    data: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
    revision: { type: "integer", format: "int64" },
  },
};

function canonical(value: Json | undefined): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/** ValidateControllerRevision, plus ValidateControllerRevisionUpdate's immutable data. */
export function validateControllerRevision(object: KubeObject, old: KubeObject | undefined): { causes: StatusCause[] } {
  const causes: StatusCause[] = [];
  if (object.data === undefined || object.data === null) causes.push({ reason: "FieldValueRequired", field: "data", message: "Required value: data is mandatory" });
  const revision = object.revision;
  if (typeof revision === "number" && revision < 0) causes.push({ reason: "FieldValueInvalid", field: "revision", message: `Invalid value: ${revision}: must be greater than or equal to 0` });
  if (old !== undefined && canonical(object.data) !== canonical(old.data)) causes.push({ reason: "FieldValueInvalid", field: "data", message: "Invalid value: field is immutable" });
  return { causes };
}

/** The ControllerRevision resource type. */
export const controllerRevisionType: ResourceType = {
  group: "apps",
  version: "v1",
  plural: "controllerrevisions",
  kind: "ControllerRevision",
  namespaced: true,
  allowUnconditionalUpdate: true,
  native: { schema: controllerRevisionSchema, validate: validateControllerRevision },
};
