import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { targetsForPod, staticTargets, type PodTargetRules, type ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { InMemoryPodSource, KubernetesPodSource, PodTargetDiscovery } from "../../../control-plane/src/scrape/discovery.js";
import { systemClock } from "../../../control-plane/src/remote-write/retry.js";
import { startKubeEmulator, kubeConfigFor } from "../../support/kube-emulator/index.js";
import { until } from "../../support/fake-clock.js";

const RULES: PodTargetRules = { envoy: true, dcgm: true, vllm: true, intervalMs: 15000, timeoutMs: 5000 };

function pod(name: string, over: { labels?: Record<string, string>; annotations?: Record<string, string>; containers?: string[]; initContainers?: string[]; phase?: string; ip?: string; ns?: string } = {}): V1Pod {
  const p: V1Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: over.ns ?? "llm", labels: over.labels ?? {}, annotations: over.annotations ?? {} },
    spec: { nodeName: "gpu-node-a", containers: (over.containers ?? ["app"]).map((n) => ({ name: n, image: "img" })) },
    status: { phase: over.phase ?? "Running", podIP: over.ip ?? "10.1.2.3" },
  };
  if (over.initContainers) p.spec!.initContainers = over.initContainers.map((n) => ({ name: n, image: "img", restartPolicy: "Always" }));
  return p;
}

const ids = (ts: ScrapeTarget[]): string[] => ts.map((t) => `${t.id} ${t.url}`).sort();

describe("scrape targets from pods", () => {
  const cases: { name: string; pod: V1Pod; expect: string[] }[] = [
    { name: "a pod with an istio-proxy container gets its sidecar scraped on :15090", pod: pod("chat", { containers: ["vllm", "istio-proxy"] }), expect: ["envoy|http://10.1.2.3:15090/stats/prometheus|llm/chat http://10.1.2.3:15090/stats/prometheus"] },
    { name: "a native sidecar (istio-proxy init container) counts as a sidecar", pod: pod("chat", { initContainers: ["istio-proxy"] }), expect: ["envoy|http://10.1.2.3:15090/stats/prometheus|llm/chat http://10.1.2.3:15090/stats/prometheus"] },
    { name: "the sidecar.istio.io/status annotation counts as a sidecar", pod: pod("chat", { annotations: { "sidecar.istio.io/status": "{}" } }), expect: ["envoy|http://10.1.2.3:15090/stats/prometheus|llm/chat http://10.1.2.3:15090/stats/prometheus"] },
    { name: "a dcgm-exporter pod is scraped on :9400", pod: pod("dcgm-x", { ns: "gpu-operator", labels: { app: "nvidia-dcgm-exporter" } }), expect: ["dcgm|http://10.1.2.3:9400/metrics|gpu-operator/dcgm-x http://10.1.2.3:9400/metrics"] },
    { name: "a model server annotated with its vLLM port is scraped there too", pod: pod("chat", { containers: ["istio-proxy"], annotations: { "tokentrace.io/vllm-metrics-port": "8000" } }), expect: ["envoy|http://10.1.2.3:15090/stats/prometheus|llm/chat http://10.1.2.3:15090/stats/prometheus", "vllm|http://10.1.2.3:8000/metrics|llm/chat http://10.1.2.3:8000/metrics"] },
    { name: "an IPv6 pod IP is bracketed", pod: pod("v6", { containers: ["istio-proxy"], ip: "fd00::5" }), expect: ["envoy|http://[fd00::5]:15090/stats/prometheus|llm/v6 http://[fd00::5]:15090/stats/prometheus"] },
    { name: "a pending pod has no targets", pod: pod("chat", { containers: ["istio-proxy"], phase: "Pending" }), expect: [] },
    { name: "a pod without sidecar, exporter or annotation has no targets", pod: pod("plain"), expect: [] },
    { name: "a pod running two model servers (one per model) lists both ports: one engine target each", pod: pod("chat", { annotations: { "tokentrace.io/vllm-metrics-port": "8000,8001" } }), expect: ["vllm|http://10.1.2.3:8000/metrics|llm/chat http://10.1.2.3:8000/metrics", "vllm|http://10.1.2.3:8001/metrics|llm/chat http://10.1.2.3:8001/metrics"] },
    { name: "a port list with a bad entry is ignored whole", pod: pod("chat", { annotations: { "tokentrace.io/vllm-metrics-port": "8000,http" } }), expect: [] },
    { name: "a bad vLLM port annotation is ignored", pod: pod("chat", { annotations: { "tokentrace.io/vllm-metrics-port": "http" } }), expect: [] },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(ids(targetsForPod(c.pod, RULES)), c.expect));

  it("carries the pod, namespace and node on discovered targets and fills static defaults", () => {
    const [t] = targetsForPod(pod("chat", { containers: ["istio-proxy"] }), RULES);
    assert.deepEqual(t, { id: "envoy|http://10.1.2.3:15090/stats/prometheus|llm/chat", kind: "envoy", url: "http://10.1.2.3:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: "llm", pod: "chat", node: "gpu-node-a" });
    assert.deepEqual(staticTargets([{ url: "http://h:1/m", kind: "dcgm", intervalMs: 2000 }], { intervalMs: 15000, timeoutMs: 5000 }), [{ id: "dcgm|http://h:1/m|/", kind: "dcgm", url: "http://h:1/m", intervalMs: 2000, timeoutMs: 5000 }]);
  });

  it("follows pod adds, updates and deletes from an in-memory source", async () => {
    const seen: string[][] = [];
    const src = new InMemoryPodSource([pod("a", { containers: ["istio-proxy"] })]);
    const d = new PodTargetDiscovery(RULES, (t) => seen.push(ids(t)));
    await src.start(d);
    src.upsert(pod("a", { containers: ["istio-proxy"], ip: "10.9.9.9" }));
    src.upsert(pod("a", { containers: ["istio-proxy"], ip: "10.9.9.9" })); // no change, no report
    src.remove(pod("a"));
    assert.deepEqual(seen, [["envoy|http://10.1.2.3:15090/stats/prometheus|llm/a http://10.1.2.3:15090/stats/prometheus"], ["envoy|http://10.9.9.9:15090/stats/prometheus|llm/a http://10.9.9.9:15090/stats/prometheus"], []]);
  });
});

describe("pod discovery through @kubernetes/client-node against the emulated kube-apiserver", () => {
  it("lists, then watches adds, status updates and deletes, and recovers after the watch is cut (emulated)", async () => {
    const emu = await startKubeEmulator();
    const kc = kubeConfigFor(emu.url, "llm");
    const api = kc.makeApiClient(CoreV1Api);
    await api.createNamespacedPod({ namespace: "llm", body: pod("chat", { containers: ["vllm", "istio-proxy"] }) });
    let current: string[] = [];
    const src = new KubernetesPodSource({ kubeConfig: kc, clock: systemClock, minBackoffMs: 20, maxBackoffMs: 200 });
    await src.start(new PodTargetDiscovery(RULES, (t) => (current = ids(t))));
    await until(() => current.length === 1, "listed pod");
    assert.deepEqual(current, ["envoy|http://10.1.2.3:15090/stats/prometheus|llm/chat http://10.1.2.3:15090/stats/prometheus"]);

    await api.createNamespacedPod({ namespace: "gpu-operator", body: pod("dcgm-a", { ns: "gpu-operator", labels: { "app.kubernetes.io/name": "dcgm-exporter" }, ip: "10.1.0.9" }) });
    await until(() => current.length === 2, "watched add");
    const chat = (await api.readNamespacedPod({ name: "chat", namespace: "llm" })) as V1Pod;
    chat.status = { phase: "Running", podIP: "10.7.7.7" };
    await api.replaceNamespacedPod({ name: "chat", namespace: "llm", body: chat });
    await until(() => current.includes("envoy|http://10.7.7.7:15090/stats/prometheus|llm/chat http://10.7.7.7:15090/stats/prometheus"), "watched update");

    emu.closeWatches();
    await api.deleteNamespacedPod({ name: "dcgm-a", namespace: "gpu-operator" });
    await until(() => current.length === 1, "delete seen after the watch was re-established");
    assert.deepEqual(current, ["envoy|http://10.7.7.7:15090/stats/prometheus|llm/chat http://10.7.7.7:15090/stats/prometheus"]);
    await src.stop();
    await emu.close();
  });

  it("keeps discovering after the API is down for a while and after 410 Gone (emulated)", async () => {
    const emu = await startKubeEmulator();
    const kc = kubeConfigFor(emu.url, "llm");
    const api = kc.makeApiClient(CoreV1Api);
    await api.createNamespacedPod({ namespace: "llm", body: pod("a", { containers: ["istio-proxy"] }) });
    let current: string[] = [];
    const errors: unknown[] = [];
    const src = new KubernetesPodSource({ kubeConfig: kc, clock: systemClock, minBackoffMs: 20, maxBackoffMs: 100, onError: (e) => errors.push(e) });
    await src.start(new PodTargetDiscovery(RULES, (t) => (current = ids(t))));
    await until(() => current.length === 1, "listed");
    emu.setAvailable(false); // 503 to everything, watches cut
    await until(() => errors.length > 0, "the informer saw the outage");
    emu.setAvailable(true);
    await api.createNamespacedPod({ namespace: "llm", body: pod("b", { containers: ["istio-proxy"], ip: "10.1.2.4" }) });
    await until(() => current.length === 2, "pod created after the outage");
    // History compacted: a watch resuming from an old resourceVersion gets 410 Gone and must re-list.
    emu.compact();
    emu.closeWatches();
    await api.deleteNamespacedPod({ name: "a", namespace: "llm" });
    await until(() => current.length === 1, "delete seen after 410 and re-list");
    assert.deepEqual(current, ["envoy|http://10.1.2.4:15090/stats/prometheus|llm/b http://10.1.2.4:15090/stats/prometheus"]);
    await src.stop();
    await emu.close();
  });
});
