// The control plane as processes in Kubernetes mode against the emulated kube-apiserver: the first
// replica takes the leader Lease and reconciles, a second follows and serves, and SIGTERM on the
// leader releases the Lease (holder emptied) so the follower takes over without waiting for it
// to expire.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { kubeConfigFor, startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { CRD_FILE } from "../../../scripts/manifests.js";
import { REPO, readYaml } from "../../istio/support.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

interface Proc {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: string[];
  exited: Promise<number | null>;
}

function spawnReplica(identity: string, configPath: string, kubeconfig: string): Proc {
  const child = spawn(process.execPath, ["--import", "tsx", "control-plane/src/main.ts", "--config", configPath], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TOKENTRACE_KUBECONFIG: kubeconfig, TOKENTRACE_LEADER_ELECTION_IDENTITY: identity, TOKENTRACE_FILTERS_PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const proc: Proc = { child, lines: [], stderr: [], exited: new Promise((resolve) => child.on("exit", (code) => resolve(code))) };
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const parts = buffered.split("\n");
    buffered = parts.pop() ?? "";
    for (const line of parts) proc.lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr?.on("data", (chunk: Buffer) => proc.stderr.push(chunk.toString("utf8")));
  return proc;
}

async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, procs: Proc[]): Promise<T> {
  // Generous: under load a tsx start-up can take many seconds; nothing here waits a fixed time.
  const deadline = Date.now() + 90_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; logs: ${procs.map((p) => JSON.stringify(p.lines) + p.stderr.join("")).join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("control plane processes in Kubernetes mode (emulated kube-apiserver)", () => {
  let emulator: KubeEmulator;
  let dir: string;
  before(async () => {
    emulator = await startKubeEmulator();
    // As `kubectl apply -k istio/base` installs it: the SamplingPolicy CRD first.
    const crd = await fetch(`${emulator.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(readYaml(join(REPO, CRD_FILE))[0]) });
    assert.equal(crd.status, 201);
    dir = mkdtempSync(join(tmpdir(), "tt-k8s-main-"));
  });
  after(() => emulator.close());

  it("emulated: one replica leads and reconciles, the other follows; SIGTERM releases the Lease and the follower takes over", async () => {
    const kubeconfig = join(dir, "kubeconfig.json");
    writeFileSync(kubeconfig, kubeConfigFor(emulator.url).exportConfig());
    const config = (port: number): string => {
      const path = join(dir, `config-${port}.yaml`);
      writeFileSync(
        path,
        [
          "listen: { host: 127.0.0.1, port: 0 }",
          `store: { mode: kubernetes, path: ${join(dir, `store-${port}.json`)} }`,
          "kubernetes:",
          "  leaderElection: { namespace: tokentrace-system, leaseDurationSeconds: 4, renewDeadlineSeconds: 3, retryPeriodSeconds: 1 }",
          "adaptive: { enabled: false }",
          "",
        ].join("\n"),
      );
      return path;
    };
    const lease = async () => {
      const res = await fetch(`${emulator.url}/apis/coordination.k8s.io/v1/namespaces/tokentrace-system/leases/tokentrace-control-plane`);
      return res.status === 200 ? ((await res.json()) as { spec: { holderIdentity: string; leaseDurationSeconds: number; leaseTransitions: number } }).spec : undefined;
    };
    const first = spawnReplica("cp-1", config(1), kubeconfig);
    const procs = [first];
    try {
      await waitFor("cp-1 leads", () => first.lines.find((l) => l.msg === "became leader"), procs);
      assert.equal((await lease())?.holderIdentity, "cp-1");
      const second = spawnReplica("cp-2", config(2), kubeconfig);
      procs.push(second);
      const listening = await waitFor("cp-2 listens", () => second.lines.find((l) => l.msg === "listening"), procs);
      await waitFor("cp-2 sees the leader", () => second.lines.find((l) => l.msg === "leader" && l.holder === "cp-1"), procs);
      const ready = (await (await fetch(`${listening.url as string}/readyz`)).json()) as { checks: Record<string, { detail: string }> };
      assert.equal(ready.checks.leader?.detail, "following cp-1");
      assert.match(ready.checks.store?.detail ?? "", /samplingpolicies/);

      first.child.kill("SIGTERM");
      assert.equal(await first.exited, 0);
      assert.ok(first.lines.some((l) => l.msg === "released the lease"), "cp-1 released on SIGTERM");
      await waitFor("cp-2 leads", () => second.lines.find((l) => l.msg === "became leader"), procs);
      const taken = await lease();
      assert.equal(taken?.holderIdentity, "cp-2");
      assert.equal(taken?.leaseTransitions, 1);
      second.child.kill("SIGTERM");
      assert.equal(await second.exited, 0);
      assert.deepEqual([(await lease())?.holderIdentity, (await lease())?.leaseDurationSeconds], ["", 1]);
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL");
    }
  });
});
