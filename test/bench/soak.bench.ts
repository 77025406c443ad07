// Memory that levels off: the demo's whole stack at 40 rps for two hours of simulated time (one
// clock drives the engine, the proxy's ticks, the load and the pipeline; support/soak-child.ts), in a
// child run with --expose-gc. The bars: the heap after GC at two hours within 10% of the heap at one
// hour, and the heap's growth over the run inside the memory budgets the control plane prints at
// start-up. The heap is the whole process's, so it also holds the emulated proxy, engine and load:
// their state is bounded by what is in flight, which the 1 h / 2 h comparison would show if not.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { SoakLine, SoakSample, SoakStart } from "./support/soak-child.js";
import type { BenchRow } from "./table.js";

export const runs = 1;
const MINUTES = Number(process.env.SOAK_MINUTES ?? "120");
const MiB = 1024 * 1024;

/** Runs the child and returns its lines. */
async function soak(): Promise<SoakLine[]> {
  const script = fileURLToPath(new URL("./support/soak-child.ts", import.meta.url));
  const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, SOAK_MINUTES: String(MINUTES) } });
  const lines: SoakLine[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    const parsed = JSON.parse(line) as SoakLine;
    lines.push(parsed);
    if ("minute" in parsed) console.error(`  soak ${parsed.minute} min: heap ${(parsed.heapUsedBytes / MiB).toFixed(1)} MiB, ${parsed.requests.sent} requests, ${(parsed.realSeconds).toFixed(0)} s`);
  }
  const code = await new Promise<number | null>((r) => child.on("close", r));
  if (code !== 0) throw new Error(`soak child exited with ${code}`);
  return lines;
}

export async function run(): Promise<BenchRow[]> {
  const lines = await soak();
  const start = lines.find((l): l is SoakStart => "budgets" in l);
  const samples = lines.filter((l): l is SoakSample => "minute" in l);
  const at = (minute: number): SoakSample => {
    const s = samples.find((x) => x.minute === minute);
    if (s === undefined) throw new Error(`soak: no sample at minute ${minute}`);
    return s;
  };
  if (start === undefined) throw new Error("soak: the child printed no budgets");
  const half = at(MINUTES / 2);
  const end = at(MINUTES);
  const budget = start.budgets.reduce((a, b) => a + b.bytes, 0);
  // Each part within its own budget at the end, by its own count.
  const over = start.budgets.filter((b) => (end.held[b.part] ?? 0) > b.bytes).map((b) => `${b.part} ${end.held[b.part]} > ${b.bytes}`);
  const heap = (s: { heapUsedBytes: number }): number => Number((s.heapUsedBytes / MiB).toFixed(1));
  const what = `the demo's stack at ${(end.requests.sent / (MINUTES * 60)).toFixed(1)} rps, simulated`;
  return [
    {
      figure: `soak: heap after GC at ${MINUTES} min beside ${MINUTES / 2} min (${what})`,
      value: heap(end),
      unit: "MiB",
      baseline: { name: `at ${MINUTES / 2} min`, value: heap(half) },
      ratio: { value: end.heapUsedBytes / half.heapUsedBytes, of: `${MINUTES}/${MINUTES / 2} min`, better: "lower" },
      bar: { on: "ratio", max: 1.1, min: 0.9 },
    },
    {
      figure: `soak: heap growth from start to ${MINUTES} min beside the start-up memory budgets' total`,
      value: Number(((end.heapUsedBytes - start.heapUsedBytes) / MiB).toFixed(1)),
      unit: "MiB",
      baseline: { name: "budgets", value: Number((budget / MiB).toFixed(1)) },
      ratio: { value: (end.heapUsedBytes - start.heapUsedBytes) / budget, of: "growth/budgets", better: "lower" },
      bar: { on: "ratio", max: 1 },
    },
    { figure: "soak: parts over their own budget at the end (each part's count of what it holds)", value: over.length, unit: over.length === 0 ? "parts" : `parts (${over.join("; ")})`, bar: { on: "value", max: 0 } },
    { figure: `soak: requests over ${MINUTES} simulated min (errors are the engine's 1% injected)`, value: end.requests.sent, unit: "requests", baseline: { name: "errors", value: end.requests.errors } },
    { figure: `soak: real time for ${MINUTES} simulated min`, value: Math.round(end.realSeconds), unit: "s" },
  ];
}
