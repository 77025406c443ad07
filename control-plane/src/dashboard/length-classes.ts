// The filter's length classes as the dashboard reads them (filter/telemetry/length-classes.ts):
// `le<N>` per boundary, `gt<last>` past the last, `unknown` when the response reported no usage;
// input_length on tokentrace_llm_ttft_ms, output_length on tokentrace_llm_decode_ms and
// tokentrace_llm_duration_ms. Only values of these shapes are kept, and a bounded number of them,
// so a sidecar cannot grow what an interval holds.

/** The class label of each latency histogram the page shows. */
export const LENGTH_CLASS_LABELS = { ttft: "input_length", decode: "output_length", duration: "output_length" } as const;

/**
 * Classes kept per (route, model, histogram) in one scrape: the filter labels at most 5 per
 * configuration (3 boundaries, `gt`, `unknown`); a changed configuration leaves the old classes
 * exported beside the new ones (Envoy keeps a series for the proxy's life), hence room for more.
 */
export const MAX_LENGTH_CLASSES = 8;

/** The value of a request whose token count was not known (filter LENGTH_UNKNOWN). */
export const LENGTH_UNKNOWN = "unknown";

// A boundary is a token count: 10 digits is past any context window.
const CLASS_SHAPE = /^(le|gt)(\d{1,10})$/;

/** Whether `value` has the shape of a length class the filter labels. */
export function isLengthClass(value: string): boolean {
  return value === LENGTH_UNKNOWN || CLASS_SHAPE.test(value);
}

/** Sort key: le by boundary, then gt by boundary, then unknown (le512 < le2048 < le8192 < gt8192 < unknown). */
function rank(value: string): [number, number] {
  const m = CLASS_SHAPE.exec(value);
  if (m === null) return [2, 0];
  return [m[1] === "le" ? 0 : 1, Number(m[2])];
}

/** Orders classes by their boundary, `unknown` last (for Array.prototype.sort). */
export function compareLengthClasses(a: string, b: string): number {
  const [ka, na] = rank(a);
  const [kb, nb] = rank(b);
  return ka - kb || na - nb || (a < b ? -1 : a > b ? 1 : 0);
}
