// What a module hands the configuration loader for the top-level key it owns: its defaults, its
// JSON Schema (which names the key and the value in every message) and its checks across keys.
// The module owns the section; config.ts only composes the sections and loads them.

/** A JSON Schema (draft 2020-12) object, as Ajv compiles it. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** One top-level configuration key, owned by the module it configures. */
export interface ConfigSection<T> {
  /** The value when neither the file nor the environment sets one. */
  defaults: T;
  schema: JsonSchema;
  /**
   * Checks the schema cannot express, run once everything before them is valid; `key` is the
   * section's top-level key, and each message starts with the full key it is about.
   */
  problems?: (section: T, key: string) => string[];
}
