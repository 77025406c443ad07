// Starting an HTTP server with an error that says what to do. Express 5's app.listen hands a bind
// error to its callback as if the server were listening (server.address() is then null), so the
// servers here are created and bound directly.
import { createServer, type RequestListener, type Server } from "node:http";
import type { ConfigSection } from "./config-section.js";
import { httpSection, type HttpConfig } from "./http/config.js";

/** The `listen` section: where the API, the dashboard and /metrics are served. */
export interface ListenConfig {
  host: string;
  port: number;
}

/** Defaults, schema and checks of `listen`. */
export const listenSection: ConfigSection<ListenConfig> = {
  defaults: { host: "127.0.0.1", port: 8080 },
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["host", "port"],
    properties: { host: { type: "string", minLength: 1 }, port: { type: "integer", minimum: 0, maximum: 65535 } },
  },
};

/** A port could not be bound; the message names the port and the setting that changes it. */
export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    readonly host: string,
    readonly setting: string,
    cause: NodeJS.ErrnoException,
  ) {
    const why = cause.code === "EADDRINUSE" ? "is already in use" : cause.code === "EACCES" ? "may not be bound by this user" : `cannot be bound (${cause.code ?? cause.message})`;
    super(`port ${port} on ${host} ${why}: set ${setting} to another port (0 picks a free one)`);
  }
}

/**
 * Creates a server for `handler` with the timeouts and header limit of `limits` (the `http`
 * section's defaults unless given) and binds it, or rejects with a PortInUseError naming `setting`.
 */
export function listenOn(handler: RequestListener, port: number, host: string, setting: string, limits: HttpConfig = httpSection.defaults): Promise<Server> {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      // Node answers 408 and closes a connection whose request (headers and body) is not complete in time.
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // Node checks the two timeouts above on this period (30 s by default, which would let a
      // slow client hold a connection for up to 30 s past them).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    },
    handler,
  );
  // Any connection without a byte either way for this long is closed.
  server.setTimeout(limits.idleTimeoutMs, (socket) => socket.destroy());
  server.maxHeadersCount = 128;
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => reject(new PortInUseError(port, host, setting, error));
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(server);
    });
  });
}
