// kill -9 of the control plane in the middle of concurrent writes, three times over the same
// store, then a restart: every write that was acknowledged is there with exactly what was
// written, and every committed change has its audit line (emitted then, or at the next start
// marked `recovered`). The kill comes after a number of acknowledgements, not after a time.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, samplePolicy } from "../helpers.js";
import { spawnControlPlane, waitForLine, type Proc } from "../service/process.js";

const token = "crash-test-token-0123456789";
const clients = 8;
const acknowledgementsPerBurst = 40;

interface Acknowledged {
  name: string;
  version: string;
  rate: number;
}

function auditLines(proc: Proc): { newVersion: string | null; oldVersion: string | null; policy: string; recovered?: boolean }[] {
  return proc.lines.map((l) => JSON.parse(l) as { msg: string }).filter((r) => r.msg === "audit") as never;
}

describe("policy store under kill -9", () => {
  it("loses no acknowledged write and no audit line over three kill -9 bursts of concurrent writes", async () => {
    const storePath = join(mkdtempSync(join(tmpdir(), "tt-crash-")), "policies.json");
    const env = { TOKENTRACE_LISTEN_PORT: "0", TOKENTRACE_STORE_PATH: storePath, TOKENTRACE_API_TOKENS: `crash:${token}`, TOKENTRACE_ADAPTIVE_ENABLED: "false" };
    const acknowledged: Acknowledged[] = [];
    const audits: ReturnType<typeof auditLines> = [];
    let writes = 0;
    for (let burst = 0; burst < 3; burst++) {
      const proc = spawnControlPlane(env);
      const url = (await waitForLine(proc, (r) => r.msg === "listening")).url as string;
      let inBurst = 0;
      let killed = false;
      await Promise.all(
        Array.from({ length: clients }, async (_, client) => {
          for (let i = 0; !killed; i++) {
            const name = `b${burst}-c${client}-p${i % 4}`;
            // Every write differs from the last, so none is a no-op.
            const rate = ++writes / 100_000;
            let res;
            try {
              res = await call(url, "PUT", `/v1/policies/${name}`, { body: samplePolicy(name, { pluginConfig: { sampling: { defaultRate: rate } } }), token });
            } catch {
              return; // the connection died with the process: not acknowledged
            }
            assert.ok(res.status === 200 || res.status === 201, `${res.status} ${res.text}`);
            acknowledged.push({ name, version: (res.body as { version: string }).version, rate });
            if (++inBurst === acknowledgementsPerBurst) {
              killed = true;
              proc.child.kill("SIGKILL");
            }
          }
        }),
      );
      await proc.exited;
      audits.push(...auditLines(proc));
    }

    const last = spawnControlPlane(env);
    try {
      const url = (await waitForLine(last, (r) => r.msg === "listening")).url as string;
      // Answers already on their way when the signal went out count too.
      assert.ok(acknowledged.length >= 3 * acknowledgementsPerBurst);
      const names = [...new Set(acknowledged.map((a) => a.name))];
      const histories = new Map<string, { version: string; previousVersion: string | null; policy?: { pluginConfig: { sampling: { defaultRate: number } } } }[]>();
      for (const name of names) {
        const res = await call(url, "GET", `/v1/policies/${name}/history`);
        assert.equal(res.status, 200, name);
        histories.set(name, (res.body as { items: never[] }).items);
      }
      for (const ack of acknowledged) {
        const entry = histories.get(ack.name)?.find((h) => h.version === ack.version);
        assert.equal(entry?.policy?.pluginConfig.sampling.defaultRate, ack.rate, `acknowledged ${ack.name} version ${ack.version}`);
      }
      // The listening line comes after the store loaded, so recovered audit lines are in by now.
      audits.push(...auditLines(last));
      const audited = new Set(audits.map((a) => `${a.policy}@${a.newVersion}`));
      let committed = 0;
      for (const [name, history] of histories) {
        for (const entry of history) {
          committed += 1;
          assert.ok(audited.has(`${name}@${entry.version}`), `committed change ${name}@${entry.version} has an audit line`);
        }
      }
      assert.ok(committed >= acknowledged.length);
      last.child.kill("SIGTERM");
      assert.equal(await last.exited, 0);
    } finally {
      last.child.kill("SIGKILL");
    }
  });
});
