// The GPU health panel family's endpoint: GET /v1/dashboard/gpus, per pod of a namespace its GPU
// panels' columns (gpu-health.ts), what its figures were measured on, its GPUs' current problems,
// the alert thresholds drawn dashed, what each panel needs dcgm-exporter to export, and the exporters
// that label pods other than their default way (the join reads them; rules and dashboards do not).
import type { NextFunction, Request, RequestHandler, Response, Router } from "express";
import { GPU_PANEL_NEEDS, GPU_THRESHOLDS, type GpuHealthPanels } from "./gpu-health.js";
import { queryString, rangeOf } from "./query.js";
import { resolution } from "./window.js";

/** What the family's routes are given (the dashboard's dependencies, the read guard, the clock). */
export interface GpuFamilyContext {
  deps: { dashboard?: { readonly gpu?: GpuHealthPanels } };
  read: RequestHandler;
  now: () => number;
}

/** GET /v1/dashboard/gpus. */
export function gpuRoutes(router: Router, { deps, read, now }: GpuFamilyContext): void {
  router.get("/v1/dashboard/gpus", read, (req: Request, res: Response, next: NextFunction) => {
    const namespace = queryString(req, "namespace");
    const rangeSeconds = rangeOf(req, next);
    if (rangeSeconds === undefined) return;
    const panels = deps.dashboard?.gpu;
    const keys = panels?.podKeys(namespace) ?? [];
    const grid = resolution(rangeSeconds * 1000, panels && keys.length > 0 ? panels.scrapeIntervalMs(keys[0]!) : 2000);
    res.set("cache-control", "no-store").json({
      source: "pipeline",
      pipeline: deps.dashboard ? "on" : "off",
      namespace: namespace ?? null,
      rangeSeconds,
      stepSeconds: grid.stepMs / 1000,
      lookbackSeconds: grid.windowMs / 1000,
      thresholds: GPU_THRESHOLDS,
      needs: GPU_PANEL_NEEDS,
      exporterNotes: panels?.exporterNoteRows() ?? [],
      pods: keys.map((k) => ({ ...k, ...panels!.describe(k), columns: panels!.columns(k, { nowMs: now(), rangeMs: rangeSeconds * 1000, stepMs: grid.stepMs, lookbackMs: grid.windowMs }) })),
    });
  });
}
