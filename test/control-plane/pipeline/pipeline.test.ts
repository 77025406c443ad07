// The whole pipeline: fixture exporters on 127.0.0.1 (an Envoy sidecar with the filter's series,
// dcgm-exporter, vLLM) -> scrape -> join -> remote write -> a real Prometheus, read back exactly.
// Scrape schedule and batching run on a fake clock; HTTP and Prometheus are real.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { startPipeline, withDefaults, validatePipelineConfig, type PipelineConfigInput } from "../../../control-plane/src/pipeline/index.js";
import type { Transport } from "../../../control-plane/src/remote-write/transport.js";
import { PrometheusInstance } from "../../support/prometheus.js";
import { FakeClock, until } from "../../support/fake-clock.js";
import { exporter } from "../../support/fixture-exporter.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");

let prom: PrometheusInstance;
const cleanups: (() => Promise<void> | void)[] = [];
before(async () => {
  prom = await PrometheusInstance.start();
});
after(async () => {
  for (const c of cleanups) await c();
  await prom.destroy();
});

describe("metrics pipeline end to end", () => {
  it("ships the filter's series joined with GPU identity, the derived series and up, and marks a failed target's series stale", async () => {
    const dcgm = await exporter(fixture("dcgm-node-a.prom"));
    const vllm = await exporter(fixture("vllm-chat.prom"));
    const envoy = await exporter(fixture("envoy-sidecar-chat.prom"));
    const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-pipe-"));
    cleanups.push(() => rmSync(queueDir, { recursive: true, force: true }));
    for (const e of [dcgm, vllm, envoy]) cleanups.push(() => new Promise<void>((r) => e.server.close(() => r())));
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 10 * 60_000;
    const clock = new FakeClock(t0);
    const registry = new Registry();
    const pod = { namespace: "llm", pod: "chat-7d9f-abcde", node: "gpu-node-a" };
    const config = withDefaults({
      // One at a time in list order, so dcgm-exporter is read before the pod it maps.
      scrape: { intervalMs: 15000, timeoutMs: 5000, concurrency: 1, spreadStart: false, static: [
        { url: dcgm.url, kind: "dcgm" }, { url: vllm.url, kind: "vllm", ...pod }, { url: envoy.url, kind: "envoy", ...pod },
      ] },
      remoteWrite: { queueDir, targets: [{ name: "prom", url: prom.writeUrl, batchSendDeadlineMs: 1000, minBackoffMs: 10, maxBackoffMs: 100 }] },
    });
    let envoyScrapes = 0;
    const p = await startPipeline(config, { registry, clock, onBatch: (_s, r) => (envoyScrapes += r.target.kind === "envoy" ? 1 : 0) });
    const queue = p.writer.targets[0]!.queue;
    // Pass the envoy scrape count from before the clock moved: the scrape may run during advance().
    const round = async (before: number): Promise<void> => {
      await until(() => envoyScrapes > before, "envoy scraped");
      await clock.advance(1000);
      await until(() => queue.pendingSamples === 0, "queue drained");
    };
    await round(0); // t0
    // 15 s later the pod made 1500 more output tokens and 100 more requests; GPU 1 used 6000 J.
    envoy.body = envoy.body
      .replace('tokentrace_llm_output_tokens_total{route="chat",model="llama-3-8b"} 120000', 'tokentrace_llm_output_tokens_total{route="chat",model="llama-3-8b"} 121500')
      .replace('tokentrace_llm_ttft_ms_sum{route="chat",model="llama-3-8b"} 48000', 'tokentrace_llm_ttft_ms_sum{route="chat",model="llama-3-8b"} 60000')
      .replace('tokentrace_llm_ttft_ms_count{route="chat",model="llama-3-8b"} 400', 'tokentrace_llm_ttft_ms_count{route="chat",model="llama-3-8b"} 500');
    dcgm.body = dcgm.body.replace(/(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{[^}]*GPU-2222[^}]*\}) 7000000000/, "$1 7006000000");
    let before = envoyScrapes;
    await clock.advance(14_000);
    await round(before); // t0 + 15 s
    const t1 = (t0 + 15_000) / 1000;

    const req = await prom.query('tokentrace_requests_total{status_class="2xx"}', t1);
    assert.deepEqual(req, [{
      metric: {
        __name__: "tokentrace_requests_total", route: "chat", status_class: "2xx", namespace: "llm", pod: "chat-7d9f-abcde",
        gpu: "0,1", gpu_uuid: "GPU-1111aaaa-0000-4000-8000-000000000000,GPU-2222bbbb-0000-4000-8000-000000000000",
        gpu_model: "NVIDIA H100 80GB HBM3", hostname: "gpu-node-a", gpu_count: "2", gpu_attribution: "pod",
      },
      value: [t1, "400"],
    }]);
    const value = async (q: string): Promise<string[]> => (await prom.query(q, t1)).map((r) => r.value![1]);
    assert.deepEqual(await value('tokentrace_output_tokens_per_second_per_gpu{pod="chat-7d9f-abcde",route="chat"}'), ["50"]);
    assert.deepEqual(await value('tokentrace_gpu_seconds_per_1k_output_tokens{model="llama-3-8b"}'), ["15"]);
    assert.deepEqual(await value('tokentrace_route_latency_seconds{phase="ttft"}'), ["0.12"]);
    assert.deepEqual(await value('tokentrace_pod_gpu_utilization_percent{gpu="0"}'), ["87"]);
    assert.deepEqual(await value('up{job="envoy"}'), ["1"]);
    assert.deepEqual(await value('DCGM_FI_DEV_GPU_UTIL{gpu="2"}'), ["3"]);
    assert.deepEqual(await value('vllm:num_requests_running{pod="chat-7d9f-abcde"}'), ["6"]);

    // The sidecar starts failing: up goes to 0 and every series it had goes stale at that scrape.
    envoy.status = 503;
    // Another 6000 J on GPU 1 (400 W) for the tokens-per-joule figure of this round.
    dcgm.body = dcgm.body.replace(/(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{[^}]*GPU-2222[^}]*\}) 7006000000/, "$1 7012000000");
    before = envoyScrapes;
    await clock.advance(14_000);
    await round(before); // t0 + 30 s
    const t2 = (t0 + 30_000) / 1000;
    assert.deepEqual((await prom.query('up{job="envoy"}', t2)).map((r) => r.value![1]), ["0"]);
    // dcgm-exporter is read first each round: chat's last known rate, 1500 tokens / 15 s / 2 GPUs = 50/s, over 400 W.
    assert.deepEqual((await prom.query('tokentrace_gpu_tokens_per_joule{gpu="1"}', t2)).map((r) => r.value![1]), ["0.125"]);
    assert.deepEqual(await prom.query("tokentrace_requests_total", t2), []);
    assert.deepEqual(await prom.query("tokentrace_output_tokens_per_second_per_gpu", t2), []);
    assert.equal((await prom.query("tokentrace_requests_total", t1)).length, 2, "still there before the failure");
    const failures = (await registry.getSingleMetric("tokentrace_scrape_failures_total")!.get()).values;
    assert.deepEqual(failures.map((v) => [v.labels.kind, v.labels.reason, v.value]), [["envoy", "http_503", 1]]);
    await p.stop();
  });

  it("never splits a filter series across restarts: the sidecar answering before dcgm-exporter still ships with its GPU labels", async () => {
    const dcgm = await exporter(fixture("dcgm-node-a.prom"));
    const envoy = await exporter(fixture("envoy-sidecar-chat.prom"));
    const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-pipe-"));
    cleanups.push(() => rmSync(queueDir, { recursive: true, force: true }));
    for (const e of [dcgm, envoy]) cleanups.push(() => new Promise<void>((r) => e.server.close(() => r())));
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 8 * 60_000;
    const clock = new FakeClock(t0);
    const config = withDefaults({
      // One at a time in list order: the sidecar is read before dcgm-exporter after every start.
      scrape: { intervalMs: 15000, timeoutMs: 5000, concurrency: 1, spreadStart: false, static: [
        { url: envoy.url, kind: "envoy", namespace: "llm", pod: "chat-7d9f-abcde", node: "gpu-node-a" }, { url: dcgm.url, kind: "dcgm", node: "gpu-node-a" },
      ] },
      remoteWrite: { queueDir, targets: [{ name: "prom", url: prom.writeUrl, batchSendDeadlineMs: 1000, minBackoffMs: 10, maxBackoffMs: 100 }] },
    });
    for (let start = 0; start < 2; start++) {
      let dcgmScrapes = 0;
      const p = await startPipeline(config, { registry: new Registry(), clock, onBatch: (_s, r) => (dcgmScrapes += r.target.kind === "dcgm" ? 1 : 0) });
      await until(() => dcgmScrapes === 1, "dcgm-exporter scraped");
      await clock.advance(1000);
      await until(() => p.writer.targets[0]!.queue.pendingSamples === 0, "queue drained");
      const stopping = p.stop();
      await clock.advance(10_000);
      await stopping;
      await clock.advance(60_000);
    }
    const series = await prom.series('tokentrace_requests_total{pod="chat-7d9f-abcde"}', t0 / 1000 - 1, clock.now() / 1000);
    assert.deepEqual(series.map((x) => [x.metric.status_class, x.metric.gpu_model]).sort(), [["2xx", "NVIDIA H100 80GB HBM3"], ["5xx", "NVIDIA H100 80GB HBM3"]]);
    // Only this test's samples: the window starts at its own t0 (the first test wrote the same pod earlier).
    const points = await prom.query(`count_over_time(tokentrace_requests_total{status_class="2xx"}[${(clock.now() - t0) / 1000 + 1}s])`, clock.now() / 1000);
    assert.deepEqual(points.map((r) => r.value![1]), ["2"], "one sample per start, both in the one series");
  });

  it("caps the number of series and counts what it cut", async () => {
    const e = await exporter(["# TYPE tokentrace_requests_total counter", ...Array.from({ length: 8 }, (_, i) => `tokentrace_requests_total{route="r${i}"} ${i}`)].join("\n") + "\n");
    cleanups.push(() => new Promise<void>((r) => e.server.close(() => r())));
    const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-pipe-"));
    cleanups.push(() => rmSync(queueDir, { recursive: true, force: true }));
    const registry = new Registry();
    const clock = new FakeClock();
    const shipped: number[] = [];
    const transport: Transport = { send: async () => ({ kind: "success", status: 204 }) };
    const p = await startPipeline(
      withDefaults({
        scrape: { spreadStart: false, static: [{ url: e.url, kind: "envoy", namespace: "n", pod: "p" }] },
        join: { maxSeries: 6 },
        remoteWrite: { queueDir, targets: [{ name: "x", url: "http://127.0.0.1:9/api/v1/write" }] },
      }),
      { registry, clock, transportFor: () => transport, onBatch: (s) => shipped.push(s.length) },
    );
    await until(() => shipped.length === 1, "one scrape");
    await until(() => p.writer.targets[0]!.queue.pendingSamples === 6, "queued");
    // 8 filter series + up + scrape_duration_seconds = 10 joined; 6 admitted, 4 cut.
    const dropped = (await registry.getSingleMetric("tokentrace_join_series_dropped_total")!.get()).values;
    assert.deepEqual(dropped.map((v) => [v.labels.reason, v.value]), [["cardinality_cap", 4]]);
    assert.equal((await registry.getSingleMetric("tokentrace_join_active_series")!.get()).values[0]!.value, 6);
    const stopping = p.stop();
    await clock.advance(10_000);
    await stopping;
  });
});

describe("pipeline config", () => {
  it("accepts the defaults and a filled-in target", () => {
    assert.deepEqual(validatePipelineConfig(withDefaults()), []);
    assert.deepEqual(validatePipelineConfig(withDefaults({ remoteWrite: { targets: [{ name: "mimir", url: "https://mimir:8080/api/v1/push", headers: { "X-Scope-OrgID": "t" } }] } })), []);
  });

  const bad: { name: string; input: PipelineConfigInput; errors: { field: string; reason: string }[] }[] = [
    { name: "a timeout longer than the interval", input: { scrape: { intervalMs: 1000, timeoutMs: 2000 } }, errors: [{ field: "scrape.timeoutMs", reason: "must not exceed scrape.intervalMs (1000), got 2000" }] },
    { name: "zero concurrency", input: { scrape: { concurrency: 0 } }, errors: [{ field: "scrape.concurrency", reason: "must be an integer >= 1, got 0" }] },
    { name: "a static target that is not a URL and has an unknown kind", input: { scrape: { static: [{ url: "nope", kind: "x" as "envoy" }] } }, errors: [
      { field: "scrape.static[0].url", reason: 'must be an http(s) URL, got "nope"' },
      { field: "scrape.static[0].kind", reason: 'must be envoy, dcgm, vllm or static, got "x"' },
    ] },
    { name: "duplicate remote-write names, a bad protocol and inverted backoff", input: { remoteWrite: { targets: [
      { name: "a", url: "http://h/api/v1/write" },
      { name: "a", url: "http://h/api/v1/write", protocol: "3.0" as "2.0", minBackoffMs: 100, maxBackoffMs: 10 },
    ] } }, errors: [
      { field: "remoteWrite.targets[1].name", reason: 'duplicate target name "a"' },
      { field: "remoteWrite.targets[1].protocol", reason: 'must be "1.0" or "2.0", got "3.0"' },
      { field: "remoteWrite.targets[1].maxBackoffMs", reason: "must be >= minBackoffMs (100), got 10" },
    ] },
    { name: "a segment larger than the queue", input: { remoteWrite: { targets: [{ name: "q", url: "http://h/w", maxQueueBytes: 4096, segmentBytes: 8192 }] } }, errors: [
      { field: "remoteWrite.targets[0].segmentBytes", reason: "must not exceed maxQueueBytes (4096), got 8192" },
    ] },
    { name: "a null remote-write name (which a regular expression would read as the string \"null\")", input: { remoteWrite: { targets: [{ name: null as unknown as string, url: "http://h/w" }] } }, errors: [
      { field: "remoteWrite.targets[0].name", reason: "must be a non-empty string, got null" },
    ] },
    { name: "names, paths and selectors that are not strings", input: {
      scrape: { static: [{ url: 5 as unknown as string, kind: "envoy", namespace: "n", pod: ["p"] as unknown as string }], kubernetes: { labelSelector: 7 as unknown as string, enabled: "yes" as unknown as boolean } },
      join: { forward: { envoy: [1], dcgm: [], vllm: [], static: "x" } as unknown as PipelineConfigInput["join"] extends infer J ? J extends { forward?: infer F } ? F : never : never },
      remoteWrite: { queueDir: 3 as unknown as string, targets: [{ name: "a", url: "http://h/w", headers: { "X-Scope-OrgID": null as unknown as string } }] },
    }, errors: [
      { field: "scrape.static[0].url", reason: "must be a non-empty string, got 5" },
      { field: "scrape.static[0].pod", reason: 'must be a non-empty string, got ["p"]' },
      { field: "scrape.kubernetes.enabled", reason: 'must be true or false, got "yes"' },
      { field: "scrape.kubernetes.labelSelector", reason: "must be a non-empty string, got 7" },
      { field: "join.forward.envoy[0]", reason: "must be a non-empty string, got 1" },
      { field: "join.forward.static", reason: 'must be a list, got "x"' },
      { field: "remoteWrite.targets[0].headers.X-Scope-OrgID", reason: "must be a string, got null" },
      { field: "remoteWrite.queueDir", reason: "must be a non-empty string, got 3" },
    ] },
    { name: "a GenAI switch that is not a boolean and a provider name that is no short lower-case name", input: { join: { genaiMetrics: "on" as unknown as boolean, genaiProviderName: "vLLM behind TGI" } }, errors: [
      { field: "join.genaiMetrics", reason: 'must be true or false, got "on"' },
      { field: "join.genaiProviderName", reason: 'must match [a-z0-9._-]{1,64}, got "vLLM behind TGI"' },
    ] },
    { name: "sharding with a non-string identity and a lease shorter than a second", input: { sharding: { enabled: true, identity: 7 as unknown as string, leaseDurationMs: 500 } }, errors: [
      { field: "sharding.identity", reason: "must be a string, got 7" },
      { field: "sharding.leaseDurationMs", reason: "must be an integer >= 1000, got 500" },
    ] },
    { name: "a remote-write target list that is not a list, and a target that is not a mapping", input: { remoteWrite: { targets: "prom" as unknown as [] } }, errors: [
      { field: "remoteWrite.targets", reason: 'must be a list, got "prom"' },
    ] },
    { name: "two static targets with one identity, and a pod without its namespace", input: { scrape: { static: [
      { url: "http://h:1/m", kind: "envoy", namespace: "n", pod: "p" }, { url: "http://h:1/m", kind: "envoy", namespace: "n", pod: "p" }, { url: "http://h:1/m", kind: "vllm", pod: "p" },
    ] } }, errors: [
      { field: "scrape.static[1]", reason: "duplicate target: another static target has the same kind, url, namespace and pod" },
      { field: "scrape.static[2].namespace", reason: "namespace and pod go together: a pod is named within its namespace" },
    ] },
  ];
  for (const c of bad) it(`rejects ${c.name}, naming the field`, () => assert.deepEqual(validatePipelineConfig(withDefaults(c.input)), c.errors));

  it("accepts two static targets with one URL for different pods, or of different kinds", () => {
    assert.deepEqual(validatePipelineConfig(withDefaults({ scrape: { static: [
      { url: "http://h:1/m", kind: "envoy", namespace: "n", pod: "p1" }, { url: "http://h:1/m", kind: "envoy", namespace: "n", pod: "p2" }, { url: "http://h:1/m", kind: "vllm", namespace: "n", pod: "p1" },
    ] } })), []);
  });

  it("refuses to start on a null remote-write name, naming the field, instead of dying later", async () => {
    await assert.rejects(startPipeline(withDefaults({ remoteWrite: { targets: [{ name: null as unknown as string, url: "http://h/w" }] } }), { registry: new Registry() }), /remoteWrite\.targets\[0\]\.name: must be a non-empty string, got null/);
  });

  it("refuses to start on an invalid config", async () => {
    await assert.rejects(startPipeline(withDefaults({ scrape: { concurrency: 0 } }), { registry: new Registry() }), /scrape\.concurrency: must be an integer >= 1, got 0/);
  });
});
