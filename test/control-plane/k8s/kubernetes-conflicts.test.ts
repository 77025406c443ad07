// What Kubernetes mode does with SamplingPolicies the REST API cannot serve as they are: the same
// name in two namespaces (REST names are unique, so the oldest object serves the name and the
// other reports NameConflict, as Gateway API resolves conflicting routes: oldest creationTimestamp,
// then namespace/name), and a generation the filter's schema refuses that the CRD let through
// (an older CRD without the rule): Accepted=False with the reason, no WasmPlugin from it, and the
// last accepted version stays in force. Emulated kube-apiserver; no timer runs by itself.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startKubeEmulator, wasmPluginsResource, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, kube, samplingPolicyObject, spPath, startReplicas, whenCached, type Replica } from "./kubernetes-replicas.js";

let emulator: KubeEmulator;
let replicas: Replica[] = [];

afterEach(async () => {
  for (const r of replicas.splice(0)) await r.running.stop();
  await emulator.close();
});

const pluginConfigOf = (emu: KubeEmulator, namespace: string, name: string) =>
  emu.objects(wasmPluginsResource).find((o) => o.metadata?.namespace === namespace && o.metadata?.name === name) as { spec: { pluginConfig: unknown } } | undefined;

async function settled(r: Replica): Promise<void> {
  await r.kube.history.idle();
  await r.kube.sync.reconciler.whenIdle();
  await r.kube.writeStatus();
}

function conditions(object: Record<string, any>): string[][] { // eslint-disable-line @typescript-eslint/no-explicit-any
  return ((object.status?.conditions ?? []) as { type: string; status: string; reason: string }[]).map((c) => [c.type, c.status, c.reason]);
}

describe("conflicting and refused SamplingPolicies (emulated kube-apiserver)", () => {
  it("emulated: one name in two namespaces: REST refuses the second, kubectl's reports NameConflict, pulls and history stay per namespace, and the other takes over when the first goes", async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    replicas = await startReplicas(emulator, ["cp-a", "cp-b"]);
    const [a, b] = replicas as [Replica, Replica];
    const inLlm = samplePolicy("shared", { target: { namespace: "llm", selector: { matchLabels: { app: "chat" } } } });
    assert.equal((await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: inLlm })).status, 201);
    const edited = await call(a.running.url, "PUT", "/v1/policies/shared", { token: adminToken, body: samplePolicy("shared", { pluginConfig: { sampling: { defaultRate: 0.6 } } }) });
    assert.equal(edited.status, 200, edited.text);
    // REST: the name is taken, whatever the namespace.
    const rest = await call(b.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("shared", { target: { namespace: "team-b", selector: { matchLabels: { app: "chat" } } } }) });
    assert.equal(rest.status, 409, rest.text);
    // kubectl: the API server takes it (another namespace); the control plane does not serve it.
    const applied = await kube(emulator, "POST", spPath("team-b"), samplingPolicyObject("shared", { target: { selector: { matchLabels: { app: "chat" } } }, pluginConfig: { sampling: { defaultRate: 0.9 } } }));
    assert.equal(applied.status, 201, JSON.stringify(applied.json));
    for (const r of replicas) await whenCached(r, "team-b/shared", () => r.kube.store.objects().has("team-b/shared"));
    await settled(a);
    assert.deepEqual(conditions((await kube(emulator, "GET", spPath("team-b", "shared"))).json), [["Accepted", "False", "NameConflict"], ["Programmed", "False", "NotAccepted"]]);
    assert.deepEqual(conditions((await kube(emulator, "GET", spPath("llm", "shared"))).json), [["Accepted", "True", "Accepted"], ["Programmed", "True", "Programmed"]]);
    for (const r of replicas) {
      const llm = await call(r.running.url, "GET", "/v1/filters/llm.chat/config");
      assert.equal((llm.body as { config: { sampling: { defaultRate: number } } }).config.sampling.defaultRate, 0.6);
      assert.equal((await call(r.running.url, "GET", "/v1/filters/team-b.chat/config")).status, 404, "team-b's pods never get llm's policy");
    }
    assert.equal(pluginConfigOf(emulator, "team-b", "tokentrace-shared"), undefined, "no WasmPlugin from the conflicting object");
    const llmHistory = await call(b.running.url, "GET", "/v1/policies/shared/history");
    assert.deepEqual((llmHistory.body as { items: { action: string }[] }).items.map((i) => i.action), ["create", "replace"]);

    // The llm policy is deleted: team-b's object serves the name, with its own history only.
    assert.equal((await call(b.running.url, "DELETE", "/v1/policies/shared", { token: adminToken })).status, 204);
    for (const r of replicas) await whenCached(r, "team-b serves", () => r.kube.store.get("shared")?.policy.target.namespace === "team-b");
    await settled(a);
    await b.kube.history.idle();
    const teamB = await call(b.running.url, "GET", "/v1/filters/team-b.chat/config");
    assert.equal((teamB.body as { config: { sampling: { defaultRate: number } } }).config.sampling.defaultRate, 0.9);
    assert.equal((await call(b.running.url, "GET", "/v1/filters/llm.chat/config")).status, 404);
    const history = await call(b.running.url, "GET", "/v1/policies/shared/history");
    assert.deepEqual((history.body as { items: { action: string; by: string }[] }).items.map((i) => [i.action, i.by]), [["create", "kubernetes"]], "team-b's history, not llm's");
    assert.deepEqual(pluginConfigOf(emulator, "team-b", "tokentrace-shared")?.spec.pluginConfig, { sampling: { defaultRate: 0.9 } });
    assert.equal(pluginConfigOf(emulator, "llm", "tokentrace-shared"), undefined);
    assert.deepEqual(conditions((await kube(emulator, "GET", spPath("team-b", "shared"))).json), [["Accepted", "True", "Accepted"], ["Programmed", "True", "Programmed"]]);
  });

  it("emulated: a generation the filter refuses but an older CRD admits is Accepted=False with the reason, produces no WasmPlugin, and the last accepted version stays in force", async () => {
    emulator = await startKubeEmulator();
    // An older CRD, without the rule against reserved header names.
    await applyCrd(emulator, (crd) => {
      delete crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.pluginConfig.properties.headers.properties.tokenTraceId["x-kubernetes-validations"];
    });
    replicas = await startReplicas(emulator, ["cp-a", "cp-b"]);
    const [a, b] = replicas as [Replica, Replica];
    const good = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject("strict", { target: { selector: { matchLabels: { app: "chat" } } }, pluginConfig: { sampling: { defaultRate: 0.2 }, headers: { tokenTraceId: "x-token-trace-id" } } }));
    assert.equal(good.status, 201);
    await whenCached(a, "strict", () => a.kube.store.get("strict") !== undefined);
    await settled(a);
    const goodPlugin = pluginConfigOf(emulator, "llm", "tokentrace-strict");
    assert.deepEqual(goodPlugin?.spec.pluginConfig, { sampling: { defaultRate: 0.2 }, headers: { tokenTraceId: "x-token-trace-id" } });
    // kubectl apply of a generation that would make the filter echo credentials: the CRD admits it.
    const current = (await kube(emulator, "GET", spPath("llm", "strict"))).json;
    const bad = await kube(emulator, "PUT", spPath("llm", "strict"), { ...current, spec: { ...current.spec, pluginConfig: { sampling: { defaultRate: 0.8 }, headers: { tokenTraceId: "authorization" } } } });
    assert.equal(bad.status, 200, JSON.stringify(bad.json));
    for (const r of replicas) await whenCached(r, "bad generation", () => r.kube.store.objects().get("llm/strict")?.metadata.resourceVersion === bad.json.metadata.resourceVersion);
    await settled(a);
    const object = (await kube(emulator, "GET", spPath("llm", "strict"))).json;
    const accepted = (object.status.conditions as { type: string; status: string; reason: string; message: string; observedGeneration: number }[]).find((c) => c.type === "Accepted");
    assert.deepEqual([accepted?.status, accepted?.reason, accepted?.observedGeneration], ["False", "Invalid", 2]);
    assert.match(accepted?.message ?? "", /pluginConfig\.headers\.tokenTraceId/);
    assert.match(accepted?.message ?? "", new RegExp(`version ${good.json.metadata.resourceVersion as string} \\(generation 1\\) stays in force`));
    assert.deepEqual(conditions(object)[1], ["Programmed", "True", "Programmed"]);
    // No WasmPlugin from it: the one there still carries the accepted generation; pulls too.
    assert.deepEqual(pluginConfigOf(emulator, "llm", "tokentrace-strict")?.spec.pluginConfig, goodPlugin?.spec.pluginConfig);
    for (const r of replicas) {
      const pulled = await call(r.running.url, "GET", "/v1/filters/llm.chat/config");
      assert.equal(pulled.status, 200, pulled.text);
      assert.deepEqual((pulled.body as { config: unknown }).config, goodPlugin?.spec.pluginConfig);
      const got = await call(r.running.url, "GET", "/v1/policies/strict");
      assert.equal(got.headers.get("etag"), `"${good.json.metadata.resourceVersion as string}"`);
    }
    // The refused generation is no state of the policy's history.
    assert.deepEqual(((await call(b.running.url, "GET", "/v1/policies/strict/history")).body as { items: { action: string }[] }).items.map((i) => i.action), ["create"]);
    // A REST write holding the accepted version may not overwrite a generation it never saw.
    const blind = await call(b.running.url, "PUT", "/v1/policies/strict", { token: adminToken, body: samplePolicy("strict"), headers: { "if-match": `"${good.json.metadata.resourceVersion as string}"` } });
    assert.equal(blind.status, 412, blind.text);
  });
});
