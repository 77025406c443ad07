// Latency by length class (llm.lengthClasses): a request's input and output token counts fall in
// bounded classes, and the class is a label on the TTFT (input), decode and duration (output)
// histograms, so a P99 made of long prompts can be told from a slow engine. At most
// MAX_LENGTH_BOUNDARIES boundaries per side: with `gt` and `unknown` that is five label sets per
// histogram, each a series Envoy keeps for the proxy's life (docs/filter.md, Stat budget).
// Pure logic: no host calls.
import { decimal } from "../decimal";

export const MAX_LENGTH_BOUNDARIES: i32 = 3;
/** The label value of a request whose token count is not known (no usage in the response). */
export const LENGTH_UNKNOWN = "unknown";

/** Classes made so far, so every configuration with the same boundaries shares one (see lengthClassesOf). */
const made: Array<LengthClasses> = [];
const MAX_MADE: i32 = 16;

/**
 * The classes of `boundaries`, the same object for the same boundaries: a pair's histograms are
 * defined once per class, not again at every configuration push (a live-threshold push is one every
 * few seconds), since Envoy hands out a new id at every definition and keeps each one (envoy
 * source/extensions/common/wasm/context.cc Context::defineMetric, histograms_.emplace).
 */
export function lengthClassesOf(boundaries: StaticArray<i64>): LengthClasses {
  for (let i = 0; i < made.length; i++) {
    const c = unchecked(made[i]);
    if (c.boundaries.length != boundaries.length) continue;
    let same = true;
    for (let k = 0; k < boundaries.length && same; k++) same = unchecked(c.boundaries[k]) == unchecked(boundaries[k]);
    if (same) return c;
  }
  const c = new LengthClasses(boundaries);
  if (made.length < MAX_MADE) made.push(c);
  return c;
}

/** One side's classes: boundaries (tokens, increasing) and the label value of each class. */
export class LengthClasses {
  boundaries: StaticArray<i64>;
  /** le<b> for each boundary, gt<last>, then unknown; empty when the side has no classes. */
  names: StaticArray<string>;

  constructor(boundaries: StaticArray<i64>) {
    this.boundaries = boundaries;
    const n = boundaries.length;
    const names = new StaticArray<string>(n == 0 ? 0 : n + 2);
    for (let i = 0; i < n; i++) names[i] = "le" + decimal(boundaries[i]);
    if (n > 0) {
      names[n] = "gt" + decimal(boundaries[n - 1]);
      names[n + 1] = LENGTH_UNKNOWN;
    }
    this.names = names;
  }

  /** Whether this side labels its histograms at all (an empty list turns the classes off). */
  get enabled(): bool {
    return this.boundaries.length > 0;
  }

  /** The class of `tokens` (negative: not known), an index into `names`. */
  classOf(tokens: i64): i32 {
    const n = this.boundaries.length;
    if (tokens < 0) return n + 1;
    for (let i = 0; i < n; i++) if (tokens <= unchecked(this.boundaries[i])) return i;
    return n;
  }
}
