// Shard membership against wall-clock steps and a cut-off API server: two replicas' member Leases
// on the emulated kube-apiserver (real HTTP), every timer on one fake clock whose wall reading can
// jump (an NTP step, a resumed VM) while monotonic time runs on. Durations that decide who scrapes
// must not move with the wall clock; a replica cut off from the API server counts itself out
// within the renew deadline of its last renewal sent, before the other counts it out.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeResult } from "../../../control-plane/src/k8s/client.js";
import { ClientNodeMemberLeaseApi, LeaseMembership, type MemberLeaseApi } from "../../../control-plane/src/pipeline/membership.js";
import { kubeConfigFor, startKubeEmulator, type KubeEmulator } from "../../support/kube-emulator/index.js";
import { FakeClock } from "../../support/fake-clock.js";

const NAMESPACE = "tokentrace-system";
const LEASE_MS = 10_000;

let emulator: KubeEmulator;
const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);

before(async () => {
  emulator = await startKubeEmulator({ now: () => new Date(clock.now()) });
});
after(async () => {
  await emulator.close();
});

interface Member { identity: string; membership: LeaseMembership; seen: string[][]; cutOff: boolean }

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

/** Every call gets no answer while the member is cut off (its bound still ends it). */
function cuttable(member: { cutOff: boolean }, api: MemberLeaseApi): MemberLeaseApi {
  const reach = <T>(call: () => Promise<KubeResult<T>>): Promise<KubeResult<T>> => (member.cutOff ? never() : call());
  return {
    list: (ns, signal) => reach(() => api.list(ns, signal)),
    get: (ns, name, signal) => reach(() => api.get(ns, name, signal)),
    create: (ns, lease, signal) => reach(() => api.create(ns, lease, signal)),
    update: (ns, lease, signal) => reach(() => api.update(ns, lease, signal)),
    delete: (ns, name, rv, signal) => reach(() => api.delete(ns, name, rv, signal)),
  };
}

function member(identity: string): Member {
  const m = { identity, seen: [], cutOff: false } as unknown as Member;
  m.membership = new LeaseMembership({
    api: cuttable(m, new ClientNodeMemberLeaseApi(kubeConfigFor(emulator.url))),
    namespace: NAMESPACE,
    identity,
    leaseDurationMs: LEASE_MS,
    clock,
    onChange: (members) => m.seen.push(members),
  });
  return m;
}

const current = (m: Member): string => (m.seen.at(-1) ?? []).join();

/** Advances the fake clock in 250 ms steps, letting real HTTP run between them; `each` after every step. */
async function run(ms: number, each?: (waitedMs: number) => void): Promise<void> {
  for (let waited = 250; waited <= ms; waited += 250) {
    await clock.advance(250);
    await new Promise((r) => setTimeout(r, 5));
    each?.(waited);
  }
}

describe("shard membership on a monotonic clock (emulated kube-apiserver, fake clock)", () => {
  it("emulated: a wall-clock step of +1 h, then -1 h, neither counts a live replica out nor keeps a cut-off one in: cut off, it counts itself out within the renew deadline, before the other counts it out", async (t) => {
    const a = member("pipeline-a");
    const b = member("pipeline-b");
    await a.membership.start();
    await b.membership.start();
    await run(2 * LEASE_MS);
    assert.deepEqual([current(a), current(b)], ["pipeline-a,pipeline-b", "pipeline-a,pipeline-b"]);
    const both = (what: string) => (waited: number) => assert.deepEqual([current(a), current(b)], ["pipeline-a,pipeline-b", "pipeline-a,pipeline-b"], `${what}, ${waited} ms on`);
    clock.stepWall(3_600_000);
    await run(2 * LEASE_MS, both("after a +1 h step"));
    clock.stepWall(-7_200_000);
    await run(2 * LEASE_MS, both("after a -2 h step (-1 h from the start)"));
    // Cut off, and the wall clock steps back another hour at once.
    const cutAt = clock.monotonicMs();
    a.cutOff = true;
    clock.stepWall(-3_600_000);
    let aOut: number | undefined;
    let bOut: number | undefined;
    await run(2 * LEASE_MS, () => {
      if (aOut === undefined && current(a) === "") aOut = clock.monotonicMs();
      if (bOut === undefined && current(b) === "pipeline-b") bOut = clock.monotonicMs();
    });
    const renewDeadlineMs = a.membership.renewDeadlineMs;
    t.diagnostic(`cut off at +0 (wall stepped -1 h then): a counted itself out at +${aOut === undefined ? "never" : aOut - cutAt} ms, b counted it out at +${bOut === undefined ? "never" : bOut - cutAt} ms (renew deadline ${renewDeadlineMs} ms, lease ${LEASE_MS} ms)`);
    assert.ok(aOut !== undefined && bOut !== undefined, "both saw a out");
    assert.ok(aOut - cutAt <= renewDeadlineMs, `a out after ${aOut - cutAt} ms`);
    assert.ok(aOut < bOut, "a out before b counts it out");
    a.cutOff = false;
    const stopping = Promise.all([a.membership.stop(), b.membership.stop()]);
    await run(LEASE_MS);
    await stopping;
  });
});
