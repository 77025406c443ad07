// Policy history in the cluster is complete whoever leads: every replica records each state of a
// SamplingPolicy it observes under a revision name derived from the object (uid and generation,
// or its deletion), after every list it reconciles the cluster's revisions with what it sees, and
// the API server's AlreadyExists decides between replicas. Emulated kube-apiserver; no timer runs
// by itself, and the fake clock moves only where a test says.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { historyLimit } from "../../../control-plane/src/k8s/history.js";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { FakeClock } from "../../support/fake-clock.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, kube, samplingPolicyObject, spPath, startReplicas, whenCached, type Replica } from "./kubernetes-replicas.js";

const spec = (rate: number) => ({ target: { selector: { matchLabels: { app: "chat" } } }, pluginConfig: { sampling: { defaultRate: rate } } });

let emulator: KubeEmulator;
let replicas: Replica[] = [];

async function start(): Promise<void> {
  emulator = await startKubeEmulator();
  await applyCrd(emulator);
}

afterEach(async () => {
  for (const r of replicas.splice(0)) await r.running.stop();
  await emulator.close();
});

async function historyOf(replica: Replica, name: string): Promise<[string, string][]> {
  await replica.kube.history.idle();
  const res = await call(replica.running.url, "GET", `/v1/policies/${name}/history`);
  if (res.status === 404) return [];
  assert.equal(res.status, 200, res.text);
  return (res.body as { items: { action: string; by: string }[] }).items.map((i) => [i.action, i.by]);
}

describe("policy history in the cluster (emulated kube-apiserver)", () => {
  it("emulated: changes made while no replica leads are recorded (a follower records them)", async () => {
    await start();
    // A lease held by a replica that is gone: on the fake clock it never expires, so no one leads.
    const lease = await kube(emulator, "POST", "/apis/coordination.k8s.io/v1/namespaces/tokentrace-system/leases", {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "tokentrace-control-plane" },
      spec: { holderIdentity: "cp-gone", leaseDurationSeconds: 15, renewTime: "2026-01-01T00:00:00.000000Z", acquireTime: "2026-01-01T00:00:00.000000Z" },
    });
    assert.equal(lease.status, 201, JSON.stringify(lease.json));
    replicas = await startReplicas(emulator, ["cp-a"], { awaitLeader: false });
    const [a] = replicas as [Replica];
    assert.equal(a.kube.isLeader(), false);
    const created = await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("gap") });
    assert.equal(created.status, 201, created.text);
    const stored = await kube(emulator, "GET", spPath("llm", "gap"));
    const replaced = await kube(emulator, "PUT", spPath("llm", "gap"), { ...stored.json, spec: { ...stored.json.spec, pluginConfig: { sampling: { defaultRate: 0.7 } } } });
    assert.equal(replaced.status, 200, JSON.stringify(replaced.json));
    await whenCached(a, "the kubectl edit", () => a.kube.store.get("gap")?.version === replaced.json.metadata.resourceVersion);
    assert.deepEqual(await historyOf(a, "gap"), [["create", "admin"], ["replace", "kubernetes"]]);
    assert.equal(a.kube.isLeader(), false, "still no leader");
  });

  it("emulated: a deletion and re-creation missed by a broken watch are recorded after the re-list", async () => {
    await start();
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
    replicas = await startReplicas(emulator, ["cp-a"], { clock });
    const [a] = replicas as [Replica];
    const first = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject("relist", spec(0.1)));
    assert.equal(first.status, 201);
    await whenCached(a, "relist", () => a.kube.store.get("relist") !== undefined);
    await a.kube.history.idle();
    // The watches break and cannot resume (their next GETs fail, then back off on the fake clock).
    const listsBefore = a.kube.store.informer.lists;
    emulator.failNext(2, 503, "GET");
    emulator.closeWatches();
    assert.equal((await kube(emulator, "DELETE", spPath("llm", "relist"))).status, 200);
    const second = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject("relist", spec(0.3)));
    assert.equal(second.status, 201);
    // The API server's watch history no longer reaches back: resuming gets 410 Gone, then a re-list.
    emulator.compact();
    await clock.advance(60_000);
    await whenCached(a, "re-listed", () => a.kube.store.informer.lists > listsBefore && a.kube.store.get("relist")?.version === second.json.metadata.resourceVersion);
    assert.deepEqual(await historyOf(a, "relist"), [["create", "kubernetes"], ["delete", "kubernetes"], ["create", "kubernetes"]]);
  });

  it("emulated: a deletion made while no replica ran is recorded by the next one to start", async () => {
    await start();
    const created = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject("gone", spec(0.1)));
    assert.equal(created.status, 201);
    replicas = await startReplicas(emulator, ["cp-a"]);
    assert.deepEqual(await historyOf(replicas[0]!, "gone"), [["create", "kubernetes"]]);
    await replicas.splice(0)[0]!.running.stop();
    assert.equal((await kube(emulator, "DELETE", spPath("llm", "gone"))).status, 200);
    replicas = await startReplicas(emulator, ["cp-b"]);
    assert.deepEqual(await historyOf(replicas[0]!, "gone"), [["create", "kubernetes"], ["delete", "kubernetes"]]);
  });

  it("emulated: two replicas recording the same states leave one revision each", async () => {
    await start();
    replicas = await startReplicas(emulator, ["cp-a", "cp-b"]);
    const [a, b] = replicas as [Replica, Replica];
    const created = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject("twice", spec(0.1)));
    await whenCached(b, "twice", () => b.kube.store.get("twice")?.version === created.json.metadata.resourceVersion);
    await whenCached(a, "twice", () => a.kube.store.get("twice")?.version === created.json.metadata.resourceVersion);
    await Promise.all([a.kube.history.idle(), b.kube.history.idle()]);
    const revisions = emulator.objects("apps/v1/controllerrevisions").filter((r) => r.metadata?.labels?.["tokentrace.dev/policy"] === "twice");
    assert.equal(revisions.length, 1, revisions.map((r) => r.metadata?.name).join(", "));
    const audits = [...a.logs, ...b.logs].filter((l) => (l as { policy?: string; who?: string }).policy === "twice" && (l as { who?: string }).who === "kubernetes");
    assert.equal(audits.length, 1, "the change made outside the REST API is audited once");
  });

  it("emulated: a replica remembers the revisions that exist, not every one it ever made: trimmed ones are forgotten", async () => {
    await start();
    replicas = await startReplicas(emulator, ["cp-a"]);
    const [a] = replicas as [Replica];
    let stored = await kube(emulator, "POST", spPath("llm"), samplingPolicyObject("busy", spec(0.01)));
    assert.equal(stored.status, 201);
    for (let k = 2; k <= historyLimit + 15; k++) {
      await whenCached(a, `generation ${k - 1}`, () => a.kube.store.get("busy")?.version === stored.json.metadata.resourceVersion);
      await a.kube.history.idle();
      stored = await kube(emulator, "PUT", spPath("llm", "busy"), { ...stored.json, spec: spec(k / 1000) });
      assert.equal(stored.status, 200, JSON.stringify(stored.json));
    }
    await whenCached(a, "the last generation", () => a.kube.store.get("busy")?.version === stored.json.metadata.resourceVersion);
    await a.kube.history.idle();
    const revisions = emulator.objects("apps/v1/controllerrevisions").filter((r) => r.metadata?.labels?.["tokentrace.dev/policy"] === "busy");
    assert.equal(revisions.length, historyLimit);
    assert.equal(a.kube.history.knownRevisions, historyLimit, `${historyLimit + 15} revisions made, ${historyLimit} kept`);
  });
});
