// The emulated apiserver's RBAC: a request with a bearer token is its user's, allowed only by a
// rule bound to that user, as kube-apiserver's RBAC authorizer decides (see kube-emulator/rbac.ts).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RbacAuthorizer, startKubeEmulator, type KubeEmulator } from "./index.js";
import { verbOf } from "./rbac.js";

const user = "system:serviceaccount:ops:agent";
const rbac = [
  { kind: "Role", metadata: { name: "leases", namespace: "ops" }, rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "update"], resourceNames: ["mine"] }, { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] }] },
  // Bound in "ops" with the subject's namespace left out: it defaults to the binding's.
  { kind: "RoleBinding", metadata: { name: "leases", namespace: "ops" }, roleRef: { kind: "Role", name: "leases" }, subjects: [{ kind: "ServiceAccount", name: "agent" }] },
  { kind: "ClusterRole", metadata: { name: "pods" }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["list", "watch"] }, { apiGroups: [""], resources: ["*/status"], verbs: ["patch"] }] },
  { kind: "ClusterRoleBinding", metadata: { name: "pods" }, roleRef: { kind: "ClusterRole", name: "pods" }, subjects: [{ kind: "ServiceAccount", name: "agent", namespace: "ops" }] },
];

describe("kube emulator RBAC (emulated: kube-apiserver's RBAC authorizer)", () => {
  it("derives each request's verb as requestinfo.go does (a named GET stays get under ?watch, HEAD is get, unknown methods have none)", () => {
    const cases: [string, boolean, boolean, string][] = [
      ["GET", true, false, "get"],
      ["GET", true, true, "get"],
      ["HEAD", true, false, "get"],
      ["GET", false, false, "list"],
      ["HEAD", false, false, "list"],
      ["GET", false, true, "watch"],
      ["POST", false, false, "create"],
      ["PUT", true, false, "update"],
      ["PATCH", true, false, "patch"],
      ["DELETE", true, false, "delete"],
      ["DELETE", false, false, "deletecollection"],
      ["OPTIONS", false, false, ""],
    ];
    for (const [method, named, watch, verb] of cases) assert.equal(verbOf(method, named, watch), verb, `${method} named=${named} watch=${watch}`);
  });

  let emulator: KubeEmulator;
  before(async () => {
    emulator = await startKubeEmulator({ rbac: { authorizer: new RbacAuthorizer(rbac), users: new Map([["t0ken", user]]) } });
  });
  after(async () => {
    await emulator.close();
  });
  const call = async (method: string, path: string, body?: unknown, token = "t0ken"): Promise<{ status: number; json: { reason?: string; message?: string } }> => {
    const headers: Record<string, string> = { "content-type": method === "PATCH" ? "application/merge-patch+json" : "application/json" };
    if (token !== "") headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${emulator.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as { reason?: string; message?: string } };
  };
  const lease = (name: string) => ({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name }, spec: { holderIdentity: "x", leaseDurationSeconds: 10 } });
  const leases = "/apis/coordination.k8s.io/v1/namespaces/ops/leases";

  it("emulated: grants exactly the bound verbs, names and namespace; 403 Forbidden names the user and the verb", async () => {
    assert.equal((await call("POST", leases, lease("mine"))).status, 201);
    assert.equal((await call("POST", leases, lease("other"))).status, 201, "create is not limited by name");
    assert.equal((await call("GET", `${leases}/mine`)).status, 200);
    const denied = await call("GET", `${leases}/other`);
    assert.equal(denied.status, 403, "resourceNames limit get");
    assert.equal(denied.json.reason, "Forbidden");
    assert.equal(denied.json.message, `leases.coordination.k8s.io "other" is forbidden: User "${user}" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "ops"`);
    assert.equal((await call("GET", leases)).status, 403, "a list is no named get");
    assert.equal((await call("DELETE", `${leases}/mine`)).status, 403, "delete was never granted");
    assert.equal((await call("POST", "/apis/coordination.k8s.io/v1/namespaces/elsewhere/leases", lease("mine"))).status, 403, "a RoleBinding applies in its own namespace only");
    // A ClusterRoleBinding applies everywhere, for exactly its verbs.
    assert.equal((await call("GET", "/api/v1/pods")).status, 200);
    assert.equal((await call("GET", "/api/v1/namespaces/ops/pods")).status, 200);
    assert.equal((await call("GET", "/api/v1/namespaces/ops/pods/p")).status, 403);
    assert.equal((await call("POST", "/api/v1/namespaces/ops/pods", { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "i" }] } })).status, 403);
    // The test's own requests (no token) are cluster-admin; an unknown token is 401.
    assert.equal((await call("DELETE", `${leases}/other`, undefined, "")).status, 200);
    assert.equal((await call("GET", `${leases}/mine`, undefined, "wrong")).status, 401);
  });
});
