// A fake clock for the simulated engine: tests advance time themselves, nothing waits on real time.
import type { EngineClock } from "./engine.js";

/** A clock whose timers fire only when the test runs them. */
export class FakeClock implements EngineClock {
  nowMs = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private seq = 0;
  now(): number {
    return this.nowMs;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.push({ at: this.nowMs + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** Runs timers in time order until none is due before `untilMs` (or none is left). */
  run(untilMs = Infinity): void {
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > untilMs) break;
      this.timers.shift();
      this.nowMs = next.at;
      next.fn();
    }
    if (untilMs !== Infinity) this.nowMs = untilMs;
  }
}
