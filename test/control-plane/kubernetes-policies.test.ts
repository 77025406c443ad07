// Policies as SamplingPolicy objects (Kubernetes mode) against the emulated kube-apiserver with the
// generated CRD applied through its API: two control-plane replicas in this process share no disk,
// a policy applied "with kubectl" (no REST call) is served by both with ETag = resourceVersion,
// REST writes land in the cluster, If-Match and stale versions map to 412 and 409, history is
// ControllerRevisions the leader writes, and the leader's status says Accepted and Programmed.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../control-plane/src/config.js";
import { startControlPlane, type RunningControlPlane } from "../../control-plane/src/main.js";
import { kubeConfigFor, startKubeEmulator, type KubeEmulator } from "../support/kube-emulator/index.js";
import { CRD_FILE } from "../../scripts/manifests.js";
import { REPO, readYaml } from "../istio/support.js";
import { adminToken, call, samplePolicy } from "./helpers.js";

const spPath = (ns: string, name = "") => `/apis/tokentrace.dev/v1alpha1/namespaces/${ns}/samplingpolicies${name === "" ? "" : `/${name}`}`;

async function kube(emulator: KubeEmulator, method: string, path: string, body?: unknown) {
  const res = await fetch(`${emulator.url}${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("policies in the cluster (Kubernetes mode, emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let dir: string;
  const replicas: RunningControlPlane[] = [];
  const logs: object[] = [];
  before(async () => {
    emulator = await startKubeEmulator();
    const crd = await kube(emulator, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", readYaml(join(REPO, CRD_FILE))[0]);
    assert.equal(crd.status, 201, JSON.stringify(crd.json));
    dir = mkdtempSync(join(tmpdir(), "tt-k8s-policies-"));
    const kubeconfig = join(dir, "kubeconfig.json");
    writeFileSync(kubeconfig, kubeConfigFor(emulator.url).exportConfig());
    for (const identity of ["cp-a", "cp-b"]) {
      const loaded = loadConfig([], {
        TOKENTRACE_LISTEN_PORT: "0",
        TOKENTRACE_STORE_MODE: "kubernetes",
        TOKENTRACE_STORE_PATH: join(dir, identity, "policies.json"),
        TOKENTRACE_KUBECONFIG: kubeconfig,
        TOKENTRACE_LEADER_ELECTION_IDENTITY: identity,
        TOKENTRACE_ADAPTIVE_ENABLED: "false",
        TOKENTRACE_API_TOKENS: `admin:${adminToken}`,
      });
      assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
      replicas.push(await startControlPlane(loaded.config, { log: (r) => logs.push(r), auditLine: (line) => logs.push(JSON.parse(line) as object) }));
    }
  });
  after(async () => {
    for (const r of replicas) await r.stop();
    await emulator.close();
  });

  it("emulated: a SamplingPolicy applied with no REST call is served by every replica, ETag = resourceVersion, updated by kubernetes", async () => {
    const policy = samplePolicy("applied");
    const { name: _n, target, ...rest } = policy;
    const { namespace: _ns, ...targetRest } = target;
    const created = await kube(emulator, "POST", `${spPath("llm")}?fieldValidation=Strict`, { apiVersion: "tokentrace.dev/v1alpha1", kind: "SamplingPolicy", metadata: { name: "applied" }, spec: { target: targetRest, ...rest } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    for (const replica of replicas) {
      const got = await eventually("served", async () => {
        const res = await call(replica.url, "GET", "/v1/policies/applied");
        return res.status === 200 ? res : undefined;
      });
      assert.equal(got.headers.get("etag"), `"${created.json.metadata.resourceVersion as string}"`);
      assert.deepEqual((got.body as { policy: unknown }).policy, policy);
      assert.equal((got.body as { updatedBy: string }).updatedBy, "kubernetes");
    }
  });

  it("emulated: a REST write on one replica is the cluster's object and the other replica serves it; nothing about policies is on pod disk", async () => {
    const [a, b] = replicas as [RunningControlPlane, RunningControlPlane];
    const written = await call(a.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("rest") });
    assert.equal(written.status, 201, written.text);
    const stored = await kube(emulator, "GET", spPath("llm", "rest"));
    assert.equal(stored.status, 200);
    assert.equal(written.headers.get("etag"), `"${stored.json.metadata.resourceVersion as string}"`);
    assert.equal(stored.json.metadata.annotations["tokentrace.dev/updated-by"], "admin");
    await eventually("replica b serves it", async () => ((await call(b.url, "GET", "/v1/policies/rest")).headers.get("etag") === written.headers.get("etag") ? true : undefined));
    for (const identity of ["cp-a", "cp-b"]) assert.equal(existsSync(join(dir, identity)), false, `${identity} wrote nothing to disk`);
  });

  it("emulated: If-Match with a stale ETag is 412, a stale body version 409, and of two writers holding the same version only one wins", async () => {
    const [a, b] = replicas as [RunningControlPlane, RunningControlPlane];
    const first = await call(a.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("race") });
    const etag = first.headers.get("etag") as string;
    await eventually("b has it", async () => ((await call(b.url, "GET", "/v1/policies/race")).headers.get("etag") === etag ? true : undefined));
    const update = (rate: number) => samplePolicy("race", { pluginConfig: { sampling: { defaultRate: rate } } });
    const [ra, rb] = await Promise.all([
      call(a.url, "PUT", "/v1/policies/race", { token: adminToken, body: update(0.2), headers: { "if-match": etag } }),
      call(b.url, "PUT", "/v1/policies/race", { token: adminToken, body: update(0.3), headers: { "if-match": etag } }),
    ]);
    assert.deepEqual([ra.status, rb.status].sort(), [200, 412], `${ra.text} ${rb.text}`);
    const stale = await call(a.url, "PUT", "/v1/policies/race", { token: adminToken, body: update(0.4), headers: { "if-match": etag } });
    assert.equal(stale.status, 412);
    const staleVersion = await call(a.url, "PUT", "/v1/policies/race", { token: adminToken, body: { version: etag.replace(/"/g, ""), policy: update(0.5) } });
    assert.equal(staleVersion.status, 409, staleVersion.text);
  });

  it("emulated: history is ControllerRevisions the leader writes once per change, readable and rolled back from any replica", async () => {
    const [a, b] = replicas as [RunningControlPlane, RunningControlPlane];
    const created = await call(b.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("hist") });
    const v1 = (created.headers.get("etag") as string).replace(/"/g, "");
    await eventually("a sees v1", async () => ((await call(a.url, "GET", "/v1/policies/hist")).status === 200 ? true : undefined));
    const replaced = await call(a.url, "PUT", "/v1/policies/hist", { token: adminToken, body: samplePolicy("hist", { pluginConfig: { sampling: { defaultRate: 0.9 } } }) });
    assert.equal(replaced.status, 200, replaced.text);
    const items = await eventually("two revisions", async () => {
      const res = await call(b.url, "GET", "/v1/policies/hist/history");
      const list = (res.body as { items?: { action: string; by: string; version: string }[] }).items;
      return list !== undefined && list.length === 2 ? list : undefined;
    });
    assert.deepEqual(items.map((i) => [i.action, i.by]), [["create", "admin"], ["replace", "admin"]]);
    const revisions = emulator.objects("apps/v1/controllerrevisions").filter((r) => r.metadata?.labels?.["tokentrace.dev/policy"] === "hist");
    assert.deepEqual(revisions.map((r) => r.revision).sort(), [1, 2]);
    const rolled = await call(b.url, "POST", "/v1/policies/hist/rollback", { token: adminToken, body: { version: v1 } });
    assert.equal(rolled.status, 200, rolled.text);
    assert.deepEqual((rolled.body as { policy: unknown }).policy, samplePolicy("hist"));
  });

  it("emulated: the leader reports Accepted and Programmed (with its WasmPlugin) in the status subresource", async () => {
    await call(replicas[0]!.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("statusy") });
    const status = await eventually("status", async () => {
      const object = await kube(emulator, "GET", spPath("llm", "statusy"));
      const conditions = object.json.status?.conditions as { type: string; status: string }[] | undefined;
      return conditions?.find((c) => c.type === "Programmed")?.status === "True" ? object.json.status : undefined;
    });
    assert.deepEqual((status.conditions as { type: string; status: string; reason: string }[]).map((c) => [c.type, c.status, c.reason]), [["Accepted", "True", "Accepted"], ["Programmed", "True", "Programmed"]]);
    assert.equal(status.wasmPlugin, "llm/tokentrace-statusy");
  });
});
