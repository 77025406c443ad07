// The only module that talks to the Kubernetes API (through @kubernetes/client-node). Every
// call returns a typed result; API errors and network failures never escape as exceptions, and
// each failure says whether retrying can help.
import { ApiException, CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { wasmPluginGroup as group, wasmPluginPlural as plural, wasmPluginVersion as version, type WasmPlugin } from "./wasmplugin.js";

/** A failed call: HTTP code (0 = no response), the Status reason, and whether to retry. */
export interface KubeFailure {
  ok: false;
  code: number;
  reason: string;
  message: string;
  retryable: boolean;
}

/** Result of a call. */
export type KubeResult<T> = { ok: true; value: T } | KubeFailure;

/** Watch event as the API frames it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: WasmPlugin & { code?: number; reason?: string; message?: string };
}

/** The WasmPlugin operations the informer and reconciler use. */
export interface WasmPluginApi {
  /** Lists (all pages) in `namespace`, or cluster-wide when undefined. */
  list(namespace: string | undefined, labelSelector: string): Promise<KubeResult<{ items: WasmPlugin[]; resourceVersion: string }>>;
  /** Starts a watch; `onEvent` per event, `onEnd` once when the stream ends (error or not). */
  watch(
    namespace: string | undefined,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (event: WatchEvent) => void,
    onEnd: (error: unknown) => void,
  ): Promise<KubeResult<{ stop(): void }>>;
  get(namespace: string, name: string): Promise<KubeResult<WasmPlugin>>;
  create(object: WasmPlugin): Promise<KubeResult<WasmPlugin>>;
  replace(object: WasmPlugin): Promise<KubeResult<WasmPlugin>>;
  /** Deletes, only if the object still has `resourceVersion` when given. */
  delete(namespace: string, name: string, resourceVersion?: string): Promise<KubeResult<void>>;
}

/** Maps anything a client-node call throws to a failure. */
export function toFailure(error: unknown): KubeFailure {
  if (error instanceof ApiException) {
    let status: { reason?: string; message?: string } = {};
    try {
      status = (typeof error.body === "string" ? JSON.parse(error.body) : error.body) as typeof status;
    } catch {
      // a body that is not a Status: keep the code only
    }
    const code = error.code;
    // Conflicts and expired versions resolve after a fresh read; 429 and 5xx are transient.
    const retryable = code === 409 || code === 410 || code === 429 || code >= 500;
    return { ok: false, code, reason: status?.reason ?? "Unknown", message: status?.message ?? `HTTP ${code}`, retryable };
  }
  const e = error as { code?: string; message?: string };
  return { ok: false, code: 0, reason: e.code ?? "NetworkError", message: e.message ?? String(error), retryable: true };
}

async function attempt<T>(call: () => Promise<T>): Promise<KubeResult<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return toFailure(error);
  }
}

/** client-node implementation. */
export class ClientNodeWasmPluginApi implements WasmPluginApi {
  private readonly api: CustomObjectsApi;
  private readonly watcher: Watch;

  constructor(kubeConfig: KubeConfig, private readonly watchTimeoutSeconds = 300) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.watcher = new Watch(kubeConfig);
  }

  async list(namespace: string | undefined, labelSelector: string): Promise<KubeResult<{ items: WasmPlugin[]; resourceVersion: string }>> {
    const items: WasmPlugin[] = [];
    let token: string | undefined;
    let resourceVersion: string;
    do {
      const page = await attempt(async () => {
        const base = { group, version, plural, labelSelector, limit: 500, _continue: token };
        const raw = namespace === undefined ? await this.api.listClusterCustomObject(base) : await this.api.listNamespacedCustomObject({ ...base, namespace });
        return raw as { items: WasmPlugin[]; metadata: { resourceVersion: string; continue?: string } };
      });
      if (!page.ok) return page;
      items.push(...page.value.items);
      resourceVersion = page.value.metadata.resourceVersion;
      token = page.value.metadata.continue || undefined;
    } while (token !== undefined);
    return { ok: true, value: { items, resourceVersion } };
  }

  async watch(
    namespace: string | undefined,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (event: WatchEvent) => void,
    onEnd: (error: unknown) => void,
  ): Promise<KubeResult<{ stop(): void }>> {
    const path = namespace === undefined ? `/apis/${group}/${version}/${plural}` : `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
    const query = { labelSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: this.watchTimeoutSeconds };
    return attempt(async () => {
      const controller = await this.watcher.watch(path, query, (type, object) => onEvent({ type: type as WatchEvent["type"], object: object as WatchEvent["object"] }), onEnd);
      return { stop: () => controller.abort() };
    });
  }

  get(namespace: string, name: string): Promise<KubeResult<WasmPlugin>> {
    return attempt(async () => (await this.api.getNamespacedCustomObject({ group, version, plural, namespace, name })) as WasmPlugin);
  }

  create(object: WasmPlugin): Promise<KubeResult<WasmPlugin>> {
    return attempt(async () => (await this.api.createNamespacedCustomObject({ group, version, plural, namespace: object.metadata.namespace, body: object })) as WasmPlugin);
  }

  replace(object: WasmPlugin): Promise<KubeResult<WasmPlugin>> {
    return attempt(
      async () =>
        (await this.api.replaceNamespacedCustomObject({ group, version, plural, namespace: object.metadata.namespace, name: object.metadata.name, body: object })) as WasmPlugin,
    );
  }

  delete(namespace: string, name: string, resourceVersion?: string): Promise<KubeResult<void>> {
    return attempt(async () => {
      const body = resourceVersion === undefined ? {} : { preconditions: { resourceVersion } };
      await this.api.deleteNamespacedCustomObject({ group, version, plural, namespace, name, body });
    });
  }
}
