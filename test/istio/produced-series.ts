// The series the project produces and the labels on each, read from the running code rather than
// from a second hand-written list: the real filter.wasm under the test host (its /stats/prometheus
// text with the mesh's extraStatTags), passed through the real metrics pipeline join with a
// dcgm-exporter, a vLLM and an SGLang scrape (fixtures in test/fixtures/istio/), plus the control plane's
// prom-client registries; and the series the rule files of istio/observability/ record (their
// `record:` names). Dashboards and alerts may only name what this returns.
import { readdirSync, readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { Registry } from "prom-client";
import { createMetrics } from "../../control-plane/src/api/metrics.js";
import { Joiner } from "../../control-plane/src/join/joiner.js";
import { createPipelineMetrics } from "../../control-plane/src/pipeline/metrics.js";
import { createRemoteWriteMetrics } from "../../control-plane/src/remote-write/metrics.js";
import type { ScrapeResult } from "../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { ManualClock } from "../host/index.js";
import { countingRandom, loadContentFilter, loadFilter } from "../filter/support.js";
import { startContentKeyServer } from "../support/content-key-server.js";
import { advance } from "../support/engine-scrapes.js";
import { meshScrapes, MESH_POD } from "../support/mesh-scrapes.js";
import { SERIES_FOR_RULE } from "../support/rule-names.js";
import { checkExpression } from "./promql.js";

/** Series name -> label names it can carry. */
export type SeriesCatalogue = Map<string, Set<string>>;

const NAMESPACE = MESH_POD.namespace;
const POD = MESH_POD.pod;
const ENVOY: ScrapeTarget = { id: `envoy/${NAMESPACE}/${POD}`, kind: "envoy", url: "http://10.1.0.7:15090/stats/prometheus", intervalMs: 15000, timeoutMs: 5000, namespace: NAMESPACE, pod: POD, node: MESH_POD.node };
const VLLM: ScrapeTarget = { ...ENVOY, id: `vllm/${NAMESPACE}/${POD}`, kind: "vllm", url: "http://10.1.0.7:8000/metrics" };
/** A second model server in the pod (SGLang, port 30000; test/fixtures/istio/sglang-0.prom, counters advanced each round): a pod may run several. */
const sglangText = readFileSync(new URL("../fixtures/istio/sglang-0.prom", import.meta.url), "utf8");
const SGLANG: ScrapeTarget = { ...VLLM, id: `sglang/${NAMESPACE}/${POD}`, url: "http://10.1.0.7:30000/metrics" };
const DCGM: ScrapeTarget = { id: "dcgm/gpu-operator/dcgm-1", kind: "dcgm", url: "http://10.1.0.9:9400/metrics", intervalMs: 15000, timeoutMs: 5000, namespace: "gpu-operator", pod: "dcgm-1", node: MESH_POD.node };

function scrape(target: ScrapeTarget, text: string, timestampMs: number): ScrapeResult {
  const p = parseText(text);
  return { target, timestampMs, durationMs: 9, ok: true, samples: p.samples, families: p.families, parseErrors: p.errors };
}

function addSeries(catalogue: SeriesCatalogue, name: string, labels: Iterable<string>): void {
  const set = catalogue.get(name) ?? new Set<string>();
  for (const l of labels) set.add(l);
  catalogue.set(name, set);
}

/** The filter's series as the sidecar exports them, and after the pipeline's join. */
export async function filterAndPipelineSeries(pluginConfig: unknown, statTags: string[]): Promise<{ sidecar: SeriesCatalogue; joined: SeriesCatalogue }> {
  const mesh = await meshScrapes(pluginConfig, statTags);
  const sidecar: SeriesCatalogue = new Map();
  const t0 = 1_800_000_000_000;
  const joiner = new Joiner();
  const joined: SeriesCatalogue = new Map();
  const collect = (out: ReturnType<Joiner["join"]>): void => {
    for (const s of out) {
      const names: string[] = [];
      let metric = "";
      for (let i = 0; i < s.labels.length; i += 2) {
        if (s.labels[i] === "__name__") metric = s.labels[i + 1]!;
        else names.push(s.labels[i]!);
      }
      addSeries(joined, metric, names);
    }
  };
  // Two rounds 15 s apart: rates and the latency attribution need two consecutive scrapes.
  for (let round = 0; round < 2; round++) {
    const { envoy, vllm, dcgm } = mesh.round(round);
    const sglang = advance(sglangText, round, 0.25);
    for (const s of parseText(envoy).samples) addSeries(sidecar, s.name, s.labels.filter((_, i) => i % 2 === 0));
    const at = t0 + round * 15000;
    collect(joiner.join(scrape(DCGM, dcgm, at)));
    collect(joiner.join(scrape(VLLM, vllm, at)));
    collect(joiner.join(scrape(SGLANG, sglang, at)));
    collect(joiner.join(scrape(ENVOY, envoy, at + 1000)));
  }
  for (const [name, labels] of await contentCaptureSeries(pluginConfig, statTags)) addSeries(sidecar, name, labels);
  for (const [name, labels] of await tailKeepSeries(pluginConfig, statTags)) addSeries(sidecar, name, labels);
  // Tokens per joule needs the pods' token rate first, then a dcgm energy delta.
  collect(joiner.join(scrape(DCGM, mesh.round(2).dcgm, t0 + 30000)));
  return { sidecar, joined };
}

/**
 * The series of content capture (spans.content), which a VM defines only once it captures: the
 * content module with the same pluginConfig and spans and capture on, one sampled chat call whose
 * prompt holds an e-mail address.
 */
async function contentCaptureSeries(pluginConfig: unknown, statTags: string[]): Promise<SeriesCatalogue> {
  // Pseudonyms on, the key fetched once from a content-key server, so the key's counter is defined too.
  const keys = await startContentKeyServer();
  keys.keys.set("v1", Buffer.alloc(32, 7));
  keys.current = "v1";
  const content = { enabled: true, pseudonyms: { keySource: { cluster: "cp", workload: "llm.chat" } } };
  const config = { ...(pluginConfig as object), sampling: { defaultRate: 1 }, spans: { cluster: "otel", content } };
  const vm = await loadContentFilter({ clock: new ManualClock(1_800_000_000_000_000_000n), random: countingRandom(), config, statTags, clusters: { cp: keys.url } });
  if (!vm.configureAccepted) throw new Error("the filter rejected the pluginConfig with content capture");
  vm.tick();
  await vm.settle();
  await keys.close();
  const s = vm.newStream({ routeName: "chat" });
  s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "vllm.llm.svc"], ["content-type", "application/json"]], false);
  s.requestBody(JSON.stringify({ model: "llama-3.1-8b", messages: [{ role: "user", content: "write to ana@example.org" }] }), true);
  s.responseHeaders([[":status", "200"], ["content-type", "application/json"]], false);
  s.responseBody(JSON.stringify({ model: "llama-3.1-8b", choices: [{ index: 0, message: { role: "assistant", content: "done" }, finish_reason: "stop" }], usage: { prompt_tokens: 9, completion_tokens: 1 } }), true);
  s.end();
  const out: SeriesCatalogue = new Map();
  for (const sample of parseText(vm.stats.prometheus()).samples) {
    if (sample.name.startsWith("tokentrace_content_")) addSeries(out, sample.name, sample.labels.filter((_, i) => i % 2 === 0));
  }
  return out;
}

/**
 * The series of tail keep with a budget (spans.keep), which a VM defines per route and reason on
 * first use: two failed calls against a budget of one span, so one is kept and one dropped; and the
 * LLM request counter of those calls (status_class, error_type).
 */
async function tailKeepSeries(pluginConfig: unknown, statTags: string[]): Promise<SeriesCatalogue> {
  const config = { ...(pluginConfig as object), sampling: { defaultRate: 0 }, spans: { cluster: "otel", keep: { errors: true, budget: { tracesPerSecond: 0.001, burstSeconds: 1 } } } };
  const vm = await loadFilter({ clock: new ManualClock(1_800_000_000_000_000_000n), random: countingRandom(), config, statTags });
  if (!vm.configureAccepted) throw new Error("the filter rejected the pluginConfig with tail keep");
  for (let i = 0; i < 2; i++) {
    const s = vm.newStream({ routeName: "chat" });
    s.requestHeaders([[":method", "POST"], [":path", "/v1/chat/completions"], [":authority", "vllm.llm.svc"], ["content-type", "application/json"]], false);
    s.requestBody(JSON.stringify({ model: "llama-3.1-8b", messages: [{ role: "user", content: "x" }] }), true);
    s.responseHeaders([[":status", "503"], ["content-type", "application/json"]], true);
    s.end();
  }
  vm.tick();
  const out: SeriesCatalogue = new Map();
  for (const sample of parseText(vm.stats.prometheus()).samples) {
    // The failed calls' LLM request counter too: only a failure carries error_type.
    if (sample.name.startsWith("tokentrace_spans_kept") || sample.name.startsWith("tokentrace_spans_budget") || sample.name === "tokentrace_llm_requests_total") addSeries(out, sample.name, sample.labels.filter((_, i) => i % 2 === 0));
  }
  return out;
}

/** The control plane's /metrics: prom-client names with histogram suffixes, plus job and instance from the scrape. */
export function controlPlaneSeries(): SeriesCatalogue {
  const { registry } = createMetrics(true);
  const pipeline = new Registry();
  createPipelineMetrics(pipeline);
  createRemoteWriteMetrics(pipeline);
  const out: SeriesCatalogue = new Map();
  for (const reg of [registry, pipeline]) {
    for (const m of reg.getMetricsAsArray()) {
      const raw = m as unknown as { name: string; labelNames?: string[]; constructor: { name: string } };
      const labels = [...(raw.labelNames ?? []), "job", "instance"];
      if (raw.constructor.name === "Histogram") {
        addSeries(out, `${raw.name}_bucket`, [...labels, "le"]);
        addSeries(out, `${raw.name}_sum`, labels);
        addSeries(out, `${raw.name}_count`, labels);
      } else {
        addSeries(out, raw.name, labels);
      }
    }
  }
  return out;
}

/** Union of catalogues. */
export function merge(...catalogues: SeriesCatalogue[]): SeriesCatalogue {
  const out: SeriesCatalogue = new Map();
  for (const c of catalogues) for (const [name, labels] of c) addSeries(out, name, labels);
  return out;
}

/** One recording rule of a rule file. */
export interface RecordRule { file: string; record: string; expr: string; labels: Record<string, string> }

const OBSERVABILITY = new URL("../../istio/observability/", import.meta.url);

/** Every `record:` rule of every PrometheusRule in istio/observability/, in file order. */
export function recordRules(dir: URL = OBSERVABILITY): RecordRule[] {
  const out: RecordRule[] = [];
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of parseAllDocuments(readFileSync(new URL(file, dir), "utf8"))) {
      const obj = doc.toJS() as { kind?: string; spec?: { groups?: { rules: { record?: string; expr: string; labels?: Record<string, string> }[] }[] } } | null;
      if (obj?.kind !== "PrometheusRule") continue;
      for (const g of obj.spec?.groups ?? []) for (const r of g.rules) if (r.record !== undefined) out.push({ file, record: r.record, expr: r.expr, labels: r.labels ?? {} });
    }
  }
  return out;
}

/**
 * The series the rule files record, with their labels: a rule that computes a pipeline series
 * (test/support/rule-names.ts) carries that series' labels (the promtool tests check the rule
 * returns exactly the join's series), less the pipeline-only gpu_pods; any other rule the labels
 * its expression keeps over `produced` and what it recorded before (a rule may read another:
 * repeated until nothing changes). Its own `labels:` are added to both.
 */
export function recordedSeries(produced: SeriesCatalogue, rules: readonly RecordRule[] = recordRules()): SeriesCatalogue {
  let recorded: SeriesCatalogue = new Map();
  for (let pass = 0; pass < 8; pass++) {
    const next: SeriesCatalogue = new Map();
    const known = merge(produced, recorded);
    for (const r of rules) {
      const series = SERIES_FOR_RULE.get(r.record);
      const labels = series !== undefined ? [...(produced.get(series) ?? [])].filter((l) => l !== "gpu_pods") : [...checkExpression(r.expr, known).outputLabels];
      addSeries(next, r.record, [...labels, ...Object.keys(r.labels)]);
    }
    const same = next.size === recorded.size && [...next].every(([n, l]) => recorded.get(n)?.size === l.size);
    recorded = next;
    if (same) break;
  }
  return recorded;
}
