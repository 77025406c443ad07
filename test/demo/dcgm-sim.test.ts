// The simulated dcgm-exporter: its /metrics parses cleanly with the pipeline's parser, maps its GPUs
// to the simulated pod the way the join reads dcgm-exporter, and its values follow the load (energy
// integrated over an injected clock).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { GpuIndex } from "../../control-plane/src/join/gpu-index.js";
import { gpuValues, startDcgmSim } from "./dcgm-sim.js";

test("gpuValues: idle and full load of a simulated H100, the second GPU a little behind", () => {
  assert.deepEqual(gpuValues(0, 0), { util: 3, smActive: 0.028, powerWatts: 79.373, fbUsedMiB: 52000, tempC: 35 });
  assert.deepEqual(gpuValues(1, 0), { util: 98, smActive: 0.902, powerWatts: 684.91, fbUsedMiB: 72000, tempC: 73 });
  assert.deepEqual(gpuValues(1, 1), { util: 89, smActive: 0.819, powerWatts: 617.783, fbUsedMiB: 72000, tempC: 70 });
  assert.deepEqual(gpuValues(7, 0), gpuValues(1, 0), "load is clamped to [0, 1]");
});

test("simulated dcgm-exporter: real format, pod mapping labels the join uses, utilisation, power and energy that follow the load", async () => {
  let load = 0;
  let nowMs = 1_000_000;
  const sim = await startDcgmSim({ namespace: "demo", pod: "llm-sim-0", hostname: "node-a", gpuCount: 2, load: () => load, nowMs: () => nowMs });
  try {
    const scrape = async () => {
      const res = await fetch(sim.metricsUrl);
      assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
      const parsed = parseText(await res.text());
      assert.deepEqual(parsed.errors, []);
      const index = new GpuIndex();
      index.setExporter("sim", parsed.samples);
      return { parsed, gpus: index.gpusOfPod("demo", "llm-sim-0", undefined) };
    };
    const idle = await scrape();
    assert.equal(idle.parsed.families.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")?.type, "counter");
    assert.equal(idle.parsed.families.get("DCGM_FI_DEV_GPU_UTIL")?.type, "gauge");
    assert.equal(idle.gpus.attribution, "pod");
    assert.deepEqual(idle.gpus.gpus.map((g) => [g.gpu, g.modelName, g.hostname, g.utilizationPercent, g.powerWatts, g.energyMj]), [
      ["0", "NVIDIA H100 80GB HBM3", "node-a", 3, 79.373, 3_000_000_000],
      ["1", "NVIDIA H100 80GB HBM3", "node-a", 3, 79.373, 4_000_000_000],
    ]);

    // 2 s at full load: energy grows by power x time (W x ms = mJ); power = 70 W + 630 W x util^1.2.
    load = 1;
    nowMs += 2000;
    const busy = await scrape();
    assert.deepEqual(busy.gpus.gpus.map((g) => [g.utilizationPercent, g.powerWatts, g.energyMj]), [
      [98, 684.91, 3_000_000_000 + 1_369_820],
      [89, 617.783, 4_000_000_000 + 1_235_566],
    ]);
    assert.equal(sim.scrapes, 2);
    assert.equal((await fetch(`${sim.url}/other`)).status, 404);
  } finally {
    await sim.close();
  }
});
