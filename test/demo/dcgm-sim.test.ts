// The simulated dcgm-exporter: its /metrics parses cleanly with the pipeline's parser, maps its GPUs
// to the simulated pod the way the join reads dcgm-exporter, collects at its interval like the real
// exporter (scrapes in between get the last collection), and its utilisation is the GPU's busy share
// of the last interval (energy integrated over an injected clock).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { GpuIndex } from "../../control-plane/src/join/gpu-index.js";
import { gpuValues, startDcgmSim } from "./dcgm-sim.js";

test("gpuValues: idle and fully busy simulated H100, the second GPU a little behind", () => {
  assert.deepEqual(gpuValues(0, 0), { util: 0, smActive: 0, powerWatts: 70, fbUsedMiB: 52000, tempC: 34 });
  assert.deepEqual(gpuValues(1, 0), { util: 100, smActive: 0.92, powerWatts: 700, fbUsedMiB: 72000, tempC: 74 });
  assert.deepEqual(gpuValues(1, 1), { util: 90, smActive: 0.828, powerWatts: 625.177, fbUsedMiB: 72000, tempC: 70 });
  assert.deepEqual(gpuValues(7, 0), gpuValues(1, 0), "the busy share is clamped to [0, 1]");
});

test("simulated dcgm-exporter: real format, pod mapping labels the join uses, one collection per interval, utilisation = busy share of the interval, power and energy follow it", async () => {
  let busyMs = 0;
  let nowMs = 1_000_000;
  const sim = await startDcgmSim({ namespace: "demo", pod: "llm-sim-0", hostname: "node-a", gpuCount: 2, gpuBusyMs: () => busyMs, collectIntervalMs: 2000, nowMs: () => nowMs });
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
      ["0", "NVIDIA H100 80GB HBM3", "node-a", 0, 70, 3_000_000_000],
      ["1", "NVIDIA H100 80GB HBM3", "node-a", 0, 70, 4_000_000_000],
    ]);

    // Within the collect interval a scrape gets the last collection, whatever the GPU did since.
    busyMs = 1000;
    nowMs += 1000;
    assert.deepEqual((await scrape()).gpus.gpus.map((g) => g.utilizationPercent), [0, 0]);

    // 2 s after the first collection, 1.5 s of them busy: 75 %; energy grows by power x time (W x ms = mJ).
    busyMs = 1500;
    nowMs += 1000;
    const busy = await scrape();
    assert.deepEqual(busy.gpus.gpus.map((g) => [g.utilizationPercent, g.powerWatts, g.energyMj]), [
      [75, 516.081, 3_000_000_000 + 1_032_162],
      [68, 466.599, 4_000_000_000 + 933_198],
    ]);
    assert.equal(sim.scrapes, 3);
    assert.equal((await fetch(`${sim.url}/other`)).status, 404);
  } finally {
    await sim.close();
  }
});
