// Engine metrics under a STRICT PeerAuthentication. The model server's pod is injected by the
// emulated sidecar injector (metrics merging on, as Istio's default mesh config has it), its
// engine port sits behind an emulated STRICT inbound capture that refuses plaintext, and
// pilot-agent's status port serves the merged answer (test/support/istio-agent-metrics.ts). vLLM
// itself is a real HTTP server on 127.0.0.1 serving a fixture; the pipeline runs whole, on a fake clock.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { startPipeline, withDefaults } from "../../../control-plane/src/pipeline/index.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import { scrapeOnce } from "../../../control-plane/src/scrape/scraper.js";
import { InMemoryPodSource } from "../../../control-plane/src/scrape/discovery.js";
import { istioMetricsMerge, targetsForPod, VLLM_PORT_ANNOTATION, type PodTargetRules } from "../../../control-plane/src/scrape/targets.js";
import { systemClock } from "../../../control-plane/src/remote-write/retry.js";
import { fixture } from "../../support/engine-scrapes.js";
import { FakeClock, until } from "../../support/fake-clock.js";
import { injectSidecar, prometheusAnnotationsOf, startInboundPort, startPilotAgent, type EnvoyStat, type MtlsMode, type PilotAgent } from "../../support/istio-agent-metrics.js";

const VLLM = fixture("vllm-chat.prom");
const ENGINE_NAMES = [...new Set(VLLM.split("\n").filter((l) => l !== "" && !l.startsWith("#")).map((l) => l.split(/[{ ]/)[0]!))].sort();
/** Envoy's stats as a sidecar with the filter prints them: Envoy's own, Istio's, and the filter's Wasm stats. */
const ENVOY: EnvoyStat[] = [
  { name: "cluster.inbound|8000||.upstream_rq_total", text: '# TYPE envoy_cluster_upstream_rq_total counter\nenvoy_cluster_upstream_rq_total{cluster_name="inbound|8000||"} 412\n' },
  { name: "istio_requests_total", text: '# TYPE istio_requests_total counter\nistio_requests_total{reporter="destination",response_code="200"} 400\n' },
  { name: "wasmcustom.route=.=chat;.;status_class=.=2xx;.;tokentrace_requests_total", text: '# TYPE tokentrace_requests_total counter\ntokentrace_requests_total{route="chat",status_class="2xx"} 400\n' },
];

const closers: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

/** A model server pod as its Deployment writes it: scraped by Prometheus on its engine port, opted into tokentrace. */
function modelServerPod(enginePort: number, extra: Record<string, string> = {}): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "chat-7d9f-abcde", namespace: "llm", annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": String(enginePort), [VLLM_PORT_ANNOTATION]: String(enginePort), ...extra } },
    spec: { nodeName: "gpu-node-a", containers: [{ name: "vllm", image: "vllm/vllm-openai:v0.11.0" }] },
    status: { phase: "Running", podIP: "127.0.0.1" },
  };
}

interface MeshPod {
  pod: V1Pod;
  agent: PilotAgent;
  inbound: { port: number; noFilterChainMatch: number };
  app: { served: number; up: boolean };
}

/** vLLM on its own port, the sidecar's capture of the engine port in `mode`, pilot-agent, and the injected pod. */
async function meshPod(mode: MtlsMode, agentOptions: { forwardsQuery?: boolean } = {}): Promise<MeshPod> {
  const app = { served: 0, up: true };
  const server: Server = createServer((_req, res) => {
    if (!app.up) return void res.writeHead(503).end();
    app.served += 1;
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(VLLM);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const appAddress = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const inbound = await startInboundPort(mode, () => appAddress);
  const agent = await startPilotAgent({ envoyStats: () => ENVOY, localhost: (port) => (port === String(inbound.port) ? appAddress : `127.0.0.1:1`), ...agentOptions });
  const pod = injectSidecar(modelServerPod(inbound.port), { statusPort: agent.port });
  agent.configure(prometheusAnnotationsOf(pod));
  closers.push(() => agent.close(), () => inbound.close(), () => new Promise<void>((r) => server.close(() => r())));
  return { pod, agent, inbound, app };
}

const RULES: PodTargetRules = { envoy: false, dcgm: false, vllm: true, intervalMs: 15_000, timeoutMs: 5_000 };
const namesOf = (r: ScrapeResult): string[] => [...new Set(r.samples.map((s) => s.name))].sort();

describe("engine metrics under STRICT mTLS (emulated: sidecar injector, STRICT inbound capture, pilot-agent; vLLM real)", () => {
  it("emulated: the engine port refuses a plaintext scrape, and the pipeline reads vLLM through pilot-agent's merged endpoint instead", async () => {
    const m = await meshPod("STRICT");
    // The control: what scraping the engine port directly (the old target) meets under STRICT.
    const direct = await scrapeOnce({ id: "direct", kind: "vllm", url: `http://127.0.0.1:${m.inbound.port}/metrics`, intervalMs: 15_000, timeoutMs: 5_000 }, systemClock);
    assert.deepEqual([direct.ok, direct.error, m.inbound.noFilterChainMatch], [false, "network", 1]);

    const queueDir = mkdtempSync(join(tmpdir(), "tt-strict-"));
    closers.push(() => rmSync(queueDir, { recursive: true, force: true }));
    const clock = new FakeClock(Date.now());
    const results: ScrapeResult[] = [];
    const p = await startPipeline(withDefaults({ scrape: { spreadStart: false, kubernetes: { enabled: false, envoy: false, dcgm: false, vllm: true } }, remoteWrite: { queueDir, targets: [] } }), {
      registry: new Registry(),
      clock,
      podSource: new InMemoryPodSource([m.pod]),
      onBatch: (_series, r) => results.push(r),
    });
    closers.push(() => p.stop());
    await until(() => results.length > 0, "the engine scraped");
    const [r] = results;
    assert.equal(r!.target.url, `http://127.0.0.1:${m.agent.port}/stats/prometheus`);
    assert.deepEqual([r!.ok, r!.error], [true, undefined]);
    // Exactly the engine's series: none of the agent's, Envoy's or the filter's from the merged answer.
    assert.deepEqual(namesOf(r!), ENGINE_NAMES);
    assert.deepEqual([...r!.families.keys()].every((f) => f.startsWith("vllm:")), true);
    assert.equal(m.app.served, 1, "the agent read vLLM once");
    assert.equal(m.inbound.noFilterChainMatch, 1, "the pipeline never dialled the captured port");
  });

  it("emulated: Envoy is asked for none of its stats, and from an agent that drops the query (Istio < 1.24) its stats and the agent's are set apart", async () => {
    for (const forwardsQuery of [true, false]) {
      const m = await meshPod("STRICT", { forwardsQuery });
      const [target] = targetsForPod(m.pod, RULES);
      assert.equal(target?.merged, true);
      const r = await scrapeOnce(target!, systemClock);
      assert.deepEqual(m.agent.envoyQueries, [forwardsQuery ? "filter=%5E%24" : ""]);
      assert.deepEqual([r.ok, namesOf(r)], [true, ENGINE_NAMES], `forwardsQuery ${forwardsQuery}`);
    }
  });

  it("emulated: an engine pilot-agent cannot read is down, though the merged endpoint answers 200", async () => {
    const m = await meshPod("STRICT");
    m.app.up = false;
    const [target] = targetsForPod(m.pod, RULES);
    const r = await scrapeOnce(target!, systemClock);
    assert.deepEqual([r.ok, r.error, r.samples.length, m.agent.failures.application], [false, "app_unavailable", 0, 1]);
  });

  it("emulated: under PERMISSIVE the capture passes plaintext, and the pipeline still uses the merged endpoint", async () => {
    const m = await meshPod("PERMISSIVE");
    const direct = await scrapeOnce({ id: "direct", kind: "vllm", url: `http://127.0.0.1:${m.inbound.port}/metrics`, intervalMs: 15_000, timeoutMs: 5_000 }, systemClock);
    assert.equal(direct.ok, true);
    assert.deepEqual(targetsForPod(m.pod, RULES).map((t) => [t.url, t.merged]), [[`http://127.0.0.1:${m.agent.port}/stats/prometheus`, true]]);
  });
});

describe("which engine ports go through metrics merging", () => {
  const injected = (annotations: Record<string, string>, statusPort = 15020): V1Pod => injectSidecar({ ...modelServerPod(8000), metadata: { name: "p", namespace: "llm", annotations } }, { statusPort });
  const urls = (pod: V1Pod): string[] => targetsForPod(pod, RULES).map((t) => `${t.url}${t.merged ? " (merged)" : ""}`).sort();
  const cases: [string, V1Pod, string[]][] = [
    ["the engine port is the pod's prometheus.io/port: merged", injected({ "prometheus.io/port": "8000", [VLLM_PORT_ANNOTATION]: "8000" }), ["http://127.0.0.1:15020/stats/prometheus (merged)"]],
    ["no prometheus.io/port: the agent reads port 80, so engine port 8000 is scraped directly", injected({ [VLLM_PORT_ANNOTATION]: "8000" }), ["http://127.0.0.1:8000/metrics"]],
    ["two engines listed in prometheus.istio.io/scrape-targets: one merged scrape for both", injected({ "prometheus.istio.io/scrape-targets": "8000:/metrics,8001", [VLLM_PORT_ANNOTATION]: "8000,8001" }), ["http://127.0.0.1:15020/stats/prometheus (merged)"]],
    ["one engine merged, one not", injected({ "prometheus.io/port": "8000", [VLLM_PORT_ANNOTATION]: "8000,8001" }), ["http://127.0.0.1:15020/stats/prometheus (merged)", "http://127.0.0.1:8001/metrics"]],
    ["a mesh with another status port: the rewritten annotation says where", injected({ "prometheus.io/port": "8000", [VLLM_PORT_ANNOTATION]: "8000" }, 15999), ["http://127.0.0.1:15999/stats/prometheus (merged)"]],
    ["merging turned off for the pod: direct", injected({ "prometheus.io/port": "8000", "prometheus.istio.io/merge-metrics": "false", [VLLM_PORT_ANNOTATION]: "8000" }), ["http://127.0.0.1:8000/metrics"]],
    ["prometheus.io/scrape false: the injector leaves the annotations, direct", injected({ "prometheus.io/scrape": "false", "prometheus.io/port": "8000", [VLLM_PORT_ANNOTATION]: "8000" }), ["http://127.0.0.1:8000/metrics"]],
  ];
  for (const [name, pod, expected] of cases) it(name, () => assert.deepEqual(urls(pod), expected));

  it("reads ISTIO_PROMETHEUS_ANNOTATIONS only when it is small and well formed", () => {
    const pod = injected({ "prometheus.io/port": "8000", [VLLM_PORT_ANNOTATION]: "8000" });
    const env = pod.spec!.containers.find((c) => c.name === "istio-proxy")!.env!;
    assert.deepEqual(env, [{ name: "ISTIO_PROMETHEUS_ANNOTATIONS", value: '{"scrape":"","path":"","port":"8000"}' }]);
    assert.deepEqual(istioMetricsMerge(pod), { port: 15020, path: "/stats/prometheus", appPorts: new Set([8000]) });
    for (const value of ["{", "null", `{"port":"8000","pad":"${"x".repeat(5000)}"}`]) {
      env[0]!.value = value;
      assert.equal(istioMetricsMerge(pod), undefined, value.slice(0, 20));
    }
  });

  it("emulated injector: refuses an Istio port as the application's, as the webhook does", () => {
    assert.throws(() => injected({ "prometheus.io/port": "15090" }), /port 15090 is reserved for Istio \(Envoy Prometheus \(already merged\)\)/);
    assert.throws(() => injected({ "prometheus.istio.io/scrape-targets": "8000,15999" }, 15999), /target port 15999 conflicts with agent port/);
  });
});
