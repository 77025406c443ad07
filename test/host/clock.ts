/** Time source for the host: realtime (ns since the epoch) and monotonic (ns from an arbitrary origin). */
export interface HostClock {
  realtimeNs(): bigint;
  monotonicNs(): bigint;
}

/** The process clocks, as Envoy's time source gives them. */
export const realClock: HostClock = {
  realtimeNs: () => BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n),
  monotonicNs: () => process.hrtime.bigint(),
};

/** A clock that only moves when a test moves it; both readings advance together. */
export class ManualClock implements HostClock {
  private realNs: bigint;
  private monoNs = 0n;

  // Default start: 2026-01-01T00:00:00Z, a fixed instant so expected values stay exact.
  constructor(startNs: bigint = 1_767_225_600_000_000_000n) {
    this.realNs = startNs;
  }

  advanceMs(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advanceMs needs a finite ms >= 0, got ${ms}`);
    this.advanceNs(BigInt(Math.round(ms * 1_000_000)));
  }

  advanceNs(ns: bigint): void {
    if (ns < 0n) throw new RangeError(`advanceNs needs ns >= 0, got ${ns}`);
    this.realNs += ns;
    this.monoNs += ns;
  }

  realtimeNs(): bigint {
    return this.realNs;
  }

  monotonicNs(): bigint {
    return this.monoNs;
  }
}
