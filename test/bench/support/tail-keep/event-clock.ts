// Simulated time for the replay: the engines' timers and the load's arrivals in one queue (a binary
// heap ordered by due time, then by the order they were set), so an hour of traffic runs in seconds
// and the same seed always gives the same order of events.
import type { EngineClock } from "../../../demo/engine.js";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/** An EngineClock whose timers run only from run(), in time order. */
export class EventClock implements EngineClock {
  private nowMs = 0;
  private seq = 0;
  private readonly heap: Timer[] = [];
  private readonly cancelled = new Set<number>();

  now(): number {
    return this.nowMs;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { at: this.nowMs + Math.max(0, ms), seq: ++this.seq, fn };
    this.push(timer);
    return timer.seq;
  }

  clearTimeout(handle: unknown): void {
    this.cancelled.add(handle as number);
  }

  /** Runs due timers in order until the queue is empty or the next is later than `untilMs`. */
  run(untilMs = Infinity): void {
    for (;;) {
      const next = this.heap[0];
      if (next === undefined || next.at > untilMs) break;
      this.pop();
      if (this.cancelled.delete(next.seq)) continue;
      this.nowMs = next.at;
      next.fn();
    }
    if (untilMs !== Infinity && untilMs > this.nowMs) this.nowMs = untilMs;
  }

  get pending(): number {
    return this.heap.length;
  }

  private less(a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(t: Timer): void {
    const h = this.heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
