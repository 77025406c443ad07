// A small deterministic random source for tests and benches, so a "random" case is the same on
// every run (mulberry32: 32-bit state, uniform doubles in [0, 1)).

/** A generator of doubles in [0, 1), the same sequence for the same seed. */
export function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
