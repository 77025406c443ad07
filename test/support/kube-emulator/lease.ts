// coordination.k8s.io/v1 Lease, the built-in type leader election and sharding build on. Read at
// kubernetes/kubernetes 02f19cb0 pkg/apis/coordination/validation/validation.go (ValidateLeaseSpec)
// and kubernetes/apimachinery eed236ce pkg/apis/meta/v1/micro_time.go (MicroTime.UnmarshalJSON:
// exactly RFC3339Micro, six fractional digits; Date.toISOString's three are refused).
import type { StructuralSchema } from "./schema.js";
import type { StatusCause } from "./status.js";
import type { KubeObject, ResourceType } from "./store.js";

/** metav1.RFC3339Micro, "2006-01-02T15:04:05.000000Z07:00", as Go's time.Parse reads it. */
const rfc3339Micro = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/** True when `value` decodes as a metav1.MicroTime. */
export function isMicroTime(value: string): boolean {
  return rfc3339Micro.test(value) && !Number.isNaN(Date.parse(value));
}

const int32: StructuralSchema = { type: "integer", format: "int32" };

/** The wire shape of Lease.spec (types only; what the decoder checks). */
const leaseSchema: StructuralSchema = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        holderIdentity: { type: "string" },
        leaseDurationSeconds: int32,
        acquireTime: { type: "string", format: "date-time" },
        renewTime: { type: "string", format: "date-time" },
        leaseTransitions: int32,
        strategy: { type: "string" },
        preferredHolder: { type: "string" },
      },
    },
  },
};

/** Decoding (400) and validation (422) problems of a Lease. */
export function validateLease(object: KubeObject): { decode?: string; causes: StatusCause[] } {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  for (const field of ["acquireTime", "renewTime"]) {
    const value = spec[field];
    if (typeof value === "string" && !isMicroTime(value)) {
      return { decode: `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse as RFC3339Micro`, causes: [] };
    }
  }
  const causes: StatusCause[] = [];
  const duration = spec.leaseDurationSeconds;
  if (typeof duration === "number" && duration <= 0) causes.push({ reason: "FieldValueInvalid", field: "spec.leaseDurationSeconds", message: `Invalid value: ${duration}: must be greater than 0` });
  const transitions = spec.leaseTransitions;
  if (typeof transitions === "number" && transitions < 0) causes.push({ reason: "FieldValueInvalid", field: "spec.leaseTransitions", message: `Invalid value: ${transitions}: must be greater than or equal to 0` });
  // ValidateCoordinatedLeaseStrategy: a bare name must be a Kubernetes-defined strategy.
  if (typeof spec.strategy === "string" && !spec.strategy.includes("/") && spec.strategy !== "OldestEmulationVersion") {
    causes.push({ reason: "FieldValueNotSupported", field: "spec.strategy", message: `Unsupported value: ${JSON.stringify(spec.strategy)}: supported values: "OldestEmulationVersion"` });
  }
  if (typeof spec.preferredHolder === "string" && spec.preferredHolder !== "" && (spec.strategy === undefined || spec.strategy === "")) {
    causes.push({ reason: "FieldValueForbidden", field: "spec.preferredHolder", message: "Forbidden: may only be specified if `strategy` is defined" });
  }
  return { causes };
}

/** The Lease resource type (namespaced; built-in types accept unconditional updates). */
export const leaseType: ResourceType = {
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  kind: "Lease",
  namespaced: true,
  allowUnconditionalUpdate: true,
  native: { schema: leaseSchema, validate: (object) => validateLease(object) },
};
