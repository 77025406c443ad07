// The remote-write disk queue under thousands of simulated power losses (test/power-loss/): after
// each, recovery succeeds, and every record an fsync acknowledged reaches the receiver exactly
// once with a durable commit, nothing is delivered twice after a commit returned, and nothing is
// delivered that was not appended. `make power-loss` runs more seeds and longer workloads.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { sweep } from "../../power-loss/sweep.js";
import { queueScenario } from "../../power-loss/queue-scenario.js";

describe("remote-write queue under power loss (simulated disk)", () => {
  it("recovers from every crash point of three workloads: 2,000+ points, no acknowledged record lost or doubled, no crash loop", async (t) => {
    const runs = [
      { seed: 1, scenario: queueScenario({ fsync: "segment", steps: 250, segmentBytes: 1024 }) },
      { seed: 2, scenario: queueScenario({ fsync: "always", steps: 250, segmentBytes: 1024 }) },
      { seed: 3, scenario: queueScenario({ fsync: "segment", steps: 250, segmentBytes: 600 }) },
    ];
    let points = 0;
    for (const { seed, scenario } of runs) {
      const result = await sweep(scenario, { seed });
      assert.equal(result.points, result.operations, "every operation was a crash point");
      points += result.points;
    }
    t.diagnostic(`${points} crash points`);
    assert.ok(points >= 2000, `${points} crash points`);
  });
});
