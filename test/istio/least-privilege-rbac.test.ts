// The shipped RBAC against the emulated kube-apiserver's RBAC authorizer: the pipeline members'
// Role (which cannot name its Leases, pod names being generated) must not reach the
// leader-election Lease, the control plane's ServiceAccount may do to that Lease only what
// leader election does (get and update it by name, create it), and it writes ControllerRevisions
// (policy history) only in its own namespace, never another workload's.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RbacAuthorizer, startKubeEmulator, type KubeEmulator } from "../support/kube-emulator/index.js";
import { manifests, one, type Manifest } from "./support.js";

const all: Manifest[] = manifests();
const statefulSet = one(all, "StatefulSet", "tokentrace-control-plane");
const leaderRole = one(all, "Role", "tokentrace-control-plane-leader-election");
const membersRole = one(all, "Role", "tokentrace-control-plane-pipeline-members");
const membersBinding = one(all, "RoleBinding", "tokentrace-control-plane-pipeline-members");
const LEADER_NAMESPACE = leaderRole.metadata.namespace as string;
const MEMBERS_NAMESPACE = membersRole.metadata.namespace as string;
const LEADER_LEASE = "tokentrace-control-plane";
const SA_TOKEN = "control-plane-sa-token";
const MEMBERS_ONLY_TOKEN = "members-only-token";
const saUser = `system:serviceaccount:${statefulSet.metadata.namespace as string}:${statefulSet.spec.template.spec.serviceAccountName as string}`;
const membersOnlyUser = "system:serviceaccount:tokentrace-system:members-role-only";

let emulator: KubeEmulator;
before(async () => {
  const rbac = all.filter((m) => ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"].includes(m.kind));
  // The members' Role on its own: the same Role, bound to a subject that has nothing else.
  const alone = { ...membersBinding, metadata: { ...membersBinding.metadata, name: "members-role-only" }, subjects: [{ kind: "ServiceAccount", name: "members-role-only", namespace: "tokentrace-system" }] };
  emulator = await startKubeEmulator({ rbac: { authorizer: new RbacAuthorizer([...rbac, alone]), users: new Map([[SA_TOKEN, saUser], [MEMBERS_ONLY_TOKEN, membersOnlyUser]]) } });
});
after(async () => {
  await emulator.close();
});

const leases = (namespace: string): string => `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
const lease = (name: string, holder: string) => ({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name }, spec: { holderIdentity: holder, leaseDurationSeconds: 15 } });

/** One request as `token`'s user ("" = the test itself, cluster-admin); returns the status. */
async function call(token: string, method: string, path: string, body?: unknown): Promise<number> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== "") headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${emulator.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

/** The Lease as stored (for an update carrying its resourceVersion). */
async function stored(namespace: string, name: string): Promise<unknown> {
  return (await fetch(`${emulator.url}${leases(namespace)}/${name}`)).json();
}

describe("Lease and history RBAC as shipped (emulated: kube-apiserver's RBAC authorizer)", () => {
  it("emulated: the member Leases have a namespace of their own, apart from the leader-election Lease", () => {
    assert.notEqual(MEMBERS_NAMESPACE, LEADER_NAMESPACE);
    assert.equal(one(all, "Namespace", MEMBERS_NAMESPACE).metadata.name, MEMBERS_NAMESPACE);
  });

  it("emulated: the members' Role is refused (403) every call on the leader-election Lease, and on any Lease in its namespace", async () => {
    assert.equal(await call("", "POST", leases(LEADER_NAMESPACE), lease(LEADER_LEASE, "tokentrace-control-plane-0")), 201);
    const leader = `${leases(LEADER_NAMESPACE)}/${LEADER_LEASE}`;
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "GET", leader), 403);
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "PUT", leader, await stored(LEADER_NAMESPACE, LEADER_LEASE)), 403);
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "DELETE", leader), 403);
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "GET", leases(LEADER_NAMESPACE)), 403);
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "POST", leases(LEADER_NAMESPACE), lease("tokentrace-pipeline-x", "x")), 403);
    // Control: in its own namespace it does what membership.ts does.
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "POST", leases(MEMBERS_NAMESPACE), lease("tokentrace-pipeline-m", "m")), 201);
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "GET", leases(MEMBERS_NAMESPACE)), 200);
    assert.equal(await call(MEMBERS_ONLY_TOKEN, "DELETE", `${leases(MEMBERS_NAMESPACE)}/tokentrace-pipeline-m`), 200);
  });

  it("emulated: the control plane's ServiceAccount may get, update and create the leader-election Lease, never delete or list it nor touch another Lease there; member Leases only in their namespace", async () => {
    const leader = `${leases(LEADER_NAMESPACE)}/${LEADER_LEASE}`;
    assert.equal(await call(SA_TOKEN, "GET", leader), 200);
    assert.equal(await call(SA_TOKEN, "PUT", leader, await stored(LEADER_NAMESPACE, LEADER_LEASE)), 200);
    assert.equal(await call(SA_TOKEN, "DELETE", leader), 403);
    assert.equal(await call(SA_TOKEN, "GET", leases(LEADER_NAMESPACE)), 403);
    assert.equal(await call("", "POST", leases(LEADER_NAMESPACE), lease("other", "x")), 201);
    assert.equal(await call(SA_TOKEN, "GET", `${leases(LEADER_NAMESPACE)}/other`), 403);
    assert.equal(await call(SA_TOKEN, "PUT", `${leases(LEADER_NAMESPACE)}/other`, await stored(LEADER_NAMESPACE, "other")), 403);
    assert.equal(await call(SA_TOKEN, "DELETE", `${leases(LEADER_NAMESPACE)}/other`), 403);
    // membership.ts's calls, in the members' namespace.
    const member = `${leases(MEMBERS_NAMESPACE)}/tokentrace-pipeline-tokentrace-control-plane-0`;
    assert.equal(await call(SA_TOKEN, "POST", leases(MEMBERS_NAMESPACE), lease("tokentrace-pipeline-tokentrace-control-plane-0", "tokentrace-control-plane-0")), 201);
    assert.equal(await call(SA_TOKEN, "GET", member), 200);
    assert.equal(await call(SA_TOKEN, "PUT", member, await stored(MEMBERS_NAMESPACE, "tokentrace-pipeline-tokentrace-control-plane-0")), 200);
    assert.equal(await call(SA_TOKEN, "GET", leases(MEMBERS_NAMESPACE)), 200);
    assert.equal(await call(SA_TOKEN, "DELETE", member), 200);
  });

  it("emulated: the ServiceAccount lists, creates and deletes ControllerRevisions in the control plane's namespace only: another namespace's (a StatefulSet's history) are refused (403)", async () => {
    const revisions = (namespace: string): string => `/apis/apps/v1/namespaces/${namespace}/controllerrevisions`;
    const revision = (name: string) => ({ apiVersion: "apps/v1", kind: "ControllerRevision", metadata: { name }, data: { spec: {} }, revision: 1 });
    const own = statefulSet.metadata.namespace as string;
    for (const other of ["kube-system", "llm"]) {
      assert.equal(await call("", "POST", revisions(other), revision("web-6d4b8c")), 201);
      assert.equal(await call(SA_TOKEN, "DELETE", `${revisions(other)}/web-6d4b8c`), 403, `delete in ${other}`);
      assert.equal(await call(SA_TOKEN, "POST", revisions(other), revision("samplingpolicy-x")), 403, `create in ${other}`);
      assert.equal(await call(SA_TOKEN, "GET", revisions(other)), 403, `list in ${other}`);
    }
    assert.equal(await call(SA_TOKEN, "GET", "/apis/apps/v1/controllerrevisions"), 403, "list across namespaces");
    assert.equal(await call(SA_TOKEN, "POST", revisions(own), revision("samplingpolicy-llm.chat-1a2b3c4d-1")), 201);
    assert.equal(await call(SA_TOKEN, "GET", revisions(own)), 200);
    assert.equal(await call(SA_TOKEN, "DELETE", `${revisions(own)}/samplingpolicy-llm.chat-1a2b3c4d-1`), 200);
  });
});
