// The join alone: CPU per scrape of the pipeline's joiner over a realistic fleet, beside today's
// joiner in the same run. The fleet: POD_COUNT model-server pods, two per GPU node, each scraped
// for its Envoy sidecar (the filter's LLM histograms among Envoy's own series) and its vLLM (two
// data-parallel engines, vLLM's full V1 exposition), and one dcgm-exporter per node, every 15 s for
// ROUNDS rounds (the 5 min rate window filled). The scrapes are parsed before the clock starts:
// only `Joiner.join` is timed.
//
// "Today's" is the joiner of BASELINE_REF, taken from git (git archive of control-plane/src into
// .tmp/) and imported as is: main on the day issue 26's engine work began, so the figure says what
// that work costs the join, not what a same-run switch-off would hide. JOIN_BASELINE_REF overrides it.
// The bar (the issue's): at most 1.10 times today's CPU per scrape. A second row prices the GenAI
// histograms alone (the same joiner with and without them), against the same bar.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Joiner } from "../../control-plane/src/join/joiner.js";
import type { ScrapeResult } from "../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import { advance, sidecarText } from "../support/engine-scrapes.js";
import type { BenchRow } from "./table.js";

export const runs = 3;

/** main when the engine work of issue 26 began (the branch point of h26-engines). */
const BASELINE_REF = process.env.JOIN_BASELINE_REF ?? "f6d2c47e94dac429135edca5e854bebdea494cc1";
const POD_COUNT = 64;
const ROUNDS = 24;
const STEP_MS = 15_000;
const REPO = fileURLToPath(new URL("../../", import.meta.url));
const fixture = (name: string): string => readFileSync(join(REPO, "test/fixtures/pipeline", name), "utf8");

interface JoinerLike {
  join(r: ScrapeResult): unknown[];
  setTargets(targets: readonly ScrapeTarget[]): unknown[];
}

/** Today's Joiner class, from BASELINE_REF's sources (extracted once per ref). */
async function baselineJoiner(): Promise<{ sha: string; make: () => JoinerLike }> {
  const sha = execFileSync("git", ["-C", REPO, "rev-parse", "--short=12", `${BASELINE_REF}^{commit}`], { encoding: "utf8" }).trim();
  const dir = join(REPO, ".tmp", "bench-join-baseline", sha);
  if (!existsSync(join(dir, "control-plane/src/join/joiner.ts"))) {
    mkdirSync(dir, { recursive: true });
    execFileSync("sh", ["-c", 'git -C "$0" archive "$1" control-plane/src | tar -x -C "$2"', REPO, sha, dir]);
  }
  const mod = (await import(pathToFileURL(join(dir, "control-plane/src/join/joiner.ts")).href)) as { Joiner: new () => JoinerLike };
  return { sha, make: () => new mod.Joiner() };
}

const target = (kind: ScrapeTarget["kind"], pod: string, port: number, node: string, namespace = "llm"): ScrapeTarget => ({
  id: `${kind}|http://${pod}:${port}/m|${namespace}/${pod}`, kind, url: `http://${pod}:${port}/m`, intervalMs: STEP_MS, timeoutMs: 5000, namespace, pod, node,
});

/** Every scrape of the fleet, parsed, in time order; and the targets. */
function fleet(): { targets: ScrapeTarget[]; scrapes: ScrapeResult[] } {
  const dcgm = fixture("dcgm-node-a.prom");
  const vllm = fixture("vllm-v1-two-engines.prom");
  const envoy = fixture("envoy-sidecar-chat.prom");
  const targets: ScrapeTarget[] = [];
  const perRound: { t: ScrapeTarget; text: (k: number) => string; offsetMs: number }[] = [];
  for (let n = 0; n < POD_COUNT / 2; n++) {
    const node = `gpu-node-${n}`;
    const chat = `chat-${n}`;
    const embed = `embed-${n}`;
    const nodeText = dcgm.replaceAll("chat-7d9f-abcde", chat).replaceAll("embed-5c4b-fghij", embed).replaceAll("GPU-", `GPU-${n}-`).replaceAll("gpu-node-a", node);
    const exporter = target("dcgm", `dcgm-${n}`, 9400, node, "gpu-operator");
    perRound.push({ t: exporter, text: () => nodeText, offsetMs: 0 });
    for (const pod of [chat, embed]) {
      const engine = target("vllm", pod, 8000, node);
      const sidecar = target("envoy", pod, 15090, node);
      perRound.push({ t: engine, text: (k) => advance(vllm, k), offsetMs: 1000 });
      perRound.push({ t: sidecar, text: (k) => envoy + "\n" + sidecarText(k, [{ route: "chat", model: "meta-llama/Llama-3.1-8B-Instruct", per: 40, ttft: { 6: 2, 7: 5, 8: 2, 9: 1 }, decode: { 11: 3, 12: 6, 13: 1 } }]), offsetMs: 2000 });
    }
    targets.push(...perRound.slice(-5).map((x) => x.t));
  }
  const t0 = 1_800_000_000_000;
  const scrapes: ScrapeResult[] = [];
  for (let k = 0; k < ROUNDS; k++) {
    for (const { t, text, offsetMs } of perRound) {
      const p = parseText(text(k));
      if (p.errors.length > 0) throw new Error(`fleet fixture ${t.id} has parse errors: ${JSON.stringify(p.errors[0])}`);
      scrapes.push({ target: t, timestampMs: t0 + k * STEP_MS + offsetMs, durationMs: 5, ok: true, samples: p.samples, families: p.families, parseErrors: [] });
    }
  }
  scrapes.sort((a, b) => a.timestampMs - b.timestampMs);
  return { targets, scrapes };
}

/** CPU ms (user + system) of joining every scrape with a fresh joiner; and the series it wrote. */
function joinAll(make: () => JoinerLike, targets: ScrapeTarget[], scrapes: ScrapeResult[]): { cpuMs: number; series: number } {
  const j = make();
  j.setTargets(targets);
  let series = 0;
  const c0 = process.cpuUsage();
  for (const s of scrapes) series += j.join(s).length;
  const c = process.cpuUsage(c0);
  return { cpuMs: (c.user + c.system) / 1000, series };
}

export async function run(): Promise<BenchRow[]> {
  const { targets, scrapes } = fleet();
  const today = await baselineJoiner();
  const ours = (): JoinerLike => new Joiner();
  // Alternate the two, best of each: a load spike on the shared machine hits both alike. The first
  // rounds warm the JIT for both.
  let bestOurs = Infinity;
  let bestToday = Infinity;
  let seriesOurs = 0;
  let seriesToday = 0;
  for (let r = 0; r < 7; r++) {
    const a = joinAll(ours, targets, scrapes);
    const b = joinAll(today.make, targets, scrapes);
    bestOurs = Math.min(bestOurs, a.cpuMs);
    bestToday = Math.min(bestToday, b.cpuMs);
    seriesOurs = a.series;
    seriesToday = b.series;
  }
  // What the GenAI histograms alone cost (derivations/genai.ts): the same joiner with and without
  // them, alternated in one module graph, so nothing but that family differs.
  let bestOn = Infinity;
  let bestOff = Infinity;
  let seriesOn = 0;
  let seriesOff = 0;
  for (let r = 0; r < 5; r++) {
    const a = joinAll(ours, targets, scrapes);
    const b = joinAll(() => new Joiner({ genai: false }), targets, scrapes);
    bestOn = Math.min(bestOn, a.cpuMs);
    bestOff = Math.min(bestOff, b.cpuMs);
    seriesOn = a.series;
    seriesOff = b.series;
  }
  const perScrape = (ms: number): number => (ms / scrapes.length) * 1000;
  return [
    {
      figure: `join CPU per scrape, ${POD_COUNT} pods (sidecar + vLLM) and ${POD_COUNT / 2} dcgm-exporters, ${ROUNDS} rounds (${scrapes.length} scrapes; series out ${seriesOurs} vs ${seriesToday})`,
      value: perScrape(bestOurs),
      unit: "us",
      baseline: { name: `today's joiner (${today.sha})`, value: perScrape(bestToday) },
      ratio: { value: bestOurs / bestToday, of: "ours/today CPU", better: "lower" },
      bar: { on: "ratio", max: 1.1 },
    },
    {
      figure: `join CPU per scrape with the OpenTelemetry GenAI histograms (series out ${seriesOn} vs ${seriesOff} without)`,
      value: perScrape(bestOn),
      unit: "us",
      baseline: { name: "the same joiner, join.genaiMetrics false", value: perScrape(bestOff) },
      ratio: { value: bestOn / bestOff, of: "with/without CPU", better: "lower" },
      bar: { on: "ratio", max: 1.1 },
    },
  ];
}
