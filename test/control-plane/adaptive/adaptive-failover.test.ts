// A new leader continues adaptive sampling from the rates the previous leader published in each
// policy's status.adaptive, not from the configured rates: two replicas in Kubernetes mode against
// the emulated kube-apiserver, every timer on a fake clock (kubernetes-replicas.ts).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { RateSource } from "../../../control-plane/src/adaptive/rates.js";
import { nextRate, withDefaults } from "../../../control-plane/src/adaptive/algorithm.js";
import { startKubeEmulator, wasmPluginsResource, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { FakeClock, until } from "../../support/fake-clock.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, startReplicas, untilLeader, whenCached, type Replica } from "../k8s/kubernetes-replicas.js";

let requestsPerSecond = 0;
const rates: RateSource = { requestRates: () => Promise.resolve([{ route: "other-route", requestsPerSecond }]) };

describe("adaptive sampling across a leader change (emulated kube-apiserver, fake clock)", () => {
  let emulator: KubeEmulator;
  let replicas: Replica[];
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    replicas = await startReplicas(emulator, ["cp-a", "cp-b"], { rates, clock, env: { TOKENTRACE_ADAPTIVE_ENABLED: "true" } });
  });
  after(async () => {
    for (const r of replicas) await r.running.stop();
    await emulator.close();
  });

  const pushedRate = (): number | undefined => {
    const plugin = emulator.objects(wasmPluginsResource).find((o) => o.metadata?.name === "tokentrace-adapt") as { spec?: { pluginConfig?: { sampling?: { defaultRate?: number } } } } | undefined;
    return plugin?.spec?.pluginConfig?.sampling?.defaultRate;
  };
  const servedRate = async (r: Replica): Promise<number> => {
    const res = await call(r.running.url, "GET", "/v1/filters/llm.adapt/config");
    assert.equal(res.status, 200, res.text);
    return (res.body as { config: { sampling: { defaultRate: number } } }).config.sampling.defaultRate;
  };

  it("emulated: leader A adapts and stops; B leads, first pushes A's last rates, and its first step continues from them", async () => {
    const [a, b] = replicas as [Replica, Replica];
    assert.equal(a.kube.isLeader(), true);
    const adaptive = { targetTracesPerSecond: 1 };
    const created = await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: samplePolicy("adapt", { target: { namespace: "llm", selector: { matchLabels: { app: "adapt" } } }, pluginConfig: { sampling: { defaultRate: 0.5 } }, adaptive }) });
    assert.equal(created.status, 201, created.text);
    await whenCached(b, "adapt", () => b.kube.store.get("adapt") !== undefined);
    // 100 requests/s at 0.5 is 50 traces/s for a target of 1: A lowers the rate and publishes it.
    requestsPerSecond = 100;
    await a.ticker.run("adaptive");
    const last = await servedRate(a);
    assert.ok(last < 0.5, `A adapted to ${last}`);
    await until(() => pushedRate() === last, "A pushes its rate");
    await a.kube.writeStatus();
    await whenCached(b, "A's published rates", () => b.kube.store.publishedOverrides("adapt")?.defaultRate === last);

    // A gets SIGTERM: it releases the lease and B takes over within a retry.
    await a.running.stop();
    replicas = [b];
    await untilLeader(b, clock);
    assert.equal(await servedRate(b), last, "B serves A's last rates");
    await b.ticker.run("resync");
    assert.equal(pushedRate(), last, "B's first push is A's last rates");

    // Traffic falls to 2 requests/s: B's first step raises the rate from A's, by at most the
    // increase factor (started over from the configured 0.5 it would see 1 trace/s, keep 0.5,
    // and leave the filters at A's rate while believing them at 0.5).
    requestsPerSecond = 2;
    await clock.advance(60_000); // the push limit holds across leaders: A may have pushed just now
    await b.ticker.run("adaptive");
    const expected = nextRate(last, 2, withDefaults(adaptive));
    assert.ok(expected > last && expected < 0.5, `expected ${expected}`);
    assert.equal(await servedRate(b), expected);
    await until(() => pushedRate() === expected, "B pushes its first adapted rate");
  });
});
