// docs/gpu.md's "The GPU section is empty", end to end: the demo stack (real filter.wasm on the
// emulated Envoy host, the real pipeline and control plane) with the simulated dcgm-exporter labelling
// pods as --use-old-namespace does, then as a honor_labels-false scrape stores them. Neither Prometheus
// nor load: the note comes from the join at the exporter's first scrape. The page's block of curl and
// jq, run as written with bash, prints the exporter's note naming the setting to change, the pod whose
// GPU the join mapped all the same, and the count the alert reads.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { labelNoteMessage, type ExporterLabelNote } from "../../control-plane/src/join/gpu-index.js";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import type { DcgmLabelSpelling } from "./dcgm-sim.js";
import { gpuWalkthrough, until } from "./gpu-scenario-support.js";
import { startDemoStack } from "./stack.js";

const CASES: [DcgmLabelSpelling, ExporterLabelNote, RegExp][] = [
  ["old-namespace", "old_namespace", /runs with --use-old-namespace \(DCGM_EXPORTER_USE_OLD_NAMESPACE\).*; run it without the flag$/],
  ["honor-labels-false", "honor_labels_renamed", /carry exported_pod and exported_namespace: .* set serviceMonitor\.honorLabels: true \(honor_labels: true\)/],
];

for (const [spelling, note, setting] of CASES) {
  test(`docs/gpu.md, The GPU section is empty (simulated dcgm-exporter, its pod labels spelled ${spelling} as TOKENTRACE_DEMO_DCGM_LABELS sets them; real pipeline and control plane): its block run as written prints the exporter's ${note} note naming the setting, the pod its GPU still joins to, and the count`, { timeout: 60_000 }, async () => {
    const block = gpuWalkthrough("The GPU section is empty", { doc: "gpu.md", start: "CP=" });
    const stack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), errorRate: 0, scrapeIntervalMs: 500, prometheus: "off", loadRps: 0, dcgmLabels: spelling });
    try {
      // The note comes with the exporter's first scrape, the pod's GPUs with the sidecar's first scrape after it.
      await until("the page to list the exporter and the pod's GPUs", async () => {
        const body = (await (await fetch(`${stack.controlPlaneUrl}/v1/dashboard/gpus?range=300`)).json()) as { exporterNotes: unknown[]; pods: unknown[] };
        return body.exporterNotes.length > 0 && body.pods.length > 0;
      }, 20_000);
      const { stdout } = await promisify(execFile)("bash", ["-e", "-o", "pipefail", "-c", block], { env: { PATH: process.env.PATH ?? "", CP: stack.controlPlaneUrl } });
      const url = stack.dcgm.metricsUrl;
      const [noteLine, ...rest] = stdout.trim().split("\n");
      assert.equal(noteLine, `${url} ${note}: ${labelNoteMessage(note, url)}`, `1. the page's note:\n${stdout}`);
      assert.match(noteLine!, setting, "1. it names the setting to change");
      assert.deepEqual(rest, [
        "demo/llm-sim-0: 1 GPU(s)",
        `tokentrace_join_dcgm_label_spellings{spelling="old_namespace"} ${note === "old_namespace" ? 1 : 0}`,
        `tokentrace_join_dcgm_label_spellings{spelling="honor_labels_renamed"} ${note === "honor_labels_renamed" ? 1 : 0}`,
      ], `2. the pod, 3. the count:\n${stdout}`);
    } finally {
      await stack.close();
    }
  });
}
