// The control plane as a child process (`node --import tsx control-plane/src/main.ts`, or compiled:
// `node control-plane/dist/main.js`, as its image runs it): its stdout JSON lines collected as they
// arrive, stderr, and its exit.
import { spawn, type ChildProcess } from "node:child_process";
import assert from "node:assert/strict";
import { after } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** A running (or exited) control-plane process. */
export interface Proc {
  child: ChildProcess;
  lines: string[];
  stderr: string[];
  exited: Promise<number | null>;
}

// A failed assertion leaves its test's processes running, and their pipes would keep the test
// file's process (node:test runs each file in its own) alive: the file's last hook kills them.
const running = new Set<ChildProcess>();
after(() => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Starts the control plane with only `env` (and PATH, HOME) in its environment, the filter-facing
 * listener on a free port unless `env` names one; killed at the latest when the test file ends.
 * `compiled`: the JavaScript `make dist` built, under plain node.
 */
export function spawnControlPlane(env: Record<string, string>, args: string[] = [], { compiled = false } = {}): Proc {
  const main = compiled ? ["control-plane/dist/main.js"] : ["--import", "tsx", "control-plane/src/main.ts"];
  const child = spawn(process.execPath, [...main, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TOKENTRACE_FILTERS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const stderr: string[] = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const parts = buffered.split("\n");
    buffered = parts.pop() ?? "";
    lines.push(...parts);
  });
  child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  return { child, lines, stderr, exited };
}

/** The first stdout record matching `match`; fails after 90 s (a tsx start-up under load can take many seconds). */
export async function waitForLine(proc: Proc, match: (record: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    for (const line of proc.lines) {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (match(record)) return record;
    }
    // Once its stdout has ended (every line read) nothing more can match: fail now, not at the
    // deadline (a crash at start-up).
    const ended = proc.child.stdout?.readableEnded === true;
    if (Date.now() > deadline || ended) assert.fail(`no matching log line${ended ? ` (stdout ended; exit code ${proc.child.exitCode})` : ""}; stdout: ${proc.lines.join("\n")} stderr: ${proc.stderr.join("")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
