// Shared by the recording-rules tests: runs scrapes through the real Joiner and writes the same
// samples as Prometheus would store them had it scraped the sidecars, the model servers and
// dcgm-exporter itself (sidecar and engine series with `namespace` and `pod` target labels,
// dcgm-exporter with honor_labels; a staleness marker where a target's series vanished or its
// scrape failed), as promtool's input series; then runs Debian's promtool 2.42 `test rules`.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { promisify } from "node:util";
import { parse, stringify } from "yaml";
import { parseText } from "../../control-plane/src/scrape/text-parser.js";
import type { ScrapeResult } from "../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../control-plane/src/scrape/targets.js";
import { Joiner, type JoinerOptions } from "../../control-plane/src/join/joiner.js";
import { SERIES_FOR_RULE } from "./rule-names.js";

export const RULES = new URL("../../istio/observability/recording-rules.yaml", import.meta.url);

/** One scrape of one target at a whole second; `ok: false` is a failed scrape. */
export interface Scrape { atSec: number; target: ScrapeTarget; text: string; ok?: boolean }

/** One sample the join emitted, its labels with empty values dropped (as remote write drops them). */
export interface JoinedPoint { name: string; labels: string[]; atMs: number; value: number }

/** `{a="1",b="2"}`: labels sorted by name, `__name__` and empty values left out. */
export const promLabels = (labels: readonly string[]): string => {
  const pairs: string[] = [];
  for (let i = 0; i < labels.length; i += 2) if (labels[i] !== "__name__" && labels[i + 1] !== "") pairs.push(`${labels[i]}=${JSON.stringify(labels[i + 1])}`);
  return `{${pairs.sort().join(",")}}`;
};

/** Runs the scrapes in time order through one Joiner; returns promtool's input points (value or "stale") and what the join emitted. */
export function runScrapes(scrapes: readonly Scrape[], options: JoinerOptions = {}): { input: Map<string, Map<number, string>>; joined: JoinedPoint[] } {
  const joiner = new Joiner(options);
  joiner.setTargets([...new Map(scrapes.map((s) => [s.target.id, s.target])).values()]);
  const input = new Map<string, Map<number, string>>();
  const byTarget = new Map<string, Set<string>>();
  const joined: JoinedPoint[] = [];
  for (const s of [...scrapes].sort((a, b) => a.atSec - b.atSec)) {
    const p = parseText(s.ok === false ? "" : s.text);
    const r: ScrapeResult = { target: s.target, timestampMs: s.atSec * 1000, durationMs: 5, ok: s.ok !== false, samples: p.samples, families: p.families, parseErrors: p.errors };
    const had = byTarget.get(s.target.id) ?? new Set<string>();
    const now = new Set<string>();
    for (const smp of p.samples) {
      const labels = s.target.kind === "dcgm" ? smp.labels : [...smp.labels, "namespace", s.target.namespace!, "pod", s.target.pod!];
      const key = `${smp.name}${promLabels(labels)}`;
      now.add(key);
      if (!input.has(key)) input.set(key, new Map());
      input.get(key)!.set(s.atSec, String(smp.value));
    }
    for (const key of had) if (!now.has(key)) input.get(key)!.set(s.atSec, "stale");
    // A failed scrape is an empty one: every series it had goes stale (scrape/scrape.go scrapeAndReport).
    byTarget.set(s.target.id, now);
    for (const out of joiner.join(r)) {
      let name = "";
      const labels: string[] = [];
      for (let i = 0; i < out.labels.length; i += 2) {
        if (out.labels[i] === "__name__") name = out.labels[i + 1]!;
        else if (out.labels[i + 1] !== "") labels.push(out.labels[i]!, out.labels[i + 1]!);
      }
      for (const smp of out.samples) joined.push({ name, labels, atMs: smp.timestampMs, value: smp.value });
    }
  }
  return { input, joined };
}

/** promtool's input_series for points up to `evalSec`, one value per second ("_" where none). */
export function inputSeries(input: ReadonlyMap<string, ReadonlyMap<number, string>>, evalSec: number): { series: string; values: string }[] {
  return [...input].map(([series, points]) => ({ series, values: Array.from({ length: evalSec + 1 }, (_, t) => points.get(t) ?? "_").join(" ") }));
}

/** A temp dir with the recording rules as a plain Prometheus rule file; `promtool(test)` runs one test case there. */
export function promtoolRunner(): { promtool: (test: unknown) => Promise<string>; close: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "tokentrace-rules-"));
  const rule = parse(readFileSync(RULES, "utf8")) as { kind: string; spec: { groups: unknown[] } };
  if (rule.kind !== "PrometheusRule") throw new Error(`${RULES.pathname}: not a PrometheusRule`);
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: rule.spec.groups }));
  const run = promisify(execFile);
  const promtool = async (test: unknown): Promise<string> => {
    const file = join(dir, `test-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, stringify({ rule_files: ["rules.yaml"], evaluation_interval: "1s", tests: [test] }));
    try {
      const { stdout, stderr } = await run("promtool", ["test", "rules", file], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
      return stdout + stderr;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      throw new Error(`promtool test rules failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`, { cause: err });
    }
  };
  return { promtool, close: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs a promtool case whose point queries are selectors with labels (one per point the join
 * emitted) and reports how many points the rules gave to the last bit, per family; fails unless all.
 */
export async function checkPoints(t: TestContext, promtool: (test: unknown) => Promise<string>, test: unknown, points: readonly JoinedPoint[]): Promise<void> {
  let output: string;
  try {
    output = await promtool(test);
  } catch (err) {
    output = (err as Error).message;
  }
  // promtool names each query whose samples differ (cmd/promtool/unittest.go: `expr: "...", time: ...`);
  // a point's query is a selector with labels, the end-of-case queries are bare names or aggregations.
  const differing = new Map<string, number>();
  // A point's query names the rule; its point is counted under the join's name (rule-names.ts).
  for (const m of output.matchAll(/^\s+expr: "([a-zA-Z_:][a-zA-Z0-9_:]*)\{/gm)) {
    const name = SERIES_FOR_RULE.get(m[1]!) ?? m[1]!;
    differing.set(name, (differing.get(name) ?? 0) + 1);
  }
  const total = new Map<string, number>();
  for (const p of points) total.set(p.name, (total.get(p.name) ?? 0) + 1);
  const equal = (name: string): number => total.get(name)! - Math.min(total.get(name)!, differing.get(name) ?? 0);
  const families = [...total.keys()].sort().map((name) => `${name} ${equal(name)}/${total.get(name)}`);
  t.diagnostic(`${[...total.keys()].reduce((n, name) => n + equal(name), 0)}/${points.length} points equal (${families.join(", ")})`);
  assert.match(output, /SUCCESS/);
}
