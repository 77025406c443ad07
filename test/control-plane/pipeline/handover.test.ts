// Hand-overs at scrape boundaries (control-plane/src/pipeline/handover.ts), two replicas' views
// side by side on one fake clock: when each scrapes a moved target, and that the two agree.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Handover, type MemberLeaseReader, type MemberLeaseState } from "../../../control-plane/src/pipeline/handover.js";
import { ShardAssignment } from "../../../control-plane/src/pipeline/sharding.js";
import { Scraper } from "../../../control-plane/src/scrape/scraper.js";
import type { ScrapeTarget } from "../../../control-plane/src/scrape/targets.js";
import { FakeClock, settle } from "../../support/fake-clock.js";

const PERIOD_MS = 3000;
const LEASE_MS = 9000;
const targets: ScrapeTarget[] = Array.from({ length: 200 }, (_, i) => ({ id: `static|http://h/${i}|/`, kind: "static", url: `http://h/${i}`, intervalMs: 15_000, timeoutMs: 5000 }));

/** One replica's hand-over, with the member Leases the API server reports and a count of re-applies. */
function replica(self: string, clock: FakeClock, leases: Map<string, MemberLeaseState>, resumed = false): Handover & { changes: number } {
  const readLease: MemberLeaseReader = async (member) => leases.get(member);
  const h = new Handover({ self, periodMs: PERIOD_MS, leaseDurationMs: LEASE_MS, clock, readLease, resumed, onChange: () => (h.changes += 1) }) as Handover & { changes: number };
  h.changes = 0;
  return h;
}

/** The ids a replica scrapes now, and their windows. */
const view = (h: Handover) => {
  const { targets: owned, windows } = h.assign(targets);
  return { ids: new Set(owned.map((t) => t.id)), windows };
};

describe("hand-overs at scrape boundaries", () => {
  it("a joiner and the replica it takes slots from agree on one instant: its Lease's creationTimestamp plus two periods", async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const since = new Map<string, MemberLeaseState>([["b", { createdMs: 1_800_000_001_000 }]]);
    const a = replica("a", clock, since);
    a.setMembers(["a"]);
    const alone = view(a);
    assert.equal(alone.ids.size, targets.length);
    assert.equal(alone.windows.size, 0, "a lone start scrapes each target from its next slot");
    // b created its Lease at +1 s; a lists it at +2.5 s, b sees both at once.
    await clock.advance(2500);
    const b = replica("b", clock, since);
    b.setMembers(["a", "b"]);
    a.setMembers(["a", "b"]);
    assert.equal(view(b).ids.size, 0, "the joiner waits for its own instant");
    await settle();
    const cut = 1_800_000_001_000 + 2 * PERIOD_MS;
    const toB = new ShardAssignment(["a", "b"], "b");
    const moving = targets.filter((t) => toB.ownerOf(t) === "b");
    assert.ok(moving.length > 50 && moving.length < 150, `${moving.length} of ${targets.length} move`);
    const av = view(a);
    const bv = view(b);
    for (const t of moving) {
      assert.deepEqual(av.windows.get(t.id), { untilMs: cut }, `a keeps ${t.id} until the instant`);
      assert.deepEqual(bv.windows.get(t.id), { fromMs: cut }, `b takes ${t.id} from it`);
    }
    for (const t of targets.filter((x) => toB.ownerOf(x) === "a")) assert.equal(av.windows.get(t.id), undefined);
    assert.equal(bv.ids.size, moving.length);
    // a lets go only once the last scrape begun before the instant has had its timeout.
    await clock.advance(cut - clock.now() + 4999);
    assert.equal(view(a).ids.size, targets.length);
    const before = a.changes;
    await clock.advance(1);
    assert.equal(a.changes, before + 1, "a re-applies when the boundary and its timeout have passed");
    assert.equal(view(a).ids.size, targets.length - moving.length);
    a.stop();
    b.stop();
  });

  it("the scrapes the two windows allow fall on one grid: each slot once, none skipped", async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const cut = 1_800_000_007_000;
    const scraperA = new Scraper({ clock, concurrency: 1, onResult: () => undefined });
    const scraperB = new Scraper({ clock, concurrency: 1, onResult: () => undefined });
    const start = clock.now();
    const end = start + 60_000;
    for (const t of targets.slice(0, 20)) {
      const slots: number[] = [];
      // The old owner: every slot before the instant; the new owner: every slot from it.
      for (let at = scraperA.slotAtOrAfter(t, start); at < cut; at = scraperA.slotAtOrAfter(t, at + 1)) slots.push(at);
      for (let at = scraperB.slotAtOrAfter(t, cut); at < end; at = scraperB.slotAtOrAfter(t, at + 1)) slots.push(at);
      const gaps = slots.slice(1).map((x, i) => x - slots[i]!);
      assert.deepEqual(new Set(gaps), new Set([t.intervalMs]), `${t.id}: ${slots.map((x) => x - start).join(",")}`);
    }
  });

  it("a failed read makes the old owner let go at once and the joiner wait two periods from what it saw: a gap at worst, never two scrapes of a slot", async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const since = new Map<string, MemberLeaseState>();
    const a = replica("a", clock, since);
    a.setMembers(["a"]);
    const b = replica("b", clock, since);
    b.setMembers(["a", "b"]);
    a.setMembers(["a", "b"]);
    await settle();
    const av = view(a);
    const bv = view(b);
    for (const [id, w] of bv.windows) {
      assert.deepEqual(w, { fromMs: clock.now() + 2 * PERIOD_MS });
      assert.deepEqual(av.windows.get(id), { untilMs: clock.now() });
    }
    a.stop();
    b.stop();
  });

  for (const [how, lease, lookBackMs] of [
    ["stopped (its Lease deleted): a period and a quarter", "gone", Math.round(1.25 * PERIOD_MS)],
    ["died (its Lease left to run out): a lease and a period", { createdMs: 1_799_999_990_000 }, LEASE_MS + PERIOD_MS],
  ] as const) {
    it(`slots of a member that ${how} are taken with that look-back (a slot it may have missed is scraped at once)`, async () => {
      const clock = new FakeClock(1_800_000_000_000);
      const leases = new Map<string, MemberLeaseState>([["a", { createdMs: 1_799_999_990_000 }], ["b", { createdMs: 1_799_999_990_000 }]]);
      const a = replica("a", clock, leases, true);
      a.setMembers(["a", "b"]);
      assert.equal(view(a).windows.size, 0, "a resumed replica scrapes its slots from their next slot, without joining");
      await clock.advance(20_000);
      leases.set("b", lease);
      a.setMembers(["a"]);
      const fromB = targets.filter((t) => new ShardAssignment(["a", "b"], "a").ownerOf(t) === "b");
      assert.equal(view(a).ids.size, targets.length - fromB.length, "b's slots wait for its Lease to be read");
      await settle();
      const taken = view(a);
      assert.equal(taken.ids.size, targets.length);
      for (const t of fromB) assert.deepEqual(taken.windows.get(t.id), { fromMs: clock.now() - lookBackMs });
      // The look-back applies to the targets present at the take-over only.
      assert.equal(view(a).windows.size, 0);
      a.stop();
    });
  }
});
