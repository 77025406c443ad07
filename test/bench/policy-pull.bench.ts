// The filter pull endpoint against the number of policies: the 304 path (a sidecar whose config
// has not changed, what nearly every poll is) with 10,000 policies beside a trivial route of the
// same app (GET /healthz), and beside the same pull with 10 policies. The app is the real one on
// 127.0.0.1; the load comes from its own process, so the CPU time this process spends is the
// server's alone: throughput is requests per server CPU-second (steady whatever else the shared
// machine runs), with wall-clock requests/s reported beside it.
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../control-plane/src/app.js";
import { createMetrics } from "../../control-plane/src/api/metrics.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import { cpuMsDuring, startLoadClient, type LoadClient } from "./load-client.js";
import type { BenchRow } from "./table.js";

const REQUESTS = 5_000;
const CONCURRENCY = 16;
const ROUNDS = 3;
/** Served by policy 4 in both stores: namespace ns4, app=app0. */
const WORKLOAD = "ns4.app0";

/** Policy i: namespace ns(i mod 100), selecting app=app(i div 100), so every workload has one. */
function policy(i: number): object {
  return {
    name: `p${i}`,
    target: { namespace: `ns${i % 100}`, selector: { matchLabels: { app: `app${Math.floor(i / 100)}` } } },
    pluginConfig: { sampling: { defaultRate: 0.01, routes: [{ routeName: "chat", rate: 0.2 }, { pathPrefix: "/v1/embeddings", rate: 0.05 }], force: [{ header: "x-debug" }] } },
  };
}

interface Served {
  url: string;
  close(): Promise<void>;
}

async function serve(policies: number): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-pull-"));
  // Loading is not what is measured: no fsync, and one group commit for every create.
  const store = new FilePolicyStore({ path: join(dir, "policies.json"), fsync: false });
  const created = await Promise.all(Array.from({ length: policies }, (_, i) => store.create(policy(i), { by: "bench" })));
  if (!created.every((r) => r.ok)) throw new Error("bench policies were refused");
  const app = createApp({ store, tokens: [], reads: "public", bodyLimitBytes: 65536, metrics: createMetrics(), overrides: () => undefined, readiness: () => ({}), log: () => undefined });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Rate {
  perCpuSecond: number;
  perWallSecond: number;
}

/** Best of `ROUNDS` batches of GET `path`, every answer `status`. */
async function rate(client: LoadClient, url: string, path: string, status: number): Promise<Rate> {
  let best: Rate = { perCpuSecond: 0, perWallSecond: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const { cpuMs, result } = await cpuMsDuring(() => client.run({ url, repeat: { request: { method: "GET", path }, count: REQUESTS }, concurrency: CONCURRENCY }));
    if (result.statuses[status] !== REQUESTS) throw new Error(`GET ${path}: expected ${REQUESTS} x ${status}, got ${JSON.stringify(result.statuses)}`);
    best = { perCpuSecond: Math.max(best.perCpuSecond, (REQUESTS * 1000) / cpuMs), perWallSecond: Math.max(best.perWallSecond, (REQUESTS * 1000) / result.wallMs) };
  }
  return best;
}

async function currentVersion(url: string): Promise<string> {
  const res = await fetch(`${url}/v1/filters/${WORKLOAD}/config`);
  if (res.status !== 200) throw new Error(`pull answered ${res.status}`);
  return ((await res.json()) as { version: string }).version;
}

export async function run(): Promise<BenchRow[]> {
  const client = startLoadClient();
  const large = await serve(10_000);
  const small = await serve(10);
  try {
    const version = await currentVersion(large.url);
    if ((await currentVersion(small.url)) !== version) throw new Error("the two stores serve different configs");
    const unchanged = `/v1/filters/${WORKLOAD}/config?version=${version}`;
    const changed = `/v1/filters/${WORKLOAD}/config?version=0000000000000000`;
    // Warm both servers' JIT on every path first.
    for (const s of [large, small]) for (const path of ["/healthz", unchanged, changed]) await client.run({ url: s.url, repeat: { request: { method: "GET", path }, count: 2000 }, concurrency: CONCURRENCY });
    const trivial = await rate(client, large.url, "/healthz", 200);
    const pull = await rate(client, large.url, unchanged, 304);
    const pullSmall = await rate(client, small.url, unchanged, 304);
    const pull200 = await rate(client, large.url, changed, 200);
    return [
      {
        figure: "policy pull 304 with 10,000 policies vs GET /healthz of the same app, server throughput",
        value: pull.perCpuSecond,
        unit: "req/CPU-s",
        baseline: { name: "GET /healthz", value: trivial.perCpuSecond },
        ratio: { value: pull.perCpuSecond / trivial.perCpuSecond, of: "pull/healthz", better: "higher" },
        bar: { on: "ratio", min: 0.5 },
      },
      {
        figure: `policy pull 304 with 10,000 policies vs GET /healthz, wall clock (${CONCURRENCY} connections from another process)`,
        value: pull.perWallSecond,
        unit: "req/s",
        baseline: { name: "GET /healthz", value: trivial.perWallSecond },
        ratio: { value: pull.perWallSecond / trivial.perWallSecond, of: "pull/healthz", better: "higher" },
      },
      {
        figure: "policy pull 304 with 10,000 policies vs with 10, server throughput",
        value: pull.perCpuSecond,
        unit: "req/CPU-s",
        baseline: { name: "10 policies", value: pullSmall.perCpuSecond },
        ratio: { value: pull.perCpuSecond / pullSmall.perCpuSecond, of: "10k/10", better: "higher" },
      },
      {
        figure: "policy pull 200 (config changed) with 10,000 policies vs GET /healthz, server throughput",
        value: pull200.perCpuSecond,
        unit: "req/CPU-s",
        baseline: { name: "GET /healthz", value: trivial.perCpuSecond },
        ratio: { value: pull200.perCpuSecond / trivial.perCpuSecond, of: "pull/healthz", better: "higher" },
      },
    ];
  } finally {
    client.close();
    await large.close();
    await small.close();
  }
}
