// One `promtool test rules` case against a directory that holds rules.yaml (the dashboard panel
// checks write their recording rules there): Debian's promtool 2.42, its output returned, or an
// error carrying it when a query's result differs.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";

/** Runs `test` (one entry of promtool's `tests`) with rules.yaml of `dir`, evaluated every `evaluationInterval`. */
export async function runPromtoolTest(dir: string, test: unknown, evaluationInterval = "1s"): Promise<string> {
  const file = join(dir, `test-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify({ rule_files: ["rules.yaml"], evaluation_interval: evaluationInterval, tests: [test] }));
  try {
    const { stdout, stderr } = await promisify(execFile)("promtool", ["test", "rules", file], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool test rules failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`, { cause: err });
  }
}
