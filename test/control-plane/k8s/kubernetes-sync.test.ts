// Kubernetes mode against the emulated kube-apiserver (test/support/kube-emulator): one
// WasmPlugin per policy, drift repair, orphan removal, retries with capped backoff while the API
// is down or conflicting, 410 Gone re-lists, readiness and reconcile lag. Time is injected: the
// backoff waits go through a manual delay the test releases, never through sleeps.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMetrics, type ControlPlaneMetrics } from "../../../control-plane/src/api/metrics.js";
import { defaultConfig, type Config } from "../../../control-plane/src/config.js";
import type { Delay } from "../../../control-plane/src/k8s/backoff.js";
import { ClientNodeWasmPluginApi } from "../../../control-plane/src/k8s/wasmplugin-client.js";
import { startKubernetesSync, type KubernetesSync } from "../../../control-plane/src/k8s/sync.js";
import { desiredWasmPlugin } from "../../../control-plane/src/k8s/wasmplugin.js";
import { configVersion } from "../../../control-plane/src/policy/effective.js";
import type { RateOverrides } from "../../../control-plane/src/policy/effective.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { kubeConfigFor, startKubeEmulator, wasmPluginsResource, type KubeEmulator, type KubeObject } from "../../support/kube-emulator/index.js";
import { samplePolicy } from "../helpers.js";

const sha = "b".repeat(64);
const wpPath = (ns: string, name = "") => `/apis/extensions.istio.io/v1alpha1/namespaces/${ns}/wasmplugins${name === "" ? "" : `/${name}`}`;

/** Waits are recorded and resolve only when the test releases them. */
class ManualDelay {
  requested: number[] = [];
  private waiting: (() => void)[] = [];
  readonly delay: Delay = (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) {
        resolve();
        return;
      }
      this.requested.push(ms);
      this.waiting.push(resolve);
      signal?.addEventListener("abort", () => resolve(), { once: true });
    });
  release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

const immediate: Delay = () => new Promise((resolve) => setImmediate(resolve));

// Polls a condition that depends on HTTP round trips to the emulator; fails after 5 s.
async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Harness {
  emulator: KubeEmulator;
  store: FilePolicyStore;
  metrics: ControlPlaneMetrics;
  overrides: Map<string, RateOverrides>;
  clock: { ms: number };
  sync: KubernetesSync;
  plugins(): KubeObject[];
}

const running: Harness[] = [];

async function setUp(options: { delay?: Delay; before?: (emulator: KubeEmulator) => Promise<void> | void; store?: FilePolicyStore } = {}): Promise<Harness> {
  const emulator = await startKubeEmulator();
  await options.before?.(emulator);
  const store = options.store ?? new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-sync-")), "policies.json"), now: () => new Date("2026-12-02T12:00:00.000Z") });
  const metrics = createMetrics();
  const overrides = new Map<string, RateOverrides>();
  const clock = { ms: 1_000_000 };
  const config: Config["kubernetes"] = {
    ...defaultConfig.kubernetes,
    wasmPlugin: { ...defaultConfig.kubernetes.wasmPlugin, url: "oci://registry.example/tokentrace/filter:0.1.0", sha256: sha },
    backoff: { initialMs: 100, maxMs: 400 },
  };
  const sync = startKubernetesSync({
    config,
    store,
    overrides: (name) => overrides.get(name),
    metrics,
    api: new ClientNodeWasmPluginApi(kubeConfigFor(emulator.url)),
    delay: options.delay ?? immediate,
    now: () => clock.ms,
    random: () => 0.5,
  });
  const h: Harness = { emulator, store, metrics, overrides, clock, sync, plugins: () => emulator.objects(wasmPluginsResource) };
  running.push(h);
  return h;
}

async function counter(metrics: ControlPlaneMetrics, name: "pushes" | "pushFailures"): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics[name].get()).values) out[Object.values(v.labels).join(",")] = v.value;
  return out;
}

async function request(emulator: KubeEmulator, method: string, path: string, body: unknown, contentType = "application/merge-patch+json") {
  const res = await fetch(`${emulator.url}${path}`, { method, headers: { "content-type": contentType }, body: body === undefined ? undefined : JSON.stringify(body) });
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.text()}`);
}

afterEach(async () => {
  for (const h of running.splice(0)) {
    await h.sync.stop();
    await h.emulator.close();
  }
});

describe("Kubernetes mode (emulated kube-apiserver)", () => {
  it("emulated: keeps one WasmPlugin per policy with the configured url, sha256, phase, failStrategy and the pluginConfig", async () => {
    const h = await setUp();
    await eventually(() => h.sync.readiness().ok, "first list");
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    await h.store.create(samplePolicy("gw", { target: { namespace: "edge", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "public" }] } }), { by: "admin" });
    await eventually(() => h.plugins().length === 2, "two WasmPlugins");
    const chat = h.plugins().find((p) => p.metadata?.name === "tokentrace-chat") as KubeObject & { spec: unknown };
    assert.equal(chat.metadata?.namespace, "llm");
    assert.deepEqual(chat.metadata?.labels, { "app.kubernetes.io/managed-by": "tokentrace-control-plane", "tokentrace.dev/policy": "chat" });
    assert.equal(chat.metadata?.annotations?.["tokentrace.dev/policy-version"], "1");
    assert.match(chat.metadata?.annotations?.["tokentrace.dev/config-version"] ?? "", /^[0-9a-f]{16}$/);
    assert.deepEqual(chat.spec, {
      selector: { matchLabels: { app: "chat" } },
      url: "oci://registry.example/tokentrace/filter:0.1.0",
      sha256: sha,
      pluginName: "tokentrace",
      phase: "STATS",
      failStrategy: "FAIL_OPEN",
      match: [{ mode: "SERVER" }],
      pluginConfig: samplePolicy().pluginConfig,
    });
    const gw = h.plugins().find((p) => p.metadata?.name === "tokentrace-gw") as KubeObject & { spec: { targetRefs: unknown; selector?: unknown } };
    assert.deepEqual(gw.spec.targetRefs, [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "public" }]);
    assert.equal(gw.spec.selector, undefined);

    await h.store.put("chat", samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: 0.75 } } }), { by: "admin" });
    await eventually(() => JSON.stringify((h.plugins().find((p) => p.metadata?.name === "tokentrace-chat") as { spec: { pluginConfig: unknown } }).spec.pluginConfig) === '{"sampling":{"defaultRate":0.75}}', "updated pluginConfig");
    await h.store.delete("gw", { by: "admin" });
    await eventually(() => h.plugins().length === 1, "gw removed");
    await h.sync.reconciler.whenIdle();
    assert.deepEqual(await counter(h.metrics, "pushes"), { kubernetes: 4 });
    assert.equal(h.sync.reconciler.lagSeconds(), 0);
  });

  it("emulated: repairs drift: an edited spec, a deleted WasmPlugin and a removed ownership label are put back; others' WasmPlugins are left alone", async () => {
    const h = await setUp();
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    await eventually(() => h.plugins().length === 1, "created");
    await request(h.emulator, "POST", wpPath("llm"), { apiVersion: "extensions.istio.io/v1alpha1", kind: "WasmPlugin", metadata: { name: "someone-else" }, spec: { url: "oci://x/y:1" } }, "application/json");

    await request(h.emulator, "PATCH", wpPath("llm", "tokentrace-chat"), { spec: { pluginConfig: { sampling: { defaultRate: 1 } }, failStrategy: "FAIL_CLOSE" } });
    const specOf = () => JSON.stringify((h.plugins().find((p) => p.metadata?.name === "tokentrace-chat") as { spec?: unknown } | undefined)?.spec ?? null);
    const wanted = JSON.stringify({ selector: { matchLabels: { app: "chat" } }, url: "oci://registry.example/tokentrace/filter:0.1.0", sha256: sha, pluginName: "tokentrace", phase: "STATS", failStrategy: "FAIL_OPEN", match: [{ mode: "SERVER" }], pluginConfig: samplePolicy().pluginConfig });
    await eventually(() => specOf() === wanted, "spec restored");

    await request(h.emulator, "DELETE", wpPath("llm", "tokentrace-chat"), undefined, "application/json");
    await eventually(() => specOf() === wanted, "recreated after delete");

    await request(h.emulator, "PATCH", wpPath("llm", "tokentrace-chat"), { metadata: { labels: { "app.kubernetes.io/managed-by": null } } });
    await eventually(() => h.plugins().find((p) => p.metadata?.name === "tokentrace-chat")?.metadata?.labels?.["app.kubernetes.io/managed-by"] === "tokentrace-control-plane", "label restored");

    const other = h.plugins().find((p) => p.metadata?.name === "someone-else") as KubeObject & { spec: unknown };
    assert.deepEqual(other.spec, { url: "oci://x/y:1" });
    assert.equal(other.metadata?.resourceVersion !== undefined, true);
  });

  it("emulated: removes WasmPlugins it owns whose policy is gone, at start-up", async () => {
    const h = await setUp({
      before: async (emulator) => {
        const owned = { apiVersion: "extensions.istio.io/v1alpha1", kind: "WasmPlugin", metadata: { name: "tokentrace-old", labels: { "app.kubernetes.io/managed-by": "tokentrace-control-plane" } }, spec: { url: "oci://x/y:1" } };
        await request(emulator, "POST", wpPath("llm"), owned, "application/json");
        await request(emulator, "POST", wpPath("llm"), { ...owned, metadata: { name: "not-ours" } }, "application/json");
      },
    });
    await eventually(() => h.plugins().length === 1, "orphan removed");
    assert.equal(h.plugins()[0]?.metadata?.name, "not-ours");
  });

  it("emulated: adopts policies that only the WasmPlugins still carry (control plane lost its disk) instead of deleting them", async () => {
    const policy = samplePolicy("chat", { adaptive: { targetTracesPerSecond: 3 } });
    const wasm = desiredWasmPlugin({ policy, version: "7", updatedAt: "2026-12-01T00:00:00.000Z", updatedBy: "admin" }, policy.pluginConfig, configVersion("chat", policy.pluginConfig), { ...defaultConfig.kubernetes.wasmPlugin, url: "oci://registry.example/tokentrace/filter:0.1.0", sha256: sha });
    const h = await setUp({ before: (emulator) => request(emulator, "POST", wpPath("llm"), wasm, "application/json") });
    await eventually(() => h.store.get("chat") !== undefined, "adopted");
    assert.deepEqual(h.store.get("chat"), { policy, version: "1", updatedAt: "2026-12-02T12:00:00.000Z", updatedBy: "kubernetes-import" });
    await eventually(() => h.plugins()[0]?.metadata?.annotations?.["tokentrace.dev/policy-version"] === "1", "annotation follows the store");
    await h.sync.reconciler.whenIdle();
    assert.equal(h.plugins().length, 1);
    assert.deepEqual((h.plugins()[0] as { spec: unknown }).spec, wasm.spec);
  });

  it("emulated: deletes a WasmPlugin whose policy the store knows was deleted (while the API was unreachable) rather than re-importing it", async () => {
    const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-sync-")), "policies.json"), now: () => new Date("2026-12-02T12:00:00.000Z") });
    const policy = samplePolicy("gone");
    await store.create(policy, { by: "admin" });
    await store.delete("gone", { by: "admin" });
    const wasm = desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00.000Z", updatedBy: "admin" }, policy.pluginConfig, configVersion("gone", policy.pluginConfig), defaultConfig.kubernetes.wasmPlugin);
    const h = await setUp({ store, before: (emulator) => request(emulator, "POST", wpPath("llm"), wasm, "application/json") });
    await eventually(() => h.plugins().length === 0, "deleted");
    assert.equal(h.store.get("gone"), undefined);
  });

  it("emulated: while the API is down, reports not ready, backs off 100/200/400/400 ms, keeps the policy, and applies it when the API returns", async () => {
    const manual = new ManualDelay();
    const h = await setUp({ delay: manual.delay, before: (emulator) => emulator.setAvailable(false) });
    await eventually(() => manual.requested.length === 1, "first failed list");
    assert.deepEqual(h.sync.readiness(), { ok: false, detail: "list wasmplugins failed: 503 ServiceUnavailable" });
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    for (let attempt = 2; attempt <= 4; attempt++) {
      manual.release();
      await eventually(() => manual.requested.length === attempt, `list attempt ${attempt}`);
    }
    assert.deepEqual(manual.requested, [100, 200, 400, 400]);
    h.clock.ms += 7_500;
    assert.equal(h.sync.reconciler.lagSeconds(), 7.5);
    assert.deepEqual(h.sync.reconciler.pending, ["llm/tokentrace-chat"]);
    assert.equal(h.plugins().length, 0);

    h.emulator.setAvailable(true);
    manual.release();
    await eventually(() => h.plugins().length === 1, "applied after recovery");
    await eventually(() => h.sync.readiness().ok, "ready again");
    await h.sync.reconciler.whenIdle();
    assert.equal(h.sync.reconciler.lagSeconds(), 0);
    assert.deepEqual(h.sync.reconciler.pending, []);
  });

  it("emulated: retries a write that fails while the informer is healthy, and says so in readiness until it succeeds", async () => {
    const manual = new ManualDelay();
    const h = await setUp({ delay: manual.delay });
    await eventually(() => h.sync.readiness().ok, "synced");
    h.emulator.failNext(1, 500, "POST");
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    await eventually(() => manual.requested.length === 1, "retry scheduled");
    assert.deepEqual(manual.requested, [100]);
    assert.deepEqual(h.sync.readiness(), { ok: false, detail: "create llm/tokentrace-chat failed: 500 InternalError" });
    assert.deepEqual(await counter(h.metrics, "pushFailures"), { "kubernetes,server_error": 1 });
    manual.release();
    await eventually(() => h.plugins().length === 1, "created on retry");
    await h.sync.reconciler.whenIdle();
    assert.deepEqual(h.sync.readiness(), { ok: true, detail: "synced; 0 pending" });
  });

  it("emulated: resolves 409 conflicts by re-reading and retrying", async () => {
    const h = await setUp();
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    await eventually(() => h.plugins().length === 1, "created");
    await h.sync.reconciler.whenIdle();
    h.emulator.failNext(2, 409, "PUT");
    await h.store.put("chat", samplePolicy("chat", { pluginConfig: { sampling: { defaultRate: 0.5 } } }), { by: "admin" });
    await eventually(() => JSON.stringify((h.plugins()[0] as { spec: { pluginConfig: unknown } }).spec.pluginConfig) === '{"sampling":{"defaultRate":0.5}}', "applied after conflicts");
    assert.deepEqual(await counter(h.metrics, "pushFailures"), { "kubernetes,conflict": 2 });
  });

  it("emulated: re-lists after 410 Gone and keeps reconciling", async () => {
    const h = await setUp();
    await eventually(() => h.sync.readiness().ok && h.emulator.openWatches === 1, "watching");
    assert.equal(h.sync.informer.lists, 1);
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    await eventually(() => h.plugins().length === 1, "created");
    // Changes the informer does not watch move the revision past its resume point; compaction then
    // makes that point too old, so the resumed watch must get 410 Gone and the informer re-lists.
    await request(h.emulator, "POST", "/api/v1/namespaces/llm/pods", { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } }, "application/json");
    h.emulator.compact();
    h.emulator.closeWatches();
    await eventually(() => h.sync.informer.lists === 2 && h.emulator.openWatches === 1, "re-listed and watching again");
    await h.store.create(samplePolicy("embed", { target: { namespace: "llm", selector: { matchLabels: { app: "embed" } } } }), { by: "admin" });
    await eventually(() => h.plugins().length === 2, "second policy applied after the re-list");
  });

  it("emulated: resumes from a bookmark after compaction without re-listing", async () => {
    const h = await setUp();
    await eventually(() => h.sync.readiness().ok && h.emulator.openWatches === 1, "watching");
    // Other resources move the revision on; the bookmark carries the watch's resume point along.
    await request(h.emulator, "POST", "/api/v1/namespaces/llm/pods", { apiVersion: "v1", kind: "Pod", metadata: { name: "p" } }, "application/json");
    h.emulator.bookmark();
    await eventually(() => h.sync.informer.resumeResourceVersion === String(h.emulator.store.currentRevision), "bookmark received");
    h.emulator.compact();
    h.emulator.closeWatches();
    await eventually(() => h.emulator.openWatches === 1, "watching again");
    assert.equal(h.sync.informer.lists, 1);
    const watches = h.emulator.requests.filter((r) => r.query.watch === "true");
    assert.deepEqual(watches.map((r) => [r.query.resourceVersion, r.query.allowWatchBookmarks]), [
      ["0", "true"],
      [String(h.emulator.store.currentRevision), "true"],
    ]);
  });

  it("emulated: re-watches at once after a quiet watch that lasted (server timeout), but backs off when watches end at once", async () => {
    const manual = new ManualDelay();
    const h = await setUp({ delay: manual.delay });
    await eventually(() => h.sync.readiness().ok && h.emulator.openWatches === 1, "watching");
    h.clock.ms += 1000;
    h.emulator.closeWatches();
    await eventually(() => h.emulator.openWatches === 1, "watching again");
    assert.deepEqual(manual.requested, []);
    h.emulator.closeWatches();
    await eventually(() => manual.requested.length === 1, "backing off");
    assert.deepEqual(manual.requested, [100]);
    assert.equal(h.emulator.openWatches, 0);
    manual.release();
    await eventually(() => h.emulator.openWatches === 1, "watching after the back-off");
  });

  it("emulated: pushes adaptive-sampling overrides into spec.pluginConfig and the config-version annotation", async () => {
    const h = await setUp();
    await h.store.create(samplePolicy("chat"), { by: "admin" });
    await eventually(() => h.plugins().length === 1, "created");
    const before = h.plugins()[0]?.metadata?.annotations?.["tokentrace.dev/config-version"];
    h.overrides.set("chat", { defaultRate: 0.02, routeRates: new Map([[0, 0.004]]) });
    h.sync.resync();
    await eventually(() => (h.plugins()[0] as { spec: { pluginConfig: { sampling: { defaultRate: number } } } }).spec.pluginConfig.sampling.defaultRate === 0.02, "override applied");
    const plugin = h.plugins()[0] as KubeObject & { spec: { pluginConfig: unknown } };
    assert.deepEqual(plugin.spec.pluginConfig, { sampling: { defaultRate: 0.02, routes: [{ routeName: "completions", rate: 0.004 }], force: [{ header: "x-debug", value: "1" }] } });
    assert.notEqual(plugin.metadata?.annotations?.["tokentrace.dev/config-version"], before);
    assert.equal(plugin.metadata?.annotations?.["tokentrace.dev/policy-version"], "1");
  });
});
