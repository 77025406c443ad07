// What each in-process stage of the pipeline costs per shipped sample: the synthetic fleet of the
// agent bench (its text rendered here, no HTTP), scraped every 5 s of simulated time by a pipeline
// that stops after one stage, each in a process of its own (the heap and its collections are the
// stage's own), rounds of the five interleaved, the median per stage:
//   parse | + join, forwarded series only (no derived family) | + join | + series gate | + the
//   dashboard's and the sampler's observers (what pipeline-child.ts runs before remote write).
// CPU time is counted after the rate windows are full. Remote write (queue, encoding, snappy, HTTP)
// and the scrape's HTTP are not here: the agent bench's total less these is what they cost.
//   node --import tsx test/bench/support/stage-costs.ts [measuredRounds] [repeats]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Joiner, WindowBudget } from "../../../control-plane/src/join/joiner.js";
import { SeriesGate } from "../../../control-plane/src/pipeline/series-gate.js";
import { joinWindowBytes } from "../../../control-plane/src/pipeline/index.js";
import { withDefaults } from "../../../control-plane/src/pipeline/config.js";
import { SeriesRegistry } from "../../../control-plane/src/remote-write/series-registry.js";
import type { WriteSeries } from "../../../control-plane/src/remote-write/series.js";
import type { ParsedSample } from "../../../control-plane/src/scrape/sample.js";
import type { ScrapeResult } from "../../../control-plane/src/scrape/scraper.js";
import { staticTargets } from "../../../control-plane/src/scrape/targets.js";
import { TextParser } from "../../../control-plane/src/scrape/text-parser.js";
import { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { PipelineRateSource } from "../../../control-plane/src/adaptive/pipeline-rates.js";
import { endpointText, fleetEndpoints, type FleetShape } from "./synthetic-fleet.js";

const SHAPE: FleetShape = { nodes: 6, podsPerNode: 6, routes: 4, models: 2, gpusPerNode: 8 };
const INTERVAL_MS = 5_000;
/** A chunk of the body as fetch hands them to the parser. */
const CHUNK = 65_536;
const measured = Number(process.argv[2] ?? "15");

const endpoints = fleetEndpoints(SHAPE);
const config = withDefaults({
  scrape: {
    intervalMs: INTERVAL_MS,
    timeoutMs: INTERVAL_MS,
    static: endpoints.map((e) => ({ url: `http://127.0.0.1:9${e.path}`, kind: e.kind, ...(e.kind === "dcgm" ? {} : { namespace: e.namespace, pod: e.pod }), node: e.node })),
  },
});
const targets = staticTargets(config.scrape.static, config.scrape);
// Full windows, plus a round for the ones just filled to turn over.
const warmup = Math.ceil(config.join.rateWindowMs / INTERVAL_MS) + 1;

type Stage = "parse" | "forward" | "join" | "gate" | "observers";
const STAGES: Array<{ stage: Stage; what: string }> = [
  { stage: "parse", what: "parse (text to samples)" },
  { stage: "forward", what: "+ join, forwarded series only (identity, enrich; no derived family)" },
  { stage: "join", what: "+ join with the derived families (the shipped join)" },
  { stage: "gate", what: "+ series gate (normalise, cap, staleness)" },
  { stage: "observers", what: "+ dashboard and sampler observers" },
];

let nowMs = Math.floor(Date.now() / 1000) * 1000;

/** One pipeline stopping after `stage`; returns the samples it passes on per scrape. */
function pipelineUpTo(stage: Stage): (k: number, body: string) => number {
  const joiner = new Joiner({ forward: config.join.forward, identityWaitMs: config.join.gpuIdentityWaitMs, rateWindowMs: config.join.rateWindowMs, windowBudget: new WindowBudget(joinWindowBytes(config)) });
  // The forward-only join: the same Joiner with its list of derived families emptied.
  if (stage === "forward") {
    if (!Array.isArray(Reflect.get(joiner, "derivations"))) throw new Error("Joiner keeps its derived families elsewhere now: update the forward-only stage");
    Reflect.set(joiner, "derivations", []);
  }
  joiner.setTargets(targets);
  const gate = new SeriesGate(new SeriesRegistry(1), config.join.maxSeries);
  const dashboard = new DashboardSeries();
  const rates = new PipelineRateSource({ namespaceOf: () => "llm", now: () => nowMs, maxAgeMs: 3 * INTERVAL_MS });
  return (k, body) => {
    const samples: ParsedSample[] = [];
    const parser = new TextParser((s) => samples.push(s));
    for (let at = 0; at < body.length; at += CHUNK) parser.push(body.slice(at, at + CHUNK));
    parser.end();
    if (stage === "parse") return samples.length;
    const result: ScrapeResult = { target: targets[k]!, timestampMs: nowMs, durationMs: 5, ok: true, samples, families: parser.families, parseErrors: parser.errors };
    const out = joiner.joinScrape(result);
    let passed = 0;
    const count = (series: WriteSeries[] | Array<{ samples: unknown[] }>): void => {
      for (const s of series) passed += s.samples.length;
    };
    if (stage === "forward" || stage === "join") count(out.report);
    else count(gate.pass(`${result.target.id}#report`, out.report, nowMs));
    for (const b of out.batches) {
      if (stage === "observers") {
        const all = [...b.report, ...b.series];
        dashboard.observe(all, b.result);
        rates.observe(all, b.result);
      }
      if (stage === "forward" || stage === "join") count(b.series);
      else count(gate.pass(b.result.target.id, b.series, b.result.timestampMs, b.enriched));
    }
    return passed;
  };
}

/** Runs `stage` alone; prints its CPU and its samples over the measured rounds as JSON. */
function runStage(stage: Stage): void {
  const run = pipelineUpTo(stage);
  let cpuUs = 0;
  let samples = 0;
  for (let round = 0; round < warmup + measured; round++) {
    nowMs += INTERVAL_MS;
    const bodies = endpoints.map((_, i) => endpointText(SHAPE, endpoints, i, round + 1));
    const t0 = process.cpuUsage();
    let passed = 0;
    for (let k = 0; k < bodies.length; k++) passed += run(k, bodies[k]!);
    const used = process.cpuUsage(t0);
    if (round < warmup) continue;
    cpuUs += used.user + used.system;
    samples += passed;
  }
  console.log(JSON.stringify({ cpuUs, samples }));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (process.argv[4] !== undefined) runStage(process.argv[4] as Stage);
else {
  const repeats = Number(process.argv[3] ?? "3");
  const runs = new Map<Stage, Array<{ cpuUs: number; samples: number }>>(STAGES.map(({ stage }) => [stage, []]));
  for (let r = 0; r < repeats; r++) {
    for (let j = 0; j < STAGES.length; j++) {
      const { stage } = STAGES[(r + j) % STAGES.length]!;
      const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), String(measured), "1", stage], { encoding: "utf8" });
      if (child.status !== 0) throw new Error(`stage ${stage}: ${child.stderr}`);
      runs.get(stage)!.push(JSON.parse(child.stdout) as { cpuUs: number; samples: number });
    }
  }
  // Every stage per sample the whole pipeline ships, so the steps add up.
  const shipped = runs.get("observers")![0]!.samples;
  console.log(`${endpoints.length} targets, ${Math.round(shipped / measured)} samples shipped per 5 s round; CPU per shipped sample over ${measured} rounds after ${warmup} to fill the windows; median of ${repeats} (spread)`);
  let before = 0;
  for (const { stage, what } of STAGES) {
    const perSample = runs.get(stage)!.map((x) => x.cpuUs / shipped);
    const m = median(perSample);
    const spread = `${Math.min(...perSample).toFixed(2)}-${Math.max(...perSample).toFixed(2)}`;
    console.log(`${m.toFixed(2).padStart(6)} µs (${spread})  ${(m - before >= 0 ? "+" : "") + (m - before).toFixed(2)}  ${what}; ${Math.round(runs.get(stage)![0]!.samples / measured)} samples a round`);
    before = m;
  }
}
