// The receiver's CPU-heavy step (bounding, parsing and decoding a body of up to maxBodyBytes) runs
// one body per event-loop turn. Bodies that finish reading in the same poll phase would otherwise
// decode back to back before the loop reads anything else, so /healthz and the filters' policy
// pulls (the same process) would wait behind every one of them; one per turn, they wait behind one.

/** Runs jobs one at a time, each in its own event-loop turn (after the I/O that arrived meanwhile). */
export class DecodeTurns {
  private readonly waiting: (() => void)[] = [];
  private running = false;

  /** Runs `job` in a later turn, after the jobs queued before it. */
  run<T>(job: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push(() => {
        try {
          resolve(job());
        } catch (error) {
          reject(error as Error);
        }
      });
      if (!this.running) this.next();
    });
  }

  /** Jobs queued and not yet run. */
  get pending(): number {
    return this.waiting.length;
  }

  private next(): void {
    if (this.waiting.length === 0) {
      this.running = false;
      return;
    }
    this.running = true;
    // setImmediate: the check phase, after this turn's poll phase has handled the I/O that arrived.
    setImmediate(() => {
      this.waiting.shift()?.();
      this.next();
    });
  }
}
