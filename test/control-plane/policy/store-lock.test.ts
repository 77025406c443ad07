// One process owns a store file, proved with real processes: a second one exits non-zero at once
// naming the lock file and the holder; a lock left by kill -9 does not block the restart; a lock
// taken away stops acknowledged writes and readiness; a lock whose holder is on another boot or a
// reused pid counts as gone.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { currentHolder, holderAlive, StoreLock } from "../../../control-plane/src/policy/store-lock.js";
import { samplePolicy } from "../helpers.js";
import { spawnControlPlane } from "../service/process.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

function child(path: string): { proc: ChildProcess; out: Promise<string>; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, ["--import", "tsx", "test/control-plane/policy/lock-child.ts", path], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  const out = new Promise<string>((resolve) => {
    proc.stdout?.on("data", (c: Buffer) => {
      text += c.toString();
      if (text.includes("open")) resolve(text);
    });
    proc.stderr?.on("data", (c: Buffer) => (text += c.toString()));
    proc.on("exit", () => resolve(text));
  });
  return { proc, out, exited: new Promise((resolve) => proc.on("exit", (code) => resolve(code))) };
}

describe("the store lock", () => {
  it("a second process exits non-zero at once naming the file and the holder; after kill -9 of the holder a restart takes the lock", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-lock-")), "policies.json");
    const first = child(path);
    assert.equal(await first.out, "open\n");
    const holder = JSON.parse(readFileSync(`${path}.lock`, "utf8")) as { pid: number; hostname: string };
    assert.equal(holder.pid, first.proc.pid);

    const second = child(path);
    assert.equal(await second.exited, 1);
    assert.match(await second.out, new RegExp(`^start-up failed: policy store lock ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.lock is held by pid ${first.proc.pid} on ${hostname()} \\(running since `));

    // The control plane itself: exit code 1 before it listens, the same message.
    const main = spawnControlPlane({ TOKENTRACE_LISTEN_PORT: "0", TOKENTRACE_STORE_PATH: path, TOKENTRACE_ADAPTIVE_ENABLED: "false" });
    assert.equal(await main.exited, 1);
    assert.match(main.stderr.join(""), new RegExp(`start-up failed: policy store lock .*policies\\.json\\.lock is held by pid ${first.proc.pid} `));
    assert.ok(!main.lines.some((l) => l.includes('"listening"')));

    first.proc.kill("SIGKILL");
    await first.exited;
    assert.ok(existsSync(`${path}.lock`), "kill -9 leaves the lock file behind");
    const restart = child(path);
    assert.equal(await restart.out, "open\n", "the dead holder's lock does not block the restart");
    assert.equal((JSON.parse(readFileSync(`${path}.lock`, "utf8")) as { pid: number }).pid, restart.proc.pid);
    restart.proc.kill("SIGKILL");
    await restart.exited;
  });

  it("a holder on another boot, in another PID namespace or with a reused pid is gone; on another host it is not", () => {
    const me = currentHolder();
    assert.equal(holderAlive(me, me), true);
    assert.equal(holderAlive({ ...me, bootId: "00000000-0000-0000-0000-000000000000" }, me), false, "the machine rebooted since");
    assert.equal(holderAlive({ ...me, pidNamespace: "pid:[1]" }, me), false, "a restarted container");
    assert.equal(holderAlive({ ...me, startTicks: "1" }, me), false, "the pid was reused by a later process");
    assert.equal(holderAlive({ ...me, pid: 2 ** 22 + 7 }, me), false, "no such process");
    assert.equal(holderAlive({ ...me, hostname: "elsewhere", pid: 2 ** 22 + 7 }, me), true, "another host cannot be checked");
  });

  it("a lock taken away stops acknowledged writes and readiness until the store is reopened", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-lock-")), "policies.json");
    const store = new FilePolicyStore({ path, fsync: false });
    assert.equal((await store.create(samplePolicy("a"), { by: "t" })).ok, true);
    unlinkSync(`${path}.lock`);
    writeFileSync(`${path}.lock`, JSON.stringify({ ...currentHolder(), pid: 1, startTicks: "0" }));
    const refused = await store.create(samplePolicy("b"), { by: "t" });
    assert.deepEqual(refused.ok ? "ok" : refused.kind, "unavailable");
    assert.equal(store.readiness().ok, false);
    assert.match(store.readiness().detail, /store lock was lost/);
    assert.deepEqual(store.list().map((r) => r.policy.name), ["a"]);
    await store.close();
    assert.ok(existsSync(`${path}.lock`), "closing does not remove a lock that is not its own");
  });

  it("within one process the same store may be opened twice (the lock is per process), and the last close removes it", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tt-lock-")), "policies.json");
    const a = new FilePolicyStore({ path, fsync: false });
    const b = new FilePolicyStore({ path, fsync: false });
    await a.close();
    assert.ok(existsSync(`${path}.lock`));
    await b.close();
    assert.ok(!existsSync(`${path}.lock`));
    const lock = StoreLock.acquire(path);
    assert.equal(lock.lost(), undefined);
    lock.release();
  });
});
