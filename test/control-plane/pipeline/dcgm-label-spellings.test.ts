// The pipeline tells the operator when a dcgm-exporter labels pods other than its default way: a
// real scrape over HTTP of a --use-old-namespace exporter (test/fixtures/pipeline, dcgm-exporter
// d5e5f51's format) logs a line naming the flag and counts the exporter in
// tokentrace_join_dcgm_label_spellings and tells the dashboard; once the exporter runs without it, the count
// drops back and the dashboard is told.
import { after, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { startPipeline, withDefaults } from "../../../control-plane/src/pipeline/index.js";
import { FakeClock, until } from "../../support/fake-clock.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");
const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

it("a --use-old-namespace dcgm-exporter: one log line naming the flag, counted by spelling, and uncounted once it runs without", async () => {
  let body = fixture("dcgm-old-namespace.prom");
  const server: Server = createServer((_req, res) => res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4" }).end(body));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-spell-"));
  cleanups.push(() => rmSync(queueDir, { recursive: true, force: true }));
  const clock = new FakeClock(1_800_000_000_000);
  const registry = new Registry();
  const logs: string[] = [];
  let dcgmScrapes = 0;
  const told: [string, string[]][] = [];
  const p = await startPipeline(
    withDefaults({ scrape: { intervalMs: 15000, timeoutMs: 5000, spreadStart: false, static: [{ url, kind: "dcgm", node: "gpu-node-e" }] }, remoteWrite: { queueDir, targets: [] } }),
    { registry, clock, log: (m) => logs.push(m), onBatch: (_s, r) => (dcgmScrapes += r.target.kind === "dcgm" ? 1 : 0), onExporterLabels: (u, notes) => told.push([u, [...notes]]) },
  );
  cleanups.push(async () => {
    const stopping = p.stop();
    await clock.advance(10_000);
    await stopping;
  });
  const gauge = async (spelling: string): Promise<number | undefined> => (await registry.getSingleMetric("tokentrace_join_dcgm_label_spellings")!.get()).values.find((v) => v.labels.spelling === spelling)?.value;
  await until(() => dcgmScrapes === 1, "the exporter scraped");
  assert.deepEqual(logs.filter((l) => l.includes("dcgm-exporter")), [
    `dcgm-exporter at ${url} runs with --use-old-namespace (DCGM_EXPORTER_USE_OLD_NAMESPACE): its labels uuid, pod_name and pod_namespace are read as UUID, pod and namespace here, but Prometheus rules and dashboards written for its default labels find nothing; run it without the flag`,
  ]);
  assert.equal(await gauge("old_namespace"), 1);
  assert.equal(await gauge("honor_labels_renamed"), 0);
  body = fixture("dcgm-default-counters.prom");
  await clock.advance(15_000);
  await until(() => dcgmScrapes === 2, "scraped again");
  assert.equal(await gauge("old_namespace"), 0);
  assert.equal(logs.filter((l) => l.includes("dcgm-exporter")).length, 1, "nothing more to say");
  assert.deepEqual(told, [[url, ["old_namespace"]], [url, []]], "the dashboard is told at each change (its GPU section lists the exporter, then no more)");
});
