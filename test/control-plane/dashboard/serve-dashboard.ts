// The dashboard's routes on 127.0.0.1 over a given series collector and clock, with a policy store
// of their own and public reads: what the route tests of the dashboard's panel families ask.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { dashboardRoutes } from "../../../control-plane/src/dashboard/routes.js";
import type { DashboardSeries } from "../../../control-plane/src/dashboard/series.js";
import { FilePolicyStore } from "../../../control-plane/src/policy/file-store.js";
import { errorHandler } from "../../../control-plane/src/api/errors.js";

/** Serves the dashboard's routes over `dashboard` (none: the pipeline is off) at `nowMs`. */
export async function serveDashboard(dashboard: DashboardSeries | undefined, nowMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  const store = new FilePolicyStore({ path: join(mkdtempSync(join(tmpdir(), "tt-dashboard-")), "policies.json") });
  const app = express();
  app.use(dashboardRoutes({ store, tokens: [], reads: "public", dashboard, now: () => nowMs }));
  app.use(errorHandler(() => undefined));
  const server: Server = await new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(srv));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}
