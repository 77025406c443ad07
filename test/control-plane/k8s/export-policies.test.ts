// Moving policies from an embedded store into the cluster: the exported SamplingPolicy manifests,
// created through the emulated kube-apiserver with the generated CRD (strict field validation, as
// kubectl apply sends them), hold exactly the policies the file store had.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { exportPolicies } from "../../../control-plane/src/k8s/export-policies.js";
import { policyOf, type SamplingPolicyObject } from "../../../control-plane/src/k8s/policy-store.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { CRD_FILE } from "../../../scripts/manifests.js";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { REPO, readYaml } from "../../istio/support.js";
import { samplePolicy } from "../helpers.js";

describe("export of an embedded store as SamplingPolicies (emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  before(async () => {
    emulator = await startKubeEmulator();
    const res = await fetch(`${emulator.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(readYaml(join(REPO, CRD_FILE))[0]) });
    assert.equal(res.status, 201);
  });
  after(() => emulator.close());

  it("emulated: every current policy round-trips through kubectl-style creation; deleted ones are not exported", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-export-")), "policies.json");
    const store = new FilePolicyStore({ path, fsync: false });
    const policies = [
      samplePolicy("chat"),
      { ...samplePolicy("gateway"), target: { namespace: "edge", targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "public" }] }, adaptive: { targetTracesPerSecond: 5 } },
    ];
    for (const p of policies) assert.equal((await store.create(p, { by: "admin" })).ok, true);
    await store.create(samplePolicy("gone"), { by: "admin" });
    await store.delete("gone", { by: "admin" });
    await store.close();

    const { yaml, skipped } = await exportPolicies(path);
    assert.deepEqual(skipped, []);
    const docs = parseAllDocuments(yaml) as unknown as { toJS(): SamplingPolicyObject }[];
    assert.equal(docs.length, 2);
    for (const doc of docs) {
      const object = doc.toJS();
      const res = await fetch(`${emulator.url}/apis/tokentrace.dev/v1alpha1/namespaces/${object.metadata.namespace}/samplingpolicies?fieldValidation=Strict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(object) });
      assert.equal(res.status, 201, await res.text());
    }
    const stored = emulator.objects("tokentrace.dev/v1alpha1/samplingpolicies") as unknown as SamplingPolicyObject[];
    assert.deepEqual(stored.map((o) => policyOf(o)).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))), [...policies].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
  });
});
