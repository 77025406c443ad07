// Policy writes over HTTP with fsync, into a store that already holds 10,000 policies (a write
// must cost one policy, not the whole state): 1,000 creates one after another, and 1,000 creates
// all in flight at once (group commit shares each fsync). The app is the real one on 127.0.0.1,
// the client its own process; times are wall clock, from the first request to the last answer.
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../control-plane/src/app.js";
import { parseTokens } from "../../control-plane/src/api/auth.js";
import { createMetrics } from "../../control-plane/src/api/metrics.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import type { LoadRequest } from "./http-load.js";
import { cpuMsDuring, startLoadClient } from "./load-client.js";
import type { BenchRow } from "./table.js";

const PRELOADED = 10_000;
const WRITES = 1_000;
const token = "bench-token-0123456789abcdef";

function policy(name: string, i: number): object {
  return {
    name,
    target: { namespace: `ns${i % 100}`, selector: { matchLabels: { app: `app${i % 997}` } } },
    pluginConfig: { sampling: { defaultRate: 0.01, routes: [{ routeName: "chat", rate: 0.2 }], force: [{ header: "x-debug" }] } },
  };
}

function creates(prefix: string): LoadRequest[] {
  return Array.from({ length: WRITES }, (_, i) => ({
    method: "POST",
    path: "/v1/policies",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(policy(`${prefix}-${i}`, i)),
  }));
}

/** The disk's own price: ms per 400-byte append + fsync in the store's directory, median of 200. */
function fsyncMs(dir: string): number {
  const fd = openSync(join(dir, "fsync-probe"), "w");
  const line = Buffer.alloc(400, 0x61);
  const times: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      writeSync(fd, line);
      fsyncSync(fd);
      times.push(performance.now() - started);
    }
  } finally {
    closeSync(fd);
  }
  return times.sort((a, b) => a - b)[100] as number;
}

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-write-"));
  const path = join(dir, "policies.json");
  // Preloading is not measured: no fsync, one group commit; the store is then reopened with fsync.
  const loader = new FilePolicyStore({ path, fsync: false });
  await Promise.all(Array.from({ length: PRELOADED }, (_, i) => loader.create(policy(`pre-${i}`, i), { by: "bench" })));
  await loader.close();
  const store = new FilePolicyStore({ path, audit: () => undefined });
  const app = createApp({ store, tokens: parseTokens(`bench:${token}`, "bench", /,/).tokens, reads: "public", bodyLimitBytes: 65536, metrics: createMetrics(), overrides: () => undefined, readiness: () => ({}), log: () => undefined });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = startLoadClient();
  try {
    const diskFsyncMs = fsyncMs(dir);
    // Warm-up: the first requests compile the handlers.
    await client.run({ url, requests: creates("warm").slice(0, 50), concurrency: 1 });
    const { cpuMs: sequentialCpuMs, result: sequential } = await cpuMsDuring(() => client.run({ url, requests: creates("seq"), concurrency: 1 }));
    const { cpuMs: concurrentCpuMs, result: concurrent } = await cpuMsDuring(() => client.run({ url, requests: creates("par"), concurrency: WRITES }));
    for (const [what, result] of [["sequential", sequential], ["concurrent", concurrent]] as const) {
      if (result.statuses[201] !== WRITES) throw new Error(`${what} creates: ${JSON.stringify(result.statuses)}`);
    }
    if (store.size !== PRELOADED + 50 + 2 * WRITES) throw new Error(`store holds ${store.size} policies`);
    return [
      { figure: `${WRITES} sequential policy creates over HTTP, fsync each, into a store of ${PRELOADED} policies`, value: sequential.wallMs, unit: "ms", bar: { on: "value", max: 5000 } },
      { figure: `${WRITES} concurrent policy creates over HTTP, fsync (group commit), into a store of ${PRELOADED} policies`, value: concurrent.wallMs, unit: "ms", bar: { on: "value", max: 10000 } },
      // The floor of the sequential figure on this machine at this moment: one fsync per create.
      { figure: "fsync of one 400-byte journal-sized append on the store's disk, same run (x1000 = the sequential floor)", value: diskFsyncMs, unit: "ms" },
      // What the server itself spends per create; the wall times above add the client's turns and the disk.
      { figure: "server CPU per policy create over HTTP (sequential / concurrent)", value: sequentialCpuMs / WRITES, unit: "ms", baseline: { name: "concurrent", value: concurrentCpuMs / WRITES } },
    ];
  } finally {
    client.close();
    await new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
