// The WasmPlugin client: the generic custom-object client bound to Istio's WasmPlugin resource
// (kept apart so the generic client does not depend on any one resource).
import type { KubeConfig } from "@kubernetes/client-node";
import { ClientNodeCustomObjectApi, type CustomObjectApi } from "./client.js";
import { wasmPluginGroup, wasmPluginPlural, wasmPluginVersion, type WasmPlugin } from "./wasmplugin.js";

/** The WasmPlugin operations the informer and reconciler use. */
export type WasmPluginApi = CustomObjectApi<WasmPlugin>;

/** client-node WasmPlugin client. */
export class ClientNodeWasmPluginApi extends ClientNodeCustomObjectApi<WasmPlugin> {
  constructor(kubeConfig: KubeConfig, watchTimeoutSeconds = 300) {
    super(kubeConfig, { group: wasmPluginGroup, version: wasmPluginVersion, plural: wasmPluginPlural }, watchTimeoutSeconds);
  }
}
