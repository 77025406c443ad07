// Policies as SamplingPolicy objects (Kubernetes mode) against the emulated kube-apiserver with the
// generated CRD applied through its API: two control-plane replicas in this process share no disk,
// a policy applied "with kubectl" (no REST call) is served by both with ETag = resourceVersion,
// REST writes land in the cluster, If-Match and stale versions map to 412 and 409, history is
// ControllerRevisions, the leader's status says Accepted and Programmed, and the adaptive rates
// the leader computes are served by every replica. No timer runs by itself (kubernetes-replicas.ts).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import type { RateSource } from "../../../control-plane/src/adaptive/rates.js";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, kube, samplingPolicyObject, spPath, startReplicas, whenCached, type Replica } from "./kubernetes-replicas.js";

/** The request rates the leader's adaptive sampler reads (requests/s of the unmatched routes). */
let requestsPerSecond = 0;
const rates: RateSource = { requestRates: () => Promise.resolve([{ route: "other-route", requestsPerSecond }]) };

describe("policies in the cluster (Kubernetes mode, emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let replicas: Replica[];
  let a: Replica;
  let b: Replica;
  const served = (r: Replica, name: string, version?: string) => () => r.kube.store.get(name) !== undefined && (version === undefined || r.kube.store.get(name)?.version === version);
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    replicas = await startReplicas(emulator, ["cp-a", "cp-b"], { rates, env: { TOKENTRACE_ADAPTIVE_ENABLED: "true" } });
    [a, b] = replicas as [Replica, Replica];
    assert.equal(a.kube.isLeader(), true);
    assert.equal(b.kube.isLeader(), false);
  });
  after(async () => {
    for (const r of replicas) await r.running.stop();
    await emulator.close();
  });

  it("emulated: a SamplingPolicy applied with no REST call is served by every replica, ETag = resourceVersion, updated by kubernetes", async () => {
    const policy = samplePolicy("applied");
    const { name: _n, target, ...rest } = policy;
    const { namespace: _ns, ...targetRest } = target;
    const created = await kube(emulator, "POST", `${spPath("llm")}?fieldValidation=Strict`, samplingPolicyObject("applied", { target: targetRest, ...rest }));
    assert.equal(created.status, 201, JSON.stringify(created.json));
    for (const replica of replicas) {
      await whenCached(replica, "applied", served(replica, "applied", created.json.metadata.resourceVersion as string));
      const got = await call(replica.running.url, "GET", "/v1/policies/applied");
      assert.equal(got.headers.get("etag"), `"${created.json.metadata.resourceVersion as string}"`);
      assert.deepEqual((got.body as { policy: unknown }).policy, policy);
      assert.equal((got.body as { updatedBy: string }).updatedBy, "kubernetes");
    }
  });

  it("emulated: a REST write on one replica is the cluster's object and the other replica serves it; nothing about policies is on pod disk", async () => {
    const written = await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("rest") });
    assert.equal(written.status, 201, written.text);
    const stored = await kube(emulator, "GET", spPath("llm", "rest"));
    assert.equal(stored.status, 200);
    assert.equal(written.headers.get("etag"), `"${stored.json.metadata.resourceVersion as string}"`);
    assert.equal(stored.json.metadata.annotations["tokentrace.dev/updated-by"], "admin");
    await whenCached(b, "rest", served(b, "rest", stored.json.metadata.resourceVersion as string));
    for (const r of replicas) assert.equal(existsSync(r.storeDir), false, `${r.identity} wrote nothing to disk`);
  });

  it("emulated: If-Match with a stale ETag is 412, a stale body version 409, and of two writers holding the same version only one wins", async () => {
    const first = await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("race") });
    const etag = first.headers.get("etag") as string;
    await whenCached(b, "race", served(b, "race", etag.replace(/"/g, "")));
    const update = (rate: number) => samplePolicy("race", { pluginConfig: { sampling: { defaultRate: rate } } });
    const [ra, rb] = await Promise.all([
      call(a.running.url, "PUT", "/v1/policies/race", { token: adminToken, body: update(0.2), headers: { "if-match": etag } }),
      call(b.running.url, "PUT", "/v1/policies/race", { token: adminToken, body: update(0.3), headers: { "if-match": etag } }),
    ]);
    assert.deepEqual([ra.status, rb.status].sort(), [200, 412], `${ra.text} ${rb.text}`);
    const stale = await call(a.running.url, "PUT", "/v1/policies/race", { token: adminToken, body: update(0.4), headers: { "if-match": etag } });
    assert.equal(stale.status, 412);
    const staleVersion = await call(a.running.url, "PUT", "/v1/policies/race", { token: adminToken, body: { version: etag.replace(/"/g, ""), policy: update(0.5) } });
    assert.equal(staleVersion.status, 409, staleVersion.text);
  });

  it("emulated: history is ControllerRevisions written once per change, readable and rolled back from any replica", async () => {
    const created = await call(b.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("hist") });
    const v1 = (created.headers.get("etag") as string).replace(/"/g, "");
    await whenCached(a, "hist v1", served(a, "hist", v1));
    const replaced = await call(a.running.url, "PUT", "/v1/policies/hist", { token: adminToken, body: samplePolicy("hist", { pluginConfig: { sampling: { defaultRate: 0.9 } } }) });
    assert.equal(replaced.status, 200, replaced.text);
    const v2 = (replaced.headers.get("etag") as string).replace(/"/g, "");
    await whenCached(b, "hist v2", served(b, "hist", v2));
    for (const r of replicas) await r.kube.history.idle();
    const res = await call(b.running.url, "GET", "/v1/policies/hist/history");
    const items = (res.body as { items: { action: string; by: string; version: string }[] }).items;
    assert.deepEqual(items.map((i) => [i.action, i.by, i.version]), [["create", "admin", v1], ["replace", "admin", v2]]);
    // Both replicas recorded; the deterministic names let exactly one create of each stand.
    const revisions = emulator.objects("apps/v1/controllerrevisions").filter((r) => r.metadata?.labels?.["tokentrace.dev/policy"] === "hist");
    assert.deepEqual(revisions.map((r) => r.revision).sort(), [1, 2]);
    const rolled = await call(b.running.url, "POST", "/v1/policies/hist/rollback", { token: adminToken, body: { version: v1 } });
    assert.equal(rolled.status, 200, rolled.text);
    assert.deepEqual((rolled.body as { policy: unknown }).policy, samplePolicy("hist"));
  });

  it("emulated: the leader reports Accepted and Programmed (with its WasmPlugin) in the status subresource; a status write is no new version", async () => {
    const created = await call(b.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("statusy") });
    const version = (created.headers.get("etag") as string).replace(/"/g, "");
    await whenCached(a, "statusy", served(a, "statusy", version));
    await a.kube.history.idle();
    // The reconciler writes the WasmPlugin, the status pass then reports it.
    await a.kube.sync.reconciler.whenIdle();
    await a.kube.writeStatus();
    await b.ticker.run("policy-status"); // a follower writes no status
    const object = await kube(emulator, "GET", spPath("llm", "statusy"));
    const status = object.json.status as { conditions: { type: string; status: string; reason: string }[]; wasmPlugin: string };
    assert.deepEqual(status.conditions.map((c) => [c.type, c.status, c.reason]), [["Accepted", "True", "Accepted"], ["Programmed", "True", "Programmed"]]);
    assert.equal(status.wasmPlugin, "llm/tokentrace-statusy");
    assert.notEqual(object.json.metadata.resourceVersion, version, "the status write moved the resourceVersion");
    await whenCached(b, "status seen", () => b.kube.store.objects().get("llm/statusy")?.metadata.resourceVersion === object.json.metadata.resourceVersion);
    const got = await call(b.running.url, "GET", "/v1/policies/statusy");
    assert.equal(got.headers.get("etag"), `"${version}"`, "the policy's version is its last spec change");
    const history = await call(b.running.url, "GET", "/v1/policies/statusy/history");
    assert.deepEqual((history.body as { items: { action: string }[] }).items.map((i) => i.action), ["create"]);
  });

  it("emulated: adaptive rates the leader computes are served by the follower's pull, whose ETag changes with them", async () => {
    const policy = samplePolicy("adapt", { target: { namespace: "llm", selector: { matchLabels: { app: "adapt" } } }, pluginConfig: { sampling: { defaultRate: 0.5 } }, adaptive: { targetTracesPerSecond: 1 } });
    const created = await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: policy });
    assert.equal(created.status, 201, created.text);
    await whenCached(b, "adapt", served(b, "adapt"));
    const pull = async (r: Replica) => {
      const res = await call(r.running.url, "GET", "/v1/filters/llm.adapt/config");
      assert.equal(res.status, 200, res.text);
      return { etag: res.headers.get("etag"), rate: (res.body as { config: { sampling: { defaultRate: number } } }).config.sampling.defaultRate };
    };
    const before = await pull(b);
    assert.equal(before.rate, 0.5);
    // 100 requests/s at rate 0.5 is 50 traces/s for a target of 1: the leader lowers the rate.
    requestsPerSecond = 100;
    await a.ticker.run("adaptive");
    const leader = await pull(a);
    assert.ok(leader.rate < 0.5, `leader adapted to ${leader.rate}`);
    await a.kube.writeStatus();
    await whenCached(b, "published rates", () => b.kube.store.publishedOverrides("adapt") !== undefined);
    const follower = await pull(b);
    assert.deepEqual(follower, leader, "the follower serves the leader's effective config, version included");
    assert.notEqual(follower.etag, before.etag);
    const stored = await kube(emulator, "GET", spPath("llm", "adapt"));
    assert.equal(stored.json.status.adaptive.defaultRate, leader.rate);
    assert.equal(stored.json.status.adaptive.observedGeneration, stored.json.metadata.generation);
    // A new generation of the policy starts from its own rates again, on every replica.
    const edited = await call(b.running.url, "PATCH", "/v1/policies/adapt", { token: adminToken, body: { pluginConfig: { sampling: { defaultRate: 0.4 } } }, headers: { "content-type": "application/merge-patch+json" } });
    assert.equal(edited.status, 200, edited.text);
    await whenCached(a, "adapt edited", served(a, "adapt", (edited.headers.get("etag") as string).replace(/"/g, "")));
    assert.equal((await pull(b)).rate, 0.4);
  });
});
