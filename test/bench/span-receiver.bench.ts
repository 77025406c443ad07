// The span receiver against hostile callers and at ingest (issue #22's bars). The receiver is the
// real filter-facing app on 127.0.0.1 in this process, with the byte budget the shipped Deployment
// gets (traces.memoryFraction of its 512 MiB limit); load comes from other processes, so this
// process's CPU time and resident set are the server's.
// - 1,000 export requests each carrying a 1 MiB attribute (JSON and protobuf, 8 in flight): the
//   resident set after them (after a GC) at most 64 MiB above its level before them, and GET
//   /healthz of the API app p99 under 50 ms, measured from a third process during the attack.
// - Ingest of well-formed spans (batches of 32 as the filter sends, JSON and protobuf): at least
//   20,000 spans per server CPU-second.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createApp } from "../../control-plane/src/app.js";
import { createMetrics } from "../../control-plane/src/api/metrics.js";
import { ContentKeyRing } from "../../control-plane/src/content/keys.js";
import { createFilterApp } from "../../control-plane/src/filters/app.js";
import { listenOn } from "../../control-plane/src/listen.js";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import { defaultBudgetBytes } from "../../control-plane/src/traces/memory-budget.js";
import { TraceStore } from "../../control-plane/src/traces/store.js";
import { exportJson, exportProtobuf, llmSpan } from "../control-plane/traces/otlp-fixtures.js";
import { cpuMsDuring, startLoadClient } from "./load-client.js";
import type { LoadRequest } from "./http-load.js";
import type { BenchRow } from "./table.js";

export const runs = 3;

const MiB = 1024 * 1024;
const HOSTILE = 1000;
const INGEST_REQUESTS = 1500;
const BATCH = 32;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
function rssAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().rss;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
}

const headers = (type: string) => ({ "content-type": type, "x-forwarded-client-cert": "By=spiffe://cluster.local/ns/tokentrace-system/sa/cp;URI=spiffe://cluster.local/ns/llm/sa/bench" });

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "tt-bench-recv-"));
  const policies = new FilePolicyStore({ path: join(dir, "policies.json"), fsync: false });
  const metrics = createMetrics();
  const store = new TraceStore(10_000, { maxBytes: defaultBudgetBytes(0.125, 512 * MiB) });
  const filters = createFilterApp({ auth: "mesh", trustDomain: "cluster.local", tokens: [], store: policies, overrides: () => undefined, metrics, keys: new ContentKeyRing(""), traces: { store, maxBodyBytes: 4 * MiB, maxInflightBytes: 0, maxDepth: 32 }, log: () => undefined });
  const api = createApp({ store: policies, tokens: [], reads: "public", bodyLimitBytes: 65536, metrics, overrides: () => undefined, readiness: () => ({}), log: () => undefined });
  const filterServer: Server = await listenOn(filters, 0, "127.0.0.1", "bench");
  const apiServer: Server = await listenOn(api, 0, "127.0.0.1", "bench");
  const filtersUrl = `http://127.0.0.1:${(filterServer.address() as AddressInfo).port}`;
  const apiUrl = `http://127.0.0.1:${(apiServer.address() as AddressInfo).port}`;
  const attacker = startLoadClient();
  const prober = startLoadClient();
  try {
    const hostileJson = exportJson([llmSpan(1, { extra: [{ key: "gen_ai.input.messages", value: "h".repeat(MiB) }] })]);
    const hostile: LoadRequest[] = [
      { method: "POST", path: "/v1/traces", headers: headers("application/json"), body: hostileJson },
      { method: "POST", path: "/v1/traces", headers: headers("application/x-protobuf"), bodyBase64: exportProtobuf(hostileJson).toString("base64") },
    ];
    // Warm up every path (JIT, buffers) so the baseline is a served process, not a cold one.
    await attacker.run({ url: filtersUrl, requests: hostile, count: 20, concurrency: 8 });
    await prober.run({ url: apiUrl, repeat: { request: { method: "GET", path: "/healthz" }, count: 200 }, concurrency: 1 });
    // The same probes without the attack: what the machine gives a request at all (it is shared).
    const quiet: number[] = [];
    for (let i = 0; i < 200; i++) quiet.push((await prober.run({ url: apiUrl, repeat: { request: { method: "GET", path: "/healthz" }, count: 1 }, concurrency: 1 })).wallMs);
    const rssBefore = rssAfterGc();
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const elu = performance.eventLoopUtilization();
    const cpu = process.cpuUsage();

    let attacking = true;
    const latencies: number[] = [];
    const probing = (async () => {
      while (attacking) {
        const r = await prober.run({ url: apiUrl, repeat: { request: { method: "GET", path: "/healthz" }, count: 1 }, concurrency: 1 });
        if (r.statuses["200"] !== 1) throw new Error(`healthz answered ${JSON.stringify(r.statuses)}`);
        latencies.push(r.wallMs);
      }
    })();
    const attack = await attacker.run({ url: filtersUrl, requests: hostile, count: HOSTILE, concurrency: 8 });
    attacking = false;
    await probing;
    loop.disable();
    const busy = performance.eventLoopUtilization(elu).utilization;
    const used = process.cpuUsage(cpu);
    const cpuMsPerRequest = (used.user + used.system) / 1000 / HOSTILE;
    if ((attack.statuses["200"] ?? 0) + (attack.statuses["429"] ?? 0) !== HOSTILE) throw new Error(`hostile requests answered ${JSON.stringify(attack.statuses)}`);
    const rssAfter = rssAfterGc();

    const spans = (offset: number) => Array.from({ length: BATCH }, (_, i) => llmSpan(offset + i));
    const jsonBodies = Array.from({ length: 20 }, (_, k) => exportJson(spans(k * BATCH)));
    const ingest = async (type: "json" | "protobuf"): Promise<number> => {
      const requests: LoadRequest[] = jsonBodies.map((body) =>
        type === "json" ? { method: "POST", path: "/v1/traces", headers: headers("application/json"), body } : { method: "POST", path: "/v1/traces", headers: headers("application/x-protobuf"), bodyBase64: exportProtobuf(body).toString("base64") },
      );
      await attacker.run({ url: filtersUrl, requests, count: 200, concurrency: 8 });
      const { cpuMs, result } = await cpuMsDuring(() => attacker.run({ url: filtersUrl, requests, count: INGEST_REQUESTS, concurrency: 8 }));
      if (result.statuses["200"] !== INGEST_REQUESTS) throw new Error(`ingest answered ${JSON.stringify(result.statuses)}`);
      return (INGEST_REQUESTS * BATCH * 1000) / cpuMs;
    };
    const jsonRate = await ingest("json");
    const protobufRate = await ingest("protobuf");
    return [
      { figure: `span receiver: resident set growth over ${HOSTILE} hostile requests (1 MiB attribute each)`, value: (rssAfter - rssBefore) / MiB, unit: "MiB", bar: { on: "value", max: 64 } },
      {
        figure: "span receiver: GET /healthz p99 during the hostile requests (probes from a third process, one at a time)",
        value: percentile(latencies, 99),
        unit: "ms",
        baseline: { name: "without the attack", value: percentile(quiet, 99) },
        bar: { on: "value", max: 50 },
      },
      { figure: "span receiver: the server's event-loop delay p99 during the hostile requests (includes waiting for a CPU)", value: loop.percentile(99) / 1e6, unit: "ms", baseline: { name: "max", value: loop.max / 1e6 } },
      { figure: "span receiver: the server's CPU per hostile request", value: cpuMsPerRequest, unit: "ms" },
      { figure: "span receiver: the server's event-loop utilisation during the hostile requests", value: busy * 100, unit: "%" },
      { figure: "span receiver: ingest of well-formed spans, OTLP/JSON batches of 32", value: jsonRate, unit: "spans/CPU-s", bar: { on: "value", min: 20000 } },
      { figure: "span receiver: ingest of well-formed spans, OTLP/protobuf batches of 32", value: protobufRate, unit: "spans/CPU-s", bar: { on: "value", min: 20000 } },
    ];
  } finally {
    attacker.close();
    prober.close();
    await new Promise<void>((r) => {
      filterServer.closeAllConnections();
      filterServer.close(() => r());
    });
    await new Promise<void>((r) => {
      apiServer.closeAllConnections();
      apiServer.close(() => r());
    });
    await policies.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
