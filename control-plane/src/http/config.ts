// Timeouts and header limits of every listener (`http`): the API and the filter-facing one. The
// shape follows kube-apiserver's server (kubernetes/kubernetes ad82c3d3
// staging/src/k8s.io/apiserver/pkg/server/secure_serving.go: ReadHeaderTimeout 32 s "just shy of
// requestTimeoutUpperBound", IdleTimeout 90 s, MaxHeaderBytes 1 MiB), tighter where our requests
// are small: headers must arrive within `headersTimeoutMs`, the whole request (a body that
// trickles included) within `requestTimeoutMs`, an idle keep-alive connection is closed after
// `keepAliveTimeoutMs`, and any connection with no traffic after `idleTimeoutMs`.
import type { ConfigSection } from "../config-section.js";

/** The `http` section. */
export interface HttpConfig {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  idleTimeoutMs: number;
  maxHeaderBytes: number;
}

/** Defaults, schema and checks of `http`. */
export const httpSection: ConfigSection<HttpConfig> = {
  defaults: { headersTimeoutMs: 10000, requestTimeoutMs: 30000, keepAliveTimeoutMs: 5000, idleTimeoutMs: 60000, maxHeaderBytes: 16384 },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["headersTimeoutMs", "requestTimeoutMs", "keepAliveTimeoutMs", "idleTimeoutMs", "maxHeaderBytes"],
    properties: {
      headersTimeoutMs: { type: "integer", minimum: 100, maximum: 600000 },
      requestTimeoutMs: { type: "integer", minimum: 100, maximum: 3600000 },
      keepAliveTimeoutMs: { type: "integer", minimum: 100, maximum: 600000 },
      idleTimeoutMs: { type: "integer", minimum: 100, maximum: 3600000 },
      maxHeaderBytes: { type: "integer", minimum: 4096, maximum: 1048576 },
    },
  },
  problems: (section, key) =>
    section.headersTimeoutMs > section.requestTimeoutMs ? [`${key}.headersTimeoutMs: must not exceed ${key}.requestTimeoutMs (${section.requestTimeoutMs}), got ${section.headersTimeoutMs}`] : [],
};
