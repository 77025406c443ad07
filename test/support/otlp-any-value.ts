// An OTLP/JSON AnyValue as a plain value (opentelemetry-proto common.proto: string, bool, int as a
// decimal string, double, bytes as base64, ArrayValue, KeyValueList), for tests that read
// structured span attributes such as the GenAI content attributes.

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The plain value of one AnyValue; a KeyValueList becomes an object, an ArrayValue an array. */
export function anyValue(v: Record<string, unknown>): Json {
  if (typeof v.stringValue === "string") return v.stringValue;
  if (typeof v.boolValue === "boolean") return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (typeof v.doubleValue === "number") return v.doubleValue;
  if (typeof v.bytesValue === "string") return v.bytesValue;
  const array = v.arrayValue as { values?: Array<Record<string, unknown>> } | undefined;
  if (array !== undefined) return (array.values ?? []).map(anyValue);
  const list = v.kvlistValue as { values?: Array<{ key: string; value: Record<string, unknown> }> } | undefined;
  if (list !== undefined) {
    const out: { [key: string]: Json } = Object.create(null) as { [key: string]: Json };
    for (const kv of list.values ?? []) out[kv.key] = anyValue(kv.value);
    return { ...out };
  }
  return null;
}
