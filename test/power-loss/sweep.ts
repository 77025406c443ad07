// Runs a workload once per crash point: the power goes at operation 1, 2, ... N of the simulated
// disk (N from a run without a crash), the store is recovered from what the disk then holds, and
// the scenario checks its property. Everything is decided by the seed (the workload's choices and
// what survives each power loss), so a failure names the seed and the point that reproduce it.
import { mulberry32 } from "../support/mulberry32.js";
import { PowerLoss, SimFs } from "./sim-fs.js";

/** A store under test: a workload that records what was acknowledged, and a check after recovery. */
export interface CrashScenario<Oracle> {
  readonly name: string;
  oracle(): Oracle;
  /** Runs the workload on `fs` until it ends or the power goes (PowerLoss); fills `oracle`. */
  run(fs: SimFs, oracle: Oracle, random: () => number): Promise<void>;
  /** Recovers from `image` and throws when the property does not hold. */
  check(image: SimFs, oracle: Oracle, random: () => number): Promise<void>;
}

/** What a sweep did. */
export interface SweepResult {
  /** Crash points run and checked. */
  points: number;
  /** Operations of the workload without a crash. */
  operations: number;
}

/** Options of a sweep. */
export interface SweepOptions {
  seed: number;
  /** At most this many crash points, spread evenly over the workload (default: every operation). */
  maxPoints?: number;
}

/** A seed for one crash point, apart from the workload's. */
const pointSeed = (seed: number, point: number): number => (Math.imul(seed, 0x9e3779b1) ^ Math.imul(point, 0x85ebca6b)) >>> 0;

/** Runs `scenario` with the power lost at each crash point in turn; throws at the first violation. */
export async function sweep<Oracle>(scenario: CrashScenario<Oracle>, options: SweepOptions): Promise<SweepResult> {
  const dry = new SimFs();
  await scenario.run(dry, scenario.oracle(), mulberry32(options.seed));
  const operations = dry.ops;
  const count = Math.min(operations, options.maxPoints ?? operations);
  let points = 0;
  for (let i = 0; i < count; i++) {
    const point = count === operations ? i + 1 : 1 + Math.floor((i * operations) / count);
    const where = `${scenario.name}: seed ${options.seed}, power lost at operation ${point} of ${operations}`;
    const fs = new SimFs();
    fs.crashAt = point;
    const oracle = scenario.oracle();
    try {
      await scenario.run(fs, oracle, mulberry32(options.seed));
    } catch (error) {
      if (!(error instanceof PowerLoss)) throw new Error(`${where}: the workload failed: ${(error as Error).stack ?? String(error)}`, { cause: error });
    }
    if (!fs.crashed) throw new Error(`${where}: the workload ended before it (not deterministic)`);
    const random = mulberry32(pointSeed(options.seed, point));
    try {
      await scenario.check(fs.powerLossImage(random), oracle, random);
    } catch (error) {
      throw new Error(`${where}: ${(error as Error).stack ?? String(error)}`, { cause: error });
    }
    points++;
  }
  return { points, operations };
}
