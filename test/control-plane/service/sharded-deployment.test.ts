// The shipped istio/base as a two-replica StatefulSet: two control planes started from the
// ConfigMap's config.yaml with the StatefulSet's environment (Downward API values as the kubelet
// fills them in), against the emulated kube-apiserver enforcing istio/base/rbac.yaml for the
// control plane's ServiceAccount, discovering vLLM pods and remote-writing to a real Prometheus.
// Each pod keeps its queue directory across restarts, as its volume claim does.
// Each pod's server counts the scrapes it answers and serves the count, so Prometheus must hold
// exactly the values 1..n of each pod, one per scrape interval: a sample lost, written twice or
// scraped by both replicas breaks the sequence. The replicas are two instances in this process
// (as kubernetes-replicas.ts), every timer of theirs on one fake clock; scrapes, the API server and
// Prometheus are real HTTP on 127.0.0.1. Under the same RBAC, a policy written through the REST API
// becomes a SamplingPolicy, the leader's WasmPlugin and status, and history, and a deletion undoes it.
// A rolling restart of both replicas is measured: how long a pod goes unscheduled, and the gaps
// between its samples (reported with the test's diagnostics).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { loadConfig } from "../../../control-plane/src/config.js";
import { startControlPlane, type RunningControlPlane } from "../../../control-plane/src/main.js";
import { memberLeaseName } from "../../../control-plane/src/pipeline/membership.js";
import { VLLM_PORT_ANNOTATION } from "../../../control-plane/src/scrape/targets.js";
import { manifests, one, type Manifest } from "../../istio/support.js";
import { kubeConfigFor, RbacAuthorizer, startKubeEmulator, wasmPluginsResource, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { ManualTicker } from "../../support/manual-ticker.js";
import { PrometheusInstance } from "../../support/prometheus.js";
import { FakeClock, until } from "../../support/fake-clock.js";
import { applyCrd, kube } from "../k8s/kubernetes-replicas.js";
import { call, samplePolicy } from "../helpers.js";

const NAMESPACE = "tokentrace-system";
const SERVICE_ACCOUNT_TOKEN = "tokentrace-control-plane-sa-token";
const ADMIN_TOKEN = "0123456789abcdef0123";
const NODES = 6;
const PODS_PER_NODE = 2;
const METRIC = "vllm:num_requests_running";
/** From SIGTERM's end to the new pod's process start: the controller recreates it, the kubelet starts it. */
const RESTART_MS = 3000;

interface Pod { name: string; node: string; server: Server; served: number }
interface Replica { podName: string; running: RunningControlPlane; logs: object[] }

const all: Manifest[] = manifests();
const statefulSet = one(all, "StatefulSet", "tokentrace-control-plane");
const configMap = one(all, "ConfigMap", "tokentrace-control-plane");
const envConfigMap = one(all, "ConfigMap", "tokentrace-control-plane-env");
const container = statefulSet.spec.template.spec.containers[0];
/** The StatefulSet's pods: <name>-<ordinal>. */
const POD_NAMES = Array.from({ length: statefulSet.spec.replicas as number }, (_, i) => `${statefulSet.metadata.name}-${i}`);

let emulator: KubeEmulator;
let prom: PrometheusInstance;
const pods: Pod[] = [];
/** Replicas still running (stopped in `after` when an assertion ended the test early). */
const live = new Set<Replica>();
// Whole seconds, ten minutes back: inside the TSDB head's window for the whole run.
const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000 - 10 * 60_000);
const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "tt-sharded-"));
  dirs.push(d);
  return d;
};

before(async () => {
  // RBAC exactly as shipped, for the user a pod of the StatefulSet's ServiceAccount is.
  const rbac = all.filter((m) => ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"].includes(m.kind));
  const user = `system:serviceaccount:${NAMESPACE}:${statefulSet.spec.template.spec.serviceAccountName as string}`;
  // The API server's clock is the replicas' (creationTimestamp is what hand-overs are timed from).
  emulator = await startKubeEmulator({ rbac: { authorizer: new RbacAuthorizer(rbac), users: new Map([[SERVICE_ACCOUNT_TOKEN, user]]) }, now: () => new Date(clock.now()) });
  await applyCrd(emulator);
  prom = await PrometheusInstance.start();
  for (let n = 0; n < NODES; n++) {
    for (let p = 0; p < PODS_PER_NODE; p++) {
      const pod: Pod = { name: `vllm-${n}-${p}`, node: `node-${n}`, served: 0, server: undefined as unknown as Server };
      pod.server = createServer((req, res) => {
        // The counter counts scrapes of /metrics only: the pipeline also asks vLLM for its model
        // list (/v1/models, for LoRA adapters' base models), which this server does not serve.
        if (req.url !== "/metrics") return void res.writeHead(404).end();
        pod.served += 1;
        res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4" }).end(`${METRIC}{model_name="m"} ${pod.served}\n`);
      });
      await new Promise<void>((r) => pod.server.listen(0, "127.0.0.1", r));
      const port = (pod.server.address() as AddressInfo).port;
      const created = await kube(emulator, "POST", "/api/v1/namespaces/llm/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: pod.name, namespace: "llm", annotations: { [VLLM_PORT_ANNOTATION]: String(port) } },
        spec: { nodeName: pod.node, containers: [{ name: "vllm", image: "vllm/vllm-openai:v0.11.0" }] },
        status: { phase: "Running", podIP: "127.0.0.1" },
      });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      pods.push(pod);
    }
  }
});

/** Stops every replica still running (one an assertion left behind must not scrape into the next test). */
async function stopLive(): Promise<void> {
  // Their stop waits on the fake clock (the bounded remote-write flush).
  for (const r of [...live]) {
    live.delete(r);
    const stopping = r.running.stop();
    await run(6000);
    await stopping;
  }
}

after(async () => {
  await stopLive();
  for (const pod of pods) {
    pod.server.closeAllConnections();
    await new Promise<void>((r) => pod.server.close(() => r()));
  }
  await prom.destroy();
  await emulator.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The StatefulSet's environment for a pod, as the kubelet resolves it (fieldRef and secretKeyRef). */
function podEnv(podName: string): Record<string, string> {
  const env: Record<string, string> = { ...(envConfigMap.data as Record<string, string>) };
  for (const e of container.env as Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { key: string } } }>) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (field === "metadata.name") env[e.name] = podName;
    else if (field === "metadata.namespace") env[e.name] = NAMESPACE;
    else if (e.valueFrom?.secretKeyRef !== undefined) env[e.name] = `admin:${ADMIN_TOKEN}`;
    else assert.fail(`${e.name}: no value this test knows how to fill in`);
  }
  return env;
}

/** Each pod's directory: its volume claim, kept across restarts of the pod. */
const podDirs = new Map<string, string>();

/** Starts one replica from the shipped config: only where it listens, reaches the API server and writes to differs. */
async function startReplica(podName: string, apiUrl = emulator.url): Promise<Replica> {
  let dir = podDirs.get(podName);
  if (dir === undefined) podDirs.set(podName, (dir = tmp()));
  const config = parseYaml(configMap.data["config.yaml"] as string) as { pipeline: { remoteWrite: { queueDir: string; targets: { url: string; batchSendDeadlineMs?: number }[] } } };
  config.pipeline.remoteWrite.queueDir = join(dir, "remote-write");
  for (const target of config.pipeline.remoteWrite.targets) target.url = prom.writeUrl;
  const configPath = join(dir, "config.yaml");
  writeFileSync(configPath, stringifyYaml(config));
  const kubeconfig = join(dir, "kubeconfig.json");
  writeFileSync(kubeconfig, kubeConfigFor(apiUrl, NAMESPACE, SERVICE_ACCOUNT_TOKEN).exportConfig());
  const args = (container.args as string[]).map((a) => (a === "/etc/tokentrace/config.yaml" ? configPath : a));
  const loaded = loadConfig(args, { ...podEnv(podName), TOKENTRACE_LISTEN_HOST: "127.0.0.1", TOKENTRACE_LISTEN_PORT: "0", TOKENTRACE_FILTERS_PORT: "0", TOKENTRACE_KUBECONFIG: kubeconfig });
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("; "));
  const logs: object[] = [];
  const running = await startControlPlane(loaded.config, {
    log: (r) => logs.push(r),
    auditLine: () => undefined,
    ticker: new ManualTicker(),
    now: () => clock.now(),
    delay: (ms, signal) => clock.sleep(ms, signal),
  });
  const replica = { podName, running, logs };
  live.add(replica);
  return replica;
}

const pipelineOf = (r: Replica) => r.running.pipeline!;
const scrapedPods = (r: Replica): Set<string> => new Set(pipelineOf(r).targets().map((t) => t.pod ?? ""));

/** Advances the fake clock in small steps, letting real I/O (scrapes, API calls, sends) run between them. */
/** While set: after each step of `run`, the pods no running replica schedules (time in ms, pod names). */
let unowned: { atMs: number; pods: string[] }[] | undefined;

async function run(ms: number, stepMs = 500): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    await clock.advance(Math.min(stepMs, ms - t));
    await new Promise((r) => setTimeout(r, 5));
    if (unowned) {
      const owned = new Set([...live].flatMap((r) => (r.running.pipeline ? [...scrapedPods(r)] : [])));
      unowned.push({ atMs: clock.now(), pods: pods.map((p) => p.name).filter((n) => !owned.has(n)) });
    }
  }
}

/**
 * Stops the replicas at once (SIGTERM: scraping ends, then the bounded remote-write flush) and
 * checks every queue ended empty. Waiting for empty queues while they run races the next scrape:
 * with the pods' scrapes spread over the interval, some queue may never be empty at a step.
 */
async function stopAndDrain(replicas: Replica[]): Promise<void> {
  for (const r of replicas) live.delete(r);
  const stopping = Promise.all(replicas.map((r) => r.running.stop()));
  await run(6000);
  await stopping;
  for (const r of replicas) for (const t of pipelineOf(r).writer.targets) assert.equal(t.queue.pendingSamples, 0, `${r.podName} flushed its queue when stopped`);
}

/** Every pod's samples in Prometheus, by pod: [seconds, value] in time order. */
async function samplesByPod(): Promise<Map<string, [number, string][]>> {
  const atSec = Math.ceil(Date.now() / 1000) + 3600;
  const raw = await prom.query(`${METRIC}[2d]`, atSec);
  return new Map(raw.map((r) => [r.metric.pod ?? "", (r.values ?? []) as [number, string][]]));
}

/** The gaps (ms) between a pod's consecutive samples, counting those that end at or after `fromMs`. */
const gapsOf = (values: [number, string][], fromMs = -Infinity): number[] =>
  values.slice(1).flatMap(([t], i) => (t * 1000 >= fromMs ? [Math.round((t - values[i]![0]) * 1000)] : []));

/**
 * Every pod's samples in Prometheus: values 1..served in order, one per scrape interval (nothing
 * lost, nothing twice). A slot that fell between a replica's stop and the survivor counting it out
 * is scraped late, by less than `lateMs` (the take-over's look-back, handover.ts), never skipped.
 */
async function assertExactlyOnce(intervalMs: number, lateMs: number): Promise<void> {
  const atSec = Math.ceil(Date.now() / 1000) + 3600;
  const byPod = await samplesByPod();
  for (const pod of pods) {
    const values = byPod.get(pod.name) ?? [];
    assert.ok(pod.served >= 3, `${pod.name} scraped ${pod.served} times`);
    assert.deepEqual(values.map(([, v]) => Number(v)), Array.from({ length: pod.served }, (_, i) => i + 1), `${pod.name}: every scrape's sample once, in order`);
    // One scrape per interval: b joins at a scrape boundary; when b stops, a slot of its in the
    // moments before a counts it out is scraped late (one longer gap, then a shorter one).
    const gaps = gapsOf(values);
    assert.ok(gaps.every((g) => g > 0 && g < intervalMs + lateMs), `${pod.name}: gaps ${gaps.join(",")}`);
    assert.ok(gaps.filter((g) => g !== intervalMs).length <= 2, `${pod.name}: gaps ${gaps.join(",")}`);
  }
  // Each scrape's `up` once too, and a sum over the pods counts each scrape once.
  const ups = await prom.query(`sum(count_over_time(up{job="vllm"}[2d]))`, atSec);
  assert.equal(Number(ups[0]?.value?.[1]), pods.reduce((n, p) => n + p.served, 0));
}

describe("istio/base as shipped, two replicas (emulated: kube-apiserver with RBAC; real Prometheus)", () => {
  it("emulated: the replicas split the pods, every sample reaches Prometheus exactly once, policies work under the shipped RBAC, and a replica stopped by SIGTERM hands its pods over at once by deleting its member Lease", async () => {
    const a = await startReplica(POD_NAMES[0]!);
    const b = await startReplica(POD_NAMES[1]!);
    const replicas = [a, b];
    const sharding = (parseYaml(configMap.data["config.yaml"] as string) as { pipeline: { sharding?: { leaseDurationMs?: number } } }).pipeline.sharding;
    const leaseMs = sharding?.leaseDurationMs ?? 10_000;
    const intervalMs = pipelineOf(a).scraper.targets[0]?.intervalMs ?? 15_000;
    const names = [a.podName, b.podName].sort();
    for (let i = 0; i < 40 && !replicas.every((r) => pipelineOf(r).members()?.join() === names.join()); i++) await run(1000);
    for (const r of replicas) assert.deepEqual(pipelineOf(r).members(), names, `${r.podName} sees both members`);
    // Past the hand-over (two membership periods after the joiner's Lease, then the next scrape of
    // each pod), the two shares are disjoint and cover every pod, node by node.
    await run((2 * leaseMs) / 3 + intervalMs);
    const shares = replicas.map(scrapedPods);
    assert.ok(shares.every((s) => s.size > 0), `both replicas scrape: ${shares.map((s) => s.size).join(", ")}`);
    assert.deepEqual(new Set([...shares[0]!, ...shares[1]!]), new Set(pods.map((p) => p.name)));
    assert.equal(shares[0]!.size + shares[1]!.size, pods.length, "no pod scraped by both");

    // The rest of the control plane under the same RBAC: a REST write on the follower is a
    // SamplingPolicy, the leader makes its WasmPlugin and status, both record history, a deletion undoes it.
    const leader = a.running.kubernetes!.isLeader() ? a : b;
    const follower = leader === a ? b : a;
    const created = await call(follower.running.url, "POST", "/v1/policies", { token: ADMIN_TOKEN, body: samplePolicy("chat") });
    assert.equal(created.status, 201, created.text);
    const plugins = (): string[] => emulator.objects(wasmPluginsResource).map((o) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`);
    await until(async () => {
      await run(500);
      return plugins().includes("llm/tokentrace-chat");
    }, "the leader's WasmPlugin", 30_000);
    await leader.running.kubernetes!.writeStatus();
    const object = await kube(emulator, "GET", "/apis/tokentrace.dev/v1alpha1/namespaces/llm/samplingpolicies/chat");
    const conditions = (object.json.status?.conditions ?? []) as { type: string; status: string }[];
    assert.deepEqual(conditions.map((c) => `${c.type}=${c.status}`).sort(), ["Accepted=True", "Programmed=True"], "the leader's status patch is allowed");
    const deleted = await call(follower.running.url, "DELETE", "/v1/policies/chat", { token: ADMIN_TOKEN });
    assert.equal(deleted.status, 204, deleted.text);
    await until(async () => {
      await run(500);
      return !plugins().includes("llm/tokentrace-chat");
    }, "the WasmPlugin removed", 30_000);
    for (const r of replicas) await r.running.kubernetes!.history.idle();
    const revisions = emulator.objects("apps/v1/controllerrevisions").filter((o) => o.metadata?.labels?.["tokentrace.dev/policy"] === "chat");
    assert.equal(revisions.length, 2, "a revision for the creation and one for the deletion");
    assert.deepEqual(revisions.map((o) => o.metadata?.namespace), [NAMESPACE, NAMESPACE], "kept in the control plane's namespace, where its Role grants them");

    await run(6 * intervalMs);
    // SIGTERM: what main.ts's handler calls. b's member Lease is deleted, so a counts b out at its
    // next listing (a third of the lease), not after the lease duration.
    const handedOver = shares[1]!;
    const servedBefore = new Map(pods.map((p) => [p.name, p.served]));
    live.delete(b);
    const stopping = b.running.stop();
    await run(6000); // its bounded remote-write flush
    await stopping;
    const membersNamespace = (parseYaml(configMap.data["config.yaml"] as string) as { pipeline: { sharding: { namespace: string } } }).pipeline.sharding.namespace;
    const leases = await kube(emulator, "GET", `/apis/coordination.k8s.io/v1/namespaces/${membersNamespace}/leases`);
    assert.deepEqual((leases.json.items as { metadata: { name: string } }[]).map((l) => l.metadata.name).filter((n) => n.startsWith("tokentrace-pipeline-")), [memberLeaseName(a.podName)]);
    const stoppedAt = clock.now();
    await until(async () => {
      await run(250, 250);
      return pipelineOf(a).members()?.join() === a.podName;
    }, "a counts b out", 30_000);
    assert.ok(clock.now() - stoppedAt <= leaseMs / 3 + 250, `counted out after ${clock.now() - stoppedAt} ms (lease ${leaseMs} ms)`);
    assert.equal(scrapedPods(a).size, pods.length, "a scrapes every pod");
    await run(intervalMs);
    for (const name of handedOver) assert.ok(pods.find((p) => p.name === name)!.served > servedBefore.get(name)!, `${name} scraped by a after the hand-over`);
    await run(2 * intervalMs);
    await stopAndDrain([a]);
    await assertExactlyOnce(intervalMs, 1.25 * (leaseMs / 3));
  });

  it("emulated: a rolling restart (each pod stopped by SIGTERM and started again under its name and volume, highest ordinal first, the next one minReadySeconds after) hands every pod back at a scrape boundary with no pause, skips no scrape, and writes each sample exactly once", async (t) => {
    await stopLive();
    const replicas = new Map<string, Replica>();
    for (const name of POD_NAMES) replicas.set(name, await startReplica(name));
    const intervalMs = pipelineOf(replicas.get(POD_NAMES[0]!)!).scraper.targets[0]?.intervalMs ?? 15_000;
    const sharding = (parseYaml(configMap.data["config.yaml"] as string) as { pipeline: { sharding?: { leaseDurationMs?: number } } }).pipeline.sharding;
    const leaseMs = sharding?.leaseDurationMs ?? 10_000;
    const names = [...POD_NAMES].sort().join();
    const allMembers = (): boolean => [...replicas.values()].every((r) => pipelineOf(r).members()?.join() === names);
    for (let i = 0; i < 40 && !allMembers(); i++) await run(1000);
    assert.ok(allMembers(), "both replicas see both");
    await run(leaseMs + 2 * intervalMs);
    const from = clock.now();
    unowned = [];
    const events: [string, number][] = [];
    const servedAt = new Map(pods.map((p) => [p.name, p.served]));
    for (const name of [...POD_NAMES].reverse()) {
      const old = replicas.get(name)!;
      live.delete(old);
      events.push([`stop ${name}`, clock.now()]);
      const stopping = old.running.stop();
      await run(6000); // its bounded remote-write flush
      await stopping;
      await run(RESTART_MS); // the StatefulSet controller creates the pod again, under the same name and volume
      events.push([`start ${name}`, clock.now()]);
      replicas.set(name, await startReplica(name));
      for (let i = 0; i < 40 && !allMembers(); i++) await run(1000);
      assert.ok(allMembers(), `${name} is back`);
      await run((statefulSet.spec.minReadySeconds as number) * 1000);
    }
    await run(2 * intervalMs);
    const observed = unowned;
    unowned = undefined;
    await stopAndDrain([...replicas.values()]);
    const byPod = await samplesByPod();
    // The longest time a pod went unscheduled by every running replica, by what came before it: a
    // replica stopping (its pods wait for the other to see it go) or one starting (its pods handed back).
    const stretches = new Map<string, number>();
    const pauses = { takeOver: 0, handBack: 0 };
    for (const { atMs, pods: none } of observed) {
      for (const [pod, since] of [...stretches]) {
        if (none.includes(pod)) continue;
        const cause = events.filter(([, at]) => at <= since).pop()?.[0] ?? "";
        const length = atMs - since;
        if (cause.startsWith("stop")) pauses.takeOver = Math.max(pauses.takeOver, length);
        else pauses.handBack = Math.max(pauses.handBack, length);
        stretches.delete(pod);
      }
      for (const pod of none) if (!stretches.has(pod)) stretches.set(pod, atMs - 500);
    }
    const gaps = pods.flatMap((p) => gapsOf(byPod.get(p.name) ?? [], from));
    const largest = Math.max(...gaps);
    const scrapes = pods.reduce((n, p) => n + p.served - servedAt.get(p.name)!, 0);
    t.diagnostic(
      `rolling restart of ${POD_NAMES.length} replicas: ${scrapes} scrapes of ${pods.length} pods; longest a pod went unscheduled: ${pauses.handBack} ms when handed back to a restarted replica, ` +
        `${pauses.takeOver} ms when taken from a stopped one (500 ms steps); gaps between a pod's samples: largest ${largest} ms (interval ${intervalMs} ms), ` +
        `${gaps.filter((g) => g > intervalMs).length} longer than the interval, ${gaps.filter((g) => g < intervalMs).length} shorter`,
    );
    for (const pod of pods) {
      const values = byPod.get(pod.name) ?? [];
      assert.deepEqual(values.map(([, v]) => Number(v)), Array.from({ length: pod.served }, (_, i) => i + 1), `${pod.name}: every scrape's sample once, in order`);
    }
    // A replica that comes back gets its pods at a scrape boundary: the other schedules them until then.
    assert.equal(pauses.handBack, 0, "no pause on a hand-back");
    // One that stops has no instant to share: a pod's slot just after the stop may be scraped late
    // (by less than the take-over's look-back, a period and a quarter), never skipped.
    assert.ok(largest < intervalMs + 1.25 * (leaseMs / 3), `no slot skipped: largest gap ${largest} ms`);
  });
  it("emulated: the API server instance one replica talks to hangs for 30 s (accepts, never answers) while the other's answers: the hung replica counts itself out before the other takes its pods over, so no scrape slot is scraped twice and every sample reaches Prometheus once", async (t) => {
    await stopLive();
    // Each pod's samples so far: only those written from here on are checked for doubles.
    const before = await samplesByPod();
    const hungUrl = await emulator.listenAnother();
    const a = await startReplica(POD_NAMES[0]!, hungUrl);
    const b = await startReplica(POD_NAMES[1]!);
    const replicas = [a, b];
    const sharding = (parseYaml(configMap.data["config.yaml"] as string) as { pipeline: { sharding?: { leaseDurationMs?: number } } }).pipeline.sharding;
    const leaseMs = sharding?.leaseDurationMs ?? 10_000;
    const intervalMs = pipelineOf(a).scraper.targets[0]?.intervalMs ?? 15_000;
    const names = [a.podName, b.podName].sort().join();
    const both = (): boolean => replicas.every((r) => pipelineOf(r).members()?.join() === names);
    for (let i = 0; i < 40 && !both(); i++) await run(1000);
    assert.ok(both(), "both replicas see both");
    await run(leaseMs + 2 * intervalMs);
    const from = clock.now();
    const aPods = scrapedPods(a);
    assert.ok(aPods.size > 0, "a scrapes some pods");
    emulator.setHung(true, hungUrl);
    const hungAt = clock.now();
    let aOutAt: number | undefined;
    let bTookAt: number | undefined;
    for (let waited = 0; waited < 30_000; waited += 500) {
      await run(500);
      if (aOutAt === undefined && scrapedPods(a).size === 0) aOutAt = clock.now();
      if (bTookAt === undefined && scrapedPods(b).size === pods.length) bTookAt = clock.now();
    }
    emulator.setHung(false, hungUrl);
    for (let i = 0; i < 60 && !both(); i++) await run(1000);
    assert.ok(both(), "a is back after the hang");
    await run(leaseMs + 2 * intervalMs);
    await stopAndDrain(replicas);
    const byPod = await samplesByPod();
    // A scrape slot is the interval from one grid instant (a pod's on-time scrapes all share its
    // phase) to the next: two samples of a pod in one slot are a slot scraped by both replicas.
    let doubles = 0;
    const detail: string[] = [];
    /** Pods whose samples are not exactly 1..served (a sample refused by Prometheus: two at one timestamp). */
    const broken: string[] = [];
    for (const pod of pods) {
      const all = byPod.get(pod.name) ?? [];
      const values = all.map(([, v]) => Number(v));
      if (values.join() !== Array.from({ length: pod.served }, (_, i) => i + 1).join()) broken.push(`${pod.name} (${pod.served} served, ${values.length} stored)`);
      const fresh = all.slice((before.get(pod.name) ?? []).length).map(([ts]) => Math.round(ts * 1000)).filter((ms) => ms >= from);
      const residues = new Map<number, number>();
      for (const ms of fresh) residues.set(ms % intervalMs, (residues.get(ms % intervalMs) ?? 0) + 1);
      const phase = [...residues].sort((x, y) => y[1] - x[1])[0]?.[0] ?? 0;
      const slots = new Map<number, number>();
      for (const ms of fresh) {
        const slot = Math.floor((ms - phase) / intervalMs);
        slots.set(slot, (slots.get(slot) ?? 0) + 1);
      }
      const podDoubles = [...slots.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
      if (podDoubles > 0) detail.push(`${pod.name}${aPods.has(pod.name) ? " (a's)" : ""}: ${podDoubles}`);
      doubles += podDoubles;
    }
    t.diagnostic(
      `hung API server instance for 30 s (lease ${leaseMs} ms, interval ${intervalMs} ms): a counted itself out ${aOutAt === undefined ? "never" : `${aOutAt - hungAt} ms`} after the hang began, ` +
        `b scraped every pod ${bTookAt === undefined ? "never" : `${bTookAt - hungAt} ms`} after; slots scraped twice: ${doubles}${detail.length > 0 ? ` (${detail.join(", ")})` : ""}; pods not stored as 1..n: ${broken.length > 0 ? broken.join(", ") : "none"}`,
    );
    assert.deepEqual(broken, [], "every pod's samples are 1..n, none twice or lost");
    assert.ok(aOutAt !== undefined && bTookAt !== undefined && aOutAt <= bTookAt, `a out at ${String(aOutAt)}, b took over at ${String(bTookAt)}`);
    assert.equal(doubles, 0, `no slot scraped twice: ${detail.join(", ")}`);
    await stopLive();
  });
});
