// The order an aggregation meets its series in, taken as that of their label sets (model/labels
// Compare, prometheus/prometheus d15adb9: pair by pair in name order, name before value, a prefix
// first), as a sorted select returns them. The engine itself selects unsorted (promql/engine.go
// populateSeries, Select(ctx, false, ...)), so on the head block the order is the series' creation
// order: a sum or mean of three or more series can then differ in its last bits (the compensated
// sum is not associative); of one or two series it cannot.

/** Pair indexes being sorted (label sets are short; grown for a longer one). */
let order = new Int32Array(64);
/** A metric's name and labels put together for seriesOrderKeyOf (no array per call). */
const joined: string[] = [];
const NONE: readonly string[] = [];

/**
 * A string that sorts (with `<`) as Prometheus's labels.Compare sorts the label sets. Built for every
 * bucket series of every scrape by the derivations: the pairs are put in name order by insertion
 * (stable, as the label set's own order breaks ties) with no array per pair.
 */
export function seriesOrderKey(labels: readonly string[]): string {
  return keyOfPairs(labels, labels.length >> 1);
}

/** seriesOrderKey of `["__name__", metricName, ...labels, ...more]`. */
export function seriesOrderKeyOf(metricName: string, labels: readonly string[], more: readonly string[] = NONE): string {
  joined[0] = "__name__";
  joined[1] = metricName;
  let at = 2;
  for (let i = 0; i < labels.length; i++) joined[at++] = labels[i]!;
  for (let i = 0; i < more.length; i++) joined[at++] = more[i]!;
  return keyOfPairs(joined, at >> 1);
}

/** The key of the first `n` pairs of `labels`. */
function keyOfPairs(labels: readonly string[], n: number): string {
  if (order.length < n) order = new Int32Array(2 * n);
  for (let k = 0; k < n; k++) {
    const name = labels[2 * k]!;
    let j = k;
    while (j > 0 && labels[2 * order[j - 1]!]! > name) {
      order[j] = order[j - 1]!;
      j--;
    }
    order[j] = k;
  }
  // \x00 and \x01 sort below any character a label holds, so a shorter name or value sorts first.
  let key = "";
  for (let k = 0; k < n; k++) {
    const i = 2 * order[k]!;
    key += k === 0 ? `${labels[i]!}\x00${labels[i + 1]!}` : `\x01${labels[i]!}\x00${labels[i + 1]!}`;
  }
  return key;
}

/** Sorts in place by seriesOrderKey (precomputed as `order`). */
export function inSeriesOrder<T extends { order: string }>(items: T[]): T[] {
  return items.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
}
