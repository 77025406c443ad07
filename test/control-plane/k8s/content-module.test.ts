// The content module in Kubernetes mode (emulated kube-apiserver): the WasmPlugin of a policy that
// turns content capture on (for every route or for one) loads the content module named by
// TOKENTRACE_CONTENT_WASM_URL/_SHA256, pinned; turning capture off goes back to the default
// module; with no content module configured such a policy is refused: a REST write with a 400
// naming the field, an object applied with kubectl with Accepted=False (no WasmPlugin written).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../../../control-plane/src/config.js";
import { contentCaptureFields, desiredWasmPlugin, type WasmPluginSettings } from "../../../control-plane/src/k8s/wasmplugin.js";
import type { PluginConfig } from "../../../control-plane/src/policy/model.js";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, kube, samplingPolicyObject, spPath, startReplicas, whenCached, type Replica } from "./kubernetes-replicas.js";

const DEFAULT_URL = "oci://ghcr.io/tokentrace/filter:0.1.0";
const DEFAULT_SHA = "d".repeat(64);
const CONTENT_URL = "oci://ghcr.io/tokentrace/filter-content:0.1.0";
const CONTENT_SHA = "c".repeat(64);
const wpPath = (ns: string, name: string): string => `/apis/extensions.istio.io/v1alpha1/namespaces/${ns}/wasmplugins/${name}`;

const capturing = (name: string, content: Record<string, unknown>) =>
  samplePolicy(name, { target: { namespace: "llm", selector: { matchLabels: { app: name } } }, pluginConfig: { sampling: { defaultRate: 0.05 }, spans: { cluster: "otel", content } } });

/** The WasmPlugin's module once the leader reconciled. */
async function moduleOf(emulator: KubeEmulator, replica: Replica, policy: string): Promise<{ url: unknown; sha256: unknown; content: unknown } | undefined> {
  await replica.kube.sync.reconciler.whenIdle();
  const got = await kube(emulator, "GET", wpPath("llm", `tokentrace-${policy}`));
  if (got.status === 404) return undefined;
  assert.equal(got.status, 200, JSON.stringify(got.json));
  return { url: got.json.spec.url, sha256: got.json.spec.sha256, content: got.json.spec.pluginConfig?.spans?.content };
}

describe("the content module in Kubernetes mode, configured (emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let leader: Replica;
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    [leader] = (await startReplicas(emulator, ["cp-a"], {
      env: { TOKENTRACE_WASM_URL: DEFAULT_URL, TOKENTRACE_WASM_SHA256: DEFAULT_SHA, TOKENTRACE_CONTENT_WASM_URL: CONTENT_URL, TOKENTRACE_CONTENT_WASM_SHA256: CONTENT_SHA },
    })) as [Replica];
  });
  after(async () => {
    await leader.running.stop();
    await emulator.close();
  });

  it("a policy that captures on every route gets the content module, pinned; switching capture off goes back to the default module", async () => {
    const created = await call(leader.running.url, "POST", "/v1/policies", { token: adminToken, body: capturing("capture", { enabled: true }) });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(await moduleOf(emulator, leader, "capture"), { url: CONTENT_URL, sha256: CONTENT_SHA, content: { enabled: true } });
    const off = await call(leader.running.url, "PATCH", "/v1/policies/capture", { token: adminToken, body: { pluginConfig: { spans: { content: { enabled: false } } } }, headers: { "content-type": "application/merge-patch+json" } });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual(await moduleOf(emulator, leader, "capture"), { url: DEFAULT_URL, sha256: DEFAULT_SHA, content: { enabled: false } });
  });

  it("capture on for one route only is capture: the content module; a policy without capture keeps the default module", async () => {
    const route = await call(leader.running.url, "POST", "/v1/policies", { token: adminToken, body: capturing("one-route", { enabled: false, routes: [{ routeName: "other", enabled: false }, { routeName: "chat", enabled: true }] }) });
    assert.equal(route.status, 201, route.text);
    assert.deepEqual((await moduleOf(emulator, leader, "one-route"))?.url, CONTENT_URL);
    const plain = await call(leader.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("plain") });
    assert.equal(plain.status, 201, plain.text);
    assert.deepEqual(await moduleOf(emulator, leader, "plain"), { url: DEFAULT_URL, sha256: DEFAULT_SHA, content: undefined });
  });
});

describe("the content module in Kubernetes mode, not configured (emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let leader: Replica;
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    [leader] = (await startReplicas(emulator, ["cp-a"], { env: { TOKENTRACE_WASM_URL: DEFAULT_URL, TOKENTRACE_WASM_SHA256: DEFAULT_SHA } })) as [Replica];
  });
  after(async () => {
    await leader.running.stop();
    await emulator.close();
  });

  it("a REST write that turns capture on is refused with a 400 naming each field and why; nothing is written to the cluster", async () => {
    const cases: Array<[string, Record<string, unknown>, string[]]> = [
      ["all", { enabled: true }, ["pluginConfig.spans.content.enabled"]],
      ["route", { routes: [{ routeName: "other", enabled: false }, { routeName: "chat", enabled: true }] }, ["pluginConfig.spans.content.routes[1].enabled"]],
    ];
    for (const [name, content, fields] of cases) {
      const refused = await call(leader.running.url, "POST", "/v1/policies", { token: adminToken, body: capturing(name, content) });
      assert.equal(refused.status, 400, refused.text);
      const details = (refused.body as { details: { field: string; reason: string }[] }).details;
      assert.deepEqual(details.map((d) => d.field), fields);
      for (const d of details) assert.match(d.reason, /no content module is configured \(kubernetes\.contentWasmPlugin\.url, TOKENTRACE_CONTENT_WASM_URL\)/);
      assert.equal((await kube(emulator, "GET", spPath("llm", name))).status, 404);
    }
    // Control: the same policy with capture off is accepted.
    const ok = await call(leader.running.url, "POST", "/v1/policies", { token: adminToken, body: capturing("all", { enabled: false }) });
    assert.equal(ok.status, 201, ok.text);
  });

  it("an object applied with kubectl that turns capture on is reported Accepted=False (Invalid, the field named) and gets no WasmPlugin", async () => {
    const { name: _n, target, ...rest } = capturing("kubectl", { enabled: true });
    const { namespace: _ns, ...targetRest } = target;
    const created = await kube(emulator, "POST", `${spPath("llm")}?fieldValidation=Strict`, samplingPolicyObject("kubectl", { target: targetRest, ...rest }));
    assert.equal(created.status, 201, JSON.stringify(created.json));
    await whenCached(leader, "kubectl", () => leader.kube.store.quarantined().some((q) => q.name === "kubectl"));
    await leader.kube.writeStatus();
    const object = await kube(emulator, "GET", spPath("llm", "kubectl"));
    const accepted = (object.json.status.conditions as { type: string; status: string; reason: string; message: string }[]).find((c) => c.type === "Accepted");
    assert.deepEqual([accepted?.status, accepted?.reason], ["False", "Invalid"]);
    assert.match(accepted?.message ?? "", /^pluginConfig\.spans\.content\.enabled: turns content capture on, but no content module is configured/);
    assert.equal(await moduleOf(emulator, leader, "kubectl"), undefined);
  });

  it("the setting: a content module url needs a pin (sha256, or a digest in the url), and a pin must agree with the url's digest", () => {
    const refused = loadConfig([], { TOKENTRACE_CONTENT_WASM_URL: CONTENT_URL });
    assert.equal(refused.ok, false);
    assert.match(refused.ok ? "" : refused.errors.join("; "), /^kubernetes\.contentWasmPlugin\.sha256: required when kubernetes\.contentWasmPlugin\.url is set/);
    const mismatch = loadConfig([], { TOKENTRACE_CONTENT_WASM_URL: `ghcr.io/x@sha256:${"a".repeat(64)}`.replace(/^/, "oci://"), TOKENTRACE_CONTENT_WASM_SHA256: CONTENT_SHA });
    assert.match(mismatch.ok ? "" : mismatch.errors.join("; "), /^kubernetes\.contentWasmPlugin\.sha256: must equal the digest in kubernetes\.contentWasmPlugin\.url/);
    assert.equal(loadConfig([], { TOKENTRACE_CONTENT_WASM_URL: `oci://ghcr.io/x@sha256:${"a".repeat(64)}` }).ok, true);
    assert.equal(loadConfig([], { TOKENTRACE_CONTENT_WASM_URL: CONTENT_URL, TOKENTRACE_CONTENT_WASM_SHA256: CONTENT_SHA }).ok, true);
    assert.equal(loadConfig([], { TOKENTRACE_CONTENT_WASM_URL: "ftp://x/y", TOKENTRACE_CONTENT_WASM_SHA256: CONTENT_SHA }).ok, false);
  });
});

describe("which module a policy's WasmPlugin loads (control-plane/src/k8s/wasmplugin.ts)", () => {
  const settings: WasmPluginSettings = { url: DEFAULT_URL, sha256: DEFAULT_SHA, pluginName: "tokentrace", phase: "STATS", failStrategy: "FAIL_OPEN", imagePullSecret: "" };
  const content = { url: CONTENT_URL, sha256: CONTENT_SHA };
  const cases: Array<[string, PluginConfig, string[]]> = [
    ["no spans section", {}, []],
    ["capture off, every route rule off", { spans: { content: { enabled: false, routes: [{ routeName: "a", enabled: false }] } } }, []],
    ["capture on", { spans: { content: { enabled: true } } }, ["pluginConfig.spans.content.enabled"]],
    ["capture off but on for two routes", { spans: { content: { enabled: false, routes: [{ routeName: "a", enabled: true }, { routeName: "b", enabled: false }, { routeName: "c", enabled: true }] } } }, ["pluginConfig.spans.content.routes[0].enabled", "pluginConfig.spans.content.routes[2].enabled"]],
  ];
  for (const [what, config, fields] of cases) {
    it(`${what}: ${fields.length === 0 ? "the default module" : "the content module"}`, () => {
      assert.deepEqual(contentCaptureFields(config), fields);
      const policy = { name: "p", target: { namespace: "llm", selector: { matchLabels: { app: "p" } } }, pluginConfig: config };
      const spec = desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00Z", updatedBy: "admin" }, config, "1", settings, content).spec;
      assert.deepEqual([spec.url, spec.sha256], fields.length === 0 ? [DEFAULT_URL, DEFAULT_SHA] : [CONTENT_URL, CONTENT_SHA]);
      // Were a capturing policy to get past admission with no content module: the default module, which captures nothing.
      const unconfigured = desiredWasmPlugin({ policy, version: "1", updatedAt: "2026-12-02T12:00:00Z", updatedBy: "admin" }, config, "1", settings).spec;
      assert.deepEqual([unconfigured.url, unconfigured.sha256], [DEFAULT_URL, DEFAULT_SHA]);
    });
  }
});
