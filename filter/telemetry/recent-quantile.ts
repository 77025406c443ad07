// Tail keep's own view of a (route, model) pair's recent latency (spans.keep.recent): the quantile of
// the durations this VM saw end over the trailing window, kept current at every request, so a slow
// request is judged against the distribution it belongs to at the moment it ends, not against a
// threshold the control plane computed from scrapes a step and a push earlier.
//
// Bounded and cheap per request: durations go into log-linear buckets (HdrHistogram's layout: exact
// below 2^SUB_BITS us, then 2^SUB_BITS sub-buckets per power of two, so a bucket is at most 1/32 =
// 3.1% wide), a ring remembers each sample's bucket and end time so it can leave the window, and the
// quantile's bucket is tracked with the count below it, so an arrival or an expiry moves it by a step
// or two instead of a scan. The ring holds at most `maxSamples`: past that the oldest leave early
// and the window is the last `maxSamples` requests. A request above the quantile's bucket is slow; one
// in it is slow when the bucket holds samples above the quantile and the request sits at or above
// the position of the sample just below the quantile, the bucket's samples taken as evenly spread:
// that errs toward keeping by one position, and keeps a pair whose durations all fall in one bucket
// from keeping every request.
//
// The rank is the one an exact quantile of n samples takes: the ceil(q * n)-th smallest, the
// convention of the bench's ground truth (and of the nearest-rank method); the OpenTelemetry
// Collector's tail sampling has no latency quantile of its own (its latency policy takes a fixed
// threshold_ms: open-telemetry/opentelemetry-collector-contrib 09ea2f42
// processor/tailsamplingprocessor/internal/sampling/latency.go), which is the gap this fills.

const SUB_BITS: i32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/** Buckets for 0 .. 2^32 us (71 minutes); longer durations share the last. */
export const RECENT_BUCKETS: i32 = ((32 - SUB_BITS + 1) << SUB_BITS);

/** The bucket of a duration in microseconds. */
export function bucketOfUs(us: u64): i32 {
  if (us < SUB) return <i32>us;
  if (us >= (<u64>1 << 32)) return RECENT_BUCKETS - 1;
  const e = 63 - <i32>clz(us);
  return ((e - SUB_BITS + 1) << SUB_BITS) + <i32>((us >> <u64>(e - SUB_BITS)) & (SUB - 1));
}

/** The smallest duration (us) in a bucket: its lower edge. */
export function bucketLowerUs(bucket: i32): u64 {
  if (<u64>bucket < SUB) return <u64>bucket;
  const e = (bucket >> SUB_BITS) + SUB_BITS - 1;
  return (SUB + <u64>(bucket & (<i32>SUB - 1))) << <u64>(e - SUB_BITS);
}

export class RecentQuantile {
  private counts: StaticArray<u16> = new StaticArray<u16>(RECENT_BUCKETS);
  private ringBuckets: StaticArray<u16>;
  private ringEndMs: StaticArray<u32>;
  private head: i32 = 0;
  private size: i32 = 0;
  /** The bucket holding the ceil(q * size)-th smallest sample, and the samples below it. */
  private at: i32 = 0;
  private below: i32 = 0;
  private rank: i32 = 1;
  private quantile: f64;
  private windowMs: u32;

  constructor(quantile: f64, windowMs: u32, maxSamples: i32) {
    this.quantile = quantile;
    this.windowMs = windowMs;
    this.ringBuckets = new StaticArray<u16>(maxSamples);
    this.ringEndMs = new StaticArray<u32>(maxSamples);
  }

  /** Whether this window was made with these settings. */
  hasSettings(quantile: f64, windowMs: u32, maxSamples: i32): bool {
    return this.quantile == quantile && this.windowMs == windowMs && this.ringBuckets.length == maxSamples;
  }

  /** Samples in the window. */
  get samples(): i32 {
    return this.size;
  }

  /** The quantile's bucket; a duration whose bucket is at least this one is above the quantile or close below it. */
  get quantileBucket(): i32 {
    return this.at;
  }

  /**
   * Whether a sample of `us` that fell in the quantile's own bucket may be above the quantile: the
   * bucket must hold samples ranked above it, and `us` must be at least where the sample ranked just
   * below the quantile would sit if the bucket's samples were spread evenly across it (so a pair
   * whose durations all fall in one bucket keeps about its top share, not every request).
   */
  mayBeAboveInBucket(us: u64): bool {
    const at = this.at;
    const count = <i32>unchecked(this.counts[at]);
    const inBucket = this.rank - this.below; // the quantile's position in the bucket, 1-based
    if (inBucket >= count) return false;
    const lower = bucketLowerUs(at);
    const width = at + 1 < RECENT_BUCKETS ? bucketLowerUs(at + 1) - lower : lower;
    return <f64>(us - lower) * <f64>count >= <f64>width * <f64>(inBucket - 1);
  }

  /** A request of `bucket` ended at `endMs` (wall clock, ms, wrapping): samples older than the window leave first. */
  observe(bucket: i32, endMs: u32): void {
    const capacity = this.ringBuckets.length;
    while (this.size > 0 && endMs - unchecked(this.ringEndMs[this.head]) >= this.windowMs) this.removeOldest(capacity);
    if (this.size == capacity) this.removeOldest(capacity);
    let tail = this.head + this.size;
    if (tail >= capacity) tail -= capacity;
    unchecked((this.ringBuckets[tail] = <u16>bucket));
    unchecked((this.ringEndMs[tail] = endMs));
    this.size++;
    unchecked((this.counts[bucket] += 1));
    if (bucket < this.at) this.below++;
    this.settle();
  }

  private removeOldest(capacity: i32): void {
    const bucket = <i32>unchecked(this.ringBuckets[this.head]);
    unchecked((this.counts[bucket] -= 1));
    if (bucket < this.at) this.below--;
    this.head = this.head + 1 == capacity ? 0 : this.head + 1;
    this.size--;
  }

  /** Moves `at` to the bucket of the ceil(q * size)-th smallest sample (rank 1 when empty). */
  private settle(): void {
    let rank = <i32>Math.ceil(this.quantile * <f64>this.size);
    if (rank < 1) rank = 1;
    let at = this.at;
    let below = this.below;
    // Too many below: step down, taking each bucket's samples off `below`.
    while (below >= rank && at > 0) {
      at--;
      below -= <i32>unchecked(this.counts[at]);
    }
    // Too few up to and including `at`: step up.
    while (below + <i32>unchecked(this.counts[at]) < rank && at < RECENT_BUCKETS - 1) {
      below += <i32>unchecked(this.counts[at]);
      at++;
    }
    this.at = at;
    this.below = below;
    this.rank = rank;
  }
}

// The clock of the recent windows: the latest wall-clock time this VM read (a tick, or a request's
// own start plus duration), never going back. Reading the clock for every request would be one
// more host call on the request path; the tick reads it at least every flush interval anyway.
let latestMs: i64 = 0;

/** Moves the recent windows' clock to `ns` (wall clock) when that is later. */
export function noteNowNs(ns: i64): void {
  const ms = ns / 1_000_000;
  if (ms > latestMs) latestMs = ms;
}

/** The recent windows' clock, ms, wrapping at 2^32 (the windows compare differences only). */
export function recentNowMs(): u32 {
  return <u32>latestMs;
}
