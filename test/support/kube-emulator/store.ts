// The emulator's storage: every registered resource's objects, one global resourceVersion
// counter (as etcd's revision), and a bounded event history that watches replay from. Events
// older than the retained window are "compacted": a watch or continue token from before it
// gets 410 Gone, which is what forces real clients to re-list.
import type { Json } from "./patch.js";
import type { StructuralSchema } from "./schema.js";
import type { StatusCause } from "./status.js";

/** A Kubernetes object as stored (plain JSON with metadata). */
export type KubeObject = { [key: string]: Json } & {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
};

/** The metadata fields the emulator manages or reads. */
export interface ObjectMeta {
  [key: string]: Json | undefined;
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: { [key: string]: string };
  annotations?: { [key: string]: string };
}

/** One resource type the emulator serves. */
export interface ResourceType {
  /** "" for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** OpenAPI v3 schema of the object (CRDs); objects are not validated without one. */
  schema?: StructuralSchema;
  /** Whether writes to the main resource leave `.status` alone (CRDs with a status subresource). */
  statusSubresource?: boolean;
  /** Columns `kubectl get` prints (additionalPrinterColumns), served as a meta.k8s.io Table. */
  printerColumns?: { name: string; type: string; format?: string; description?: string; priority?: number; jsonPath: string }[];
  /** PUT without metadata.resourceVersion; true for core types, false for custom resources. */
  allowUnconditionalUpdate?: boolean;
  /**
   * A built-in type: its wire types are checked as the decoder does (a mismatch is 400, not 422),
   * unknown fields dropped, then its registry's validation runs (`old` on updates).
   */
  native?: {
    schema: StructuralSchema;
    validate(object: KubeObject, old: KubeObject | undefined): { decode?: string; causes: StatusCause[] };
  };
}

/** "group/version/plural", the map key of a resource type. */
export function resourceKey(type: Pick<ResourceType, "group" | "version" | "plural">): string {
  return `${type.group}/${type.version}/${type.plural}`;
}

/** apiVersion as it appears in objects: "v1" for core, "group/version" otherwise. */
export function apiVersionOf(type: ResourceType): string {
  return type.group === "" ? type.version : `${type.group}/${type.version}`;
}

/** A stored change; `previous` is the object before it (for selector transitions). */
export interface StoredEvent {
  resourceVersion: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  resource: string;
  object: KubeObject;
  previous?: KubeObject;
}

/** Objects, revisions and the retained event window. */
export class ObjectStore {
  private revision = 0;
  private readonly objectsByResource = new Map<string, Map<string, KubeObject>>();
  private readonly history: StoredEvent[] = [];
  /** Events with resourceVersion <= compactedRevision are no longer available. */
  compactedRevision = 0;
  private readonly listeners = new Set<(event: StoredEvent) => void>();

  constructor(private readonly historyLimit: number) {}

  /** The current global resourceVersion. */
  get currentRevision(): number {
    return this.revision;
  }

  /** Allocates the next resourceVersion. */
  nextRevision(): number {
    this.revision += 1;
    return this.revision;
  }

  private bucket(resource: string): Map<string, KubeObject> {
    let map = this.objectsByResource.get(resource);
    if (map === undefined) {
      map = new Map();
      this.objectsByResource.set(resource, map);
    }
    return map;
  }

  /** The stored object, or undefined. Returned objects must not be mutated by callers. */
  get(resource: string, key: string): KubeObject | undefined {
    return this.bucket(resource).get(key);
  }

  /** All objects of a resource in key order (namespace/name), as etcd lists them. */
  list(resource: string): [string, KubeObject][] {
    return [...this.bucket(resource).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Stores or removes an object and records the event. */
  commit(event: StoredEvent, key: string): void {
    const bucket = this.bucket(event.resource);
    if (event.type === "DELETED") bucket.delete(key);
    else bucket.set(key, event.object);
    this.history.push(event);
    while (this.history.length > this.historyLimit) {
      const dropped = this.history.shift();
      if (dropped !== undefined) this.compactedRevision = dropped.resourceVersion;
    }
    for (const listener of this.listeners) listener(event);
  }

  /** Drops the whole event history, as an etcd compaction does. */
  compact(): void {
    this.history.length = 0;
    this.compactedRevision = this.revision;
  }

  /** Events after `revision`, oldest first. */
  eventsAfter(revision: number): StoredEvent[] {
    return this.history.filter((e) => e.resourceVersion > revision);
  }

  /** Subscribes to every committed event; returns the unsubscribe function. */
  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
