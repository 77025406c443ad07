// A Ticker (control-plane/src/ticker.ts) that never fires by itself: a test runs a named task
// when it chooses and awaits it, so no test waits on a real interval.
import type { Ticker } from "../../control-plane/src/ticker.js";

/** Tasks by name; `run` executes every task registered under a name. */
export class ManualTicker implements Ticker {
  private readonly tasks = new Map<string, (() => unknown)[]>();
  private stopped = false;

  every(name: string, _ms: number, task: () => unknown): void {
    const list = this.tasks.get(name) ?? [];
    list.push(task);
    this.tasks.set(name, list);
  }

  stop(): void {
    this.stopped = true;
  }

  /** Runs the tasks named `name` once and waits for them; throws when none is registered. */
  async run(name: string): Promise<void> {
    const list = this.tasks.get(name);
    if (list === undefined) throw new Error(`no task named ${name}; known: ${[...this.tasks.keys()].join(", ")}`);
    if (this.stopped) return;
    for (const task of list) await task();
  }
}
