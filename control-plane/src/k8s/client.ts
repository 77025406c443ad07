// The only module that talks to the Kubernetes API (through @kubernetes/client-node). Every
// call returns a typed result; API errors and network failures never escape as exceptions, and
// each failure says whether retrying can help.
import { ApiException, CustomObjectsApi, PatchStrategy, Watch, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";

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

/** A custom object as the API returns it (only what every caller reads is typed). */
export interface CustomObject {
  metadata: { name: string; namespace: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** Watch event as the API frames it. */
export interface WatchEvent<T extends CustomObject> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T & { code?: number; reason?: string; message?: string };
}

/** The custom-object operations informers, the reconciler and the policy store use. */
export interface CustomObjectApi<T extends CustomObject> {
  /** Lists (all pages) in `namespace`, or cluster-wide when undefined. */
  list(namespace: string | undefined, labelSelector: string): Promise<KubeResult<{ items: T[]; resourceVersion: string }>>;
  /** Starts a watch; `onEvent` per event, `onEnd` once when the stream ends (error or not). */
  watch(
    namespace: string | undefined,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (event: WatchEvent<T>) => void,
    onEnd: (error: unknown) => void,
  ): Promise<KubeResult<{ stop(): void }>>;
  get(namespace: string, name: string): Promise<KubeResult<T>>;
  create(object: T): Promise<KubeResult<T>>;
  replace(object: T): Promise<KubeResult<T>>;
  /** Deletes, only if the object still has `resourceVersion` when given. */
  delete(namespace: string, name: string, resourceVersion?: string): Promise<KubeResult<void>>;
}

/** The status subresource of a custom object. */
export interface StatusApi {
  /** JSON merge patch of /status (unconditional: status is the writer's own). */
  patchStatus(namespace: string, name: string, status: unknown): Promise<KubeResult<void>>;
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

/** Runs a client-node call as a typed result. */
export async function attempt<T>(call: () => Promise<T>): Promise<KubeResult<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return toFailure(error);
  }
}

/** Which custom resource a client serves. */
export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
}

/** client-node implementation for one custom resource. */
export class ClientNodeCustomObjectApi<T extends CustomObject> implements CustomObjectApi<T>, StatusApi {
  private readonly api: CustomObjectsApi;
  private readonly watcher: Watch;

  constructor(kubeConfig: KubeConfig, private readonly resource: ResourceRef, private readonly watchTimeoutSeconds = 300) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.watcher = new Watch(kubeConfig);
  }

  async list(namespace: string | undefined, labelSelector: string): Promise<KubeResult<{ items: T[]; resourceVersion: string }>> {
    const { group, version, plural } = this.resource;
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion: string;
    do {
      const page = await attempt(async () => {
        const base = { group, version, plural, labelSelector, limit: 500, _continue: token };
        const raw = namespace === undefined ? await this.api.listClusterCustomObject(base) : await this.api.listNamespacedCustomObject({ ...base, namespace });
        return raw as { items: T[]; metadata: { resourceVersion: string; continue?: string } };
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
    onEvent: (event: WatchEvent<T>) => void,
    onEnd: (error: unknown) => void,
  ): Promise<KubeResult<{ stop(): void }>> {
    const { group, version, plural } = this.resource;
    const path = namespace === undefined ? `/apis/${group}/${version}/${plural}` : `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
    const query = { labelSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: this.watchTimeoutSeconds };
    return attempt(async () => {
      const controller = await this.watcher.watch(path, query, (type, object) => onEvent({ type: type as WatchEvent<T>["type"], object: object as WatchEvent<T>["object"] }), onEnd);
      return { stop: () => controller.abort() };
    });
  }

  get(namespace: string, name: string): Promise<KubeResult<T>> {
    return attempt(async () => (await this.api.getNamespacedCustomObject({ ...this.resource, namespace, name })) as T);
  }

  create(object: T): Promise<KubeResult<T>> {
    return attempt(async () => (await this.api.createNamespacedCustomObject({ ...this.resource, namespace: object.metadata.namespace, body: object })) as T);
  }

  replace(object: T): Promise<KubeResult<T>> {
    return attempt(async () => (await this.api.replaceNamespacedCustomObject({ ...this.resource, namespace: object.metadata.namespace, name: object.metadata.name, body: object })) as T);
  }

  delete(namespace: string, name: string, resourceVersion?: string): Promise<KubeResult<void>> {
    return attempt(async () => {
      const body = resourceVersion === undefined ? {} : { preconditions: { resourceVersion } };
      await this.api.deleteNamespacedCustomObject({ ...this.resource, namespace, name, body });
    });
  }

  patchStatus(namespace: string, name: string, status: unknown): Promise<KubeResult<void>> {
    return attempt(async () => {
      await this.api.patchNamespacedCustomObjectStatus({ ...this.resource, namespace, name, body: { status } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    });
  }
}
