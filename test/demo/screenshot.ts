// `make screenshot`: README's picture of the dashboard, taken as a user would see it. The demo stack
// of `make demo` with the walk-through's scenario (kv-cache-pressure: real filter.wasm on the
// emulated Envoy host, the simulated engine and dcgm-exporter, the real pipeline, Debian's Prometheus
// evaluating the rule files), the page opened in headless Chromium at 1500x1000, and the first screen
// saved once the scenario's alert is listed firing and the golden-signal panels hold data.
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_MISSING } from "../support/chromium.js";
import { FILTER_WASM, requireArtifact } from "../filter/support.js";
import { startDemoStack } from "./stack.js";

const OUT = fileURLToPath(new URL("../../docs/images/dashboard.png", import.meta.url));
const SCENARIO = "kv-cache-pressure";
/** Long enough for a few minutes of the story on the charts, within the story's own minutes. */
const WAIT_MS = 150_000;

type Row = { dataset: Record<string, string | undefined>; className: string };
type Doc = { document: { querySelectorAll(s: string): ArrayLike<Row> } };

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(CHROMIUM_MISSING);
  const stack = await startDemoStack({ wasm: requireArtifact(FILTER_WASM), scenario: SCENARIO, errorRate: 0.01, scrapeIntervalMs: 1000, prometheus: "auto" });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    if (!stack.prometheus) throw new Error("the screenshot shows the scenario's alert: it needs Debian's prometheus (make test-deps)");
    const alert = stack.scenario.alert;
    const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    // Five minutes: the story fills the charts instead of their last tenth.
    await page.goto(`${stack.dashboardUrl}?range=300`);
    await page.waitForFunction(
      (name) => {
        const d = (globalThis as unknown as Doc).document;
        const firing = Array.from(d.querySelectorAll("#alert-table tbody tr")).some((tr) => tr.dataset.alert === name && tr.className === "firing");
        const drawn = Array.from(d.querySelectorAll("#charts .chart")).filter((c) => Number(c.dataset.points ?? "0") > 0).length;
        return firing && drawn >= 8;
      },
      alert,
      { timeout: WAIT_MS, polling: 1000 },
    );
    // Two and a half minutes more of the story, so it fills most of the five-minute charts.
    await page.waitForTimeout(150_000);
    mkdirSync(dirname(OUT), { recursive: true });
    await page.screenshot({ path: OUT });
    console.log(`==> wrote ${OUT} (${SCENARIO}, ${alert} firing)`);
  } finally {
    await browser.close();
    await stack.close();
  }
}

await main();
