// The order an aggregation meets its series in, taken as that of their label sets (model/labels
// Compare, prometheus/prometheus d15adb9: pair by pair in name order, name before value, a prefix
// first), as a sorted select returns them. The engine itself selects unsorted (promql/engine.go
// populateSeries, Select(ctx, false, ...)), so on the head block the order is the series' creation
// order: a sum or mean of three or more series can then differ in its last bits (the compensated
// sum is not associative); of one or two series it cannot.

/** A string that sorts (with `<`) as Prometheus's labels.Compare sorts the label sets. */
export function seriesOrderKey(labels: readonly string[]): string {
  const pairs: [string, string][] = [];
  for (let i = 0; i < labels.length; i += 2) pairs.push([labels[i]!, labels[i + 1]!]);
  pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // \x00 and \x01 sort below any character a label holds, so a shorter name or value sorts first.
  return pairs.map(([n, v]) => `${n}\x00${v}`).join("\x01");
}

/** Sorts in place by seriesOrderKey (precomputed as `order`). */
export function inSeriesOrder<T extends { order: string }>(items: T[]): T[] {
  return items.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
}
