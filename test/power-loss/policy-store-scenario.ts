// The file policy store (snapshot + journal) under power loss. The workload creates, replaces,
// patches, deletes and rolls back policies, one at a time or several at once (group commit), with
// a journal small enough to compact often, and restarts cleanly now and then. After each power
// loss the store is opened on the disk image (sometimes the power goes again while it recovers
// and takes more writes), then checked, written once more, closed and opened again.
//
// The property ("0 acknowledged policy writes lost"):
// - opening never throws (no crash loop) and the store is ready;
// - every write answered ok is in its policy's history with the same version, action and policy;
// - each policy's current record is the last acknowledged write for it, or a later write that was
//   in flight when the power went (never an older one, never one that was not written);
// - versions only grow: the first write after recovery gets a version above every acknowledged one;
// - no acknowledged record is quarantined, and every acknowledged change has its audit line.
import assert from "node:assert/strict";
import { FilePolicyStore } from "../../control-plane/src/policy/file-store.js";
import type { AuditRecord } from "../../control-plane/src/policy/audit.js";
import type { Policy } from "../../control-plane/src/policy/model.js";
import type { WriteResult } from "../../control-plane/src/policy/repository.js";
import type { CrashScenario } from "./sweep.js";
import { PowerLoss, type SimFs } from "./sim-fs.js";

const PATH = "/var/lib/tokentrace/store/policies.json";
const NAMES = ["chat", "embed", "rerank", "vision", "audio", "code"];

interface Acked {
  name: string;
  /** The version the write made; for a delete (whose answer names no version), "". */
  version: string;
  /** A delete: the version it removed. */
  deleted?: string;
  /** The policy after the write, as canonical JSON; null after a delete. */
  policy: string | null;
}

/** What the callers were told and what the audit sink received (both outside the disk). */
export interface StoreOracle {
  acked: Acked[];
  audits: AuditRecord[];
  /** Distinct value per write, so every policy written differs from every other. */
  writes: number;
}

function policy(name: string, rate: number): Policy {
  return {
    name,
    target: { namespace: "llm", selector: { matchLabels: { app: name } } },
    pluginConfig: { sampling: { defaultRate: rate, routes: [{ routeName: "completions", rate: 0.5 }] } },
  };
}

const canonical = (p: Policy | undefined): string | null => (p === undefined ? null : JSON.stringify(p, Object.keys(p).sort()));

function open(fs: SimFs, oracle: StoreOracle): FilePolicyStore {
  let t = Date.UTC(2026, 0, 1);
  return new FilePolicyStore({ path: PATH, fs, compactMinBytes: 1500, audit: (r) => oracle.audits.push(r), now: () => new Date((t += 1000)) });
}

/** One write chosen by `random`, its answer recorded when it is an acknowledged change. */
async function oneWrite(store: FilePolicyStore, oracle: StoreOracle, random: () => number): Promise<void> {
  const name = NAMES[Math.floor(random() * NAMES.length)]!;
  const rate = ++oracle.writes / 1_000_000;
  const options = { by: "power-loss" };
  const r = random();
  let pending: Promise<WriteResult>;
  if (r < 0.45) pending = store.put(name, policy(name, rate), options);
  else if (r < 0.65) pending = store.patch(name, { pluginConfig: { sampling: { defaultRate: rate } } }, options);
  else if (r < 0.75) pending = store.create(policy(name, rate), options);
  else if (r < 0.87) pending = store.delete(name, options);
  else {
    const versions = ((await store.history(name)) ?? []).filter((h) => h.policy !== undefined);
    pending = store.rollback(name, versions[Math.floor(random() * versions.length)]?.version ?? "1", options);
  }
  const result = await pending;
  if (!result.ok || !result.changed) return;
  if (result.record === null) oracle.acked.push({ name, version: "", deleted: result.previous?.version ?? "", policy: null });
  else oracle.acked.push({ name, version: result.record.version, policy: canonical(result.record.policy) });
}

function maxVersion(oracle: StoreOracle): number {
  let max = 0;
  for (const a of oracle.acked) if (a.version !== "") max = Math.max(max, Number(a.version));
  return max;
}

/** Writes, some at once; stops at the power loss. */
async function workload(store: FilePolicyStore, fs: SimFs, oracle: StoreOracle, random: () => number, steps: number): Promise<FilePolicyStore> {
  for (let step = 0; step < steps; step++) {
    const r = random();
    if (r < 0.2) {
      const n = 2 + Math.floor(random() * 3);
      await Promise.all(Array.from({ length: n }, () => oneWrite(store, oracle, random)));
    } else if (r < 0.95) {
      await oneWrite(store, oracle, random);
    } else {
      await store.close();
      if (fs.crashed) throw new PowerLoss();
      store = open(fs, oracle);
    }
    if (fs.crashed) throw new PowerLoss();
  }
  return store;
}

async function verify(store: FilePolicyStore, oracle: StoreOracle): Promise<void> {
  assert.deepEqual(store.readiness().ok, true, `not ready: ${store.readiness().detail}`);
  const lastByName = new Map<string, Acked>();
  for (const a of oracle.acked) {
    lastByName.set(a.name, a);
    if (a.deleted !== undefined) {
      const history = (await store.history(a.name)) ?? [];
      assert.ok(history.some((h) => h.action === "delete" && h.previousVersion === a.deleted), `acknowledged delete of ${a.name}@${a.deleted} lost`);
      continue;
    }
    const entry = (await store.history(a.name))?.find((h) => h.version === a.version);
    assert.ok(entry !== undefined, `acknowledged write ${a.name}@${a.version} lost`);
    assert.equal(canonical(entry.policy), a.policy, `acknowledged write ${a.name}@${a.version} changed`);
    assert.ok(oracle.audits.some((x) => x.policy === a.name && x.newVersion === a.version), `acknowledged write ${a.name}@${a.version} has no audit line`);
  }
  const ackedVersions = new Set(oracle.acked.filter((a) => a.version !== "").map((a) => a.version));
  for (const [name, last] of lastByName) {
    const current = store.get(name);
    if (last.deleted !== undefined) {
      // Deleted, or written again by a write in flight when the power went.
      assert.ok(current === undefined || !ackedVersions.has(current.version), `${name}: deleted, but serves acknowledged version ${current?.version} again`);
      continue;
    }
    if (current === undefined) {
      // Only an in-flight delete can have removed it.
      const history = (await store.history(name)) ?? [];
      assert.ok(history.at(-1)?.action === "delete" && Number(history.at(-1)?.previousVersion) >= Number(last.version), `${name}: the acknowledged ${last.version} is not served`);
      continue;
    }
    const version = Number(current.version);
    assert.ok(version >= Number(last.version), `${name}: serves ${current.version}, older than the acknowledged ${last.version}`);
    if (version === Number(last.version)) assert.equal(canonical(current.policy), last.policy, `${name}@${last.version} served changed`);
    else assert.ok(!ackedVersions.has(current.version), `${name}: serves ${current.version}, a version acknowledged for another policy`);
  }
  for (const q of store.quarantined()) assert.ok(!ackedVersions.has(q.version), `acknowledged ${q.name}@${q.version} quarantined`);
}

/** After a power loss: open, check, write once more (its version must be new), close, open again, check. */
async function recoverAndCheck(fs: SimFs, oracle: StoreOracle, random: () => number, moreSteps: number): Promise<void> {
  let store = open(fs, oracle);
  await verify(store, oracle);
  const before = maxVersion(oracle);
  const name = `after-${oracle.writes}`;
  const result = await store.create(policy(name, ++oracle.writes / 1_000_000), { by: "power-loss" });
  if (fs.crashed) throw new PowerLoss();
  assert.ok(result.ok && result.record !== null, `the first write after recovery failed: ${JSON.stringify(result)}`);
  assert.ok(Number(result.record.version) > before, `version ${result.record.version} handed out again (acknowledged up to ${before})`);
  oracle.acked.push({ name, version: result.record.version, policy: canonical(result.record.policy) });
  store = await workload(store, fs, oracle, random, moreSteps);
  await store.close();
  if (fs.crashed) throw new PowerLoss();
  store = open(fs, oracle);
  await verify(store, oracle);
  await store.close();
}

/** The policy store scenario: `steps` writes (or restarts) before the power loss. */
export function policyStoreScenario(steps: number): CrashScenario<StoreOracle> {
  return {
    name: `policy store (${steps} steps, compaction past 1500 bytes)`,
    oracle: () => ({ acked: [], audits: [], writes: 0 }),
    async run(fs, oracle, random) {
      const store = await workload(open(fs, oracle), fs, oracle, random, steps);
      await store.close();
    },
    async check(image, oracle, random) {
      if (random() < 0.3) {
        // The power goes again while the store recovers and takes writes.
        image.crashAt = image.ops + 1 + Math.floor(random() * 40);
        try {
          await recoverAndCheck(image, oracle, random, 6);
        } catch (error) {
          if (!(error instanceof PowerLoss) && !image.crashed) throw error;
        }
        if (image.crashed) image = image.powerLossImage(random);
        else return;
      }
      await recoverAndCheck(image, oracle, random, 3);
    },
  };
}
