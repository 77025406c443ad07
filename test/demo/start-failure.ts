// What `make demo` prints when it cannot start: a taken port names the port and the variable that
// moves it (the control plane's listenOn and Node's own bind errors both carry the port).

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

/** What to print when the demo cannot start: a taken port names the port and the variable that moves it. */
export function startFailure(e: unknown, cfg: DemoPorts | undefined): string {
  const err = e as NodeJS.ErrnoException & { port?: number };
  const port = err.port ?? (e as { port?: number }).port;
  if (cfg && port !== undefined && (err.code === "EADDRINUSE" || /already in use/.test(err.message ?? ""))) {
    const names = portVariables(cfg).get(port) ?? [];
    const which = names.length > 0 ? names.join(" or ") : "the TOKENTRACE_DEMO_*_PORT variable of that service";
    return `demo failed to start: port ${port} on 127.0.0.1 is already in use: set ${which} to another port (0 picks a free one)`;
  }
  return `demo failed to start: ${e instanceof Error ? e.message : String(e)}`;
}

