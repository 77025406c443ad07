// The content-capture key's configuration section (`content`): where the pseudonym keys live.
import type { ConfigSection } from "../config-section.js";

/** The `content` section. */
export interface ContentConfig {
  /**
   * A directory with one file per key version (the file name is the version, `[a-z0-9-]{1,32}`,
   * the content the key as 64 to 1024 hex digits) and a file `current` naming the version in
   * force. In Kubernetes the Secret tokentrace-content-keys mounted read-only. Empty: no key, so
   * filters use typed placeholders.
   */
  keysDir: string;
  /** How often the directory is read again (it is also read on every change the kernel reports). */
  rereadIntervalMs: number;
}

/** Defaults, schema and checks of `content`. */
export const contentSection: ConfigSection<ContentConfig> = {
  defaults: { keysDir: "", rereadIntervalMs: 10000 },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["keysDir", "rereadIntervalMs"],
    properties: { keysDir: { type: "string" }, rereadIntervalMs: { type: "integer", minimum: 100, maximum: 3600000 } },
  },
};
