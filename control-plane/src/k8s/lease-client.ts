// The coordination.k8s.io/v1 Lease calls leader election makes (client-go's resourcelock.LeaseLock:
// get, create, update with the resourceVersion last read), as typed results. Times travel as
// metav1.MicroTime: RFC3339 with six fractional digits, which the API server insists on.
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import { signalOptions } from "./bounded-call.js";
import { attempt, type KubeResult } from "./client.js";

/** The leader election record a Lease carries (client-go LeaderElectionRecord). */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTimeMs: number;
  renewTimeMs: number;
  leaseTransitions: number;
}

/** A Lease as read: its record and the resourceVersion an update must name. */
export interface StoredLease {
  record: LeaseRecord;
  resourceVersion: string;
}

/** The Lease operations leader election uses. */
// Each call takes a signal that aborts its request (the elector bounds it by the renew deadline).
export interface LeaseApi {
  get(namespace: string, name: string, signal?: AbortSignal): Promise<KubeResult<StoredLease>>;
  create(namespace: string, name: string, record: LeaseRecord, signal?: AbortSignal): Promise<KubeResult<StoredLease>>;
  /** Replaces the spec only if the Lease still has `resourceVersion` (409 otherwise). */
  update(namespace: string, name: string, record: LeaseRecord, resourceVersion: string, signal?: AbortSignal): Promise<KubeResult<StoredLease>>;
}

const micro = (ms: number): V1MicroTime => new V1MicroTime(ms);

function leaseOf(namespace: string, name: string, record: LeaseRecord, resourceVersion?: string): V1Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    spec: {
      holderIdentity: record.holderIdentity,
      leaseDurationSeconds: record.leaseDurationSeconds,
      acquireTime: micro(record.acquireTimeMs),
      renewTime: micro(record.renewTimeMs),
      leaseTransitions: record.leaseTransitions,
    },
  };
}

// resourcelock.LeaseSpecToLeaderElectionRecord: absent fields read as zero values.
function recordOf(lease: V1Lease): StoredLease {
  const spec = lease.spec ?? {};
  const time = (value: unknown): number => (value === undefined || value === null ? 0 : new Date(value as string | Date).getTime());
  return {
    record: {
      holderIdentity: spec.holderIdentity ?? "",
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTimeMs: time(spec.acquireTime),
      renewTimeMs: time(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
    resourceVersion: lease.metadata?.resourceVersion ?? "",
  };
}


/** client-node implementation. */
export class ClientNodeLeaseApi implements LeaseApi {
  private readonly api: CoordinationV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(CoordinationV1Api);
  }

  get(namespace: string, name: string, signal?: AbortSignal): Promise<KubeResult<StoredLease>> {
    return attempt(async () => recordOf(await this.api.readNamespacedLease({ namespace, name }, signalOptions(signal))));
  }

  create(namespace: string, name: string, record: LeaseRecord, signal?: AbortSignal): Promise<KubeResult<StoredLease>> {
    return attempt(async () => recordOf(await this.api.createNamespacedLease({ namespace, body: leaseOf(namespace, name, record) }, signalOptions(signal))));
  }

  update(namespace: string, name: string, record: LeaseRecord, resourceVersion: string, signal?: AbortSignal): Promise<KubeResult<StoredLease>> {
    return attempt(async () => recordOf(await this.api.replaceNamespacedLease({ namespace, name, body: leaseOf(namespace, name, record, resourceVersion) }, signalOptions(signal))));
  }
}
