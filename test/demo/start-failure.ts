// What `make demo` prints when it cannot start: a taken port names the port and the variable that
// moves it (the control plane's listenOn and Node's own bind errors both carry the port). Before
// anything starts, every fixed port is tried once, so a user with three taken ports reads all three
// in one message instead of one per attempt.
import { createServer } from "node:net";

/** The demo's port settings (main.ts DemoConfig). */
export interface DemoPorts {
  proxyPort: number;
  adminPort: number;
  upstreamPort: number;
  controlPlanePort: number;
  dcgmPort: number;
}

/** The variables that set a port, by port number, for a bind error's message. */
export function portVariables(cfg: DemoPorts): Map<number, string[]> {
  const out = new Map<number, string[]>();
  const entries: [number, string][] = [
    [cfg.proxyPort, "TOKENTRACE_DEMO_PORT"],
    [cfg.adminPort, "TOKENTRACE_DEMO_ADMIN_PORT"],
    [cfg.upstreamPort, "TOKENTRACE_DEMO_UPSTREAM_PORT"],
    [cfg.controlPlanePort, "TOKENTRACE_DEMO_CONTROL_PLANE_PORT"],
    [cfg.dcgmPort, "TOKENTRACE_DEMO_DCGM_PORT"],
  ];
  for (const [port, name] of entries) if (port !== 0) out.set(port, [...(out.get(port) ?? []), name]);
  return out;
}

/** The demo's fixed ports (0 picks a free one) already taken on 127.0.0.1, in ascending order. */
export async function takenPorts(cfg: DemoPorts): Promise<number[]> {
  const taken: number[] = [];
  for (const port of [...portVariables(cfg).keys()].sort((a, b) => a - b)) {
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once("error", (e: NodeJS.ErrnoException) => resolve(e.code !== "EADDRINUSE"));
      probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
    if (!free) taken.push(port);
  }
  return taken;
}

/** Several of the demo's ports are taken; thrown before anything starts. */
export class PortsTakenError extends Error {
  constructor(readonly ports: number[]) {
    super(`ports ${ports.join(", ")} are in use`);
  }
}

/** What to print when the demo cannot start: a taken port names the port and the variable that moves it. */
export function startFailure(e: unknown, cfg: DemoPorts | undefined): string {
  if (e instanceof PortsTakenError && cfg) {
    const variables = portVariables(cfg);
    const lines = e.ports.map((port) => `  port ${port}: ${(variables.get(port) ?? []).join(" or ")}`);
    return [`demo failed to start: ${e.ports.length === 1 ? "a port is" : `${e.ports.length} ports are`} already in use on 127.0.0.1; set each variable below to another port (0 picks a free one):`, ...lines].join("\n");
  }
  const err = e as NodeJS.ErrnoException & { port?: number };
  const port = err.port ?? (e as { port?: number }).port;
  if (cfg && port !== undefined && (err.code === "EADDRINUSE" || /already in use/.test(err.message ?? ""))) {
    const names = portVariables(cfg).get(port) ?? [];
    const which = names.length > 0 ? names.join(" or ") : "the TOKENTRACE_DEMO_*_PORT variable of that service";
    return `demo failed to start: port ${port} on 127.0.0.1 is already in use: set ${which} to another port (0 picks a free one)`;
  }
  return `demo failed to start: ${e instanceof Error ? e.message : String(e)}`;
}

