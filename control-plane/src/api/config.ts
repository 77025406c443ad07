// The HTTP API's configuration section (`api`): body limit, who may read, and where tokens come from.
import type { ConfigSection } from "../config-section.js";

/** The `api` section. */
export interface ApiConfig {
  /** Largest accepted request body; larger bodies get 413. */
  bodyLimitBytes: number;
  /** Whether GET endpoints (policies, filter config) need a token too. */
  reads: "public" | "token";
  /** File of `<id>:<token>` lines; empty = none. */
  tokensFile: string;
  /** `<id>:<token>` pairs, comma-separated (normally from TOKENTRACE_API_TOKENS). */
  tokens: string;
  /** `<id>=read|write|admin` items, comma-separated: each token id's scope (unlisted ids: write). */
  scopes: string;
}

/** Defaults, schema and checks of `api`. */
export const apiSection: ConfigSection<ApiConfig> = {
  defaults: { bodyLimitBytes: 262144, reads: "public", tokensFile: "", tokens: "", scopes: "" },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["bodyLimitBytes", "reads", "tokensFile", "tokens", "scopes"],
    properties: {
      bodyLimitBytes: { type: "integer", minimum: 1024, maximum: 16777216 },
      reads: { enum: ["public", "token"] },
      tokensFile: { type: "string" },
      tokens: { type: "string" },
      scopes: { type: "string", pattern: "^\\s*$|^\\s*[A-Za-z0-9_.@-]{1,64}=(read|write|admin)\\s*(,\\s*[A-Za-z0-9_.@-]{1,64}=(read|write|admin)\\s*)*$" },
    },
  },
};
