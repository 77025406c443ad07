// The GPU health panels are bounded in bytes, not only in pods, GPUs and points: each point's
// estimate is at least what V8's heap and array buffers grow by when the panels hold it (measured
// in a child run with --expose-gc, for several shapes), past maxBytes the oldest points of any pod
// or GPU go first, and pods and GPUs with nothing left in the retention give their places back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GpuHealthPanels } from "../../../control-plane/src/dashboard/gpu-health.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import { measureInChild } from "../heap.js";

const child = new URL("./gpu-health-memory-child.ts", import.meta.url);

for (const [pods, gpus, xids, churn] of [
  [8, 8, 0, 0],
  [16, 1, 0, 0],
  [8, 8, 0, 1],
  [4, 8, 3, 0],
  [2, 2, 0, 0],
] as const) {
  test(`a GPU panel point's estimate is at least what it costs V8 and at most twice it (${pods} pods on ${gpus} GPUs each${churn === 1 ? ", their GPUs changing every scrape" : ""}, ${xids} XIDs a GPU; measured with --expose-gc)`, { timeout: 120_000 }, (t) => {
    const r = measureInChild<{ points: number; measuredPerPoint: number; estimatedPerPoint: number }>(child, [Math.round(16_000 / (pods * (gpus + 1))) * 8, pods, gpus, xids, churn]);
    t.diagnostic(`measured ${r.measuredPerPoint.toFixed(0)} B, estimated ${r.estimatedPerPoint.toFixed(0)} B per point`);
    assert.ok(r.estimatedPerPoint >= r.measuredPerPoint, `estimate ${r.estimatedPerPoint} below the measured ${r.measuredPerPoint}`);
    assert.ok(r.estimatedPerPoint <= 2 * r.measuredPerPoint, `estimate ${r.estimatedPerPoint} far above the measured ${r.measuredPerPoint}`);
  });
}

const T0 = 1_800_000_000_000;
const sidecar = (pod: string, k: number): WriteSeries[] => [
  { labels: ["__name__", C.POD_GPU_INFO, "namespace", "ns", "pod", pod, "gpu_uuid", `GPU-${pod}`], samples: [{ value: 1, timestampMs: 0 }] },
  { labels: ["__name__", C.POD_GPU_UTILIZATION, "namespace", "ns", "pod", pod], samples: [{ value: k % 100, timestampMs: 0 }] },
];
const health = (gpu: string, k: number): WriteSeries[] => [{ labels: ["__name__", C.GPU_TEMPERATURE, "gpu_uuid", gpu, "gpu", "0", "hostname", "h", "sensor", "gpu"], samples: [{ value: 60 + (k % 10), timestampMs: 0 }] }];

test("the panels hold at most maxBytes: past it the oldest points of any pod or GPU go first, the newest of each stay", () => {
  const maxBytes = 40_000;
  const panels = new GpuHealthPanels({ maxBytes });
  let peak = 0;
  for (let k = 0; k < 400; k++) {
    for (const pod of ["a", "b", "c"]) {
      panels.observe(sidecar(pod, k), { target: { kind: "envoy", namespace: "ns", pod, id: `envoy|${pod}` }, timestampMs: T0 + k * 2000 });
      panels.observe(health(`GPU-${pod}`, k), { target: { kind: "dcgm", id: "dcgm|h" }, timestampMs: T0 + k * 2000 });
    }
    peak = Math.max(peak, panels.bytes);
  }
  assert.ok(peak <= maxBytes, `held ${peak} bytes`);
  assert.ok(panels.bytes > maxBytes / 2, "the budget is used, not emptied");
  const range = { nowMs: T0 + 399 * 2000, rangeMs: 3_600_000, stepMs: 2000, lookbackMs: 5000 };
  for (const pod of ["a", "b", "c"]) {
    const cols = panels.columns({ namespace: "ns", pod }, range);
    assert.equal(cols.utilization.at(-1), 399 % 100 / 100, `${pod} keeps its newest`);
    assert.equal(cols.temperatureC.at(-1), 60 + (399 % 10), `${pod}'s GPU keeps its newest`);
    // Every pod lost its oldest alike: none keeps much more than the others.
    const held = cols.utilization.filter((v) => v !== null).length;
    assert.ok(held > 15 && held < 40, `${pod} holds ${held} points`);
  }
});

test("a pod or GPU with no point left in the retention gives back its place among maxPods and maxGpus, and its bytes", () => {
  const panels = new GpuHealthPanels({ maxPods: 2, maxGpus: 2, retentionMs: 60_000 });
  for (const [i, pod] of ["a", "b"].entries()) {
    panels.observe(sidecar(pod, i), { target: { kind: "envoy", namespace: "ns", pod, id: `envoy|${pod}` }, timestampMs: T0 });
    panels.observe(health(`GPU-${pod}`, i), { target: { kind: "dcgm", id: "dcgm|h" }, timestampMs: T0 });
  }
  assert.deepEqual(panels.podKeys().map((k) => k.pod), ["a", "b"]);
  // Two minutes on, a and b are gone: c takes a place.
  panels.observe(sidecar("c", 0), { target: { kind: "envoy", namespace: "ns", pod: "c", id: "envoy|c" }, timestampMs: T0 + 120_000 });
  panels.observe(health("GPU-c", 0), { target: { kind: "dcgm", id: "dcgm|h" }, timestampMs: T0 + 120_000 });
  assert.deepEqual(panels.podKeys().map((k) => k.pod), ["c"]);
  assert.equal(panels.columns({ namespace: "ns", pod: "c" }, { nowMs: T0 + 120_000, rangeMs: 10_000, stepMs: 2000, lookbackMs: 5000 }).temperatureC.at(-1), 60);
  const one = panels.bytes;
  panels.observe([], { target: { kind: "dcgm", id: "dcgm|h" }, timestampMs: T0 + 240_000 });
  assert.equal(panels.podKeys().length, 0);
  assert.equal(panels.bytes, 0, `${one} bytes before, none after`);
});
