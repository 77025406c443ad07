// The control plane's periodic work (adaptive steps, resyncs, status writes) goes through one
// injectable ticker, so tests run each task when they choose and wait for it to finish instead
// of sleeping through real intervals.

/** Runs named tasks periodically. */
export interface Ticker {
  /** Runs `task` every `ms`; a task's promise is awaited by manual tickers only. */
  every(name: string, ms: number, task: () => unknown): void;
  /** Stops every task. */
  stop(): void;
}

/** setInterval, one timer per task. */
export class IntervalTicker implements Ticker {
  private readonly timers: NodeJS.Timeout[] = [];

  every(_name: string, ms: number, task: () => unknown): void {
    this.timers.push(setInterval(() => void task(), ms));
  }

  stop(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }
}
