// Where the pipeline's time goes: runs it (pipeline-child.ts) against the synthetic fleet with
// `node --cpu-prof` for a while and prints the functions with the most self time.
//   node --import tsx test/bench/support/profile-pipeline.ts [seconds] [intervalMs]
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startFleet } from "./synthetic-fleet.js";

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
const child = spawn(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${dir}`, "--import", "tsx", fileURLToPath(new URL("./pipeline-child.ts", import.meta.url)), JSON.stringify(config)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
await new Promise((r) => setTimeout(r, seconds * 1000));
child.send("exit");
await new Promise((r) => child.once("exit", r));
sink.close();
await fleet.close();

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount: number }
const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))!;
const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as { nodes: Node[]; samples: number[] };
const self = new Map<string, number>();
for (const n of profile.nodes) {
  const where = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.replace(/^.*\/(control-plane|node_modules|test)\//, "$1/")}:${n.callFrame.lineNumber + 1}`;
  self.set(where, (self.get(where) ?? 0) + n.hitCount);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
for (const [where, hits] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${((100 * hits) / total).toFixed(1).padStart(5)}%  ${where}`);
console.log(`profile: ${join(dir, file)}`);
