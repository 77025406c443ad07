// Contract tests of the emulated Kubernetes apiserver, driven through @kubernetes/client-node
// 1.4.0 (the client the control plane uses) and raw HTTP where the client hides the wire.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, Watch, setHeaderOptions } from "@kubernetes/client-node";
import { kubeConfigFor, resourceTypesFromCrd, startKubeEmulator, wasmPluginsResource, type KubeEmulator } from "./index.js";

const group = "extensions.istio.io";
const version = "v1alpha1";
const plural = "wasmplugins";
const sha = "a".repeat(64);

function plugin(name: string, spec: Record<string, unknown> = {}, labels: Record<string, string> = {}) {
  return {
    apiVersion: `${group}/${version}`,
    kind: "WasmPlugin",
    metadata: { name, labels },
    spec: { url: "oci://example/tokentrace:1", sha256: sha, phase: "STATS", ...spec },
  };
}

type Obj = { metadata: { name: string; resourceVersion: string; uid: string; generation: number; creationTimestamp: string; labels?: Record<string, string> }; spec: Record<string, unknown> };

async function apiError(promise: Promise<unknown>): Promise<{ code: number; body: Record<string, unknown> }> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ApiException, `expected ApiException, got ${String(error)}`);
    const body = typeof error.body === "string" ? (JSON.parse(error.body) as Record<string, unknown>) : (error.body as Record<string, unknown>);
    return { code: error.code, body };
  }
  assert.fail("expected the request to fail");
}

async function raw(emulator: KubeEmulator, method: string, path: string, body?: unknown, contentType = "application/json") {
  const response = await fetch(`${emulator.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

// Collects watch events until `count` arrived (or the stream ended).
function collectWatch(emulator: KubeEmulator, path: string, query: Record<string, string>, count: number) {
  const events: { type: string; object: Obj & { code?: number; reason?: string } }[] = [];
  let controller: AbortController | undefined;
  const done = new Promise<typeof events>((resolve, reject) => {
    void new Watch(kubeConfigFor(emulator.url))
      .watch(path, query, (type, object) => {
        events.push({ type, object: object as Obj });
        if (events.length === count) resolve(events);
      }, (err) => (err && (err as { name?: string }).name !== "AbortError" ? reject(err as Error) : resolve(events)))
      .then((c) => (controller = c));
  });
  return { done: done.finally(() => controller?.abort()), events };
}

async function waitForWatches(emulator: KubeEmulator, n: number): Promise<void> {
  while (emulator.openWatches < n) await new Promise((resolve) => setImmediate(resolve));
}

describe("kube emulator (emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let api: CustomObjectsApi;
  const clock = { now: new Date("2026-12-02T10:00:00.000Z") };

  before(async () => {
    emulator = await startKubeEmulator({ now: () => clock.now });
    api = kubeConfigFor(emulator.url).makeApiClient(CustomObjectsApi);
  });
  after(() => emulator.close());

  it("creates a WasmPlugin with server-owned metadata and refuses a duplicate with 409 AlreadyExists", async () => {
    const created = (await api.createNamespacedCustomObject({ group, version, plural, namespace: "ns1", body: plugin("create-one") })) as Obj;
    assert.match(created.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.equal(created.metadata.generation, 1);
    assert.equal(created.metadata.creationTimestamp, "2026-12-02T10:00:00Z");
    assert.equal(created.metadata.resourceVersion, String(emulator.store.currentRevision));
    const fetched = (await api.getNamespacedCustomObject({ group, version, plural, namespace: "ns1", name: "create-one" })) as Obj;
    assert.deepEqual(fetched, created);
    const dup = await apiError(api.createNamespacedCustomObject({ group, version, plural, namespace: "ns1", body: plugin("create-one") }));
    assert.equal(dup.code, 409);
    assert.equal(dup.body.reason, "AlreadyExists");
    assert.equal(dup.body.message, 'wasmplugins.extensions.istio.io "create-one" already exists');
    const missing = await apiError(api.getNamespacedCustomObject({ group, version, plural, namespace: "ns1", name: "nope" }));
    assert.equal(missing.code, 404);
    assert.equal(missing.body.message, 'wasmplugins.extensions.istio.io "nope" not found');
  });

  it("rejects an update with a stale resourceVersion (409) or none (422), bumps generation only for spec changes, and ignores no-op writes", async () => {
    const created = (await api.createNamespacedCustomObject({ group, version, plural, namespace: "ns1", body: plugin("upd") })) as Obj;
    const relabeled = (await api.replaceNamespacedCustomObject({
      group, version, plural, namespace: "ns1", name: "upd",
      body: { ...plugin("upd", {}, { team: "a" }), metadata: { name: "upd", labels: { team: "a" }, resourceVersion: created.metadata.resourceVersion } },
    })) as Obj;
    assert.equal(relabeled.metadata.generation, 1);
    assert.notEqual(relabeled.metadata.resourceVersion, created.metadata.resourceVersion);
    const stale = await apiError(api.replaceNamespacedCustomObject({
      group, version, plural, namespace: "ns1", name: "upd",
      body: { ...plugin("upd", { phase: "AUTHN" }), metadata: { name: "upd", resourceVersion: created.metadata.resourceVersion } },
    }));
    assert.equal(stale.code, 409);
    assert.equal(stale.body.reason, "Conflict");
    assert.equal(stale.body.message, 'Operation cannot be fulfilled on wasmplugins.extensions.istio.io "upd": the object has been modified; please apply your changes to the latest version and try again');
    const unconditional = await apiError(api.replaceNamespacedCustomObject({ group, version, plural, namespace: "ns1", name: "upd", body: plugin("upd", { phase: "AUTHN" }) }));
    assert.equal(unconditional.code, 422);
    const respec = (await api.replaceNamespacedCustomObject({
      group, version, plural, namespace: "ns1", name: "upd",
      body: { ...plugin("upd", { phase: "AUTHN" }), metadata: { name: "upd", labels: { team: "a" }, resourceVersion: relabeled.metadata.resourceVersion } },
    })) as Obj;
    assert.equal(respec.metadata.generation, 2);
    const before = emulator.store.currentRevision;
    const noop = (await api.replaceNamespacedCustomObject({
      group, version, plural, namespace: "ns1", name: "upd",
      body: { ...plugin("upd", { phase: "AUTHN" }), metadata: { name: "upd", labels: { team: "a" }, resourceVersion: respec.metadata.resourceVersion } },
    })) as Obj;
    assert.equal(noop.metadata.resourceVersion, respec.metadata.resourceVersion);
    assert.equal(emulator.store.currentRevision, before);
  });

  it("applies merge patches and JSON patches, honours a resourceVersion precondition, and refuses strategic merge with 415", async () => {
    const created = (await api.createNamespacedCustomObject({ group, version, plural, namespace: "ns1", body: plugin("pat", { pluginConfig: { sampling: { defaultRate: 0.1 } } }) })) as Obj;
    const merged = (await api.patchNamespacedCustomObject(
      { group, version, plural, namespace: "ns1", name: "pat", body: { spec: { pluginConfig: { sampling: { defaultRate: 0.5 } }, phase: null } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    )) as Obj;
    assert.deepEqual(merged.spec, { url: "oci://example/tokentrace:1", sha256: sha, pluginConfig: { sampling: { defaultRate: 0.5 } } });
    const patched = (await api.patchNamespacedCustomObject(
      { group, version, plural, namespace: "ns1", name: "pat", body: [
        { op: "test", path: "/spec/pluginConfig/sampling/defaultRate", value: 0.5 },
        { op: "replace", path: "/spec/pluginConfig/sampling/defaultRate", value: 0.25 },
        { op: "add", path: "/metadata/labels", value: { "app.kubernetes.io/managed-by": "tokentrace" } },
      ] },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    )) as Obj;
    assert.deepEqual(patched.spec.pluginConfig, { sampling: { defaultRate: 0.25 } });
    assert.deepEqual(patched.metadata.labels, { "app.kubernetes.io/managed-by": "tokentrace" });
    assert.equal(patched.metadata.generation, 3);
    const failedTest = await raw(emulator, "PATCH", `/apis/${group}/${version}/namespaces/ns1/${plural}/pat`, [{ op: "test", path: "/spec/url", value: "x" }], PatchStrategy.JsonPatch);
    assert.equal(failedTest.status, 422);
    assert.equal(failedTest.json?.message, "testing value /spec/url failed: test failed");
    const stale = await raw(emulator, "PATCH", `/apis/${group}/${version}/namespaces/ns1/${plural}/pat`, { metadata: { resourceVersion: created.metadata.resourceVersion } }, PatchStrategy.MergePatch);
    assert.equal(stale.status, 409);
    const smp = await raw(emulator, "PATCH", `/apis/${group}/${version}/namespaces/ns1/${plural}/pat`, { spec: {} }, PatchStrategy.StrategicMergePatch);
    assert.equal(smp.status, 415);
    assert.equal(smp.json?.reason, "UnsupportedMediaType");
  });

  it("validates WasmPlugins against the CRD schema with a 422 Invalid status listing every cause; blocking errors skip the CEL rules (strategy.go hasBlockingErr)", async () => {
    const bad = plugin("bad", { phase: "LATE", sha256: "xyz", selector: { matchLabels: { app: "a" } }, targetRefs: [{ kind: "Service" }] });
    delete (bad.spec as { url?: string }).url;
    const result = await apiError(api.createNamespacedCustomObject({ group, version, plural, namespace: "ns1", body: bad }));
    assert.equal(result.code, 422);
    assert.equal(result.body.reason, "Invalid");
    assert.deepEqual((result.body.details as { causes: unknown[] }).causes, [
      { reason: "FieldValueRequired", field: "spec.url", message: "Required value" },
      { reason: "FieldValueInvalid", field: "spec.sha256", message: `Invalid value: "xyz": spec.sha256 in body should match '(^$|^[a-f0-9]{64}$)'` },
      { reason: "FieldValueNotSupported", field: "spec.phase", message: 'Unsupported value: "LATE": supported values: "UNSPECIFIED_PHASE", "AUTHN", "AUTHZ", "STATS"' },
      { reason: "FieldValueRequired", field: "spec.targetRefs[0].name", message: "Required value" },
      { reason: "FieldValueInvalid", field: "", message: 'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' },
    ]);
    // With only non-blocking errors (a pattern), the CEL rule runs and reports too.
    const both = plugin("both", { sha256: "xyz", selector: { matchLabels: { app: "a" } }, targetRefs: [{ kind: "Service", name: "s" }] });
    const celResult = await apiError(api.createNamespacedCustomObject({ group, version, plural, namespace: "ns1", body: both }));
    assert.deepEqual((celResult.body.details as { causes: unknown[] }).causes, [
      { reason: "FieldValueInvalid", field: "spec.sha256", message: `Invalid value: "xyz": spec.sha256 in body should match '(^$|^[a-f0-9]{64}$)'` },
      { reason: "FieldValueInvalid", field: "spec", message: 'Invalid value: "object": only one of targetRefs or selector can be set' },
    ]);
    assert.match(String(result.body.message), /^WasmPlugin\.extensions\.istio\.io "bad" is invalid: \[spec\.url: Required value, /);
    assert.equal(emulator.objects(wasmPluginsResource).some((o) => o.metadata?.name === "bad"), false);
  });

  it("prunes unknown fields with a warning, and rejects them under fieldValidation=Strict", async () => {
    const body = plugin("prune", { colour: "blue" });
    const lenient = await raw(emulator, "POST", `/apis/${group}/${version}/namespaces/ns1/${plural}`, body);
    assert.equal(lenient.status, 201);
    assert.equal((lenient.json?.spec as Record<string, unknown>).colour, undefined);
    assert.equal(lenient.headers.get("warning"), '299 - "unknown field \\"spec.colour\\""'.replace(/\\"/g, '"'));
    const strict = await raw(emulator, "POST", `/apis/${group}/${version}/namespaces/ns1/${plural}?fieldValidation=Strict`, plugin("prune2", { colour: "blue" }));
    assert.equal(strict.status, 400);
    assert.equal(strict.json?.message, 'strict decoding error: unknown field "spec.colour"');
  });

  it("pages a list with limit/continue at one resourceVersion, and answers 410 Gone for a continue token older than the compacted history", async () => {
    for (const name of ["page-a", "page-b", "page-c"]) {
      await api.createNamespacedCustomObject({ group, version, plural, namespace: "paging", body: plugin(name) });
    }
    const first = (await api.listNamespacedCustomObject({ group, version, plural, namespace: "paging", limit: 2 })) as { metadata: { continue: string; resourceVersion: string; remainingItemCount: number }; items: Obj[] };
    assert.deepEqual(first.items.map((i) => i.metadata.name), ["page-a", "page-b"]);
    assert.equal(first.metadata.remainingItemCount, 1);
    const second = (await api.listNamespacedCustomObject({ group, version, plural, namespace: "paging", limit: 2, _continue: first.metadata.continue })) as typeof first;
    assert.deepEqual(second.items.map((i) => i.metadata.name), ["page-c"]);
    assert.equal(second.metadata.continue, undefined);
    assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "paging", body: plugin("page-d") });
    emulator.compact();
    const gone = await apiError(api.listNamespacedCustomObject({ group, version, plural, namespace: "paging", limit: 2, _continue: first.metadata.continue }));
    assert.equal(gone.code, 410);
    assert.equal(gone.body.reason, "Expired");
  });

  it("filters lists by label selector (=, !=, in, notin, exists, !exists) and field selector", async () => {
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "sel", body: plugin("s1", {}, { app: "chat", tier: "gpu" }) });
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "sel", body: plugin("s2", {}, { app: "embed" }) });
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "sel", body: plugin("s3", {}, { app: "rank", tier: "cpu" }) });
    const cases: [string, string[]][] = [
      ["app=chat", ["s1"]],
      ["app!=chat", ["s2", "s3"]],
      ["app in (chat,rank)", ["s1", "s3"]],
      ["app notin (chat)", ["s2", "s3"]],
      ["tier", ["s1", "s3"]],
      ["!tier", ["s2"]],
      ["app in (chat,rank),tier=cpu", ["s3"]],
    ];
    for (const [labelSelector, expected] of cases) {
      const list = (await api.listNamespacedCustomObject({ group, version, plural, namespace: "sel", labelSelector })) as { items: Obj[] };
      assert.deepEqual(list.items.map((i) => i.metadata.name), expected, labelSelector);
    }
    const byName = (await api.listNamespacedCustomObject({ group, version, plural, namespace: "sel", fieldSelector: "metadata.name=s2" })) as { items: Obj[] };
    assert.deepEqual(byName.items.map((i) => i.metadata.name), ["s2"]);
    const badSelector = await raw(emulator, "GET", `/apis/${group}/${version}/namespaces/sel/${plural}?labelSelector=${encodeURIComponent("bad key=1")}`);
    assert.equal(badSelector.status, 400);
  });

  it("watches from a resourceVersion: replays later events, follows selector transitions, and sends bookmarks", async () => {
    const start = (await api.listNamespacedCustomObject({ group, version, plural, namespace: "w" })) as { metadata: { resourceVersion: string } };
    const a = (await api.createNamespacedCustomObject({ group, version, plural, namespace: "w", body: plugin("wa", {}, { watch: "yes" }) })) as Obj;
    const watch = collectWatch(emulator, `/apis/${group}/${version}/namespaces/w/${plural}`, { resourceVersion: start.metadata.resourceVersion, allowWatchBookmarks: "true", labelSelector: "watch=yes" }, 4);
    await waitForWatches(emulator, 1);
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "w", body: plugin("wb", {}, { watch: "no" }) });
    await api.patchNamespacedCustomObject({ group, version, plural, namespace: "w", name: "wa", body: { metadata: { labels: { watch: "no" } } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    await api.patchNamespacedCustomObject({ group, version, plural, namespace: "w", name: "wb", body: { metadata: { labels: { watch: "yes" } } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    emulator.bookmark();
    const events = await watch.done;
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata.name ?? "", e.object.metadata.resourceVersion]), [
      ["ADDED", "wa", a.metadata.resourceVersion],
      ["DELETED", "wa", String(Number(a.metadata.resourceVersion) + 2)],
      ["ADDED", "wb", String(Number(a.metadata.resourceVersion) + 3)],
      ["BOOKMARK", "", String(emulator.store.currentRevision)],
    ]);
  });

  it("ends a watch from a compacted resourceVersion with an ERROR event carrying 410 Expired", async () => {
    const start = emulator.store.currentRevision;
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "w2", body: plugin("gone") });
    emulator.compact();
    const watch = collectWatch(emulator, `/apis/${group}/${version}/namespaces/w2/${plural}`, { resourceVersion: String(start) }, 1);
    const events = await watch.done;
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, "ERROR");
    assert.equal(events[0]?.object.code, 410);
    assert.equal(events[0]?.object.reason, "Expired");
  });

  it("serves core pods and cluster-scoped namespaces, and deletes with preconditions", async () => {
    const core = kubeConfigFor(emulator.url).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "infer" } } });
    await core.createNamespacedPod({ namespace: "infer", body: { apiVersion: "v1", kind: "Pod", metadata: { name: "vllm-0", labels: { app: "vllm" } }, spec: { containers: [{ name: "c", image: "i" }] } } });
    const pods = await core.listPodForAllNamespaces({ labelSelector: "app=vllm" });
    assert.deepEqual(pods.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`), ["infer/vllm-0"]);
    const ns = await core.readNamespace({ name: "infer" });
    assert.equal(ns.metadata?.name, "infer");
    const conflict = await raw(emulator, "DELETE", "/api/v1/namespaces/infer/pods/vllm-0", { preconditions: { resourceVersion: "1" } });
    assert.equal(conflict.status, 409);
    await core.deleteNamespacedPod({ namespace: "infer", name: "vllm-0" });
    const after = await core.listNamespacedPod({ namespace: "infer" });
    assert.equal(after.items.length, 0);
  });

  it("serves any registered group/version/resource, cluster-scoped or namespaced", async () => {
    emulator.register({ group: "apps", version: "v1", plural: "deployments", kind: "Deployment", namespaced: true, allowUnconditionalUpdate: true });
    emulator.register({ group: "example.dev", version: "v2", plural: "widgets", kind: "Widget", namespaced: false });
    const dep = await raw(emulator, "POST", "/apis/apps/v1/namespaces/infer/deployments", { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "vllm" }, spec: { replicas: 1 } });
    assert.equal(dep.status, 201);
    const widget = await raw(emulator, "POST", "/apis/example.dev/v2/widgets", { apiVersion: "example.dev/v2", kind: "Widget", metadata: { name: "w1" } });
    assert.equal(widget.status, 201);
    assert.equal((widget.json?.metadata as { namespace?: string }).namespace, undefined);
    const all = await raw(emulator, "GET", "/apis/apps/v1/deployments");
    assert.deepEqual((all.json?.items as { metadata: { name: string } }[]).map((i) => i.metadata.name), ["vllm"]);
    assert.equal(all.json?.kind, "DeploymentList");
    const wrongKind = await raw(emulator, "POST", "/apis/apps/v1/namespaces/infer/deployments", { apiVersion: "apps/v1", kind: "Pod", metadata: { name: "x" } });
    assert.equal(wrongKind.status, 400);
    assert.equal((await raw(emulator, "GET", "/apis/apps/v1/namespaces/infer/statefulsets")).status, 404);
  });

  it("refuses to load a CRD whose CEL rules do not compile or use a function it cannot evaluate, so no rule is silently skipped", () => {
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "gadgets.example.dev" },
      spec: {
        group: "example.dev",
        scope: "Namespaced",
        names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
        versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { url: { type: "string" } }, "x-kubernetes-validations": [{ rule: "isQuantity(self.url)" }] } } } } }],
      },
    };
    assert.throws(() => resourceTypesFromCrd(crd), { message: 'kube-emulator: CustomResourceDefinition gadgets.example.dev is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "isQuantity(self.url)": kube-emulator: CEL function isQuantity() is not implemented in the emulator' });
    const withRule = (rule: string) => structuredClone({ ...crd, spec: { ...crd.spec, versions: [{ ...crd.spec.versions[0]!, schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { url: { type: "string" } }, "x-kubernetes-validations": [{ rule }] } } } } }] } });
    assert.throws(() => resourceTypesFromCrd(withRule("self.url &&")), /compilation failed/);
    assert.throws(() => resourceTypesFromCrd(withRule("self.uri.size() > 0")), /undefined field 'uri'/);
    assert.equal(resourceTypesFromCrd(withRule("self.url.size() > 0")).length, 1);
  });

  it("fails requests on demand: 503 while unavailable, injected codes for the next N requests", async () => {
    emulator.setAvailable(false);
    const down = await apiError(api.listNamespacedCustomObject({ group, version, plural, namespace: "ns1" }));
    assert.equal(down.code, 503);
    emulator.setAvailable(true);
    emulator.failNext(2, 500, "GET");
    assert.equal((await apiError(api.listNamespacedCustomObject({ group, version, plural, namespace: "ns1" }))).code, 500);
    assert.equal((await apiError(api.listNamespacedCustomObject({ group, version, plural, namespace: "ns1" }))).code, 500);
    const ok = (await api.listNamespacedCustomObject({ group, version, plural, namespace: "ns1" })) as { items: Obj[] };
    assert.ok(ok.items.length >= 1);
  });
  it("hangs one instance on request: it accepts and never answers while another instance over the same objects answers; a held request whose client gave up is never executed, one still waited for is served when the hang ends", async () => {
    const other = await emulator.listenAnother();
    const ns = (name: string) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    const post = (base: string, name: string, signal?: AbortSignal) =>
      fetch(`${base}/api/v1/namespaces`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ns(name)), ...(signal ? { signal } : {}) });
    emulator.setHung(true, other);
    const answered: string[] = [];
    const abandoned = new AbortController();
    const gaveUp = post(other, "hang-abandoned", abandoned.signal).then(
      () => answered.push("abandoned"),
      () => undefined,
    );
    const waited = post(other, "hang-waited").then((r) => {
      answered.push("waited");
      return r.status;
    });
    // The healthy instance answers meanwhile, from the same objects.
    assert.equal((await post(emulator.url, "hang-healthy")).status, 201);
    const seen = await raw(emulator, "GET", "/api/v1/namespaces/hang-healthy");
    assert.equal(seen.status, 200);
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(answered, [], "the hung instance answers nothing");
    abandoned.abort();
    await gaveUp;
    await new Promise((resolve) => setTimeout(resolve, 20));
    emulator.setHung(false, other);
    assert.equal(await waited, 201);
    assert.equal((await raw(emulator, "GET", "/api/v1/namespaces/hang-waited")).status, 200, "served late");
    assert.equal((await raw(emulator, "GET", "/api/v1/namespaces/hang-abandoned")).status, 404, "a request its client gave up on never runs");
    assert.deepEqual(answered, ["waited"]);
  });
});
