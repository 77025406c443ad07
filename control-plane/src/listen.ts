// Starting an HTTP server with an error that says what to do. Express 5's app.listen hands a bind
// error to its callback as if the server were listening (server.address() is then null), so the
// servers here are created and bound directly.
import { createServer, type RequestListener, type Server } from "node:http";
import type { ConfigSection } from "./config-section.js";

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

/** Creates a server for `handler` and binds it, or rejects with a PortInUseError naming `setting`. */
export function listenOn(handler: RequestListener, port: number, host: string, setting: string): Promise<Server> {
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => reject(new PortInUseError(port, host, setting, error));
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(server);
    });
  });
}
