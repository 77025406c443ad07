// Where the pipeline's time goes: runs it (pipeline-child.ts, compiled and with the runtime settings
// it ships with, as the agent bench runs it) against the synthetic fleet with `node --cpu-prof` for a
// while and prints the functions with the most self time, then the self time by source folder.
//   node --import tsx test/bench/support/profile-pipeline.ts [seconds] [intervalMs]
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFleet } from "./synthetic-fleet.js";
import { compiledPipelineChild, shippedRuntime } from "./shipped-child.js";

const seconds = Number(process.argv[2] ?? "40");
const intervalMs = Number(process.argv[3] ?? "5000");
const fleet = await startFleet({ nodes: 6, podsPerNode: 6, routes: 4, models: 2, gpusPerNode: 8 });
const sink = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(204).end());
});
await new Promise<void>((r) => sink.listen(0, "127.0.0.1", r));
const dir = mkdtempSync(join(tmpdir(), "tokentrace-profile-"));
const config = {
  targets: fleet.endpoints.map((e) => ({ url: fleet.base + e.path, kind: e.kind, ...(e.kind === "dcgm" ? {} : { namespace: e.namespace, pod: e.pod }), node: e.node })),
  sinkUrl: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`,
  queueDir: join(dir, "queue"),
  intervalMs,
};
const script = compiledPipelineChild();
const runtime = shippedRuntime();
const child = spawn(process.execPath, [...runtime.nodeOptions, "--cpu-prof", `--cpu-prof-dir=${dir}`, script, JSON.stringify(config)], { env: { ...process.env, ...runtime.env }, stdio: ["ignore", "inherit", "inherit", "ipc"] });
await new Promise((r) => setTimeout(r, seconds * 1000));
child.send("exit");
await new Promise((r) => child.once("exit", r));
sink.close();
await fleet.close();

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount: number }
const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))!;
const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as { nodes: Node[]; samples: number[] };
const self = new Map<string, number>();
const byFolder = new Map<string, number>();
let idle = 0;
for (const n of profile.nodes) {
  const { functionName, url, lineNumber } = n.callFrame;
  if (functionName === "(idle)") {
    idle += n.hitCount;
    continue;
  }
  const where = `${functionName || "(anonymous)"} ${url.replace(/^.*\/(control-plane|node_modules|test)\//, "$1/")}:${lineNumber + 1}`;
  self.set(where, (self.get(where) ?? 0) + n.hitCount);
  // control-plane/src/<folder>/..., a package, node's own modules, or V8 and native code.
  const folder = /\/control-plane\/src\/([^/]+)\//.exec(url)?.[1] ?? /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.startsWith("node:") ? "node:*" : url === "" ? functionName.startsWith("(") ? functionName : "native" : "other");
  byFolder.set(folder, (byFolder.get(folder) ?? 0) + n.hitCount);
}
const busy = [...self.values()].reduce((a, b) => a + b, 0);
console.log(`busy ${((100 * busy) / (busy + idle)).toFixed(1)}% of the run; shares below are of the busy time`);
for (const [where, hits] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${((100 * hits) / busy).toFixed(1).padStart(5)}%  ${where}`);
for (const [folder, hits] of [...byFolder].sort((a, b) => b[1] - a[1]).filter(([, hits]) => hits >= busy / 1000)) console.log(`${((100 * hits) / busy).toFixed(1).padStart(5)}%  ${folder}/`);
console.log(`profile: ${join(dir, file)}`);
