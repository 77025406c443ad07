// Filters pull their policy from whichever replica their Service picks: a follower must serve the
// leader's live tail-keep thresholds, or half the sidecars keep by the static slowerThanMs. The
// leader publishes them in each policy's status.adaptive.keepLive beside the rates, followers serve
// them from their cache, and a new leader continues from them. Two replicas in Kubernetes mode
// against the emulated kube-apiserver, the thresholds step run by hand (ManualTicker), fake clock.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { PairWindow } from "../../../control-plane/src/adaptive/live-thresholds.js";
import { FakeClock } from "../../support/fake-clock.js";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, kube, spPath, startReplicas, untilLeader, whenCached, type Replica } from "./kubernetes-replicas.js";

/** A cumulative histogram of `n` requests spread evenly over (0, maxMs], buckets every 100 ms. */
function even(n: number, maxMs: number): Map<number, number> {
  const h = new Map<number, number>();
  for (let le = 100; le <= maxMs; le += 100) h.set(le, Math.round((n * le) / maxMs));
  h.set(Infinity, n);
  return h;
}

/** spans.keep.live of the config a replica serves to a pull. */
async function pulledLive(r: Replica): Promise<unknown> {
  const res = await call(r.running.url, "GET", "/v1/filters/llm.keeps/config");
  assert.equal(res.status, 200, res.text);
  return (res.body as { config: { spans: { keep: { live?: unknown } } } }).config.spans.keep.live;
}

describe("live thresholds on followers (two replicas, emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let replicas: Replica[];
  // Only the leader's windows matter: each replica gets its own source, and the follower's stays empty.
  let leaderWindows: PairWindow[] = [];
  let followerWindows: PairWindow[] = [];
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    const [a] = await startReplicas(emulator, ["cp-a"], { clock, windows: { windows: () => leaderWindows } });
    const [b] = await startReplicas(emulator, ["cp-b"], { clock, awaitLeader: false, windows: { windows: () => followerWindows } });
    replicas = [a!, b!];
  });
  after(async () => {
    for (const r of replicas) await r.running.stop();
    await emulator.close();
  });

  it("a pull from the follower returns the leader's thresholds, and a new leader continues from them", async () => {
    const [a, b] = replicas as [Replica, Replica];
    assert.equal(a.kube.isLeader(), true);
    assert.equal(b.kube.isLeader(), false);
    const policy = samplePolicy("keeps", { target: { namespace: "llm", selector: { matchLabels: { app: "keeps" } } }, pluginConfig: { sampling: { defaultRate: 0.01 }, spans: { cluster: "otel", keep: { errors: true, slowerThanMs: 5000 } } } });
    assert.equal((await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: policy })).status, 201);
    await whenCached(b, "keeps", () => b.kube.store.get("keeps") !== undefined);
    assert.equal(await pulledLive(b), undefined, "no thresholds before a step");

    leaderWindows = [
      { route: "chat", model: "m", duration: even(1000, 1000), ttft: even(1000, 200) },
      { route: "embed", model: "e", duration: even(100, 400) },
    ];
    await a.ticker.run("live-thresholds");
    // P95 950 ms and 190 ms, and 380 ms, x the default margin 0.85.
    const expected = [
      { route: "chat", model: "m", durationMs: 808, ttftMs: 162 },
      { route: "embed", model: "e", durationMs: 323 },
    ];
    assert.deepEqual(await pulledLive(a), expected);
    await a.kube.writeStatus();
    const status = (await kube(emulator, "GET", spPath("llm", "keeps"))).json.status as { adaptive?: { keepLive?: unknown } };
    assert.deepEqual(status.adaptive?.keepLive, expected, "the leader published them in status");
    await whenCached(b, "the leader's thresholds", () => b.kube.store.publishedOverrides("keeps")?.keepLive !== undefined);
    assert.deepEqual(await pulledLive(b), expected, "the follower serves the leader's thresholds");
    // The same config, so the same version: a filter moving between replicas is not reconfigured.
    const version = async (r: Replica): Promise<unknown> => (await call(r.running.url, "GET", "/v1/filters/llm.keeps/config")).body;
    assert.deepEqual(await version(b), await version(a));

    // The follower never computes its own: a step on it (with its own, different windows) changes nothing.
    followerWindows = [{ route: "chat", model: "m", duration: even(1000, 3000) }];
    await b.ticker.run("live-thresholds");
    assert.deepEqual(await pulledLive(b), expected);

    // A stops; B leads, serves A's thresholds at once, and its first step continues from them:
    // a slower window (P95 2850 ms x 0.85 = 2423) rises by at most 1.5x per step, 808 -> 1212, and
    // the TTFT threshold, with no streams in this window, stays where A left it (started over: 2423, no TTFT).
    await a.running.stop();
    replicas = [b];
    await untilLeader(b, clock);
    assert.deepEqual(await pulledLive(b), expected, "the new leader serves its predecessor's thresholds before its first step");
    await b.ticker.run("live-thresholds");
    assert.deepEqual(await pulledLive(b), [{ route: "chat", model: "m", durationMs: 1212, ttftMs: 162 }]);
  });
});
