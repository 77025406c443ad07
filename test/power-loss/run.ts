// `make power-loss`: the seed-driven larger run of the power-loss harness, apart from the CI suite.
//   POWER_LOSS_SEED    first seed (default: today's date as YYYYMMDD, printed, so a failure can be rerun)
//   POWER_LOSS_SEEDS   seeds per workload (default 3; each takes about a minute per workload)
//   POWER_LOSS_STORES  "queue", "policy" or both (default "queue,policy")
// Longer workloads than the CI suite, every operation a crash point; exits non-zero at the first
// violation, naming the seed and the operation that reproduce it.
import { sweep, type CrashScenario } from "./sweep.js";
import { queueScenario } from "./queue-scenario.js";
import { policyStoreScenario } from "./policy-store-scenario.js";

const today = new Date();
const defaultSeed = today.getUTCFullYear() * 10_000 + (today.getUTCMonth() + 1) * 100 + today.getUTCDate();
const first = Number(process.env.POWER_LOSS_SEED ?? defaultSeed);
const seeds = Number(process.env.POWER_LOSS_SEEDS ?? "3");
const stores = (process.env.POWER_LOSS_STORES ?? "queue,policy").split(",");
if (!Number.isSafeInteger(first) || !Number.isInteger(seeds) || seeds < 1) throw new Error("POWER_LOSS_SEED must be an integer and POWER_LOSS_SEEDS a positive integer");

const workloads: { store: string; scenario: CrashScenario<unknown> }[] = [];
const add = <O>(store: string, scenario: CrashScenario<O>): void => void workloads.push({ store, scenario: scenario as CrashScenario<unknown> });
add("queue", queueScenario({ fsync: "segment", steps: 600, segmentBytes: 1024 }));
add("queue", queueScenario({ fsync: "always", steps: 600, segmentBytes: 2048 }));
add("queue", queueScenario({ fsync: "segment", steps: 600, segmentBytes: 400 }));
add("policy", policyStoreScenario(300));

console.log(`power-loss run: seeds ${first}..${first + seeds - 1}, stores ${stores.join(", ")}`);
const totals = new Map<string, number>();
const started = Date.now();
for (const { store, scenario } of workloads) {
  if (!stores.includes(store)) continue;
  for (let seed = first; seed < first + seeds; seed++) {
    const t0 = Date.now();
    const result = await sweep(scenario, { seed });
    totals.set(store, (totals.get(store) ?? 0) + result.points);
    console.log(`  ${scenario.name}, seed ${seed}: ${result.points} crash points, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
}
for (const [store, points] of totals) console.log(`${store}: ${points} crash points, no violation`);
console.log(`${((Date.now() - started) / 1000).toFixed(1)} s`);
