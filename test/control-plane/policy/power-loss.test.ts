// The file policy store under thousands of simulated power losses (test/power-loss/): after each,
// the store opens (no crash loop), every acknowledged write is there as it was written, each
// policy serves its last acknowledged write or a later one that was in flight, and versions are
// never handed out twice. `make power-loss` runs more seeds and longer workloads.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { sweep } from "../../power-loss/sweep.js";
import { policyStoreScenario } from "../../power-loss/policy-store-scenario.js";

describe("file policy store under power loss (simulated disk)", () => {
  it("recovers from every crash point of five workloads: 2,000+ points, 0 acknowledged writes lost, no crash loop", async (t) => {
    let points = 0;
    for (let seed = 1; seed <= 5; seed++) {
      const result = await sweep(policyStoreScenario(150), { seed });
      assert.equal(result.points, result.operations, "every operation was a crash point");
      points += result.points;
    }
    t.diagnostic(`${points} crash points`);
    assert.ok(points >= 2000, `${points} crash points`);
  });
});
