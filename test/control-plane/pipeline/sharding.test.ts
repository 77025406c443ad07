// Three pipeline replicas split 330 targets (300 emulated pods' sidecars on 30 nodes, and each
// node's dcgm-exporter), with membership from coordination.k8s.io Leases on the emulated
// kube-apiserver (real HTTP) and every timer on one fake clock. Checked: every target is scraped by
// exactly one replica; a replica that is lost (stops renewing its Lease) has its targets scraped by
// the survivors within one scrape interval of the instant it would have counted itself out (a lost
// replica may be one cut off from a hung API server and still scraping until then: membership.ts),
// the survivors keeping their own; a replica that comes
// back gets its targets at a scrape boundary (the old owner's last scrape one interval before the
// new owner's first, no staleness marker between); and no sample is shipped twice.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { startPipeline, withDefaults, type RunningPipeline } from "../../../control-plane/src/pipeline/index.js";
import { ClientNodeMemberLeaseApi } from "../../../control-plane/src/pipeline/membership.js";
import { clientNodeLeaseReader } from "../../../control-plane/src/pipeline/handover.js";
import { hashmod } from "../../../control-plane/src/pipeline/sharding.js";
import { decodeWriteRequestV1 } from "../../../control-plane/src/remote-write/protobuf.js";
import { snappyUncompress } from "../../../control-plane/src/remote-write/snappy.js";
import type { Transport } from "../../../control-plane/src/remote-write/transport.js";
import type { StaticTargetConfig } from "../../../control-plane/src/scrape/targets.js";
import { kubeConfigFor, startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { FakeClock, until } from "../../support/fake-clock.js";

const NODES = 30;
const PODS_PER_NODE = 10;
const INTERVAL_MS = 15_000;
const LEASE_MS = 9_000;

let emulator: KubeEmulator;
let fleet: Server;
// One clock for the replicas and the API server (whose creationTimestamps time the hand-overs).
const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);
let base = "";
const dirs: string[] = [];
before(async () => {
  emulator = await startKubeEmulator({ now: () => new Date(clock.now()) });
  // /envoy/<node>/<pod>: the filter's request counter; /dcgm/<node>: one GPU per pod of the node.
  fleet = createServer((req, res) => {
    const [, kind, node] = (req.url ?? "").split("/");
    const n = Number(node!.slice(1));
    const body = kind === "envoy"
      ? `tokentrace_requests_total{route="chat",status_class="2xx"} ${Date.now() % 100000}\n`
      : Array.from({ length: PODS_PER_NODE }, (_, p) => `DCGM_FI_DEV_GPU_UTIL{gpu="${p}",UUID="GPU-${n}-${p}",modelName="L4",Hostname="n${n}",namespace="llm",pod="p${n}-${p}"} 50\n`).join("");
    res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4" }).end(body);
  });
  await new Promise<void>((r) => fleet.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(fleet.address() as AddressInfo).port}`;
});
after(async () => {
  fleet.closeAllConnections();
  await new Promise<void>((r) => fleet.close(() => r()));
  await emulator.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function targets(): StaticTargetConfig[] {
  const out: StaticTargetConfig[] = [];
  for (let n = 0; n < NODES; n++) {
    out.push({ url: `${base}/dcgm/n${n}`, kind: "dcgm", node: `n${n}` });
    for (let p = 0; p < PODS_PER_NODE; p++) out.push({ url: `${base}/envoy/n${n}/p${p}`, kind: "envoy", namespace: "llm", pod: `p${n}-${p}`, node: `n${n}` });
  }
  return out;
}

interface Replica { name: string; pipeline: RunningPipeline; scrapes: { target: string; ts: number }[]; samples: { series: string; ts: number; stale: boolean }[] }

describe("pipeline sharding over Leases (emulated: kube-apiserver; 3 replicas, 300 pods)", () => {
  it("splits the targets, moves a lost replica's within one scrape interval of its self-out with the survivors keeping theirs, hands them back at a scrape boundary, and ships no sample twice", async () => {
    const kubeConfig = kubeConfigFor(emulator.url, "tokentrace-system");
    const replicas: Replica[] = [];
    const startReplica = async (name: string): Promise<Replica> => {
      const queueDir = mkdtempSync(join(tmpdir(), "tokentrace-shard-"));
      dirs.push(queueDir);
      const r = { name, scrapes: [], samples: [] } as unknown as Replica;
      const transport: Transport = {
        send: async (body) => {
          for (const s of decodeWriteRequestV1(snappyUncompress(body))) for (const smp of s.samples) r.samples.push({ series: s.labels.join(","), ts: smp.timestampMs, stale: smp.stale === true });
          return { kind: "success", status: 204 };
        },
      };
      r.pipeline = await startPipeline(
        withDefaults({
          scrape: { intervalMs: INTERVAL_MS, timeoutMs: 5000, concurrency: 64, static: targets() },
          remoteWrite: { queueDir, targets: [{ name: "sink", url: "http://127.0.0.1:9/unused", batchSendDeadlineMs: 100 }] },
          sharding: { enabled: true, identity: name, leaseDurationMs: LEASE_MS },
        }),
        {
          registry: new Registry(),
          clock,
          transportFor: () => transport,
          memberLeaseApi: new ClientNodeMemberLeaseApi(kubeConfig),
          readMemberLease: clientNodeLeaseReader(kubeConfig, "tokentrace-system", clock, LEASE_MS),
          onBatch: (_s, result) => r.scrapes.push({ target: result.target.id, ts: result.timestampMs }),
        },
      );
      return r;
    };
    for (const name of ["replica-a", "replica-b", "replica-c"]) replicas.push(await startReplica(name));
    const period = Math.floor(LEASE_MS / 3);
    const allIds = new Set(targets().map((t) => `${t.kind}|${t.url}|${t.namespace ?? ""}/${t.pod ?? ""}`));
    const owned = (r: Replica): Set<string> => new Set(r.pipeline.targets().map((t) => t.id));
    const settleMembers = async (expect: string[], live: Replica[]): Promise<void> => {
      for (let i = 0; i < 20 && !live.every((r) => r.pipeline.members()?.join() === expect.join()); i++) {
        await clock.advance(period);
        await until(async () => true, "a turn");
      }
      for (const r of live) await until(() => r.pipeline.members()?.join() === expect.join(), `${r.name} sees ${expect.join(",")}`);
      // A slot taken from a live replica changes hands two membership periods after the joiner's
      // Lease was created, at the next scrape of each target: past both, every replica has its share.
      await clock.advance(2 * period + INTERVAL_MS);
    };
    await settleMembers(["replica-a", "replica-b", "replica-c"], replicas);

    // Every target scraped by exactly one replica, and each replica with a real share.
    const shares = replicas.map(owned);
    assert.equal(shares.reduce((n, s) => n + s.size, 0), allIds.size);
    assert.deepEqual(new Set(shares.flatMap((s) => [...s])), allIds);
    for (const s of shares) assert.ok(s.size >= 0.15 * allIds.size, `share ${s.size} of ${allIds.size}`);
    // A node's sidecars and its dcgm-exporter stay together (the join is per node).
    for (const s of shares) for (const id of s) if (id.includes("/envoy/")) assert.ok(s.has(`dcgm|${base}/dcgm/${/envoy\/(n\d+)/.exec(id)![1]}|/`), id);

    // Two scrape rounds, then replica-c is lost: it stops renewing its Lease, and (as a process
    // killed outright) never deletes it, so the others count it out only when it runs out.
    await clock.advance(2 * INTERVAL_MS);
    const lost = replicas[2]!;
    const lostTargets = owned(lost);
    const kept = [owned(replicas[0]!), owned(replicas[1]!)];
    const lostAt = clock.now();
    emulator.failNext(1, 500, "DELETE");
    const stopping = lost.pipeline.stop();
    await clock.advance(6000); // its bounded flush on stop
    await stopping;
    const survivors = replicas.slice(0, 2);
    await settleMembers(["replica-a", "replica-b"], survivors);
    const after = survivors.map(owned);
    assert.deepEqual(new Set([...after[0]!, ...after[1]!]), allIds);
    assert.equal(after[0]!.size + after[1]!.size, allIds.size, "no target on both survivors");
    for (const [i, k] of kept.entries()) for (const id of k) assert.ok(after[i]!.has(id), `${survivors[i]!.name} kept ${id}`);
    // Each of the lost replica's targets is scraped by a survivor within one interval of the instant
    // it would have counted itself out: the renew deadline (two thirds of the lease) after the last
    // change of its Lease the survivors saw, which is at most one membership period after the loss.
    // Slots before that instant are not taken (a replica cut off from a hung API server scrapes
    // them): a replica killed with its Lease left behind costs each target the slots in at most
    // (membership period + renew deadline) = the lease, one scrape here (lease 9 s, interval 15 s).
    const selfOutBoundMs = period + Math.floor((LEASE_MS * 2) / 3);
    await until(() => [...lostTargets].every((id) => survivors.some((r) => r.scrapes.some((s) => s.target === id && s.ts > lostAt))), "the lost targets scraped");
    for (const id of lostTargets) {
      const first = Math.min(...survivors.flatMap((r) => r.scrapes.filter((s) => s.target === id && s.ts > lostAt).map((s) => s.ts)));
      assert.ok(first - lostAt <= selfOutBoundMs + INTERVAL_MS, `${id} first scraped ${first - lostAt} ms after the loss`);
    }
    await clock.advance(INTERVAL_MS);
    // Past the batch deadline with no scrape due: every replica's queue drains.
    for (let i = 0; i < 50 && survivors.some((r) => r.pipeline.writer.targets[0]!.queue.pendingSamples > 0); i++) {
      await clock.advance(100);
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const r of survivors) assert.equal(r.pipeline.writer.targets[0]!.queue.pendingSamples, 0, `${r.name} drained`);

    // replica-c comes back: the survivors hand its targets back at a scrape boundary, and the series
    // they wrote for them go on (no staleness marker: replica-c writes the next sample).
    const returned = await startReplica("replica-c");
    replicas.push(returned);
    await settleMembers(["replica-a", "replica-b", "replica-c"], [...survivors, returned]);
    assert.deepEqual(owned(returned), lostTargets, "the same slots come back");
    for (const id of lostTargets) {
      const last = Math.max(...survivors.flatMap((r) => r.scrapes.filter((s) => s.target === id).map((s) => s.ts)));
      const first = Math.min(...returned.scrapes.filter((s) => s.target === id).map((s) => s.ts));
      assert.equal(first - last, INTERVAL_MS, `${id}: handed back at a scrape boundary`);
    }
    const handedBack = [...lostTargets].filter((id) => id.includes("/envoy/")).map((id) => /\|llm\/(p\d+-\d+)$/.exec(id)![1]!);
    for (const pod of handedBack) {
      assert.ok(!survivors.some((r) => r.samples.some((x) => x.stale && x.series.includes(`pod,${pod}`) && x.series.includes("tokentrace_requests_total"))), `${pod}'s series not ended on hand-back`);
    }
    await clock.advance(INTERVAL_MS);
    for (let i = 0; i < 50 && replicas.some((r) => r !== lost && r.pipeline.writer.targets[0]!.queue.pendingSamples > 0); i++) {
      await clock.advance(100);
      await new Promise((r) => setTimeout(r, 20));
    }
    // No sample twice: every (series, timestamp) arrives from one replica once.
    const seen = new Map<string, string>();
    for (const r of replicas) {
      for (const s of r.samples) {
        const k = `${s.series}@${s.ts}${s.stale ? "!" : ""}`;
        assert.equal(seen.get(k), undefined, `${k} shipped by ${seen.get(k)} and ${r.name}`);
        seen.set(k, r.name);
      }
    }
    // And no target is scraped by two replicas in turns (overlapping ownership): every owner's run of
    // scrapes of a target between the first (replica-a alone at start) and the last holds more than
    // one scrape (owners flipping back and forth would leave runs of one).
    for (const id of allIds) {
      const order = replicas.flatMap((r) => r.scrapes.filter((s) => s.target === id).map((s) => ({ ts: s.ts, r: r.name }))).sort((a, b) => a.ts - b.ts);
      const runs: { r: string; first: number; last: number; n: number }[] = [];
      for (const o of order) {
        const cur = runs[runs.length - 1];
        if (cur && cur.r === o.r) {
          cur.last = o.ts;
          cur.n++;
        } else runs.push({ r: o.r, first: o.ts, last: o.ts, n: 1 });
      }
      for (const run of runs.slice(1, -1)) assert.ok(run.n >= 2, `${id}: ${runs.map((x) => `${x.r}@${x.first}..${x.last}`).join(" -> ")}`);
    }
    for (const r of [...survivors, returned]) {
      const s = r.pipeline.stop();
      await clock.advance(6000);
      await s;
    }
  });

  it("hashes a shard key exactly as Prometheus's hashmod (its own test vectors, prometheus/prometheus model/relabel/relabel_test.go)", () => {
    assert.equal(hashmod("baz", 1000), 976);
    assert.equal(hashmod("foo\nbar", 1000), 734);
  });
});
