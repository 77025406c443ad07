// Discovery in ambient mode: a waypoint's pod, as Istio deploys it (test/support/istio-waypoint.ts),
// is scraped on Envoy's :15090 and marked as a waypoint; every Running pod's IP resolves to it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { PodIpIndex } from "../../../control-plane/src/scrape/pod-ips.js";
import { KubernetesPodSource, PodTargetDiscovery } from "../../../control-plane/src/scrape/discovery.js";
import { systemClock } from "../../../control-plane/src/remote-write/retry.js";
import { kubeConfigFor, startKubeEmulator } from "../../support/kube-emulator/index.js";
import { until } from "../../support/fake-clock.js";
import { targetsForPod, type PodTargetRules } from "../../../control-plane/src/scrape/targets.js";
import { ambientPod, waypointPod } from "../../support/istio-waypoint.js";

const RULES: PodTargetRules = { envoy: true, dcgm: true, vllm: true, intervalMs: 15000, timeoutMs: 5000 };
const WAYPOINT = waypointPod({ name: "waypoint-7c9f-x", namespace: "llm", gateway: "waypoint", node: "cpu-0", ip: "10.0.9.1" });

describe("waypoint discovery (emulated: Istio's waypoint deployment)", () => {
  it("scrapes a waypoint's Envoy on :15090 (not pilot-agent's merged 15020) and marks it a waypoint", () => {
    assert.deepEqual(targetsForPod(WAYPOINT, RULES), [{
      id: "envoy|http://10.0.9.1:15090/stats/prometheus|llm/waypoint-7c9f-x", kind: "envoy", url: "http://10.0.9.1:15090/stats/prometheus",
      intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "waypoint-7c9f-x", node: "cpu-0", waypoint: true,
    }]);
  });

  it("gives an ambient workload (no sidecar) no Envoy target, and a sidecar is no waypoint", () => {
    assert.deepEqual(targetsForPod(ambientPod({ name: "chat-a", namespace: "llm", node: "gpu-1", ip: "10.0.1.1" }), RULES), []);
    const sidecar: V1Pod = { metadata: { name: "chat", namespace: "llm" }, spec: { nodeName: "gpu-1", containers: [{ name: "istio-proxy" }] }, status: { phase: "Running", podIP: "10.0.1.2" } };
    assert.equal(targetsForPod(sidecar, RULES)[0]!.waypoint, undefined);
  });

  it("through the pod informer (emulated kube-apiserver): the waypoint becomes a target, the ambient pod only an IP, gone when deleted", async () => {
    const emu = await startKubeEmulator();
    const kc = kubeConfigFor(emu.url);
    const api = kc.makeApiClient(CoreV1Api);
    await api.createNamespacedPod({ namespace: "llm", body: WAYPOINT });
    await api.createNamespacedPod({ namespace: "llm", body: ambientPod({ name: "chat-a", namespace: "llm", node: "gpu-1", ip: "10.0.1.1" }) });
    let targets: string[] = [];
    const discovery = new PodTargetDiscovery(RULES, (t) => (targets = t.map((x) => `${x.id}${x.waypoint ? " waypoint" : ""}`)));
    const src = new KubernetesPodSource({ kubeConfig: kc, clock: systemClock, minBackoffMs: 20, maxBackoffMs: 200 });
    await src.start(discovery);
    await until(() => targets.length === 1 && discovery.podIps.size === 2, "listed pods");
    assert.deepEqual(targets, ["envoy|http://10.0.9.1:15090/stats/prometheus|llm/waypoint-7c9f-x waypoint"]);
    assert.deepEqual(discovery.podIps.resolve("10.0.1.1"), { namespace: "llm", pod: "chat-a", node: "gpu-1" });
    await api.deleteNamespacedPod({ name: "chat-a", namespace: "llm" });
    await until(() => discovery.podIps.resolve("10.0.1.1") === undefined, "watched delete");
    await src.stop();
    await emu.close();
  });

  it("discovery resolves every Running pod's IP, scraped or not, and forgets a deleted one", () => {
    const discovery = new PodTargetDiscovery(RULES, () => undefined);
    const a = ambientPod({ name: "chat-a", namespace: "llm", node: "gpu-1", ip: "10.0.1.1" });
    discovery.upsert(a);
    discovery.upsert(WAYPOINT);
    assert.deepEqual(discovery.podIps.resolve("10.0.1.1"), { namespace: "llm", pod: "chat-a", node: "gpu-1" });
    discovery.remove(a);
    assert.equal(discovery.podIps.resolve("10.0.1.1"), undefined);
  });
});

describe("pod IP index", () => {
  const pod = (name: string, ip: string, over: Partial<{ phase: string; hostNetwork: boolean; ips: string[]; deleting: boolean }> = {}): V1Pod => ({
    metadata: { name, namespace: "llm", ...(over.deleting ? { deletionTimestamp: new Date(0) } : {}) },
    spec: { nodeName: "gpu-1", containers: [], ...(over.hostNetwork ? { hostNetwork: true } : {}) },
    status: { phase: over.phase ?? "Running", podIP: ip, ...(over.ips ? { podIPs: over.ips.map((i) => ({ ip: i })) } : {}) },
  });
  const cases: { name: string; pods: V1Pod[]; ip: string; expect: string | undefined }[] = [
    { name: "a Running pod's IP resolves to it", pods: [pod("a", "10.0.0.1")], ip: "10.0.0.1", expect: "a" },
    { name: "a dual-stack pod resolves by either IP", pods: [pod("a", "10.0.0.1", { ips: ["10.0.0.1", "fd00::1"] })], ip: "fd00::1", expect: "a" },
    { name: "a Pending pod does not", pods: [pod("a", "10.0.0.1", { phase: "Pending" })], ip: "10.0.0.1", expect: undefined },
    { name: "a terminating pod does not", pods: [pod("a", "10.0.0.1", { deleting: true })], ip: "10.0.0.1", expect: undefined },
    { name: "a host-network pod does not (its IP is its node's)", pods: [pod("a", "10.0.0.1", { hostNetwork: true })], ip: "10.0.0.1", expect: undefined },
    { name: "an IP two pods claim resolves to neither", pods: [pod("a", "10.0.0.1"), pod("b", "10.0.0.1")], ip: "10.0.0.1", expect: undefined },
    { name: "a pod whose IP changed resolves by the new one only", pods: [pod("a", "10.0.0.1"), pod("a", "10.0.0.2")], ip: "10.0.0.1", expect: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const index = new PodIpIndex();
      for (const p of c.pods) index.upsert(p);
      assert.equal(index.resolve(c.ip)?.pod, c.expect);
    });
  }
});
