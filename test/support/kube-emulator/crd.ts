// Turns a CustomResourceDefinition object (apiextensions.k8s.io/v1) into the resource
// types the emulator serves, one per served version, after the checks the API server would make
// when the CRD is created (crd-registration.ts). Tests may also create CRDs through the API.
import { typesOfCrd, validateCrd } from "./crd-registration.js";
import type { KubeObject, ResourceType } from "./store.js";

/** Resource types for every served version of the CRD; throws with every cause for a CRD the API server would refuse. */
export function resourceTypesFromCrd(crd: unknown): ResourceType[] {
  const doc = crd as KubeObject;
  if (doc.apiVersion !== "apiextensions.k8s.io/v1" || doc.kind !== "CustomResourceDefinition") {
    throw new Error("kube-emulator: expected an apiextensions.k8s.io/v1 CustomResourceDefinition");
  }
  const { causes } = validateCrd(doc);
  if (causes.length > 0) throw new Error(`kube-emulator: CustomResourceDefinition ${doc.metadata?.name ?? ""} is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join("; ")}`);
  return typesOfCrd(doc);
}
