// Ambient mode end to end (emulated: Envoy, the kube-apiserver's Leases, the pod informer): the real
// filter.wasm configured as the waypoints' WasmPlugin serves a waypoint's /stats/prometheus, its
// requests going to two model-server pods on two GPU nodes (and one to an IP no pod holds). Two
// sharded pipeline replicas, each owning one GPU node, scrape it with each node's dcgm-exporter and
// remote-write to a real Prometheus. Checked: each pod's route series carry that pod's GPUs (route
// GPU utilisation equals its GPU's), the unresolved IP's series stay with the waypoint, joined to
// nothing, and every series is written by one replica, each sample once.
// Pods and waypoint listen on their own loopback addresses (127.x.y.z), at the ports Istio and
// dcgm-exporter use; the scrape schedule, membership and batching run on one fake clock.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { startPipeline, withDefaults, type RunningPipeline } from "../../control-plane/src/pipeline/index.js";
import { ClientNodeMemberLeaseApi } from "../../control-plane/src/pipeline/membership.js";
import { clientNodeLeaseReader } from "../../control-plane/src/pipeline/handover.js";
import { ShardAssignment } from "../../control-plane/src/pipeline/sharding.js";
import { InMemoryPodSource } from "../../control-plane/src/scrape/discovery.js";
import { decodeWriteRequestV1 } from "../../control-plane/src/remote-write/protobuf.js";
import { snappyUncompress } from "../../control-plane/src/remote-write/snappy.js";
import { HttpTransport, type Transport } from "../../control-plane/src/remote-write/transport.js";
import { WAYPOINT_WASMPLUGIN } from "../../scripts/manifests.js";
import type { FilterVm } from "../host/index.js";
import { baseRequest, loadFilter } from "../filter/support.js";
import { FakeClock, until } from "../support/fake-clock.js";
import { kubeConfigFor, startKubeEmulator, type KubeEmulator } from "../support/kube-emulator/index.js";
import { PrometheusInstance } from "../support/prometheus.js";
import { ambientPod, waypointPod } from "../support/istio-waypoint.js";
import { manifests, one } from "./support.js";

const INTERVAL_MS = 15_000;
const LEASE_MS = 9_000;
const REPLICAS = ["replica-a", "replica-b"];
// A loopback /16 of this process's own, so ports 15090 and 9400 are free on it.
const NET = `127.${20 + (process.pid % 200)}`;
const WAYPOINT_IP = `${NET}.2.1`;
const UNKNOWN_IP = `${NET}.1.9`;

/** Two GPU node names owned by different replicas, and the waypoint's node (found, not assumed: rendezvous hashing decides). */
function nodes(): { gpu: [string, string]; waypoint: string } {
  const a = new ShardAssignment(REPLICAS, REPLICAS[0]!);
  const owner = (node: string): string => a.ownerOf({ id: node, kind: "envoy", url: "", intervalMs: 1, timeoutMs: 1, node });
  const names = Array.from({ length: 64 }, (_, i) => `gpu-node-${i}`);
  const first = names.find((n) => owner(n) === REPLICAS[0])!;
  const second = names.find((n) => owner(n) === REPLICAS[1])!;
  return { gpu: [first, second], waypoint: "cpu-node-0" };
}
const NODES = nodes();
const PODS = [
  { name: "chat-a", node: NODES.gpu[0], ip: `${NET}.1.1`, gpu: "GPU-aaaa1111-0000-4000-8000-000000000000", util: 71, requests: 3 },
  { name: "chat-b", node: NODES.gpu[1], ip: `${NET}.1.2`, gpu: "GPU-bbbb2222-0000-4000-8000-000000000000", util: 42, requests: 5 },
];

/** dcgm-exporter of one node: its GPU mapped to the pod (Kubernetes pod mapping). */
const dcgmText = (p: (typeof PODS)[number]): string =>
  ["DCGM_FI_DEV_GPU_UTIL gauge", "DCGM_FI_DEV_FB_USED gauge"].map((nt) => {
    const [name] = nt.split(" ");
    return `# TYPE ${nt}\n${name}{gpu="0",UUID="${p.gpu}",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA L4",Hostname="${p.node}",container="vllm",namespace="llm",pod="${p.name}",pod_uid=""} ${name === "DCGM_FI_DEV_GPU_UTIL" ? p.util : 20000}\n`;
  }).join("");

const dcgmPod = (node: string, ip: string): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: `dcgm-${node}`, namespace: "gpu-operator", labels: { "app.kubernetes.io/name": "dcgm-exporter" } },
  spec: { nodeName: node, containers: [{ name: "nvidia-dcgm-exporter", image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04" }] },
  status: { phase: "Running", podIP: ip },
});

let prom: PrometheusInstance;
let emulator: KubeEmulator;
let vm: FilterVm;
const servers: Server[] = [];
const dirs: string[] = [];
const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000 - 5 * 60_000);

async function serve(host: string, port: number, body: () => string): Promise<void> {
  const server = createServer((_req, res) => res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4" }).end(body()));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  servers.push(server);
}

/** `n` chat completions through the waypoint's filter to the pod at `ip`. */
function traffic(ip: string, n: number): void {
  for (let i = 0; i < n; i++) {
    const s = vm.newStream({ routeName: "chat", upstream: { address: `envoy://connect_originate/${ip}:8000`, port: 8000 } });
    s.requestHeaders(baseRequest(), false);
    s.requestBody(JSON.stringify({ model: "llama", messages: [{ role: "user", content: "hi" }] }), true);
    s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
    s.responseBody(JSON.stringify({ model: "llama", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 20 } }), true);
    s.end();
  }
}

before(async () => {
  prom = await PrometheusInstance.start();
  emulator = await startKubeEmulator({ now: () => new Date(clock.now()) });
  vm = await loadFilter({ config: one(manifests(), "WasmPlugin", WAYPOINT_WASMPLUGIN).spec.pluginConfig });
  await serve(WAYPOINT_IP, 15090, () => vm.stats.prometheus());
  for (const [i, p] of PODS.entries()) await serve(`${NET}.3.${i + 1}`, 9400, () => dcgmText(p));
});
after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
  await emulator.close();
  await prom.destroy();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Replica { name: string; pipeline: RunningPipeline; registry: Registry; samples: { series: string; ts: number }[]; stale: { series: string; ts: number }[] }

describe("ambient waypoint stats joined with the destination pods' GPUs (emulated: Envoy, kube-apiserver, pod informer)", () => {
  it("two replicas: each pod's route series carry its own GPUs, written by the replica owning its node, each sample once", async () => {
    const pods: V1Pod[] = [
      waypointPod({ name: "waypoint-6b5d-x", namespace: "llm", gateway: "waypoint", node: NODES.waypoint, ip: WAYPOINT_IP }),
      ...PODS.map((p) => ambientPod({ name: p.name, namespace: "llm", node: p.node, ip: p.ip })),
      ...PODS.map((p, i) => dcgmPod(p.node, `${NET}.3.${i + 1}`)),
    ];
    const kubeConfig = kubeConfigFor(emulator.url, "tokentrace-system");
    const replicas: Replica[] = [];
    const startReplica = async (name: string): Promise<Replica> => {
      const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-ambient-"));
      dirs.push(queueDir);
      const r = { name, registry: new Registry(), samples: [], stale: [] } as unknown as Replica;
      const http = new HttpTransport({ url: prom.writeUrl, timeoutMs: 5000 });
      const transport: Transport = {
        send: async (body, protocol) => {
          for (const s of decodeWriteRequestV1(snappyUncompress(body))) for (const smp of s.samples) (smp.stale === true ? r.stale : r.samples).push({ series: s.labels.join(","), ts: smp.timestampMs });
          return http.send(body, protocol);
        },
      };
      r.pipeline = await startPipeline(
        withDefaults({
          // A scrape timeout near the interval keeps a slot handed back "leaving" on the old owner for
          // almost an interval past the boundary, so a waypoint scrape falls in that window.
          scrape: { intervalMs: INTERVAL_MS, timeoutMs: 14_000, concurrency: 8 },
          remoteWrite: { queueDir, targets: [{ name: "prom", url: prom.writeUrl, batchSendDeadlineMs: 100, minBackoffMs: 10, maxBackoffMs: 100 }] },
          sharding: { enabled: true, identity: name, leaseDurationMs: LEASE_MS },
        }),
        {
          registry: r.registry,
          clock,
          podSource: new InMemoryPodSource(pods),
          transportFor: () => transport,
          memberLeaseApi: new ClientNodeMemberLeaseApi(kubeConfig),
          readMemberLease: clientNodeLeaseReader(kubeConfig, "tokentrace-system", clock, LEASE_MS),
        },
      );
      return r;
    };
    for (const name of REPLICAS) replicas.push(await startReplica(name));
    const period = Math.floor(LEASE_MS / 3);
    // The Lease calls are real HTTP: the fake clock moves a second at a time, each step giving them
    // a real turn to complete, so no replica misses its renew deadline for want of I/O.
    const step = async (ms: number): Promise<void> => {
      for (let done = 0; done < ms; done += 1000) {
        await clock.advance(Math.min(1000, ms - done));
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    for (let i = 0; i < 20 && !replicas.every((r) => r.pipeline.members()?.join() === REPLICAS.join()); i++) {
      await clock.advance(period);
      await until(async () => true, "a turn");
    }
    for (const r of replicas) await until(() => r.pipeline.members()?.join() === REPLICAS.join(), `${r.name} sees both`);
    // Past both replicas' join instants (two periods after the later Lease), every slot has its owner.
    await step(2 * period + INTERVAL_MS);
    // Every member scrapes the waypoint; each scrapes its own node's exporter only.
    for (const r of replicas) assert.ok(r.pipeline.targets().some((t) => t.waypoint), `${r.name} scrapes the waypoint`);

    // Traffic before each of three scrape rounds (the route rates need two scrapes); a round ends
    // when both replicas have taken in their scrape of the waypoint (the only Envoy here).
    const waypointScrapes = async (r: Replica): Promise<number> => {
      const values = (await r.registry.getSingleMetric("tokentrace_scrape_duration_seconds")!.get()).values;
      return values.find((v) => (v as { metricName?: string }).metricName === "tokentrace_scrape_duration_seconds_count" && v.labels.kind === "envoy")?.value ?? 0;
    };
    let sent = 0;
    const rounds = async (n: number, live: Replica[]): Promise<void> => {
      for (let round = 0; round < n; round++) {
        for (const p of PODS) traffic(p.ip, p.requests);
        traffic(UNKNOWN_IP, 1);
        sent++;
        const before = await Promise.all(live.map(waypointScrapes));
        await step(INTERVAL_MS);
        for (const [i, r] of live.entries()) await until(async () => (await waypointScrapes(r)) > before[i]!, `${r.name} scraped the waypoint in round ${round}`);
      }
      const drained = (): boolean => live.every((r) => r.pipeline.writer.targets[0]!.queue.pendingSamples === 0);
      for (let i = 0; i < 100 && !drained(); i++) await step(1000);
      assert.ok(drained(), "queues drained");
    };
    await rounds(3, replicas);
    const t = clock.now() / 1000;

    for (const [i, p] of PODS.entries()) {
      const requests = await prom.query(`tokentrace_requests_total{pod="${p.name}"}`, t);
      assert.deepEqual(requests.map((x) => x.metric), [{
        __name__: "tokentrace_requests_total", route: "chat", status_class: "2xx", namespace: "llm", pod: p.name, waypoint: "llm/waypoint-6b5d-x",
        gpu: "0", gpu_uuid: p.gpu, gpu_model: "NVIDIA L4", hostname: p.node, gpu_count: "1", gpu_attribution: "pod",
      }], `${p.name}'s requests joined with its own GPU`);
      assert.equal(Number(requests[0]!.value![1]), sent * p.requests);
      const util = await prom.query(`tokentrace_pod_gpu_utilization_percent{pod="${p.name}"}`, t);
      assert.deepEqual(util.map((x) => [x.metric.waypoint, x.metric.gpu_uuid, x.value![1]]), [["llm/waypoint-6b5d-x", p.gpu, String(p.util)]], `${p.name}'s GPU utilisation beside its route series is its GPU's`);
      // Written by the replica owning the pod's node only.
      const writers = replicas.filter((r) => r.samples.some((s) => s.series.includes(`pod,${p.name},`)));
      assert.deepEqual(writers.map((r) => r.name), [REPLICAS[i]]);
    }
    // The IP no pod holds: kept with the waypoint's own labels, joined to no GPU, by one replica.
    const unresolved = await prom.query(`tokentrace_requests_total{pod_ip="${UNKNOWN_IP}"}`, t);
    assert.deepEqual(unresolved.map((x) => [x.metric.pod, x.metric.hostname, x.metric.gpu_uuid, x.value![1]]), [["waypoint-6b5d-x", NODES.waypoint, undefined, String(sent)]]);
    const counts = await Promise.all(replicas.map(async (r) => Object.fromEntries((await r.registry.getSingleMetric("tokentrace_join_waypoint_series_total")!.get()).values.map((v) => [v.labels.outcome, v.value]))));
    const perScrape = (pod: string): number => {
      const byTs = new Map<number, number>();
      for (const x of replicas.flatMap((r) => r.samples)) if (x.series.includes(`pod,${pod},`) && x.series.includes(",waypoint,")) byTs.set(x.ts, (byTs.get(x.ts) ?? 0) + 1);
      return Math.max(...byTs.values());
    };
    console.log(`# waypoint series per replica: ${JSON.stringify(counts)}; series per waypoint scrape written for chat-a ${perScrape("chat-a")}, chat-b ${perScrape("chat-b")} (forwarded and derived)`);
    assert.equal(counts.reduce((n, c) => n + (c.unresolved ?? 0), 0) > 0, true, "unresolved series counted");
    assert.ok(counts.every((c) => (c.joined ?? 0) > 0), "each replica joined its node's pod");
    // The waypoint's up, once.
    const up = await prom.query(`up{pod="waypoint-6b5d-x"}`, t);
    assert.equal(up.length, 1);

    // Exactly once: every (series, timestamp) from one replica, once; and Prometheus holds them all.
    const exactlyOnce = async (atSec: number): Promise<Map<string, string>> => {
      const seen = new Map<string, string>();
      for (const r of replicas) {
        for (const x of r.samples) {
          const k = `${x.series}@${x.ts}`;
          assert.equal(seen.get(k), undefined, `${k} written by ${seen.get(k)} and ${r.name}`);
          seen.set(k, r.name);
        }
      }
      // A range selector at an instant answers every raw sample stored in the range.
      const stored = await prom.query(`{__name__=~"tokentrace_.+", pod=~"chat-.*"}[15m]`, atSec);
      const storedSamples = stored.reduce((n, x) => n + (x.values?.length ?? 0), 0);
      const shipped = [...seen.keys()].filter((k) => /,pod,chat-/.test(k) && /__name__,tokentrace_/.test(k)).length;
      console.log(`# samples shipped ${seen.size}, chat-* tokentrace samples shipped ${shipped}, stored in Prometheus ${storedSamples}`);
      assert.equal(storedSamples, shipped);
      return seen;
    };
    await exactlyOnce(t);

    // replica-b stops (deleting its Lease): replica-a takes chat-b's node, and with it chat-b's
    // waypoint series, which go on under the same labels, with no staleness marker, each sample once.
    const [a, b] = replicas as [Replica, Replica];
    // The filter's own series (a derived one may end on its own, when its rate has nothing to divide).
    const forwarded = (series: string): boolean => /^__name__,tokentrace_(llm_)?(requests_total|output_tokens_total|input_tokens_total|ttft_ms_\w+|duration_ms_\w+),/.test(series);
    const stoppedAt = clock.now();
    const stopping = b.pipeline.stop();
    await step(6000);
    await stopping;
    for (let i = 0; i < 20 && a.pipeline.members()?.join() !== "replica-a"; i++) await step(period);
    assert.equal(a.pipeline.members()?.join(), "replica-a");
    await rounds(3, [a]);
    const t2 = clock.now() / 1000;
    const chatB = PODS[1]!;
    const after = await prom.query(`tokentrace_requests_total{pod="${chatB.name}"}`, t2);
    assert.deepEqual(after.map((x) => [x.metric.gpu_uuid, x.metric.hostname, x.metric.waypoint, x.value![1]]), [[chatB.gpu, chatB.node, "llm/waypoint-6b5d-x", String(sent * chatB.requests)]], "chat-b's series go on, joined with its GPU, from replica-a");
    assert.ok(a.samples.some((x) => x.series.includes(`pod,${chatB.name},`) && x.ts > stoppedAt), "replica-a writes chat-b's series after the hand-over");
    for (const r of replicas) assert.ok(!r.stale.some((x) => forwarded(x.series) && x.series.includes(`pod,${chatB.name},`)), `${r.name} never ended chat-b's series`);
    await exactlyOnce(t2);

    // replica-b comes back: replica-a hands chat-b's node back at the instant both read from
    // replica-b's new Lease, so chat-b's waypoint series pass from one to the other at one waypoint
    // scrape: replica-a's last sample one interval before replica-b's first, none twice, none ended.
    const returned = await startReplica("replica-b");
    replicas.push(returned);
    for (let i = 0; i < 20 && ![a, returned].every((r) => r.pipeline.members()?.join() === REPLICAS.join()); i++) await step(period);
    for (const r of [a, returned]) assert.equal(r.pipeline.members()?.join(), REPLICAS.join(), `${r.name} sees both`);
    await step(2 * period + INTERVAL_MS);
    await rounds(3, [a, returned]);
    const t3 = clock.now() / 1000;
    const series = (r: Replica): number[] => r.samples.filter((x) => x.series.startsWith("__name__,tokentrace_requests_total,") && x.series.includes(`pod,${chatB.name},`)).map((x) => x.ts);
    const lastOfA = Math.max(...series(a));
    const firstOfB = Math.min(...series(returned));
    assert.equal(firstOfB - lastOfA, INTERVAL_MS, "handed back at a waypoint scrape boundary");
    for (const r of replicas) assert.ok(!r.stale.some((x) => forwarded(x.series) && x.series.includes(`pod,${chatB.name},`)), `${r.name} never ended chat-b's series`);
    const back = await prom.query(`tokentrace_requests_total{pod="${chatB.name}"}`, t3);
    assert.deepEqual(back.map((x) => [x.metric.gpu_uuid, x.value![1]]), [[chatB.gpu, String(sent * chatB.requests)]]);
    await exactlyOnce(t3);
    for (const r of [a, returned]) {
      const s = r.pipeline.stop();
      await step(6000);
      await s;
    }
  });
});
