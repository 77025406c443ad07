// The shipped manifests expose the control plane as docs/security.md says: reads need tokens, the
// filter-facing port is the one the sidecar captures, STRICT mTLS and the AuthorizationPolicy
// cover, the NetworkPolicy admits only filter pods to it and only API clients and monitoring to
// the API, and the pseudonym keys come from the Secret, mounted read-only at content.keysDir in
// the control plane only. Every number is read from the files and the control plane's config
// loader, so they cannot drift apart.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../control-plane/src/config.js";
import { manifests, one } from "./support.js";

const all = manifests();
const statefulSet = one(all, "StatefulSet", "tokentrace-control-plane");
const configMap = one(all, "ConfigMap", "tokentrace-control-plane");
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");
const service = one(all, "Service", "tokentrace-control-plane");
const peer = one(all, "PeerAuthentication", "tokentrace-control-plane");
const authz = one(all, "AuthorizationPolicy", "tokentrace-control-plane-filters");
const netpol = one(all, "NetworkPolicy", "tokentrace-control-plane");
const pod = statefulSet.spec.template.spec;
const container = pod.containers[0];

function deployed() {
  const dir = mkdtempSync(join(tmpdir(), "tt-exposure-"));
  try {
    const path = join(dir, "config.yaml");
    writeFileSync(path, configMap.data["config.yaml"]);
    const loaded = loadConfig(["--config", path], { ...envConfigMap.data, TOKENTRACE_API_TOKENS: "admin:0123456789abcdef0123" });
    assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
    return loaded.config;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the control plane's exposure in istio/base", () => {
  const config = deployed();
  const filtersPort = config.filters.port;
  const containerPort = (name: string) => (container.ports as { name: string; containerPort: number }[]).find((p) => p.name === name)?.containerPort;

  it("reads need a token, the filter-facing listener authenticates by mesh identity on its own port", () => {
    assert.equal(config.api.reads, "token");
    assert.equal(config.filters.auth, "mesh");
    assert.equal(config.filters.host, "0.0.0.0");
    assert.notEqual(filtersPort, config.listen.port);
    assert.equal(containerPort("filters"), filtersPort);
    assert.equal(containerPort("http"), config.listen.port);
    const servicePort = (service.spec.ports as { name: string; port: number; targetPort: string }[]).find((p) => p.targetPort === "filters");
    assert.equal(servicePort?.port, filtersPort);
  });

  it("the sidecar captures exactly that port, STRICT mTLS holds on it, and the AuthorizationPolicy admits mesh identities to the filters' paths only there", () => {
    assert.equal(statefulSet.spec.template.metadata.annotations["traffic.sidecar.istio.io/includeInboundPorts"], String(filtersPort));
    assert.deepEqual(peer.spec.portLevelMtls, { [String(filtersPort)]: { mode: "STRICT" } });
    assert.deepEqual(peer.spec.selector, { matchLabels: statefulSet.spec.selector.matchLabels });
    assert.deepEqual(authz.spec.selector, { matchLabels: statefulSet.spec.selector.matchLabels });
    assert.equal(authz.spec.action, "ALLOW");
    const operations = (authz.spec.rules as { from: { source: { principals: string[] } }[]; to: { operation: { ports: string[]; methods: string[]; paths: string[] } }[] }[]).flatMap((r) => {
      assert.deepEqual(r.from, [{ source: { principals: ["*"] } }], "a peer identity is required");
      return r.to.map((t) => t.operation);
    });
    assert.deepEqual(operations.map((o) => [o.ports, o.methods, o.paths]), [[[String(filtersPort)], ["GET"], ["/v1/filters/*"]], [[String(filtersPort)], ["POST"], ["/v1/traces"]]]);
  });

  it("the NetworkPolicy admits only filter pods to the filter-facing port and only API clients and monitoring to the API", () => {
    const rules = netpol.spec.ingress as { ports: { port: number }[]; from: { podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: { matchLabels?: Record<string, string> } }[] }[];
    const byPort = new Map(rules.map((r) => [r.ports.map((p) => p.port).join(","), r.from]));
    assert.deepEqual([...byPort.keys()].sort(), [String(config.listen.port), String(filtersPort), "15020"].sort());
    const filterPeers = byPort.get(String(filtersPort))?.map((f) => f.podSelector?.matchLabels);
    assert.deepEqual(filterPeers, [{ "tokentrace.dev/llm-workload": "true" }, { "tokentrace.dev/filter": "true" }, { "gateway.istio.io/managed": "istio.io-mesh-controller" }]);
    // Every place a shipped WasmPlugin runs the filter must be able to reach the port: the pods its
    // selector names, or the waypoints when it targets the istio-waypoint GatewayClass.
    for (const plugin of all.filter((m) => m.kind === "WasmPlugin")) {
      const spec = plugin.spec as { selector?: { matchLabels: Record<string, string> }; targetRefs?: { kind: string; name: string }[] };
      const needed = spec.selector?.matchLabels ?? (spec.targetRefs?.some((t) => t.kind === "GatewayClass" && t.name === "istio-waypoint") ? { "gateway.istio.io/managed": "istio.io-mesh-controller" } : undefined);
      assert.ok(needed !== undefined, `${String(plugin.metadata.name)}: neither a selector nor the waypoint class`);
      assert.ok(filterPeers?.some((peer) => JSON.stringify(peer) === JSON.stringify(needed)), `${String(plugin.metadata.name)}'s pods cannot reach ${filtersPort}`);
    }
    assert.deepEqual(byPort.get(String(config.listen.port))?.map((f) => f.podSelector?.matchLabels ?? f.namespaceSelector?.matchLabels), [{ "tokentrace.dev/api-client": "true" }, { "kubernetes.io/metadata.name": "monitoring" }]);
    assert.deepEqual(netpol.spec.policyTypes, ["Ingress"]);
  });

  it("the pseudonym keys come from the Secret tokentrace-content-keys, mounted read-only at content.keysDir, in the control plane container only", () => {
    const volume = (pod.volumes as { name: string; secret?: { secretName: string; optional: boolean } }[]).find((v) => v.secret?.secretName === "tokentrace-content-keys");
    assert.ok(volume);
    assert.equal(volume.secret?.optional, true);
    const mounts = (pod.containers as { volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[]).flatMap((c) => c.volumeMounts.filter((m) => m.name === volume.name));
    assert.deepEqual(mounts, [{ name: volume.name, mountPath: config.content.keysDir, readOnly: true }]);
    const secretsElsewhere = all.filter((m) => m.kind !== "StatefulSet" && JSON.stringify(m).includes("tokentrace-content-keys"));
    assert.deepEqual(secretsElsewhere.map((m) => `${m.kind}/${m.metadata.name}`), [], "no other object names the key Secret (no RBAC on Secrets is needed)");
  });
});
