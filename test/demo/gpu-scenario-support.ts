// What the GPU demo scenarios' tests share: the demo Prometheus queried with labels, a wait on real
// time, and the GPU walk-throughs of docs/demo.md and docs/gpu.md. One scenario per test file, so
// each file's run stays within the runner's per-file timeout on a loaded 2-core machine.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

export const LATENCY_ALERTS = ["TokentraceTTFTHighGPUIdle", "TokentraceTTFTHighGPUSaturated"];

/** Each series' instant value of a PromQL query in the demo's Prometheus, with its labels. */
export async function query(prometheusUrl: string, expr: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const body = (await (await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

export async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The sh block of a GPU walk-through (by default docs/demo.md's "Is the GPU working?") that queries the
 * running demo: the first after the heading that starts with `start` (the variable it reads first).
 */
export function gpuWalkthrough(heading = "Is the GPU working? A walk-through on the demo", { doc = "demo.md", start = "PROM=" } = {}): string {
  const text = readFileSync(new URL(`../../docs/${doc}`, import.meta.url), "utf8");
  const at = text.indexOf(`## ${heading}`);
  assert.ok(at >= 0, `docs/${doc} has the walk-through "${heading}"`);
  const block = [...text.slice(at).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.startsWith(start));
  assert.ok(block, "its block of queries");
  return block;
}
