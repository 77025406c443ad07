// Contract tests of the emulated kube-apiserver's built-in types and generic rules that leader
// election, sharding and policy history rely on: coordination.k8s.io/v1 Leases, apps/v1
// ControllerRevisions, ObjectMeta validation and the status subresource. Driven through
// @kubernetes/client-node (the control plane's client) and raw HTTP where the client hides the wire.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ApiException, AppsV1Api, CoordinationV1Api, CustomObjectsApi, PatchStrategy, V1MicroTime, Watch, setHeaderOptions, type V1Lease } from "@kubernetes/client-node";
import { kubeConfigFor, startKubeEmulator, type KubeEmulator } from "./index.js";

async function apiError(promise: Promise<unknown>): Promise<{ code: number; body: { reason?: string; message?: string } }> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ApiException, `expected ApiException, got ${String(error)}`);
    return { code: error.code, body: (typeof error.body === "string" ? JSON.parse(error.body) : error.body) as { reason?: string; message?: string } };
  }
  assert.fail("expected the request to fail");
}

async function raw(emulator: KubeEmulator, method: string, path: string, body?: unknown, contentType = "application/json") {
  const response = await fetch(`${emulator.url}${path}`, { method, headers: { "content-type": contentType }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as { reason?: string; message?: string; metadata?: { resourceVersion?: string; generation?: number }; spec?: unknown; status?: unknown } };
}

const leasePath = (name = "") => `/apis/coordination.k8s.io/v1/namespaces/tokentrace-system/leases${name === "" ? "" : `/${name}`}`;

function lease(name: string, holder: string, renew = new V1MicroTime("2026-12-02T10:00:00.000Z")): V1Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace: "tokentrace-system" },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: renew, renewTime: renew, leaseTransitions: 0 },
  };
}

describe("kube emulator: Leases (coordination.k8s.io/v1)", () => {
  let emulator: KubeEmulator;
  let leases: CoordinationV1Api;
  before(async () => {
    emulator = await startKubeEmulator();
    leases = kubeConfigFor(emulator.url).makeApiClient(CoordinationV1Api);
  });
  after(() => emulator.close());

  it("creates, reads and replaces a Lease; of two writers holding the same resourceVersion only the first wins (409 for the second)", async () => {
    const created = await leases.createNamespacedLease({ namespace: "tokentrace-system", body: lease("race", "pod-a") });
    assert.equal(created.spec?.holderIdentity, "pod-a");
    // MicroTime comes back as RFC3339 with six fractional digits.
    const read = await raw(emulator, "GET", leasePath("race"));
    assert.equal((read.json.spec as { renewTime: string }).renewTime, "2026-12-02T10:00:00.000000Z");
    const a = await leases.readNamespacedLease({ namespace: "tokentrace-system", name: "race" });
    const b = await leases.readNamespacedLease({ namespace: "tokentrace-system", name: "race" });
    a.spec = { ...a.spec, holderIdentity: "pod-a", renewTime: new V1MicroTime("2026-12-02T10:00:02.000Z") };
    b.spec = { ...b.spec, holderIdentity: "pod-b", leaseTransitions: 1 };
    const won = await leases.replaceNamespacedLease({ namespace: "tokentrace-system", name: "race", body: a });
    assert.notEqual(won.metadata?.resourceVersion, created.metadata?.resourceVersion);
    const lost = await apiError(leases.replaceNamespacedLease({ namespace: "tokentrace-system", name: "race", body: b }));
    assert.equal(lost.code, 409);
    assert.equal(lost.body.reason, "Conflict");
    assert.equal((await leases.readNamespacedLease({ namespace: "tokentrace-system", name: "race" })).spec?.holderIdentity, "pod-a");
  });

  it("refuses a renewTime that is not RFC3339Micro (Date.toISOString's milliseconds) with 400, as metav1.MicroTime's decoder does", async () => {
    const body = { ...lease("millis", "pod-a"), spec: { holderIdentity: "pod-a", leaseDurationSeconds: 15, renewTime: "2026-12-02T10:00:00.000Z" } };
    const refused = await raw(emulator, "POST", leasePath(), body);
    assert.equal(refused.status, 400);
    assert.equal(refused.json.reason, "BadRequest");
    assert.match(refused.json.message ?? "", /parsing time "2026-12-02T10:00:00.000Z"/);
    const micro = await raw(emulator, "POST", leasePath(), { ...body, spec: { ...body.spec, renewTime: "2026-12-02T10:00:00.000000Z" } });
    assert.equal(micro.status, 201);
  });

  it("validates the spec as ValidateLeaseSpec does: duration > 0, transitions >= 0, preferredHolder only with a strategy; a wrong type is a 400 decode error", async () => {
    const invalid = await raw(emulator, "POST", leasePath(), { ...lease("bad", "x"), spec: { leaseDurationSeconds: 0, leaseTransitions: -1, preferredHolder: "pod-b" } });
    assert.equal(invalid.status, 422);
    assert.equal(invalid.json.message, 'Lease.coordination.k8s.io "bad" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0, spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined]');
    const wrongType = await raw(emulator, "POST", leasePath(), { ...lease("typed", "x"), spec: { leaseDurationSeconds: "15" } });
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.json.message ?? "", /cannot unmarshal .*spec\.leaseDurationSeconds/);
    const strategy = await raw(emulator, "POST", leasePath(), { ...lease("strategy", "x"), spec: { strategy: "Newest", preferredHolder: "pod-b" } });
    assert.equal(strategy.status, 422);
    assert.match(strategy.json.message ?? "", /spec\.strategy: Unsupported value: "Newest"/);
  });

  it("lists and watches Leases by label, as sharding membership reads them", async () => {
    const labelled = (name: string): V1Lease => ({ ...lease(name, name), metadata: { name, namespace: "tokentrace-system", labels: { "tokentrace.dev/shard-member": "true" } } });
    await leases.createNamespacedLease({ namespace: "tokentrace-system", body: labelled("member-1") });
    const events: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      void new Watch(kubeConfigFor(emulator.url))
        .watch(leasePath(), { labelSelector: "tokentrace.dev/shard-member=true" }, (type, object: V1Lease) => {
          events.push(`${type} ${object.metadata?.name}`);
          if (events.length === 3) resolve();
        }, (err) => (err ? reject(err as Error) : resolve()))
        .then((controller) => done.finally(() => controller.abort()));
    });
    while (emulator.openWatches < 1) await new Promise((resolve) => setImmediate(resolve));
    await leases.createNamespacedLease({ namespace: "tokentrace-system", body: labelled("member-2") });
    await leases.deleteNamespacedLease({ namespace: "tokentrace-system", name: "member-1" });
    await done;
    assert.deepEqual(events, ["ADDED member-1", "ADDED member-2", "DELETED member-1"]);
    const listed = await leases.listNamespacedLease({ namespace: "tokentrace-system", labelSelector: "tokentrace.dev/shard-member=true" });
    assert.deepEqual(listed.items.map((l) => l.metadata?.name), ["member-2"]);
  });
});

describe("kube emulator: ControllerRevisions (apps/v1)", () => {
  let emulator: KubeEmulator;
  let apps: AppsV1Api;
  before(async () => {
    emulator = await startKubeEmulator();
    apps = kubeConfigFor(emulator.url).makeApiClient(AppsV1Api);
  });
  after(() => emulator.close());
  const revision = (name: string, data: object | undefined, number: number) => ({
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: { name, namespace: "llm", labels: { "tokentrace.dev/policy": "chat" } },
    ...(data === undefined ? {} : { data }),
    revision: number,
  });

  it("requires data and a non-negative revision (ValidateControllerRevision)", async () => {
    const refused = await raw(emulator, "POST", "/apis/apps/v1/namespaces/llm/controllerrevisions", revision("chat-1", undefined, -1));
    assert.equal(refused.status, 422);
    assert.equal(refused.json.message, 'ControllerRevision.apps "chat-1" is invalid: [data: Required value: data is mandatory, revision: Invalid value: -1: must be greater than or equal to 0]');
  });

  it("keeps data immutable (ValidateControllerRevisionUpdate) while labels may change, and lists by label", async () => {
    await apps.createNamespacedControllerRevision({ namespace: "llm", body: revision("chat-2", { spec: { rate: 0.5 } }, 2) });
    const stored = await apps.readNamespacedControllerRevision({ namespace: "llm", name: "chat-2" });
    const changed = await apiError(apps.replaceNamespacedControllerRevision({ namespace: "llm", name: "chat-2", body: { ...stored, data: { spec: { rate: 0.9 } } } }));
    assert.equal(changed.code, 422);
    assert.match(changed.body.message ?? "", /data: Invalid value: field is immutable/);
    const relabelled = await apps.replaceNamespacedControllerRevision({ namespace: "llm", name: "chat-2", body: { ...stored, metadata: { ...stored.metadata, labels: { "tokentrace.dev/policy": "chat", extra: "yes" } } } });
    assert.equal(relabelled.metadata?.labels?.extra, "yes");
    const listed = await apps.listNamespacedControllerRevision({ namespace: "llm", labelSelector: "tokentrace.dev/policy=chat" });
    assert.deepEqual(listed.items.map((r) => [r.metadata?.name, r.revision]), [["chat-2", 2]]);
  });
});

describe("kube emulator: ObjectMeta and the status subresource", () => {
  let emulator: KubeEmulator;
  let custom: CustomObjectsApi;
  const group = "extensions.istio.io";
  const version = "v1alpha1";
  const plural = "wasmplugins";
  const path = (name = "", sub = "") => `/apis/${group}/${version}/namespaces/llm/${plural}${name === "" ? "" : `/${name}`}${sub}`;
  const plugin = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: `${group}/${version}`, kind: "WasmPlugin", metadata: { name }, spec: { url: "oci://x/y:1" }, ...extra });
  before(async () => {
    emulator = await startKubeEmulator();
    custom = kubeConfigFor(emulator.url).makeApiClient(CustomObjectsApi);
  });
  after(() => emulator.close());

  it("refuses label values over 63 characters or with bad characters, and annotations over 256 KiB in total (objectmeta.go)", async () => {
    const longLabel = await raw(emulator, "POST", path(), { ...plugin("labels"), metadata: { name: "labels", labels: { policy: "p".repeat(64), ok: "a b" } } });
    assert.equal(longLabel.status, 422);
    assert.match(longLabel.json.message ?? "", /must be no more than 63 characters/);
    assert.match(longLabel.json.message ?? "", /"a b": a valid label must be an empty string/);
    const big = await raw(emulator, "POST", path(), { ...plugin("annotations"), metadata: { name: "annotations", annotations: { "tokentrace.dev/policy": "x".repeat(256 * 1024) } } });
    assert.equal(big.status, 422);
    assert.match(big.json.message ?? "", /metadata\.annotations: Too long: may not be more than 262144 bytes/);
  });

  it("a write to the main resource cannot set status; /status sets only status and leaves generation alone", async () => {
    const created = await raw(emulator, "POST", path(), plugin("status", { status: { phase: "ignored" } }));
    assert.equal(created.status, 201);
    assert.equal(created.json.status, undefined, "create drops status");
    const rv = created.json.metadata?.resourceVersion;
    const statusWrite = await raw(emulator, "PUT", path("status", "/status"), { ...plugin("status"), metadata: { name: "status", resourceVersion: rv }, spec: { url: "oci://changed/by:status" }, status: { observedGeneration: 1 } });
    assert.equal(statusWrite.status, 200);
    assert.deepEqual(statusWrite.json.status, { observedGeneration: 1 });
    assert.deepEqual(statusWrite.json.spec, { url: "oci://x/y:1" }, "spec from a /status write is ignored");
    assert.equal(statusWrite.json.metadata?.generation, 1);
    const mainWrite = await raw(emulator, "PUT", path("status"), { ...plugin("status"), metadata: { name: "status", resourceVersion: statusWrite.json.metadata?.resourceVersion }, spec: { url: "oci://x/y:2" }, status: { observedGeneration: 99 } });
    assert.equal(mainWrite.status, 200);
    assert.deepEqual(mainWrite.json.status, { observedGeneration: 1 }, "status from a main-resource write is ignored");
    assert.equal(mainWrite.json.metadata?.generation, 2);
    const stale = await raw(emulator, "PUT", path("status", "/status"), { ...plugin("status"), metadata: { name: "status", resourceVersion: rv }, status: { observedGeneration: 2 } });
    assert.equal(stale.status, 409);
    const patched = await custom.patchNamespacedCustomObjectStatus(
      { group, version, plural, namespace: "llm", name: "status", body: { status: { observedGeneration: 2 } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    assert.deepEqual((patched as { status: unknown }).status, { observedGeneration: 2 });
  });

  it("has no /status for a type without the subresource (404)", async () => {
    const pod = await raw(emulator, "POST", "/api/v1/namespaces/llm/pods", { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } });
    assert.equal(pod.status, 201);
    assert.equal((await raw(emulator, "PUT", "/api/v1/namespaces/llm/pods/p/status", { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } })).status, 404);
  });
});
