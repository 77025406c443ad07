// The bench side of http-load.ts: starts the load process once and runs batches through it.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { LoadJob, LoadResult } from "./http-load.js";

/** A running load process. */
export interface LoadClient {
  run(job: LoadJob): Promise<LoadResult>;
  close(): void;
}

/** Forks the load generator (tsx, so its start-up is outside every measurement). */
export function startLoadClient(): LoadClient {
  const child: ChildProcess = fork(fileURLToPath(new URL("./http-load.ts", import.meta.url)), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  return {
    run: (job) =>
      new Promise((resolve, reject) => {
        child.once("message", (message: LoadResult | { error: string }) => ("error" in message ? reject(new Error(message.error)) : resolve(message)));
        child.send(job);
      }),
    close: () => child.disconnect(),
  };
}

/** CPU time (user + system, ms) this process spent while `work` ran. */
export async function cpuMsDuring<T>(work: () => Promise<T>): Promise<{ cpuMs: number; result: T }> {
  const before = process.cpuUsage();
  const result = await work();
  const used = process.cpuUsage(before);
  return { cpuMs: (used.user + used.system) / 1000, result };
}
