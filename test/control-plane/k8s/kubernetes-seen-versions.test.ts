// The Kubernetes policy store remembers when it first saw each object's version (the updatedAt of a
// change made with kubectl), one entry per object it holds: names created and deleted over and over
// leave nothing behind.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { samplePolicy } from "../helpers.js";
import { applyCrd, kube, samplingPolicyObject, spPath, startReplicas, whenCached, type Replica } from "./kubernetes-replicas.js";

describe("Kubernetes policy store memory (emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let replica: Replica;
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    [replica] = (await startReplicas(emulator, ["cp-a"])) as [Replica];
  });
  after(async () => {
    await replica.running.stop();
    await emulator.close();
  });

  const spec = (name: string, rate: number): Record<string, unknown> => {
    const { name: _n, target, pluginConfig, ...rest } = samplePolicy(name);
    const { namespace: _ns, ...targetRest } = target;
    return { target: targetRest, ...rest, pluginConfig: { ...pluginConfig, sampling: { defaultRate: rate } } };
  };

  it("emulated: first-seen times stay one per object held through edits and deletions made with kubectl", async () => {
    const store = replica.kube.store;
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 4; i++) {
        const name = `churn-${round}-${i}`;
        const created = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject(name, spec(name, 0.5)));
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const edited = await kube(emulator, "PUT", spPath("llm", name), { ...created.json, spec: spec(name, 0.25) });
        assert.equal(edited.status, 200, JSON.stringify(edited.json));
        await whenCached(replica, `${name} edited`, () => store.get(name)?.version === edited.json.metadata.resourceVersion);
      }
      assert.equal(store.rememberedVersions, 4, "one per object held");
      for (let i = 0; i < 4; i++) {
        const name = `churn-${round}-${i}`;
        if (round === 4 && i === 0) continue;
        assert.equal((await kube(emulator, "DELETE", spPath("llm", name))).status, 200);
        await whenCached(replica, `${name} deleted`, () => store.get(name) === undefined);
      }
    }
    assert.equal(store.rememberedVersions, 1, "only the object still held");
  });
});
