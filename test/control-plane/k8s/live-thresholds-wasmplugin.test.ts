// Kubernetes mode: the leader's live tail-keep thresholds reach the filters through the WasmPlugin's
// pluginConfig (spans.keep.live), and a WasmPlugin changes at most once per
// adaptive.liveThresholds.wasmPluginMinIntervalSeconds, since each change reconfigures every
// sidecar it selects. Emulated kube-apiserver, the thresholds step run by hand (ManualTicker).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { PairWindow } from "../../../control-plane/src/adaptive/live-thresholds.js";
import { FakeClock } from "../../support/fake-clock.js";
import { startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { adminToken, call, samplePolicy } from "../helpers.js";
import { applyCrd, kube, spPath, startReplicas, whenCached, type Replica } from "./kubernetes-replicas.js";

/** A cumulative histogram of `n` requests spread evenly over (0, maxMs], buckets every 100 ms. */
function even(n: number, maxMs: number): Map<number, number> {
  const h = new Map<number, number>();
  for (let le = 100; le <= maxMs; le += 100) h.set(le, Math.round((n * le) / maxMs));
  h.set(Infinity, n);
  return h;
}

describe("live thresholds through WasmPlugins (Kubernetes mode, emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let a: Replica;
  let windows: PairWindow[] = [];
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  before(async () => {
    emulator = await startKubeEmulator();
    await applyCrd(emulator);
    [a] = (await startReplicas(emulator, ["cp-a"], { clock, windows: { windows: () => windows } })) as [Replica];
  });
  after(async () => {
    await a.running.stop();
    await emulator.close();
  });

  const wasmPluginLive = async (): Promise<unknown> => {
    await a.kube.sync.reconciler.whenIdle();
    const wp = await kube(emulator, "GET", "/apis/extensions.istio.io/v1alpha1/namespaces/llm/wasmplugins/tokentrace-keeps");
    assert.equal(wp.status, 200);
    return (wp.json.spec.pluginConfig as { spans: { keep: { live?: unknown } } }).spans.keep.live;
  };

  it("writes the leader's thresholds into the WasmPlugin, then at most one change per wasmPluginMinIntervalSeconds (60)", async () => {
    const policy = samplePolicy("keeps", { pluginConfig: { sampling: { defaultRate: 0.01 }, spans: { cluster: "otel", keep: { errors: true } } } });
    assert.equal((await call(a.running.url, "POST", "/v1/policies", { token: adminToken, body: policy })).status, 201);
    await whenCached(a, "keeps", () => a.kube.store.get("keeps") !== undefined);
    assert.equal(await wasmPluginLive(), undefined, "no thresholds before a step");

    windows = [{ route: "chat", model: "m", duration: even(1000, 1000) }];
    await a.ticker.run("live-thresholds");
    // P95 950 ms x the default margin 0.85.
    assert.deepEqual(await wasmPluginLive(), [{ route: "chat", model: "m", durationMs: 808 }]);

    // Slower 10 s later: held, the WasmPlugin is not rewritten.
    windows = [{ route: "chat", model: "m", duration: even(1000, 1200) }];
    await clock.advance(10_000);
    await a.ticker.run("live-thresholds");
    assert.deepEqual(await wasmPluginLive(), [{ route: "chat", model: "m", durationMs: 808 }]);

    await clock.advance(50_000);
    await a.ticker.run("live-thresholds");
    // 1140 x 0.85 = 969: within the 1.5x cap.
    assert.deepEqual(await wasmPluginLive(), [{ route: "chat", model: "m", durationMs: 969 }]);
    // Status carries the thresholds in force beside the rates (none here), for followers to serve.
    await a.kube.writeStatus();
    const status = (await kube(emulator, "GET", spPath("llm", "keeps"))).json.status as { wasmPlugin?: string; adaptive?: unknown };
    assert.equal(status.wasmPlugin, "llm/tokentrace-keeps", "the status was written");
    assert.deepEqual(status.adaptive, { observedGeneration: 1, keepLive: [{ route: "chat", model: "m", durationMs: 969 }] });
  });
});
