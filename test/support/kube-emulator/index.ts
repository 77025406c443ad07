// Emulated Kubernetes apiserver for tests (no kube-apiserver runs on these machines).
// `startKubeEmulator()` serves core/v1 pods and namespaces, coordination.k8s.io/v1 leases,
// apps/v1 controllerrevisions, apiextensions.k8s.io/v1 customresourcedefinitions (a CRD created
// through the API is validated and then served) and extensions.istio.io/v1alpha1 wasmplugins
// validated against Istio's own CRD (test/fixtures/schemas/istio-crds.yaml); register more with
// `options.resources` or `emulator.register(...)`. `kubeConfigFor(emulator.url)` gives a
// @kubernetes/client-node KubeConfig pointing at it.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { resourceTypesFromCrd } from "./crd.js";
import type { ResourceType } from "./store.js";
import { KubeEmulator, type KubeEmulatorOptions } from "./server.js";

export { KubeEmulator, type KubeEmulatorOptions, type RecordedRequest } from "./server.js";
export { resourceTypesFromCrd } from "./crd.js";
export { resourceKey, apiVersionOf, type KubeObject, type ResourceType } from "./store.js";
export { parseLabelSelector, matchesSelector } from "./selector.js";
export { mergePatch, jsonPatch, type Json } from "./patch.js";
export { RbacAuthorizer, type RequestAttributes } from "./rbac.js";

/** Istio's CRDs as upstream ships them (WasmPlugin first), which the emulator serves by default. */
export const istioCrdsPath = fileURLToPath(new URL("../../fixtures/schemas/istio-crds.yaml", import.meta.url));

/** Istio's own WasmPlugin CRD (istio/api, its spec.url CEL rule included). */
export function wasmPluginResourceTypes(): ResourceType[] {
  const wasmPlugin = parseAllDocuments(readFileSync(istioCrdsPath, "utf8")).map((d) => d.toJS() as { metadata: { name: string } }).find((d) => d.metadata.name === "wasmplugins.extensions.istio.io");
  return resourceTypesFromCrd(wasmPlugin);
}

/** Resource key of WasmPlugins, for `emulator.objects(...)`. */
export const wasmPluginsResource = "extensions.istio.io/v1alpha1/wasmplugins";

/** Starts an emulator on 127.0.0.1 with pods, namespaces and WasmPlugins registered. */
export async function startKubeEmulator(options: KubeEmulatorOptions = {}): Promise<KubeEmulator> {
  const resources = [...wasmPluginResourceTypes(), ...(options.resources ?? [])];
  return new KubeEmulator({ ...options, resources }).listen();
}

/** A client-node KubeConfig whose only cluster is the emulator (plain HTTP; a bearer token when given, for RBAC). */
export function kubeConfigFor(url: string, namespace = "default", token?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "emulated", server: url, skipTLSVerify: true }],
    users: [token === undefined ? { name: "emulated" } : { name: "emulated", token }],
    contexts: [{ name: "emulated", cluster: "emulated", user: "emulated", namespace }],
    currentContext: "emulated",
  });
  return kc;
}
