/**
 * A label set as a flat array of name/value pairs: [name0, value0, name1, value1, ...]. Flat arrays
 * cost one allocation per series, where a Record would cost a dictionary-mode object.
 */
export type Labels = string[];

/** One parsed sample of the text exposition format. */
export interface ParsedSample {
  /** The series name as written (`foo_bucket`, not the family `foo`). */
  name: string;
  labels: Labels;
  value: number;
  /** Milliseconds since the epoch, when the exposition carried one. */
  timestampMs?: number;
}

/** The metric types the text format declares with `# TYPE`. */
export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

/** `# HELP` and `# TYPE` of one family. */
export interface FamilyMetadata {
  type: MetricType;
  help?: string;
}

/** Value of label `name`, or undefined. */
export function labelValue(labels: Labels, name: string): string | undefined {
  for (let i = 0; i < labels.length; i += 2) if (labels[i] === name) return labels[i + 1];
  return undefined;
}
