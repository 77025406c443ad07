// Tail keep's budget (spans.keep.budget): a token bucket of spans per second for the whole proxy,
// shared by head sampling and tail keep, and the reservoir where the spans tail keep chose wait for
// the next decision, which comes when a batch of spans is due (spans.flushIntervalMs; root.ts). A
// head-sampled span goes at once (its trace already left sampled) and is paid for at the decision;
// what is left of the bucket goes to the reservoir's spans, errors first, then the slowest relative
// to their threshold, and the rest are dropped and counted per route and reason. That is
// the OpenTelemetry Collector's composite policy (ordered sub-policies sharing max_total_spans_per_
// second) with its rate_limiting policy's token bucket (open-telemetry/opentelemetry-collector-contrib
// processor/tailsamplingprocessor/internal/sampling composite.go 09ea2f42, rate_limiting.go 026e1822),
// except that the order within a decision is by priority, not by arrival.
//
// Envoy runs one VM per worker thread, and a connection stays on its worker, so the load of the
// workers is uneven (one busy HTTP/2 connection is one worker's). A fixed share per VM would strand
// budget on idle workers: the bucket lives in shared data instead (one store per plugin across the
// workers, proxy-wasm-cpp-host src/shared_data.cc), read and written at each VM's decision with a CAS.
// A host that refuses shared data leaves each VM with a bucket of its own (at most workers x budget).
import { KeepBudgetConfig, SpanConfig } from "../config/config";
import * as host from "../host/host";
import { encodeSpan, retainedBytesOf, SpanExporter, SpanRecord } from "./spans";
import { Stats } from "./stats";

const BUDGET_KEY = host.utf8("tokentrace.keep.budget");
/** The shared bucket: f64 tokens, i64 wall-clock ns of the last refill. */
const BUCKET_BYTES: i32 = 16;
const BUCKET_IN = new host.HostValue(memory.data(BUCKET_BYTES), BUCKET_BYTES);
const BUCKET_OUT: usize = memory.data(BUCKET_BYTES);
const CAS_ATTEMPTS: i32 = 4;

/** Whole spans `tokens` grant, at most `wanted`. */
function grantOf(tokens: f64, wanted: i32): i32 {
  if (tokens < 1) return 0;
  return tokens >= <f64>wanted ? wanted : <i32>Math.floor(tokens);
}

/** The bucket after `elapsedNs` at `rate` per second, at most `capacity`. */
function refill(tokens: f64, elapsedNs: i64, rate: f64, capacity: f64): f64 {
  const added = elapsedNs > 0 ? (<f64>elapsedNs / 1e9) * rate : 0;
  const t = tokens + added;
  return t > capacity ? capacity : t;
}

export class TailKeep {
  // The reservoir: a min-heap on priority (parallel arrays), so the least slow span is the first to go.
  // A span waits as its record and is encoded only if the decision grants it: the request path pays for
  // the record alone, and a span the budget drops is never encoded.
  private spans: Array<SpanRecord> = [];
  private sizes: Array<i32> = [];
  private priorities: Array<f64> = [];
  private keptSlots: Array<i32> = [];
  private droppedSlots: Array<i32> = [];
  private bytes: i32 = 0;
  /** Head-sampled spans exported since the last decision, paid for at the next. */
  private headSpent: i32 = 0;
  /** This VM's own bucket, used only when shared data fails. */
  private localTokens: f64 = 0;
  private localLastNs: i64 = 0;
  private stats: Stats;

  constructor(stats: Stats) {
    this.stats = stats;
  }

  get pending(): i32 {
    return this.spans.length;
  }

  /** Head-sampled spans went since the last decision, and the budget has yet to pay for them. */
  get owesHead(): bool {
    return this.headSpent > 0;
  }

  /** A head-sampled (or forced) span went: the budget pays for it first. */
  spendHead(): void {
    this.headSpent++;
  }

  /**
   * Holds a span tail keep chose until the decision; a full reservoir drops the least slow span (this
   * one, when none is slower) and counts it in `droppedSlot`.
   */
  offer(span: SpanRecord, priority: f64, keptSlot: i32, droppedSlot: i32, maxBytes: i32): void {
    const size = retainedBytesOf(span);
    while (this.bytes + size > maxBytes && this.spans.length > 0) {
      if (unchecked(this.priorities[0]) >= priority) {
        this.stats.count(droppedSlot, 1);
        return;
      }
      this.dropLeast();
    }
    if (size > maxBytes) {
      this.stats.count(droppedSlot, 1);
      return;
    }
    this.spans.push(span);
    this.sizes.push(size);
    this.priorities.push(priority);
    this.keptSlots.push(keptSlot);
    this.droppedSlots.push(droppedSlot);
    this.bytes += size;
    this.siftUp(this.spans.length - 1);
  }

  /** The decision (wall clock `nowNs`): pays for the head spans, grants what is left to the reservoir's best, exports them and drops the rest. */
  decide(config: SpanConfig, exporter: SpanExporter, nowNs: i64): void {
    const budget = config.keepBudget;
    let n = this.spans.length;
    if (n == 0 && this.headSpent == 0) return;
    if (budget === null) {
      this.headSpent = 0;
    } else {
      const grant = this.take(n, budget, nowNs);
      while (n > grant) {
        this.dropLeast();
        n--;
      }
    }
    for (let i = 0; i < n; i++) {
      exporter.add(encodeSpan(unchecked(this.spans[i]), config.providerName), config);
      this.stats.count(unchecked(this.keptSlots[i]), 1);
    }
    this.spans.length = 0;
    this.sizes.length = 0;
    this.priorities.length = 0;
    this.keptSlots.length = 0;
    this.droppedSlots.length = 0;
    this.bytes = 0;
  }

  /** Spans the bucket grants now, at most `wanted`, after paying for the head spans since the last decision. */
  private take(wanted: i32, budget: KeepBudgetConfig, nowNs: i64): i32 {
    const rate = budget.tracesPerSecond;
    const capacity = Math.max(1, rate * <f64>budget.burstSeconds);
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const cas = host.getSharedData(BUDGET_KEY, BUCKET_IN);
      if (cas < 0) break;
      let tokens = capacity;
      let lastNs = nowNs;
      if (cas > 0 && BUCKET_IN.length == BUCKET_BYTES) {
        const stored = load<f64>(BUCKET_IN.ptr);
        // A value this code did not write (NaN) starts a full bucket; a smaller budget cuts the bucket down.
        if (stored == stored) {
          tokens = stored > capacity ? capacity : stored < -capacity ? -capacity : stored;
          lastNs = load<i64>(BUCKET_IN.ptr + 8);
        }
      }
      const left = this.afterHead(refill(tokens, nowNs - lastNs, rate, capacity), capacity);
      const grant = grantOf(left, wanted);
      store<f64>(BUCKET_OUT, left - <f64>grant);
      store<i64>(BUCKET_OUT + 8, nowNs > lastNs ? nowNs : lastNs);
      const written = host.setSharedData(BUDGET_KEY, BUCKET_OUT, BUCKET_BYTES, <u32>cas);
      if (written == host.SharedWrite.Ok) {
        this.headSpent = 0;
        return grant;
      }
      if (written != host.SharedWrite.CasMismatch) break;
    }
    // Shared data failed (counted by host): this VM's own bucket.
    const start = this.localLastNs == 0 ? capacity : refill(this.localTokens, nowNs - this.localLastNs, rate, capacity);
    const left = this.afterHead(start, capacity);
    const grant = grantOf(left, wanted);
    this.localTokens = left - <f64>grant;
    this.localLastNs = nowNs;
    this.headSpent = 0;
    return grant;
  }

  /** The bucket once the head spans since the last decision are paid (a debt down to one bucket's worth). */
  private afterHead(tokens: f64, capacity: f64): f64 {
    const left = tokens - <f64>this.headSpent;
    return left < -capacity ? -capacity : left;
  }

  private dropLeast(): void {
    this.stats.count(unchecked(this.droppedSlots[0]), 1);
    this.bytes -= unchecked(this.sizes[0]);
    const last = this.spans.length - 1;
    this.move(last, 0);
    this.spans.length = last;
    this.sizes.length = last;
    this.priorities.length = last;
    this.keptSlots.length = last;
    this.droppedSlots.length = last;
    if (last > 0) this.siftDown(0);
  }

  private move(from: i32, to: i32): void {
    unchecked((this.spans[to] = this.spans[from]));
    unchecked((this.sizes[to] = this.sizes[from]));
    unchecked((this.priorities[to] = this.priorities[from]));
    unchecked((this.keptSlots[to] = this.keptSlots[from]));
    unchecked((this.droppedSlots[to] = this.droppedSlots[from]));
  }

  private swap(a: i32, b: i32): void {
    const span = unchecked(this.spans[a]);
    const size = unchecked(this.sizes[a]);
    const priority = unchecked(this.priorities[a]);
    const kept = unchecked(this.keptSlots[a]);
    const dropped = unchecked(this.droppedSlots[a]);
    this.move(b, a);
    unchecked((this.spans[b] = span));
    unchecked((this.sizes[b] = size));
    unchecked((this.priorities[b] = priority));
    unchecked((this.keptSlots[b] = kept));
    unchecked((this.droppedSlots[b] = dropped));
  }

  private siftUp(i: i32): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (unchecked(this.priorities[parent]) <= unchecked(this.priorities[i])) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: i32): void {
    const n = this.spans.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && unchecked(this.priorities[l]) < unchecked(this.priorities[m])) m = l;
      if (r < n && unchecked(this.priorities[r]) < unchecked(this.priorities[m])) m = r;
      if (m == i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
