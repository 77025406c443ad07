// What the demo prints when it cannot start: every taken port at once, before anything starts, and
// a port lost to a race after that check still named with its variable.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { freePort } from "../support/prometheus.js";
import { PortsTakenError, startFailure, takenPorts, type DemoPorts } from "./start-failure.js";

test("takenPorts: the fixed ports another process holds, not the free ones nor 0", async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const held = (holder.address() as { port: number }).port;
  try {
    const free = await freePort();
    const cfg: DemoPorts = { proxyPort: free, adminPort: held, upstreamPort: 0, controlPlanePort: held, dcgmPort: 0 };
    assert.deepEqual(await takenPorts(cfg), [held]);
    assert.equal(startFailure(new PortsTakenError([held]), cfg), `demo failed to start: a port is already in use on 127.0.0.1; set each variable below to another port (0 picks a free one):\n  port ${held}: TOKENTRACE_DEMO_ADMIN_PORT or TOKENTRACE_DEMO_CONTROL_PLANE_PORT`);
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});

test("startFailure: a bind error after the check (a race) names the port and its variable; any other error its message", () => {
  const cfg: DemoPorts = { proxyPort: 10000, adminPort: 15090, upstreamPort: 0, controlPlanePort: 8080, dcgmPort: 9400 };
  const bind = Object.assign(new Error("listen EADDRINUSE: address already in use 127.0.0.1:9400"), { code: "EADDRINUSE", port: 9400 });
  assert.equal(startFailure(bind, cfg), "demo failed to start: port 9400 on 127.0.0.1 is already in use: set TOKENTRACE_DEMO_DCGM_PORT to another port (0 picks a free one)");
  assert.equal(startFailure(new Error("boom"), cfg), "demo failed to start: boom");
});
