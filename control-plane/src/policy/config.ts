// The policy store's configuration section (`store`): where policies live.
import type { ConfigSection } from "../config-section.js";

/** The `store` section. */
export interface StoreConfig {
  /** embedded: policies live in the file store and filters pull; kubernetes: also reconciled to WasmPlugins. */
  mode: "embedded" | "kubernetes";
  /** JSON file of the policy store (written atomically). */
  path: string;
}

/** Defaults, schema and checks of `store`. */
export const storeSection: ConfigSection<StoreConfig> = {
  defaults: { mode: "embedded", path: ".tmp/control-plane/policies.json" },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["mode", "path"],
    properties: { mode: { enum: ["embedded", "kubernetes"] }, path: { type: "string", minLength: 1 } },
  },
};
