// LoRA adapters of a vLLM server, end to end over HTTP: the pipeline scrapes an emulated vLLM
// (test/support/vllm-server.ts) whose /metrics carries vllm:lora_requests_info as vLLM 005a810
// writes it (every past state kept, the newest the largest value) and whose /v1/models lists the
// adapters with their `parent` (vLLM 075e9ba serving_models.py show_available_models). The model
// list is asked apart from the scrape, at most every refreshMs; a failing one is counted by reason
// and never fails the scrape.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { startPipeline, withDefaults, type RunningPipeline } from "../../../control-plane/src/pipeline/index.js";
import { loraStateOf, MAX_ADAPTERS_PER_POD } from "../../../control-plane/src/engine/lora-info.js";
import { fetchModelList, parseModelList } from "../../../control-plane/src/engine/model-list.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import * as C from "../../../control-plane/src/join/catalogue.js";
import { FakeClock, until } from "../../support/fake-clock.js";
import { startVllmServer, type VllmServer } from "../../support/vllm-server.js";

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/pipeline/${name}`, import.meta.url), "utf8");
const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** name{label="value",...} of the LoRA series in a batch -> value, sorted. */
const loraSeries = (series: WriteSeries[]): string[] =>
  series
    .filter((s) => String(s.labels[1]).startsWith("tokentrace_model_lora_"))
    .map((s) => {
      const pairs: string[] = [];
      for (let i = 2; i < s.labels.length; i += 2) if (s.labels[i] !== "namespace") pairs.push(`${s.labels[i]}=${s.labels[i + 1]}`);
      return `${s.labels[1]}{${pairs.sort().join(",")}} ${s.samples[0]!.value}`;
    })
    .sort();

async function pipelineOn(server: VllmServer): Promise<{ p: RunningPipeline; clock: FakeClock; registry: Registry; batches: WriteSeries[][] }> {
  const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-lora-"));
  cleanups.push(() => rmSync(queueDir, { recursive: true, force: true }));
  const clock = new FakeClock(1_800_000_000_000);
  const registry = new Registry();
  const batches: WriteSeries[][] = [];
  const p = await startPipeline(
    withDefaults({ scrape: { intervalMs: 15000, timeoutMs: 5000, spreadStart: false, static: [{ url: `${server.url}/metrics`, kind: "vllm", namespace: "llm", pod: "lora-0" }] }, remoteWrite: { queueDir, targets: [] } }),
    { registry, clock, onBatch: (s, r) => r.target.kind === "vllm" && batches.push(s) },
  );
  cleanups.push(async () => {
    const stopping = p.stop();
    await clock.advance(10_000);
    await stopping;
  });
  return { p, clock, registry, batches };
}

describe("LoRA adapters joined to the pod, with the base model from the server's model list", () => {
  it("per adapter: loaded (the list), running and waiting (the newest lora_requests_info), its base model; max_lora per pod", async () => {
    const server = await startVllmServer({ metrics: fixture("vllm-lora.prom"), models: fixture("vllm-lora-models.json").replace('"id":"support-fr","object":"model","created":1779800000,"owned_by":"vllm","root":"/adapters/support-fr","parent":"meta-llama/Llama-3.1-8B-Instruct"', '"id":"support-fr","object":"model","created":1779800000,"owned_by":"vllm","root":"/adapters/support-fr","parent":"mistralai/Mistral-7B-Instruct-v0.3"') });
    cleanups.push(() => server.close());
    const { p, clock, batches } = await pipelineOn(server);
    await until(() => batches.length === 1, "first scrape");
    // Before the list is in: the adapters in use, related to the server's one model.
    assert.deepEqual(loraSeries(batches[0]!), [
      `${C.MODEL_LORA_ADAPTER_INFO}{base_model=${LLAMA},model=chat-de,pod=lora-0} 1`,
      `${C.MODEL_LORA_ADAPTER_INFO}{base_model=${LLAMA},model=sql-lora,pod=lora-0} 1`,
      `${C.MODEL_LORA_ADAPTER_INFO}{base_model=${LLAMA},model=support-fr,pod=lora-0} 1`,
      `${C.MODEL_LORA_ADAPTER_RUNNING}{base_model=${LLAMA},model=chat-de,pod=lora-0} 1`,
      `${C.MODEL_LORA_ADAPTER_RUNNING}{base_model=${LLAMA},model=sql-lora,pod=lora-0} 1`,
      `${C.MODEL_LORA_ADAPTER_RUNNING}{base_model=${LLAMA},model=support-fr,pod=lora-0} 0`,
      `${C.MODEL_LORA_ADAPTER_WAITING}{base_model=${LLAMA},model=chat-de,pod=lora-0} 0`,
      `${C.MODEL_LORA_ADAPTER_WAITING}{base_model=${LLAMA},model=sql-lora,pod=lora-0} 0`,
      `${C.MODEL_LORA_ADAPTER_WAITING}{base_model=${LLAMA},model=support-fr,pod=lora-0} 1`,
      `${C.MODEL_LORA_MAX_ADAPTERS}{model=${LLAMA},pod=lora-0} 2`,
    ]);
    await until(() => p.modelLists.parentsOf(p.targets()[0]!.id) !== undefined, "the model list read");
    await clock.advance(15_000);
    await until(() => batches.length === 2, "second scrape");
    const second = loraSeries(batches[1]!);
    assert.ok(second.includes(`${C.MODEL_LORA_ADAPTER_INFO}{base_model=mistralai/Mistral-7B-Instruct-v0.3,model=support-fr,pod=lora-0} 1`), "the listed parent, not the server's first model");
    assert.ok(second.includes(`${C.MODEL_LORA_ADAPTER_RUNNING}{base_model=${LLAMA},model=idle-lora,pod=lora-0} 0`), "a loaded adapter without requests");
    assert.equal(second.filter((l) => l.startsWith(C.MODEL_LORA_ADAPTER_INFO)).length, 4, "the list's four adapters; the base model is none");
    assert.equal(server.requests.get("/v1/models"), 1, "not asked again within refreshMs (60 s)");
  });

  it("a failing model list is counted by reason; the scrape and the adapters in use go on", async () => {
    const server = await startVllmServer({ metrics: fixture("vllm-lora.prom"), models: { status: 500 } });
    cleanups.push(() => server.close());
    const { clock, registry, batches } = await pipelineOn(server);
    const failures = async (reason: string): Promise<number | undefined> => (await registry.getSingleMetric("tokentrace_engine_model_list_failures_total")!.get()).values.find((v) => v.labels.reason === reason)?.value;
    await until(async () => (await failures("http_500")) === 1, "the failure counted");
    server.state.models = `{"object":"list","data":[${"x".repeat(300 * 1024)}]}`;
    await clock.advance(60_000);
    await until(async () => (await failures("body_too_large")) === 1, "the oversized list counted");
    assert.ok(batches.length >= 2);
    assert.ok(batches.every((b) => loraSeries(b).some((l) => l.startsWith(C.MODEL_LORA_ADAPTER_RUNNING))), "every scrape still reports the adapters in use");
    // An engine naming more adapters than the bound: reported up to it, the rest counted.
    const dropped = async (): Promise<number> => (await registry.getSingleMetric("tokentrace_engine_lora_adapters_dropped_total")!.get()).values[0]?.value ?? 0;
    const before = batches.length;
    server.state.metrics = fixture("vllm-lora.prom") + `vllm:lora_requests_info{max_lora="2",running_lora_adapters="${Array.from({ length: 70 }, (_, i) => `a${i}`).join(",")}",waiting_lora_adapters=""} 1.78e+09\n`;
    await clock.advance(15_000);
    await until(() => batches.length > before, "scraped again");
    assert.equal(loraSeries(batches.at(-1)!).filter((l) => l.startsWith(C.MODEL_LORA_ADAPTER_INFO)).length, 64);
    assert.equal(await dropped(), 6);
  });
});

describe("reading vLLM's LoRA gauge and model list", () => {
  it("the newest lora_requests_info is the largest value, whatever the order of the lines", () => {
    const state = loraStateOf(parseText(fixture("vllm-lora.prom")).samples)!;
    assert.deepEqual(state, { running: ["sql-lora", "chat-de"], waiting: ["support-fr"], maxLora: 2, dropped: 0 });
  });

  it("adapter names are bounded per pod (64) and in length (256)", () => {
    const many = Array.from({ length: 70 }, (_, i) => `a${i}`).join(",");
    const text = `vllm:lora_requests_info{max_lora="8",running_lora_adapters="${many}",waiting_lora_adapters="${"y".repeat(300)}"} 1.7e+09\n`;
    const state = loraStateOf(parseText(text).samples)!;
    assert.equal(state.running.length, MAX_ADAPTERS_PER_POD);
    assert.deepEqual(state.waiting, []);
    assert.equal(state.dropped, 7);
  });

  it("model list: adapters are the cards with a parent; a body that is not a ModelList is invalid_json", () => {
    const r = parseModelList(fixture("vllm-lora-models.json"));
    assert.ok(r.ok);
    assert.deepEqual([...r.parents], [["sql-lora", LLAMA], ["chat-de", LLAMA], ["support-fr", LLAMA], ["idle-lora", LLAMA]]);
    assert.deepEqual(parseModelList("<html>"), { ok: false, reason: "invalid_json" });
    assert.deepEqual(parseModelList('{"object":"list"}'), { ok: false, reason: "invalid_json" });
  });

  it("a server that never answers is a timeout, within the limit", async () => {
    const { createServer } = await import("node:http");
    const hung = createServer(() => undefined);
    await new Promise<void>((r) => hung.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => { hung.closeAllConnections(); hung.close(() => r()); }));
    const port = (hung.address() as { port: number }).port;
    assert.deepEqual(await fetchModelList(`http://127.0.0.1:${port}/v1/models`, { timeoutMs: 50, maxBodyBytes: 1024, refreshMs: 60_000 }), { ok: false, reason: "timeout" });
  });
});
