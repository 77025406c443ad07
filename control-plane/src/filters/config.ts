// The filter-facing listener's configuration section (`filters`): where the listener the sidecars
// call is bound (policy pulls, the OTLP span receiver, the content key) and how a caller proves
// who it is. It is a port of its own so the mesh (a PeerAuthentication and an AuthorizationPolicy
// on that port) or a NetworkPolicy can admit only the sidecars to it, and the API port only what
// needs the API.
import { isIP } from "node:net";
import type { ConfigSection } from "../config-section.js";

/** How a caller of the filter-facing listener is authenticated. */
export type FilterAuth = "mesh" | "token" | "none";

/** The `filters` section. */
export interface FiltersConfig {
  host: string;
  port: number;
  /**
   * mesh: the SPIFFE identity the control plane's own sidecar forwards in X-Forwarded-Client-Cert;
   * token: a bearer token per namespace (`tokens` / `tokensFile`, `<namespace>:<token>`);
   * none: anyone who can connect, allowed only when `host` is a loopback address.
   */
  auth: FilterAuth;
  /** File of `<namespace>:<token>` lines (auth: token). */
  tokensFile: string;
  /** `<namespace>:<token>` pairs, comma-separated (auth: token). */
  tokens: string;
  mesh: {
    /** The SPIFFE trust domain of the mesh (Istio's meshConfig.trustDomain). */
    trustDomain: string;
  };
}

/** True for 127.0.0.0/8, ::1 and `localhost`: addresses no other host can reach. */
export function isLoopbackHost(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  if (isIP(host) === 6) return host === "::1" || /^(0{0,4}:){7}0{0,3}1$/.test(host) || host === "::ffff:127.0.0.1";
  return false;
}

/** Defaults, schema and checks of `filters`. */
export const filtersSection: ConfigSection<FiltersConfig> = {
  // `make run` and the demo: the filters and the control plane share one machine's loopback.
  defaults: { host: "127.0.0.1", port: 8081, auth: "none", tokensFile: "", tokens: "", mesh: { trustDomain: "cluster.local" } },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["host", "port", "auth", "tokensFile", "tokens", "mesh"],
    properties: {
      host: { type: "string", minLength: 1 },
      port: { type: "integer", minimum: 0, maximum: 65535 },
      auth: { enum: ["mesh", "token", "none"] },
      tokensFile: { type: "string" },
      tokens: { type: "string" },
      mesh: {
        type: "object",
        additionalProperties: false,
        required: ["trustDomain"],
        properties: { trustDomain: { type: "string", minLength: 1, maxLength: 255, pattern: "^[a-z0-9._-]+$" } },
      },
    },
  },
  problems: (section, key) => {
    const out: string[] = [];
    if (section.auth === "none" && !isLoopbackHost(section.host)) {
      out.push(`${key}.auth: "none" is allowed only when ${key}.host is a loopback address (127.0.0.0/8, ::1, localhost), got host ${JSON.stringify(section.host)}: use "mesh" or "token"`);
    }
    if (section.auth === "token" && section.tokens === "" && section.tokensFile === "") {
      out.push(`${key}.auth: "token" needs ${key}.tokens or ${key}.tokensFile (<namespace>:<token> pairs)`);
    }
    return out;
  },
};
