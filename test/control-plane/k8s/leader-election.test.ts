// High availability against the emulated kube-apiserver: replicas of the control plane campaign
// for one coordination.k8s.io Lease; only the leader reconciles WasmPlugins; a leader killed
// mid-reconcile is replaced once its lease runs out (never before), a leader stopped by SIGTERM
// hands over at once, and a leader that cannot renew steps down before anyone else may lead.
// Lease timing runs on a fake clock the test advances; the emulator's HTTP is real.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMetrics } from "../../../control-plane/src/api/metrics.js";
import { defaultConfig, type Config } from "../../../control-plane/src/config.js";
import type { Delay } from "../../../control-plane/src/k8s/backoff.js";
import type { KubeResult } from "../../../control-plane/src/k8s/client.js";
import { ClientNodeWasmPluginApi, type WasmPluginApi } from "../../../control-plane/src/k8s/wasmplugin-client.js";
import { ClientNodeLeaseApi, type LeaseApi } from "../../../control-plane/src/k8s/lease-client.js";
import { jitterFactor, LeaderElector, leaderElectionProblems, type LeaderElectionSettings } from "../../../control-plane/src/k8s/leader-election.js";
import { startKubernetesSync, type KubernetesSync } from "../../../control-plane/src/k8s/sync.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { kubeConfigFor, startKubeEmulator, wasmPluginsResource, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { FakeClock, until } from "../../support/fake-clock.js";
import { samplePolicy } from "../helpers.js";

const timing = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const random = () => 0.5;
/** A candidate's wait between tries with the fixed random source: retryPeriod * (1 + 0.5 * 1.2). */
const candidateWaitMs = timing.retryPeriodMs * (1 + 0.5 * jitterFactor);

/** One control-plane replica: its elector and sync, reaching the API through wrappers that can "kill" it. */
interface Replica {
  name: string;
  elector: LeaderElector;
  sync: KubernetesSync;
  killed: boolean;
  /** API calls sent and not yet answered (a killed replica's never are). */
  inflight: number;
  /** WasmPlugin writes this replica sent. */
  writes: string[];
  /** Fake-clock (monotonic) times this replica started and stopped leading. */
  led: number[];
  stoppedLeading: number[];
  /** Hook run before each WasmPlugin write goes out. */
  beforeWrite?: (replica: Replica) => void;
  /** Lease updates fail with 500 while set (the API refuses this replica). */
  refuseLeaseUpdates: boolean;
  /**
   * When set, the next Lease update reaches the API server (and is applied) at once but its answer
   * reaches this replica only this many ms later; from then on its Lease calls get no answer at all.
   */
  lateLeaseUpdateMs?: number;
  /** When the late update was sent (fake time). */
  lateSentAt?: number;
  /** Lease calls get no answer while set (the replica is cut off from the API server). */
  leasesHang?: boolean;
}

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

function guard<T>(replica: Replica, call: () => Promise<T>): Promise<T> {
  if (replica.killed) return never();
  replica.inflight += 1;
  return call().then(
    (value) => {
      replica.inflight -= 1;
      return replica.killed ? never<T>() : value;
    },
    (error: unknown) => {
      replica.inflight -= 1;
      throw error;
    },
  );
}

function wrapWasmPlugins(replica: Replica, api: WasmPluginApi): WasmPluginApi {
  const write = <T>(what: string, call: () => Promise<T>): Promise<T> => {
    replica.beforeWrite?.(replica);
    if (replica.killed) return never();
    replica.writes.push(what);
    return guard(replica, call);
  };
  return {
    list: (ns, sel) => guard(replica, () => api.list(ns, sel)),
    watch: (ns, sel, rv, onEvent, onEnd) => guard(replica, () => api.watch(ns, sel, rv, (e) => (replica.killed ? undefined : onEvent(e)), onEnd)),
    get: (ns, name) => guard(replica, () => api.get(ns, name)),
    create: (o) => write(`create ${o.metadata.name}`, () => api.create(o)),
    replace: (o) => write(`replace ${o.metadata.name}`, () => api.replace(o)),
    delete: (ns, name, rv) => write(`delete ${name}`, () => api.delete(ns, name, rv)),
  };
}

function wrapLeases(replica: Replica, api: LeaseApi, delay: Delay): LeaseApi {
  const refused: KubeResult<never> = { ok: false, code: 500, reason: "InternalError", message: "injected", retryable: true };
  const reach = <T>(call: () => Promise<T>): Promise<T> => (replica.leasesHang ? never() : guard(replica, call));
  const update: LeaseApi["update"] = (ns, name, record, rv, signal) => {
    if (replica.refuseLeaseUpdates) return reach(async () => refused);
    const lateMs = replica.lateLeaseUpdateMs;
    if (lateMs === undefined || replica.leasesHang) return reach(() => api.update(ns, name, record, rv, signal));
    replica.lateLeaseUpdateMs = undefined;
    replica.lateSentAt = record.renewTimeMs;
    // Applied now (the request is not aborted on the way); the answer is held on the fake clock,
    // outside `guard`, so the test's quiesce does not wait for it.
    const applied = guard(replica, () => api.update(ns, name, record, rv));
    replica.leasesHang = true;
    return applied.then(async (result) => {
      await delay(lateMs);
      return result;
    });
  };
  return {
    get: (ns, name, signal) => reach(() => api.get(ns, name, signal)),
    create: (ns, name, record, signal) => reach(() => api.create(ns, name, record, signal)),
    update,
  };
}

interface Cluster {
  emulator: KubeEmulator;
  clock: FakeClock;
  store: FilePolicyStore;
  replicas: Replica[];
}

const clusters: Cluster[] = [];

async function startCluster(names: string[]): Promise<Cluster> {
  const emulator = await startKubeEmulator();
  const clock = new FakeClock(1_800_000_000_000);
  // The shared record of policies (in the cluster, the SamplingPolicy objects).
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-leader-")), "policies.json"), now: () => new Date(clock.now()) });
  const cluster: Cluster = { emulator, clock, store, replicas: [] };
  const kubeConfig = kubeConfigFor(emulator.url);
  for (const name of names) {
    const replica = { name, killed: false, inflight: 0, writes: [], led: [], stoppedLeading: [], refuseLeaseUpdates: false } as unknown as Replica;
    // A killed replica's timers never fire again.
    const delay: Delay = (ms, signal) => (replica.killed ? never() : clock.sleep(ms, signal));
    const settings: LeaderElectionSettings = { namespace: "tokentrace-system", leaseName: "tokentrace-control-plane", identity: name, ...timing };
    const config: Config["kubernetes"] = { ...defaultConfig.kubernetes, wasmPlugin: { ...defaultConfig.kubernetes.wasmPlugin, sha256: "c".repeat(64) }, backoff: { initialMs: 100, maxMs: 400 } };
    replica.elector = new LeaderElector({
      api: wrapLeases(replica, new ClientNodeLeaseApi(kubeConfig), delay),
      settings,
      now: () => clock.now(),
      monotonicMs: () => clock.monotonicMs(),
      delay,
      random,
      onStartedLeading: () => {
        replica.led.push(clock.monotonicMs());
        replica.sync.leadershipChanged();
      },
      onStoppedLeading: () => {
        replica.stoppedLeading.push(clock.monotonicMs());
        replica.sync.leadershipChanged();
      },
    });
    replica.sync = startKubernetesSync({
      config,
      store,
      overrides: () => undefined,
      metrics: createMetrics(),
      api: wrapWasmPlugins(replica, new ClientNodeWasmPluginApi(kubeConfig)),
      delay,
      now: () => clock.now(),
      random,
      isLeader: () => replica.elector.isLeader(),
    });
    cluster.replicas.push(replica);
  }
  clusters.push(cluster);
  return cluster;
}

/** Lets every live replica finish its HTTP round trips (real time) until only fake-clock timers remain. */
async function quiesce(cluster: Cluster): Promise<void> {
  await until(async () => {
    for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
    return cluster.replicas.every((r) => r.killed || r.inflight === 0);
  }, "replicas idle");
  for (const r of cluster.replicas) if (!r.killed) await r.sync.reconciler.whenIdle();
  await new Promise<void>((r) => setTimeout(r, 2));
  if (cluster.replicas.some((r) => !r.killed && r.inflight > 0)) await quiesce(cluster);
}

/** Advances the fake clock in steps, letting the replicas work between steps. */
async function advance(cluster: Cluster, ms: number, stepMs = 250): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    await cluster.clock.advance(Math.min(stepMs, ms - done));
    await quiesce(cluster);
  }
}

/** Advances until `cond` holds; returns the fake time it took. */
async function advanceUntil(cluster: Cluster, cond: () => boolean, what: string, limitMs = 120_000): Promise<number> {
  const start = cluster.clock.now();
  while (!cond()) {
    if (cluster.clock.now() - start > limitMs) assert.fail(`fake time ran out waiting for ${what}`);
    await advance(cluster, 250);
  }
  return cluster.clock.now() - start;
}

/** Two replicas: cp-a leads, then cp-b starts and follows for `followMs` of fake time. */
async function leaderAndFollower(followMs: number): Promise<{ c: Cluster; a: Replica; b: Replica }> {
  const c = await startCluster(["cp-a", "cp-b"]);
  const [a, b] = c.replicas as [Replica, Replica];
  a.elector.start();
  await advanceUntil(c, () => a.elector.isLeader(), "cp-a leads");
  b.elector.start();
  await advance(c, followMs);
  return { c, a, b };
}

const leaders = (c: Cluster): string[] => c.replicas.filter((r) => !r.killed && r.elector.isLeader()).map((r) => r.name);

function addedCounts(c: Cluster): Map<string, number> {
  const counts = new Map<string, number>();
  for (const event of c.emulator.store.eventsAfter(0)) {
    if (event.resource !== wasmPluginsResource || event.type !== "ADDED") continue;
    const name = event.object.metadata?.name ?? "";
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

async function leaseHolder(c: Cluster): Promise<{ holderIdentity?: string; leaseTransitions?: number; leaseDurationSeconds?: number }> {
  const res = await fetch(`${c.emulator.url}/apis/coordination.k8s.io/v1/namespaces/tokentrace-system/leases/tokentrace-control-plane`);
  return ((await res.json()) as { spec: { holderIdentity?: string; leaseTransitions?: number; leaseDurationSeconds?: number } }).spec;
}

afterEach(async () => {
  for (const c of clusters.splice(0)) {
    for (const r of c.replicas) r.killed = true;
    await Promise.race([Promise.all(c.replicas.map((r) => r.sync.stop())), new Promise((r) => setTimeout(r, 50))]);
    await c.emulator.close();
  }
});

describe("leader election (emulated kube-apiserver, fake clock)", () => {
  it("refuses unsound timing as client-go's NewLeaderElector does", () => {
    assert.deepEqual(leaderElectionProblems(timing), []);
    assert.deepEqual(leaderElectionProblems({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), ["leaseDuration must be greater than renewDeadline"]);
    assert.deepEqual(leaderElectionProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }), ["renewDeadline must be greater than retryPeriod*JitterFactor"]);
  });

  it("emulated: of three replicas exactly one leads and only it writes WasmPlugins; the others write nothing", async () => {
    const c = await startCluster(["cp-a", "cp-b", "cp-c"]);
    for (const r of c.replicas) r.elector.start();
    await advanceUntil(c, () => leaders(c).length === 1, "a leader");
    for (const name of ["chat", "embed", "rerank"]) await c.store.create(samplePolicy(name), { by: "admin" });
    await advance(c, 10_000);
    assert.equal(leaders(c).length, 1);
    const [leader] = leaders(c);
    assert.equal((await leaseHolder(c)).holderIdentity, leader);
    assert.deepEqual(c.emulator.objects(wasmPluginsResource).map((o) => o.metadata?.name).sort(), ["tokentrace-chat", "tokentrace-embed", "tokentrace-rerank"]);
    for (const r of c.replicas) assert.equal(r.writes.length, r.name === leader ? 3 : 0, `${r.name} writes: ${r.writes.join(", ")}`);
    // Followers stay ready to serve (their informers listed) and report no reconcile lag.
    for (const r of c.replicas) {
      assert.equal(r.sync.readiness().ok, true);
      assert.equal(r.sync.reconciler.lagSeconds(), 0);
    }
  });

  it("emulated: a leader killed mid-reconcile is replaced once its lease runs out, never before, and no WasmPlugin is lost or duplicated", async () => {
    const { c, a, b } = await leaderAndFollower(5_000);
    assert.deepEqual(leaders(c), ["cp-a"]);
    // cp-a dies right after its first create reached the API, before the second goes out.
    let killedAt = 0;
    a.beforeWrite = (r) => {
      if (r.writes.length === 1) {
        r.killed = true;
        killedAt = c.clock.now();
      }
    };
    for (const name of ["chat", "embed", "rerank"]) await c.store.create(samplePolicy(name), { by: "admin" });
    await advanceUntil(c, () => killedAt > 0, "cp-a killed mid-reconcile");
    assert.deepEqual(a.writes, ["create tokentrace-chat"]);
    assert.equal(c.emulator.objects(wasmPluginsResource).length, 1, "one of three written when it died");
    const lastRenew = (await leaseHolder(c)).holderIdentity === "cp-a" ? killedAt : 0;
    const took = await advanceUntil(c, () => b.elector.isLeader(), "cp-b takes over");
    const leadAt = b.led[0] as number;
    // client-go's bound: the record must look unchanged for leaseDuration on cp-b's clock, then one try.
    assert.ok(leadAt - lastRenew >= timing.leaseDurationMs, `cp-b led ${leadAt - lastRenew} ms after cp-a's last renewal: too early`);
    assert.ok(took <= timing.leaseDurationMs + timing.retryPeriodMs + 2 * candidateWaitMs, `replaced after ${took} ms`);
    await advance(c, 5_000);
    assert.deepEqual(c.emulator.objects(wasmPluginsResource).map((o) => o.metadata?.name).sort(), ["tokentrace-chat", "tokentrace-embed", "tokentrace-rerank"]);
    assert.deepEqual([...addedCounts(c).values()], [1, 1, 1], "each WasmPlugin created exactly once");
    assert.deepEqual(b.writes, ["create tokentrace-embed", "create tokentrace-rerank"]);
    const lease = await leaseHolder(c);
    assert.equal(lease.holderIdentity, "cp-b");
    assert.equal(lease.leaseTransitions, 1);
  });

  it("emulated: SIGTERM (stop) steps down, releases the lease, and a follower leads within one retry", async () => {
    const { c, a, b } = await leaderAndFollower(4_000);
    await a.elector.stop();
    assert.equal(a.elector.isLeader(), false);
    assert.equal(a.stoppedLeading.length, 1);
    const released = await leaseHolder(c);
    assert.deepEqual([released.holderIdentity, released.leaseDurationSeconds], ["", 1]);
    const took = await advanceUntil(c, () => b.elector.isLeader(), "cp-b takes over");
    assert.ok(took <= candidateWaitMs + 250, `took ${took} ms`);
    // Work moves with the lease: a new policy is written by cp-b.
    await c.store.create(samplePolicy("chat"), { by: "admin" });
    await advance(c, 2_000);
    assert.deepEqual(b.writes, ["create tokentrace-chat"]);
  });

  it("emulated: a leader whose renewals fail stops acting within renewDeadline, before its lease expires for the others", async () => {
    const { c, a, b } = await leaderAndFollower(4_000);
    const refusedFrom = c.clock.now();
    a.refuseLeaseUpdates = true;
    await advanceUntil(c, () => !a.elector.isLeader(), "cp-a steps down");
    const steppedDown = c.clock.now();
    assert.ok(steppedDown - refusedFrom <= timing.renewDeadlineMs + 250, `stepped down after ${steppedDown - refusedFrom} ms`);
    await advanceUntil(c, () => b.elector.isLeader(), "cp-b takes over");
    assert.ok((b.led[0] as number) > steppedDown, "never two leaders at once");
    assert.ok((b.led[0] as number) - refusedFrom >= timing.leaseDurationMs - timing.retryPeriodMs);
  });
  it("emulated: a leader whose API server hangs (accepts, never answers) gives its renewal round up at the renew deadline and steps down then", async () => {
    const { c, a } = await leaderAndFollower(4_000);
    const hungFrom = c.clock.now();
    c.emulator.setHung(true);
    // No quiesce here: hung calls stay in flight until the elector aborts them.
    for (let waited = 0; waited <= timing.renewDeadlineMs + 2 * timing.retryPeriodMs && a.stoppedLeading.length === 0; waited += 250) {
      await c.clock.advance(250);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
    assert.equal(a.elector.isLeader(), false);
    assert.equal(a.stoppedLeading.length, 1, "the renew loop ended its term although its call never got an answer");
    // The round that hangs began at most a retry period after the last renewal (client-go's renew loop).
    assert.ok((a.stoppedLeading[0] as number) - hungFrom <= timing.retryPeriodMs + timing.renewDeadlineMs + 250, `stepped down after ${(a.stoppedLeading[0] as number) - hungFrom} ms`);
    c.emulator.setHung(false);
  });
  // 6 s: the "more than 5 s late" (lease 15 s - renew deadline 10 s); 9 s: still inside the bound.
  for (const lateMs of [6_000, 9_000]) {
    it(`emulated: a renewal applied at once but answered ${lateMs / 1000} s late (inside the call's bound) does not stretch the term: the leader stops acting renewDeadline after it sent that renewal, before the follower takes over, so there are never two leaders`, async (t) => {
      const { c, a, b } = await leaderAndFollower(4_000);
      a.lateLeaseUpdateMs = lateMs;
      // Both electors' view at every step, for 30 s: cp-b takes over meanwhile.
      let bothMs = 0;
      let aLastActing: number | undefined;
      for (let waited = 0; waited < 30_000; waited += 250) {
        await advance(c, 250);
        if (leaders(c).length > 1) bothMs += 250;
        if (a.elector.isLeader()) aLastActing = c.clock.now();
      }
      assert.ok(a.lateSentAt !== undefined && aLastActing !== undefined, "the late renewal was sent");
      assert.equal(b.led.length, 1, "cp-b took over");
      const bLed = b.led[0] as number;
      const detail = `late renewal sent at +0, answered at +${lateMs}, cp-a acted last at +${aLastActing - a.lateSentAt} ms, cp-b led at +${bLed - a.lateSentAt} ms; both leaders for ${bothMs} ms`;
      t.diagnostic(detail);
      assert.equal(bothMs, 0, detail);
      assert.ok(aLastActing - a.lateSentAt < timing.renewDeadlineMs, detail);
      assert.ok(bLed > aLastActing, detail);
    });
  }
  it("emulated: a wall-clock step of +1 h, then -1 h, neither cuts nor stretches a term: the leader keeps leading through both, and once its renewals fail it steps down within renewDeadline and the follower takes over after leaseDuration", async (t) => {
    const { c, a, b } = await leaderAndFollower(4_000);
    const onlyA = async (ms: number, what: string): Promise<void> => {
      for (let waited = 0; waited < ms; waited += 250) {
        await advance(c, 250);
        assert.deepEqual(leaders(c), ["cp-a"], `${what}, ${waited + 250} ms on`);
      }
    };
    c.clock.stepWall(3_600_000);
    await onlyA(20_000, "after a +1 h step");
    c.clock.stepWall(-7_200_000);
    await onlyA(20_000, "after a -2 h step (-1 h from the start)");
    // The renewals fail from here, and the wall clock steps back another hour at once.
    const refusedAt = c.clock.monotonicMs();
    a.refuseLeaseUpdates = true;
    c.clock.stepWall(-3_600_000);
    let both = 0;
    let steppedDown: number | undefined;
    await advanceUntil(
      c,
      () => {
        if (leaders(c).length > 1) both += 250;
        if (steppedDown === undefined && !a.elector.isLeader()) steppedDown = c.clock.monotonicMs();
        return b.elector.isLeader();
      },
      "cp-b takes over",
    );
    assert.ok(steppedDown !== undefined);
    const led = b.led[0] as number;
    t.diagnostic(`renewals refused at +0 (wall stepped -1 h then): cp-a stopped acting at +${steppedDown - refusedAt} ms, cp-b led at +${led - refusedAt} ms; both leaders for ${both} ms`);
    assert.equal(both, 0);
    assert.ok(steppedDown - refusedAt <= timing.renewDeadlineMs + 250, `stepped down after ${steppedDown - refusedAt} ms`);
    assert.ok(led - refusedAt >= timing.leaseDurationMs - timing.retryPeriodMs, `cp-b led after ${led - refusedAt} ms`);
    assert.ok(led > steppedDown);
  });
});
